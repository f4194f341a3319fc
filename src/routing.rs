//! The routing table: addresses, and who is subscribed to which message type
//! on each.
//!
//! A plain data structure: an address slot holds data of the caller's (`T`)
//! and one *channel* per subscribed message type, listing its subscriptions
//! in subscription order; a subscription holds a handler of the caller's
//! (`H`). Nothing here calls a handler: [`Routes::find`] says who should hear
//! a message, and the caller takes each handler out
//! ([`take_handler`](Routes::take_handler)), calls it, and puts it back
//! ([`put_handler`](Routes::put_handler)). So a handler may subscribe and
//! unsubscribe while it runs: a subscription made meanwhile hears the next
//! message, and one removed meanwhile is skipped (its handler is dropped on
//! the way back).

use crate::arena::{Arena, Key};
use smallvec::SmallVec;
use std::any::TypeId;

/// The subscriptions of one message type on one address, in order.
struct Channel {
    type_id: TypeId,
    subs: SmallVec<[Key; 1]>,
}

/// One address.
struct Slot<T> {
    data: T,
    channels: SmallVec<[Channel; 1]>,
}

/// One subscription: where it is, whose it is, and its handler (absent
/// while it runs).
struct Sub<H> {
    address: Key,
    type_id: TypeId,
    owner: Key,
    handler: Option<H>,
}

/// Who hears a message, as [`Routes::find`] says.
pub(crate) enum Found {
    /// No such address (any more).
    Stale,
    /// Nobody is subscribed to the type there.
    NoSubscriber,
    /// One subscription.
    One(Key),
    /// Several: [`Routes::subscribers`] lists them.
    Many,
}

/// A removed subscription: where it was and whose it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Removed {
    pub(crate) sub: Key,
    pub(crate) address: Key,
    pub(crate) owner: Key,
}

/// Addresses and subscriptions of one locality.
pub(crate) struct Routes<T, H> {
    slots: Arena<Slot<T>>,
    subs: Arena<Sub<H>>,
}

impl<T, H> Default for Routes<T, H> {
    fn default() -> Self {
        Routes {
            slots: Arena::default(),
            subs: Arena::default(),
        }
    }
}

impl<T, H> Routes<T, H> {
    /// Adds an address whose data is made from its key.
    pub(crate) fn add_address(&mut self, make: impl FnOnce(Key) -> T) -> Key {
        self.slots.insert_with(|key| Slot {
            data: make(key),
            channels: SmallVec::new(),
        })
    }

    /// The data of an address, if it is live.
    #[inline]
    pub(crate) fn address(&self, key: Key) -> Option<&T> {
        self.slots.get(key).map(|s| &s.data)
    }

    /// The data of an address, if it is live.
    pub(crate) fn address_mut(&mut self, key: Key) -> Option<&mut T> {
        self.slots.get_mut(key).map(|s| &mut s.data)
    }

    /// Removes an address and every subscription on it (their handlers are
    /// dropped, except one that is running: it is dropped when put back).
    pub(crate) fn remove_address(&mut self, key: Key) -> Option<(T, SmallVec<[Removed; 2]>)> {
        let slot = self.slots.remove(key)?;
        let mut removed = SmallVec::new();
        for channel in slot.channels {
            for sub in channel.subs {
                if let Some(record) = self.subs.remove(sub) {
                    removed.push(Removed {
                        sub,
                        address: key,
                        owner: record.owner,
                    });
                }
            }
        }
        Some((slot.data, removed))
    }

    /// Subscribes `owner`'s `handler` to messages of `type_id` on `address`;
    /// `None` if the address is gone.
    pub(crate) fn subscribe(
        &mut self,
        address: Key,
        type_id: TypeId,
        owner: Key,
        handler: H,
    ) -> Option<Key> {
        if !self.slots.contains(address) {
            return None;
        }
        let sub = self.subs.insert(Sub {
            address,
            type_id,
            owner,
            handler: Some(handler),
        });
        let slot = self.slots.get_mut(address)?;
        match slot.channels.iter_mut().find(|c| c.type_id == type_id) {
            Some(channel) => channel.subs.push(sub),
            None => slot.channels.push(Channel {
                type_id,
                subs: SmallVec::from_elem(sub, 1),
            }),
        }
        Some(sub)
    }

    /// Removes a subscription (its handler is dropped, or, if it is
    /// running, dropped when put back); `None` if it was gone.
    pub(crate) fn unsubscribe(&mut self, sub: Key) -> Option<Removed> {
        let record = self.subs.remove(sub)?;
        if let Some(slot) = self.slots.get_mut(record.address)
            && let Some(pos) = slot
                .channels
                .iter()
                .position(|c| c.type_id == record.type_id)
        {
            let subs = &mut slot.channels[pos].subs;
            subs.retain(|s| *s != sub);
            if subs.is_empty() {
                slot.channels.remove(pos);
            }
        }
        Some(Removed {
            sub,
            address: record.address,
            owner: record.owner,
        })
    }

    /// The owner of a live subscription.
    pub(crate) fn owner(&self, sub: Key) -> Option<Key> {
        self.subs.get(sub).map(|s| s.owner)
    }

    /// Who hears a message of `type_id` sent to `address`.
    #[inline(always)]
    pub(crate) fn find(&self, address: Key, type_id: TypeId) -> Found {
        let Some(slot) = self.slots.get(address) else {
            return Found::Stale;
        };
        match slot.channels.iter().find(|c| c.type_id == type_id) {
            None => Found::NoSubscriber,
            Some(channel) => match channel.subs.as_slice() {
                [one] => Found::One(*one),
                _ => Found::Many,
            },
        }
    }

    /// The subscriptions to `type_id` on `address`, in subscription order (a
    /// copy: the channel may change while they run).
    pub(crate) fn subscribers(&self, address: Key, type_id: TypeId) -> SmallVec<[Key; 8]> {
        self.slots
            .get(address)
            .and_then(|slot| slot.channels.iter().find(|c| c.type_id == type_id))
            .map(|channel| channel.subs.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Takes the handler of a live subscription out, to call it; `None` if
    /// the subscription is gone or its handler is out already.
    #[inline]
    pub(crate) fn take_handler(&mut self, sub: Key) -> Option<H> {
        self.subs.get_mut(sub)?.handler.take()
    }

    /// Puts a handler back after its call; `false` if its subscription was
    /// removed meanwhile (the handler is then dropped here).
    #[inline]
    pub(crate) fn put_handler(&mut self, sub: Key, handler: H) -> bool {
        match self.subs.get_mut(sub) {
            Some(record) => {
                record.handler = Some(handler);
                true
            }
            None => false,
        }
    }

    /// Live addresses.
    pub(crate) fn addresses(&self) -> usize {
        self.slots.len()
    }

    /// Live subscriptions.
    pub(crate) fn subscriptions(&self) -> usize {
        self.subs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct A;
    struct B;

    fn routes() -> Routes<&'static str, u32> {
        Routes::default()
    }

    fn ids(r: &Routes<&'static str, u32>, address: Key, type_id: TypeId) -> Vec<Key> {
        match r.find(address, type_id) {
            Found::One(k) => vec![k],
            Found::Many => r.subscribers(address, type_id).into_vec(),
            _ => vec![],
        }
    }

    #[test]
    fn finds_subscribers_of_a_type_in_subscription_order() {
        let mut r = routes();
        let a = r.add_address(|_| "a");
        let owner = Key::NONE;
        let s1 = r.subscribe(a, TypeId::of::<A>(), owner, 1).unwrap();
        let s2 = r.subscribe(a, TypeId::of::<B>(), owner, 2).unwrap();
        let s3 = r.subscribe(a, TypeId::of::<A>(), owner, 3).unwrap();
        assert_eq!(ids(&r, a, TypeId::of::<A>()), [s1, s3]);
        assert_eq!(ids(&r, a, TypeId::of::<B>()), [s2]);
        assert!(matches!(r.find(a, TypeId::of::<u8>()), Found::NoSubscriber));
        assert_eq!(r.address(a), Some(&"a"));
        assert_eq!(r.subscriptions(), 3);
    }

    #[test]
    fn a_handler_taken_out_and_unsubscribed_meanwhile_is_not_put_back() {
        let mut r = routes();
        let a = r.add_address(|_| "a");
        let s = r.subscribe(a, TypeId::of::<A>(), Key::NONE, 7).unwrap();
        let h = r.take_handler(s).unwrap();
        assert_eq!(r.take_handler(s), None, "out already");
        assert!(r.unsubscribe(s).is_some());
        assert!(!r.put_handler(s, h));
        assert!(matches!(r.find(a, TypeId::of::<A>()), Found::NoSubscriber));
        assert_eq!(r.subscriptions(), 0);
    }

    #[test]
    fn removing_an_address_removes_its_subscriptions_and_stale_keys_miss() {
        let mut r = routes();
        let a = r.add_address(|_| "a");
        let owner = r.add_address(|_| "owner"); // any key will do as an owner
        let s1 = r.subscribe(a, TypeId::of::<A>(), owner, 1).unwrap();
        let s2 = r.subscribe(a, TypeId::of::<B>(), owner, 2).unwrap();
        let (data, removed) = r.remove_address(a).unwrap();
        assert_eq!(data, "a");
        let subs: Vec<Key> = removed.iter().map(|x| x.sub).collect();
        assert_eq!(subs, [s1, s2]);
        assert!(removed.iter().all(|x| x.owner == owner && x.address == a));
        assert!(matches!(r.find(a, TypeId::of::<A>()), Found::Stale));
        assert_eq!(r.subscribe(a, TypeId::of::<A>(), owner, 3), None);
        assert_eq!(r.unsubscribe(s1), None);
        let b = r.add_address(|_| "b");
        assert_eq!(b.idx, a.idx, "slot reused");
        assert_eq!(r.address(a), None, "but the old key stays stale");
        assert_eq!(r.subscriptions(), 0);
    }
}

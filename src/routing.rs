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

/// A list that is usually empty: one word, and no allocation while empty
/// (hence the box around the `Vec`: three words would be kept in every
/// address otherwise).
#[allow(clippy::box_collection)]
struct Spill<T>(Option<Box<Vec<T>>>);

impl<T> Spill<T> {
    const fn new() -> Self {
        Spill(None)
    }
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.0.is_none()
    }
    fn as_slice(&self) -> &[T] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
    fn as_mut_slice(&mut self) -> &mut [T] {
        self.0.as_deref_mut().map_or(&mut [], Vec::as_mut_slice)
    }
    fn push(&mut self, item: T) {
        self.0.get_or_insert_with(Box::default).push(item);
    }
    /// Removes the item at `index` (it must be there).
    fn remove(&mut self, index: usize) -> T {
        let list = self.0.as_mut().expect("an item to remove");
        let item = list.remove(index);
        if list.is_empty() {
            self.0 = None;
        }
        item
    }
}

/// The subscriptions of one message type on one address, in order: the
/// first, then the others (most channels have one: no allocation, and no
/// branch on a spilled small vector when routing).
struct Channel {
    type_id: TypeId,
    first: Key,
    more: Spill<Key>,
}

impl Channel {
    fn new(type_id: TypeId, sub: Key) -> Channel {
        Channel {
            type_id,
            first: sub,
            more: Spill::new(),
        }
    }

    fn subs(&self) -> impl Iterator<Item = Key> + '_ {
        std::iter::once(self.first).chain(self.more.as_slice().iter().copied())
    }

    fn holds(&self, sub: Key) -> bool {
        self.first == sub || self.more.as_slice().contains(&sub)
    }

    /// Removes `sub` (it must be here); `true` if the channel is now empty.
    fn remove(&mut self, sub: Key) -> bool {
        if self.first == sub {
            if self.more.is_empty() {
                return true;
            }
            self.first = self.more.remove(0);
        } else if let Some(pos) = self.more.as_slice().iter().position(|s| *s == sub) {
            self.more.remove(pos);
        }
        false
    }
}

/// A type no message has, marking an address with no channel.
enum NoType {}

/// One address: its first channel inline (a vacant one has the type
/// `NoType`), the others apart.
struct Slot<T> {
    data: T,
    first: Channel,
    more: Spill<Channel>,
}

impl<T> Slot<T> {
    #[inline(always)]
    fn channel(&self, type_id: TypeId) -> Option<&Channel> {
        if self.first.type_id == type_id {
            Some(&self.first)
        } else if self.more.is_empty() {
            None
        } else {
            self.more.as_slice().iter().find(|c| c.type_id == type_id)
        }
    }

    fn channels(&self) -> impl Iterator<Item = &Channel> {
        let first = (self.first.type_id != TypeId::of::<NoType>()).then_some(&self.first);
        first.into_iter().chain(self.more.as_slice().iter())
    }
}

/// One subscription: where it is, whose it is, and its handler (absent
/// while it runs).
struct Sub<H> {
    address: Key,
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
            first: Channel::new(TypeId::of::<NoType>(), Key::NONE),
            more: Spill::new(),
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
        for channel in slot.channels() {
            for sub in channel.subs() {
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
            owner,
            handler: Some(handler),
        });
        let slot = self.slots.get_mut(address)?;
        if slot.first.type_id == type_id {
            slot.first.more.push(sub);
        } else if let Some(channel) = slot
            .more
            .as_mut_slice()
            .iter_mut()
            .find(|c| c.type_id == type_id)
        {
            channel.more.push(sub);
        } else if slot.first.type_id == TypeId::of::<NoType>() {
            slot.first = Channel::new(type_id, sub);
        } else {
            slot.more.push(Channel::new(type_id, sub));
        }
        Some(sub)
    }

    /// Removes a subscription (its handler is dropped, or, if it is
    /// running, dropped when put back); `None` if it was gone.
    pub(crate) fn unsubscribe(&mut self, sub: Key) -> Option<Removed> {
        let record = self.subs.remove(sub)?;
        if let Some(slot) = self.slots.get_mut(record.address) {
            if slot.first.holds(sub) {
                if slot.first.remove(sub) {
                    slot.first = match slot.more.is_empty() {
                        true => Channel::new(TypeId::of::<NoType>(), Key::NONE),
                        false => slot.more.remove(0),
                    };
                }
            } else if let Some(pos) = slot.more.as_slice().iter().position(|c| c.holds(sub))
                && slot.more.as_mut_slice()[pos].remove(sub)
            {
                slot.more.remove(pos);
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
        match slot.channel(type_id) {
            None => Found::NoSubscriber,
            Some(channel) if channel.more.is_empty() => Found::One(channel.first),
            Some(_) => Found::Many,
        }
    }

    /// The subscriptions to `type_id` on `address`, in subscription order (a
    /// copy: the channel may change while they run).
    pub(crate) fn subscribers(&self, address: Key, type_id: TypeId) -> SmallVec<[Key; 8]> {
        let mut subs = SmallVec::new();
        if let Some(channel) = self.slots.get(address).and_then(|s| s.channel(type_id)) {
            subs.push(channel.first);
            subs.extend_from_slice(channel.more.as_slice());
        }
        subs
    }

    /// Takes the handler of a live subscription out, to call it; `None` if
    /// the subscription is gone or its handler is out already.
    #[inline(always)]
    pub(crate) fn take_handler(&mut self, sub: Key) -> Option<H> {
        self.subs.get_mut(sub)?.handler.take()
    }

    /// Puts a handler back after its call; `false` if its subscription was
    /// removed meanwhile (the handler is then dropped here).
    #[inline(always)]
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
    fn unsubscribing_keeps_the_order_of_the_rest_in_every_channel() {
        let mut r = routes();
        let a = r.add_address(|_| "a");
        let (ta, tb, tc) = (TypeId::of::<A>(), TypeId::of::<B>(), TypeId::of::<u8>());
        let o = Key::NONE;
        let a1 = r.subscribe(a, ta, o, 1).unwrap();
        let b1 = r.subscribe(a, tb, o, 2).unwrap();
        let a2 = r.subscribe(a, ta, o, 3).unwrap();
        let c1 = r.subscribe(a, tc, o, 4).unwrap();
        let a3 = r.subscribe(a, ta, o, 5).unwrap();
        let b2 = r.subscribe(a, tb, o, 6).unwrap();
        r.unsubscribe(a1).unwrap(); // the first of the first channel
        assert_eq!(ids(&r, a, ta), [a2, a3]);
        r.unsubscribe(b2).unwrap(); // the last of another
        assert_eq!(ids(&r, a, tb), [b1]);
        r.unsubscribe(a2).unwrap();
        r.unsubscribe(a3).unwrap(); // the first channel empties: the next moves up
        assert!(matches!(r.find(a, ta), Found::NoSubscriber));
        assert_eq!(ids(&r, a, tb), [b1]);
        assert_eq!(ids(&r, a, tc), [c1]);
        let a4 = r.subscribe(a, ta, o, 7).unwrap();
        assert_eq!(ids(&r, a, ta), [a4]);
        let (_, removed) = r.remove_address(a).unwrap();
        let mut gone: Vec<Key> = removed.iter().map(|x| x.sub).collect();
        gone.sort();
        let mut expected = vec![b1, c1, a4];
        expected.sort();
        assert_eq!(gone, expected);
        assert_eq!(r.subscriptions(), 0);
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

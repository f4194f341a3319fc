//! The routing table: addresses, and who is subscribed to which message type
//! on each.
//!
//! A plain data structure: an address slot holds data of the caller's (`T`)
//! and one *channel* per subscribed message type, listing its subscriptions
//! in subscription order; a subscription holds a handler of the caller's
//! (`H`). Nothing here calls a handler: [`Routes::find`] says who should hear
//! a message, and the caller takes each handler out
//! ([`take_handler`](Routes::take_handler)) and calls it, and the handler
//! puts itself back ([`put_handler`](Routes::put_handler)). So a handler may subscribe and
//! unsubscribe while it runs: a subscription made meanwhile hears the next
//! message, and one removed meanwhile is skipped (its handler is dropped on
//! the way back).

use crate::arena::Key;
use channel::{Channel, NO_CHANNEL, Slot, Tagged};
use smallvec::SmallVec;
use std::any::TypeId;
use subs::Records;

/// What [`Routes::check_route`] says of a kept route.
pub(crate) enum Kept {
    /// It holds.
    Holds,
    /// It is live, for another address.
    Elsewhere,
    /// It is gone, or none was kept.
    Gone,
}

/// The mark of a subscription alone in its channel (besides its type's tag).
const ALONE: u32 = 1 << 31;

/// A tag for a message type: 30 bits of its `TypeId` (so a mark is never
/// the record's `END`). Two types may share a tag: a delivery checks the
/// type again. (The channels of a routing table are found by tags given
/// to one type each, this one unless another type took it first:
/// `types::Types`.)
#[inline(always)]
pub(crate) fn type_tag(type_id: TypeId) -> u32 {
    use std::hash::{Hash, Hasher};
    #[cfg(test)]
    if let Some(tag) = tests::alias(type_id) {
        return tag;
    }
    let mut folded = TypeIdHasher::default();
    type_id.hash(&mut folded);
    (folded.finish() as u32) & ((1 << 30) - 1)
}

/// `TypeId` is already a hash: fold its bits instead of hashing them again.
#[derive(Default)]
pub(crate) struct TypeIdHasher(u64);

impl std::hash::Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
    fn write_u128(&mut self, n: u128) {
        self.0 ^= n as u64 ^ (n >> 64) as u64;
    }
}

mod channel;
mod far;
mod look;
mod subs;
mod types;

use far::Far;
pub(crate) use far::{FAR, MAX_FAR, is_far};

/// One subscription: where it is, and its handler (absent while it runs).
/// Whose it is is kept apart ([`Routes`]'s `owners`): a delivery reads
/// the record, never its owner.
struct Sub<H> {
    address: Key,
    handler: Option<H>,
}

/// What a vacant record holds.
impl<H> Default for Sub<H> {
    fn default() -> Self {
        Sub {
            address: Key::NONE,
            handler: None,
        }
    }
}

/// A value per index of an arena kept beside it, in a vector that grows
/// with it (an arena hands out the index past its last one, or a freed one).
#[inline(always)]
fn put_beside<V>(values: &mut Vec<V>, idx: u32, value: V, vacant: impl Fn() -> V) {
    match values.get_mut(idx as usize) {
        Some(at) => *at = value,
        None => {
            if idx as usize != values.len() {
                fill_beside(values, idx as usize, vacant);
            }
            values.push(value);
        }
    }
}

/// Fills `values` up to `len` (not reached: an arena grows one index at a time).
#[cold]
#[inline(never)]
fn fill_beside<V>(values: &mut Vec<V>, len: usize, vacant: impl Fn() -> V) {
    values.resize_with(len, vacant);
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
    slots: Records<Slot>,
    /// The data of the address in `slots` at the same index (`None` where
    /// none is): apart from the slots, so that they stay small.
    data: Vec<Option<T>>,
    subs: Records<Sub<H>>,
    /// The owner of the subscription in `subs` at the same index.
    owners: Vec<Key>,
    far: Far<T>,
    /// The look-ahead's state (`look_ahead`).
    look: look::Look,
    /// The tags of the types subscribed to (what channels are found by).
    types: types::Types,
}

impl<T, H> Default for Routes<T, H> {
    fn default() -> Self {
        Routes {
            slots: Records::default(),
            data: Vec::new(),
            subs: Records::default(),
            owners: Vec::new(),
            far: Far::default(),
            look: look::Look::default(),
            types: types::Types::default(),
        }
    }
}

impl<T, H> Routes<T, H> {
    /// The slot of a live address, with its first channel's tag: in the
    /// records, else (cold) a far one.
    #[inline(always)]
    fn slot(&self, key: Key) -> Option<(u32, &Slot)> {
        match self.slots.get_with_mark(key) {
            Some(slot) => Some(slot),
            None => self.far.get(key),
        }
    }

    /// As [`slot`](Self::slot), mutable (a far key misses the records: its
    /// index is past the end).
    #[inline(always)]
    fn slot_mut(&mut self, key: Key) -> Option<(&mut u32, &mut Slot)> {
        match self.slots.get_mut_with_mark(key) {
            Some(slot) => Some(slot),
            None => self.far.get_mut(key),
        }
    }

    /// Adds an address whose data is made from its key.
    pub(crate) fn add_address(&mut self, make: impl FnOnce(Key) -> T) -> Key {
        let key = self.slots.insert(Slot::new());
        debug_assert!(!is_far(key), "2^31 live addresses");
        put_beside(&mut self.data, key.idx(), Some(make(key)), || None);
        key
    }

    /// `true` if an address can be added at the far key `key` (its slot is free).
    pub(crate) fn far_vacant(&self, key: Key) -> bool {
        self.far.vacant(key)
    }

    /// Adds an address at the far key `key` (see [`far_vacant`](Self::far_vacant));
    /// `false` (nothing added) if it cannot be there.
    pub(crate) fn add_far_address(&mut self, key: Key, data: T) -> bool {
        if !self.far_vacant(key) {
            return false;
        }
        self.far.insert(key, Slot::new(), data);
        true
    }

    /// Gives back the tables beside the records once these are empty (as
    /// they give theirs back: `Records::remove`).
    #[inline(always)]
    fn trim_beside(&mut self) {
        if self.subs.len() == 0 {
            self.owners = Vec::new();
        }
        if self.slots.len() == 0 {
            self.data = Vec::new();
        }
    }

    /// The data of an address, if it is live.
    #[inline(always)]
    pub(crate) fn address(&self, key: Key) -> Option<&T> {
        match self.slots.get(key).is_some() {
            true => self.data[key.idx() as usize].as_ref(),
            false => self.far.data(key),
        }
    }

    /// The data of an address, if it is live.
    pub(crate) fn address_mut(&mut self, key: Key) -> Option<&mut T> {
        match self.slots.get(key).is_some() {
            true => self.data[key.idx() as usize].as_mut(),
            false => self.far.data_mut(key),
        }
    }

    /// Removes an address and every subscription on it (their handlers are
    /// dropped, except one that is running: it is dropped when put back).
    pub(crate) fn remove_address(&mut self, key: Key) -> Option<(T, SmallVec<[Removed; 2]>)> {
        let (first, slot, data) = match self.slots.get_with_mark(key) {
            Some((first, _)) => {
                let slot = self.slots.remove(key)?;
                (first, slot, self.data[key.idx() as usize].take()?)
            }
            None => self.far.remove(key)?,
        };
        let mut removed = SmallVec::new();
        for channel in slot.channels(first) {
            for sub in channel.subs() {
                if self.subs.remove(sub).is_some() {
                    removed.push(Removed {
                        sub,
                        address: key,
                        owner: self.owners[sub.idx() as usize],
                    });
                }
            }
        }
        self.trim_beside();
        Some((data, removed))
    }

    /// [`remove_address`](Self::remove_address) for an address (not a far
    /// one) without subscriptions, the usual end of a plain actor: its
    /// data. `None`: nothing was removed (gone, far, or subscribed to).
    pub(crate) fn remove_unsubscribed(&mut self, key: Key) -> Option<T> {
        let (first, slot) = self.slots.get_with_mark(key)?;
        if !slot.is_unsubscribed(first) {
            return None;
        }
        self.slots.remove(key)?;
        let data = self.data[key.idx() as usize].take();
        self.trim_beside();
        data
    }

    /// [`remove_unsubscribed`](Self::remove_unsubscribed), its data dropped
    /// at once (not moved out): `true` if it was removed.
    pub(crate) fn discard_unsubscribed(&mut self, key: Key) -> bool {
        // An unsubscribed slot is a new one: nothing in it to drop.
        if !(self
            .slots
            .get_with_mark(key)
            .is_some_and(|(first, slot)| slot.is_unsubscribed(first))
            && self.slots.remove_default(key))
        {
            return false;
        }
        self.data[key.idx() as usize] = None;
        self.trim_beside();
        true
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
        self.slot(address)?;
        // The exact type's tag: its channel holds that type's only.
        let tag = self.types.give(type_id);
        let sub = self.subs.insert(Sub {
            address,
            handler: Some(handler),
        });
        put_beside(&mut self.owners, sub.idx(), owner, || Key::NONE);
        let (first, slot) = self.slot_mut(address)?;
        // The subscription that was alone in the channel and is no longer
        // (or, for a new channel, the new one, alone in it).
        let (alone, now) = if *first == tag {
            (slot.first.join(sub), false)
        } else if let Some(c) = slot.more.as_mut_slice().iter_mut().find(|c| c.tag == tag) {
            (c.channel.join(sub), false)
        } else if *first == NO_CHANNEL {
            *first = tag;
            slot.first = Channel::new(sub);
            (Some(sub), true)
        } else {
            slot.more.push(Tagged {
                tag,
                channel: Channel::new(sub),
            });
            (Some(sub), true)
        };
        self.subs.set_mark(sub, tag);
        if let Some(alone) = alone {
            self.subs
                .set_mark(alone, if now { tag | ALONE } else { tag });
        }
        Some(sub)
    }

    /// Removes a subscription (its handler is dropped, or, if it is
    /// running, dropped when put back); `None` if it was gone.
    pub(crate) fn unsubscribe(&mut self, sub: Key) -> Option<Removed> {
        let record = self.subs.remove(sub)?;
        let owner = self.owners[sub.idx() as usize];
        self.trim_beside();
        // The subscription left alone in its channel, if one is.
        let mut alone = None;
        if let Some((first, slot)) = self.slot_mut(record.address) {
            if slot.first.holds(sub) {
                if slot.first.remove(sub) {
                    // The next channel moves up (its tag to the record).
                    (*first, slot.first) = match slot.more.is_empty() {
                        true => (NO_CHANNEL, Channel::new(Key::NONE)),
                        false => {
                            let next = slot.more.remove(0);
                            (next.tag, next.channel)
                        }
                    };
                } else {
                    alone = slot.first.alone().map(|s| (s, *first));
                }
            } else if let Some(pos) =
                (slot.more.as_slice().iter()).position(|c| c.channel.holds(sub))
            {
                if slot.more.as_mut_slice()[pos].channel.remove(sub) {
                    slot.more.remove(pos);
                } else {
                    let c = &slot.more.as_slice()[pos];
                    alone = c.channel.alone().map(|s| (s, c.tag));
                }
            }
        }
        if let Some((alone, tag)) = alone {
            self.subs.set_mark(alone, tag | ALONE);
        }
        Some(Removed {
            sub,
            address: record.address,
            owner,
        })
    }

    /// The owner of a live subscription.
    pub(crate) fn owner(&self, sub: Key) -> Option<Key> {
        self.subs.get(sub).map(|_| self.owners[sub.idx() as usize])
    }

    /// The tag of the channels of `type_id` (exact: theirs only; no
    /// channel's if nothing was ever subscribed to it here), for
    /// [`find_tagged`](Self::find_tagged) and
    /// [`subscribers_tagged`](Self::subscribers_tagged). A lookup in a
    /// table of the types: [`type_tag`] is the fast one, not exact.
    #[inline]
    pub(crate) fn tag_of(&self, type_id: TypeId) -> u32 {
        self.types.tag(type_id)
    }

    /// Who hears a message of `type_id` sent to `address`.
    #[inline]
    pub(crate) fn find(&self, address: Key, type_id: TypeId) -> Found {
        self.find_tagged(address, self.tag_of(type_id))
    }

    /// Who hears a message of a type tagged `tag` sent to `address`: of
    /// that type exactly for its [`tag_of`](Self::tag_of); for its
    /// [`type_tag`] (no lookup: the fast path), a channel that may be
    /// another type's sharing that tag (its handlers check the type, and
    /// say `Next::Reroute` if it is not theirs).
    #[inline(always)]
    pub(crate) fn find_tagged(&self, address: Key, tag: u32) -> Found {
        let Some((first, slot)) = self.slot(address) else {
            return Found::Stale;
        };
        match slot.channel(first, tag) {
            None => Found::NoSubscriber,
            Some(channel) if channel.more.is_empty() => Found::One(channel.first),
            Some(_) => Found::Many,
        }
    }

    /// The subscriptions to `type_id` on `address`, in subscription order (a
    /// copy: the channel may change while they run).
    #[cfg(test)]
    pub(crate) fn subscribers(&self, address: Key, type_id: TypeId) -> SmallVec<[Key; 8]> {
        self.subscribers_tagged(address, self.tag_of(type_id))
    }

    /// [`subscribers`](Self::subscribers) by a type's exact tag
    /// ([`tag_of`](Self::tag_of)).
    pub(crate) fn subscribers_tagged(&self, address: Key, tag: u32) -> SmallVec<[Key; 8]> {
        let Some(channel) = self.slot(address).and_then(|(f, s)| s.channel(f, tag)) else {
            return SmallVec::new();
        };
        let more = channel.more.as_slice();
        if more.len() < 8 {
            // Copied key by key into the inline buffer: `extend_from_slice`
            // calls `memmove` and `memcpy` for a handful of keys, and so
            // does a loop over `more` (a key is one word): seven checked
            // stores instead.
            let mut buf = [Key::NONE; 8];
            buf[0] = channel.first;
            for i in 0..7 {
                if i < more.len() {
                    buf[1 + i] = more[i];
                }
            }
            return SmallVec::from_buf_and_len(buf, 1 + more.len());
        }
        channel.subs().collect()
    }

    /// Takes the handler of a live subscription out, to call it; `None` if
    /// the subscription is gone or its handler is out already.
    #[inline(always)]
    pub(crate) fn take_handler(&mut self, sub: Key) -> Option<H> {
        self.subs.get_mut(sub)?.handler.take()
    }

    /// The first subscription to `type_id` on `address`, or `Key::NONE`
    /// (none, or no such address): a route for a sender to keep
    /// ([`check_route`](Self::check_route)) and put in its messages, for their
    /// deliveries to check ([`take_route`](Self::take_route)).
    pub(crate) fn first_of(&self, address: Key, type_id: TypeId) -> Key {
        let tag = self.tag_of(type_id);
        self.slot(address)
            .and_then(|(first, s)| s.channel(first, tag))
            .map_or(Key::NONE, |c| c.first)
    }

    /// Whether a route kept from an earlier [`first_of`](Self::first_of)
    /// holds for a message to `address`: `sub` is live and on `address` (a
    /// subscription keeps its address and type for life). Its type is not
    /// compared here: the delivery takes the route only for a mark of the
    /// message's tag ([`take_route`](Self::take_route)) and routes it
    /// otherwise, so a route for another type costs that message the
    /// routing at delivery, never its destination (w1: four instructions
    /// fewer per send, docs/benchmarks.md). A subscription is marked with
    /// its type's tag in this table ([`tag_of`](Self::tag_of)): for a type
    /// that came second to its `type_tag`, another one, so a route to it is
    /// never taken and its messages are routed at their delivery.
    #[inline(always)]
    pub(crate) fn check_route(&self, sub: Key, address: Key) -> Kept {
        match self.subs.get_with_mark(sub) {
            // The address compared as one word: one compare, not two.
            Some((_, s)) if s.address.to_word() == address.to_word() => Kept::Holds,
            Some(_) => Kept::Elsewhere,
            None => Kept::Gone,
        }
    }

    /// Gives `sub` the mark of a type tagged `tag` (alone in its channel):
    /// for a test of two types that share a tag.
    #[cfg(test)]
    pub(crate) fn retag(&mut self, sub: Key, tag: u32) {
        self.subs.set_mark(sub, tag | ALONE);
    }

    /// [`take_handler`](Self::take_handler) for a subscription that is
    /// still the only one of its channel, for a type whose tag is `tag`:
    /// `None` if it is gone, has company, is for another tag, or its
    /// handler is out. A subscription keeps its address and type for
    /// life, so one found by [`first_of`](Self::first_of) for (address,
    /// `M`) that is still alone is what [`find`](Self::find) would say now
    /// (`Found::One`), if its type is `M`: two types may share a tag, so
    /// the handler checks the type again (and, if it is not its own, sets
    /// `Next::Reroute`). The test is the record's mark (its type's tag and
    /// whether it is alone, kept by `subscribe` and `unsubscribe`), read
    /// beside its generation.
    #[inline(always)]
    pub(crate) fn take_route(&mut self, sub: Key, tag: u32) -> Option<H> {
        self.subs.get_mut_marked(sub, tag | ALONE)?.handler.take()
    }

    /// Puts a handler back after its call; `false` if its subscription was
    /// removed meanwhile (the handler is then dropped here).
    #[inline(always)]
    pub(crate) fn put_handler(&mut self, sub: Key, handler: H) -> bool {
        match self.subs.get_mut(sub) {
            Some(record) => {
                // The record's handler is out (this one): nothing to drop
                // (the key matched, so it is the same subscription, and only
                // the caller holds its handler).
                let out = record.handler.replace(handler);
                debug_assert!(out.is_none(), "a handler was put back twice");
                std::mem::forget(out);
                true
            }
            None => false,
        }
    }

    /// Live addresses.
    pub(crate) fn addresses(&self) -> usize {
        self.slots.len() + self.far.len()
    }

    /// Live subscriptions.
    pub(crate) fn subscriptions(&self) -> usize {
        self.subs.len()
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) use tests::share_tag;

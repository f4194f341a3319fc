//! A channel of the routing table: the subscriptions of one message type
//! on one address, in order; and `Spill`, the list kept in a word.

use crate::arena::Key;
use std::any::TypeId;

/// A list that is usually empty: one word, and no allocation while empty
/// (hence the box around the `Vec`: three words would be kept in every
/// address otherwise).
#[allow(clippy::box_collection)]
pub(super) struct Spill<T>(Option<Box<Vec<T>>>);

impl<T> Spill<T> {
    pub(super) const fn new() -> Self {
        Spill(None)
    }
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_none()
    }
    pub(super) fn as_slice(&self) -> &[T] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
    pub(super) fn as_mut_slice(&mut self) -> &mut [T] {
        self.0.as_deref_mut().map_or(&mut [], Vec::as_mut_slice)
    }
    pub(super) fn push(&mut self, item: T) {
        self.0.get_or_insert_with(Box::default).push(item);
    }
    /// Removes the item at `index` (it must be there).
    pub(super) fn remove(&mut self, index: usize) -> T {
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
pub(super) struct Channel {
    pub(super) type_id: TypeId,
    pub(super) first: Key,
    pub(super) more: Spill<Key>,
}

impl Channel {
    pub(super) fn new(type_id: TypeId, sub: Key) -> Channel {
        Channel {
            type_id,
            first: sub,
            more: Spill::new(),
        }
    }

    pub(super) fn subs(&self) -> impl Iterator<Item = Key> + '_ {
        std::iter::once(self.first).chain(self.more.as_slice().iter().copied())
    }

    pub(super) fn holds(&self, sub: Key) -> bool {
        self.first == sub || self.more.as_slice().contains(&sub)
    }

    /// Adds `sub` after the others; the subscription that was alone here
    /// until now, if one was.
    pub(super) fn join(&mut self, sub: Key) -> Option<Key> {
        let was_alone = self.alone();
        self.more.push(sub);
        was_alone
    }

    /// The one subscription here, if there is one only.
    pub(super) fn alone(&self) -> Option<Key> {
        self.more.is_empty().then_some(self.first)
    }

    /// Removes `sub` (it must be here); `true` if the channel is now empty.
    pub(super) fn remove(&mut self, sub: Key) -> bool {
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

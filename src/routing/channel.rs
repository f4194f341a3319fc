//! An address's slot in the routing table, its channels (the
//! subscriptions of one message type on the address, in order), and
//! `Spill`, the list kept in a word.

use crate::arena::Key;

/// The first-channel tag of a slot with no channel (the record's mark
/// until one is set: `subs::Records`); no type's tag.
pub(super) const NO_CHANNEL: u32 = u32::MAX;

/// One address's channels: its first inline, the others apart. The first
/// one's tag is kept in the slot's record, beside its generation (its
/// mark: [`NO_CHANNEL`] while there is no channel), so that a slot's
/// record is four words (two per cache line). The address's data is kept
/// apart too (`Routes`'s `data`): a delivery reads the slot, never the
/// data, and deliveries to many addresses in turn read only the slots'
/// bytes.
pub(super) struct Slot {
    pub(super) first: Channel,
    pub(super) more: Spill<Tagged>,
}

/// A channel after an address's first, with its type's tag.
pub(super) struct Tagged {
    pub(super) tag: u32,
    pub(super) channel: Channel,
}

impl Default for Slot {
    /// A vacant slot's, and a new address's: no channel.
    fn default() -> Slot {
        Slot::new()
    }
}

impl Slot {
    pub(super) fn new() -> Slot {
        Slot {
            first: Channel::new(Key::NONE),
            more: Spill::new(),
        }
    }

    /// The channel of the type tagged `tag`, the first one's being `first`.
    #[inline(always)]
    pub(super) fn channel(&self, first: u32, tag: u32) -> Option<&Channel> {
        if first == tag {
            Some(&self.first)
        } else if self.more.is_empty() {
            None
        } else {
            self.more
                .as_slice()
                .iter()
                .find(|c| c.tag == tag)
                .map(|c| &c.channel)
        }
    }

    /// `true` if nothing is subscribed on this address (its first
    /// channel's tag being `first`).
    #[inline(always)]
    pub(super) fn is_unsubscribed(&self, first: u32) -> bool {
        first == NO_CHANNEL && self.more.is_empty()
    }

    pub(super) fn channels(&self, first: u32) -> impl Iterator<Item = &Channel> {
        let first = (first != NO_CHANNEL).then_some(&self.first);
        first
            .into_iter()
            .chain(self.more.as_slice().iter().map(|c| &c.channel))
    }
}

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
/// branch on a spilled small vector when routing). Its type's tag is kept
/// by its slot.
pub(super) struct Channel {
    pub(super) first: Key,
    pub(super) more: Spill<Key>,
}

impl Channel {
    pub(super) fn new(sub: Key) -> Channel {
        Channel {
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

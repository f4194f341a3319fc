//! Far address keys: chosen outside the routing table's arena (reserved by
//! another thread for a child it spawns here), and the slots kept at them.

use super::channel::{NO_CHANNEL, Slot};
use crate::arena::Key;

/// Address keys from this index up (below `FAR + MAX_FAR`) are *far*: chosen
/// outside the table (reserved by another thread for a child it spawns
/// here, see `LocalityShared::reserve_key`), not handed out by its arena,
/// whose indices stay below 2^31 while fewer addresses live.
pub(crate) const FAR: u32 = 1 << 31;
/// How many far keys may be reserved at once.
pub(crate) const MAX_FAR: u32 = 1 << 30;

/// `true` for a far key (see [`FAR`]).
#[inline]
pub(crate) fn is_far(key: Key) -> bool {
    key.idx().wrapping_sub(FAR) < MAX_FAR
}

/// Addresses at far keys: slot `idx - FAR`, with the key's generation
/// and its first channel's tag. Never longer than the highest far index
/// in use (plus one).
pub(super) struct Far<T> {
    slots: Vec<Option<(u32, u32, Slot, T)>>,
    len: usize,
}

impl<T> Default for Far<T> {
    fn default() -> Self {
        Far {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Far<T> {
    #[cold]
    #[inline(never)]
    pub(super) fn get(&self, key: Key) -> Option<(u32, &Slot)> {
        self.entry(key).map(|(tag, slot, _)| (tag, slot))
    }

    #[cold]
    #[inline(never)]
    pub(super) fn get_mut(&mut self, key: Key) -> Option<(&mut u32, &mut Slot)> {
        self.entry_mut(key).map(|(tag, slot, _)| (tag, slot))
    }

    /// The data of the far address at `key`.
    #[cold]
    #[inline(never)]
    pub(super) fn data(&self, key: Key) -> Option<&T> {
        self.entry(key).map(|(_, _, data)| data)
    }

    /// The data of the far address at `key`.
    #[cold]
    #[inline(never)]
    pub(super) fn data_mut(&mut self, key: Key) -> Option<&mut T> {
        self.entry_mut(key).map(|(_, _, data)| data)
    }

    fn entry(&self, key: Key) -> Option<(u32, &Slot, &T)> {
        match self.slots.get(key.idx().wrapping_sub(FAR) as usize)? {
            Some((generation, tag, slot, data)) if *generation == key.generation() => {
                Some((*tag, slot, data))
            }
            _ => None,
        }
    }

    fn entry_mut(&mut self, key: Key) -> Option<(&mut u32, &mut Slot, &mut T)> {
        match self.slots.get_mut(key.idx().wrapping_sub(FAR) as usize)? {
            Some((generation, tag, slot, data)) if *generation == key.generation() => {
                Some((tag, slot, data))
            }
            _ => None,
        }
    }

    /// Removes the far address at `key`: its first channel's tag, its
    /// slot and its data.
    pub(super) fn remove(&mut self, key: Key) -> Option<(u32, Slot, T)> {
        self.get(key)?;
        let i = (key.idx() - FAR) as usize;
        let (_, tag, slot, data) = self.slots[i].take()?;
        self.len -= 1;
        while let Some(None) = self.slots.last() {
            self.slots.pop();
        }
        Some((tag, slot, data))
    }

    /// `true` if `key` is far and its slot is free.
    pub(super) fn vacant(&self, key: Key) -> bool {
        is_far(key)
            && self
                .slots
                .get((key.idx() - FAR) as usize)
                .is_none_or(Option::is_none)
    }

    /// Puts `slot` and `data` at the far key `key` (it must be [`vacant`](Self::vacant)).
    pub(super) fn insert(&mut self, key: Key, slot: Slot, data: T) {
        debug_assert!(self.vacant(key));
        let i = (key.idx() - FAR) as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some((key.generation(), NO_CHANNEL, slot, data));
        self.len += 1;
    }

    /// Slots kept, vacant ones up to the last live one included.
    #[cfg(test)]
    pub(super) fn kept(&self) -> usize {
        self.slots.len()
    }

    /// How many far addresses live.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

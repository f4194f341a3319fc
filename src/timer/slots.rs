//! The timers' own generational storage: keys as an
//! [`Arena`](crate::arena::Arena)'s (a slot index and the generation of the
//! value stored there, from one counter; the slot freed last is reused
//! first), but a freed slot keeps a vacant record, so that a timer's record
//! is written field by field straight into its slot when it starts and read
//! there when it ends: never moved whole through the stack (a record is
//! written on every start and read on every end; a whole move was a copy
//! through the stack, with the CPU stalled on the stores it forwards).

use crate::arena::Key;

/// A record that may be vacant (its slot free).
pub(super) trait Vacancy {
    /// A vacant record.
    fn vacant() -> Self;
    fn is_vacant(&self) -> bool;
}

struct Slot<R> {
    generation: u32,
    /// A free slot: the slot freed before it (`NO_SLOT`: none).
    next_free: u32,
    record: R,
}

/// The end of the free list.
const NO_SLOT: u32 = u32::MAX;

/// Records in slots named by generational keys.
pub(super) struct Slots<R> {
    slots: Vec<Slot<R>>,
    /// The free slots, linked through `next_free`, the one freed last
    /// first (a list through the slots: no vector to push and pop).
    free: u32,
    next_generation: u32,
    len: usize,
}

impl<R> Default for Slots<R> {
    fn default() -> Self {
        Slots {
            slots: Vec::new(),
            free: NO_SLOT,
            next_generation: 0,
            len: 0,
        }
    }
}

impl<R: Vacancy> Slots<R> {
    /// A free slot for a new record, and its key: the caller fills the
    /// record (it is vacant until then).
    #[inline(always)]
    pub(super) fn insert(&mut self) -> (Key, &mut R) {
        let generation = self.next_generation;
        self.next_generation = generation.wrapping_add(1);
        self.len += 1;
        let mut idx = self.free;
        if idx as usize >= self.slots.len() {
            idx = self.grow(); // the free list was empty: it stays so
        }
        let slot = &mut self.slots[idx as usize];
        self.free = slot.next_free;
        slot.generation = generation;
        (Key::new(idx, generation), &mut slot.record)
    }

    /// A new slot at the end: its index.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) -> u32 {
        let idx = u32::try_from(self.slots.len())
            .ok()
            .filter(|&i| i != NO_SLOT)
            .expect("more than 2^32 live timers in one set");
        self.slots.push(Slot {
            generation: 0,
            next_free: NO_SLOT,
            record: R::vacant(),
        });
        idx
    }

    #[inline(always)]
    pub(super) fn get(&self, key: Key) -> Option<&R> {
        match self.slots.get(key.idx() as usize) {
            Some(s) if s.generation == key.generation() && !s.record.is_vacant() => Some(&s.record),
            _ => None,
        }
    }

    #[inline(always)]
    pub(super) fn get_mut(&mut self, key: Key) -> Option<&mut R> {
        match self.slots.get_mut(key.idx() as usize) {
            Some(s) if s.generation == key.generation() && !s.record.is_vacant() => {
                Some(&mut s.record)
            }
            _ => None,
        }
    }

    /// The record in slot `idx`, whatever its generation (for links between
    /// live records, which need none); `None` if the slot is free.
    #[inline(always)]
    pub(super) fn get_mut_at(&mut self, idx: u32) -> Option<&mut R> {
        match self.slots.get_mut(idx as usize) {
            Some(s) if !s.record.is_vacant() => Some(&mut s.record),
            _ => None,
        }
    }

    /// The key of the record in slot `idx`, if any.
    #[inline(always)]
    pub(super) fn key_at(&self, idx: u32) -> Option<Key> {
        match self.slots.get(idx as usize) {
            Some(s) if !s.record.is_vacant() => Some(Key::new(idx, s.generation)),
            _ => None,
        }
    }

    /// Frees the slot of `key` if it is current: its record, which the
    /// caller empties (makes vacant).
    #[inline(always)]
    pub(super) fn remove(&mut self, key: Key) -> Option<&mut R> {
        let slot = match self.slots.get_mut(key.idx() as usize) {
            Some(s) if s.generation == key.generation() && !s.record.is_vacant() => s,
            _ => return None,
        };
        slot.next_free = self.free;
        self.free = key.idx();
        self.len -= 1;
        Some(&mut slot.record)
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Vacancy for Option<&'static str> {
        fn vacant() -> Self {
            None
        }
        fn is_vacant(&self) -> bool {
            self.is_none()
        }
    }

    fn insert(s: &mut Slots<Option<&'static str>>, value: &'static str) -> Key {
        let (key, record) = s.insert();
        *record = Some(value);
        key
    }

    fn remove(s: &mut Slots<Option<&'static str>>, key: Key) -> Option<&'static str> {
        s.remove(key).and_then(Option::take)
    }

    #[test]
    fn a_stale_key_never_reaches_a_reused_slot() {
        let mut s = Slots::default();
        let k1 = insert(&mut s, "first");
        assert_eq!(remove(&mut s, k1), Some("first"));
        assert_eq!(remove(&mut s, k1), None);
        let k2 = insert(&mut s, "second");
        assert_eq!(k1.idx(), k2.idx(), "the slot freed last is reused");
        assert_eq!(s.get(k1), None);
        assert_eq!(s.key_at(k2.idx()), Some(k2));
        assert_eq!(s.get(k2), Some(&Some("second")));
        assert_eq!(s.len(), 1);
        let k3 = insert(&mut s, "third");
        assert_ne!(k3.idx(), k2.idx());
        assert_eq!(remove(&mut s, k2), Some("second"));
        assert_eq!(s.key_at(k2.idx()), None);
        assert_eq!(s.get_mut_at(k2.idx()), None);
        assert_eq!(s.get_mut_at(k3.idx()), Some(&mut Some("third")));
        assert_eq!(s.len(), 1);
    }
}

//! The records of the routing table (its address slots, and its
//! subscriptions): a generational arena whose occupancy test is the
//! generation compare itself.
//!
//! A delivery finds its subscription's record twice (to take its handler
//! out, and to put it back), so finding one is kept to a bounds check and
//! one compare: a vacant record carries the generation [`VACANT`], which no
//! key is given, and its fields are empty (no handler), so there is no
//! occupied-or-vacant tag to test besides. Vacant records are chained
//! through their `link`, most recently freed first (as `slab` reuses them).
//!
//! A live record's `link` holds a mark of the caller's instead (see
//! [`Records::set_mark`]), so that a test of the mark reads the word beside
//! the generation.

use crate::arena::Key;

/// The generation of a vacant record (never a key's).
const VACANT: u32 = u32::MAX;
/// The end of the chain of vacant records.
const END: u32 = u32::MAX;

/// One record: live while its generation is not [`VACANT`].
pub(super) struct Record<R> {
    generation: u32,
    /// The next vacant record, while vacant; while live, its mark
    /// ([`END`] until one is set).
    link: u32,
    pub(super) value: R,
}

/// Subscription records (`R`, which has an empty value, `R::default()`,
/// kept in vacant records).
pub(super) struct Records<R> {
    records: Vec<Record<R>>,
    /// The first vacant record ([`END`]: none).
    vacant: u32,
    next_generation: u32,
    len: usize,
}

impl<R> Default for Records<R> {
    fn default() -> Self {
        Records {
            records: Vec::new(),
            vacant: END,
            next_generation: 0,
            len: 0,
        }
    }
}

impl<R: Default> Records<R> {
    /// Stores a value; its key.
    #[inline(always)]
    pub(super) fn insert(&mut self, value: R) -> Key {
        let generation = self.next_generation;
        // Skips `VACANT` when the counter wraps.
        self.next_generation = match generation.wrapping_add(1) {
            VACANT => 0,
            next => next,
        };
        let idx = if self.vacant != END {
            let idx = self.vacant;
            let record = &mut self.records[idx as usize];
            self.vacant = record.link;
            *record = Record {
                generation,
                link: END,
                value,
            };
            idx
        } else {
            let idx = u32::try_from(self.records.len())
                .ok()
                .filter(|&i| i != END)
                .expect("fewer than 2^32 - 1 subscriptions at once");
            self.records.push(Record {
                generation,
                link: END,
                value,
            });
            idx
        };
        self.len += 1;
        Key::new(idx, generation)
    }

    /// The value of a live key.
    #[inline(always)]
    pub(super) fn get(&self, key: Key) -> Option<&R> {
        match self.records.get(key.idx() as usize) {
            Some(r) if r.generation == key.generation() => Some(&r.value),
            _ => None,
        }
    }

    /// The value of a live key.
    #[inline(always)]
    pub(super) fn get_mut(&mut self, key: Key) -> Option<&mut R> {
        match self.records.get_mut(key.idx() as usize) {
            Some(r) if r.generation == key.generation() => Some(&mut r.value),
            _ => None,
        }
    }

    /// The value of a live key, with its mark.
    #[inline(always)]
    pub(super) fn get_with_mark(&self, key: Key) -> Option<(u32, &R)> {
        match self.records.get(key.idx() as usize) {
            Some(r) if r.generation == key.generation() => Some((r.link, &r.value)),
            _ => None,
        }
    }

    /// The value of a live key, with its mark (which may be set to `END`
    /// here: none).
    #[inline(always)]
    pub(super) fn get_mut_with_mark(&mut self, key: Key) -> Option<(&mut u32, &mut R)> {
        match self.records.get_mut(key.idx() as usize) {
            Some(r) if r.generation == key.generation() => Some((&mut r.link, &mut r.value)),
            _ => None,
        }
    }

    /// The value of a live key whose mark is `mark`.
    #[inline(always)]
    pub(super) fn get_mut_marked(&mut self, key: Key, mark: u32) -> Option<&mut R> {
        match self.records.get_mut(key.idx() as usize) {
            Some(r) if r.generation == key.generation() && r.link == mark => Some(&mut r.value),
            _ => None,
        }
    }

    /// Prefetches the record of `key` (if in range; live or not).
    #[inline(always)]
    pub(super) fn prefetch(&self, key: Key) {
        if let Some(record) = self.records.get(key.idx() as usize) {
            crate::queue::prefetch(record);
        }
    }

    /// Sets the mark of a live key (`END` until set; a mark must not be `END`).
    pub(super) fn set_mark(&mut self, key: Key, mark: u32) {
        debug_assert_ne!(mark, END);
        if let Some(r) = self.records.get_mut(key.idx() as usize)
            && r.generation == key.generation()
        {
            r.link = mark;
        }
    }

    /// Removes the value of a live key (its record becomes vacant).
    pub(super) fn remove(&mut self, key: Key) -> Option<R> {
        self.vacate(key, std::mem::take)
    }

    /// Makes the record of a live key vacant, its value handed to `empty`
    /// (which must leave `R::default()` there).
    #[inline(always)]
    fn vacate<X>(&mut self, key: Key, empty: impl FnOnce(&mut R) -> X) -> Option<X> {
        let vacant = self.vacant;
        let record = self.records.get_mut(key.idx() as usize)?;
        if record.generation != key.generation() {
            return None;
        }
        record.generation = VACANT;
        record.link = vacant;
        self.vacant = key.idx();
        self.len -= 1;
        let out = empty(&mut record.value);
        if self.len == 0 {
            // None live: start afresh (and give the memory back).
            *self = Records {
                next_generation: self.next_generation,
                ..Records::default()
            };
        }
        Some(out)
    }

    /// Removes a live key whose value is known to be `R::default()`
    /// already (nothing to drop or write): `true` if it was live.
    #[inline(always)]
    pub(super) fn remove_default(&mut self, key: Key) -> bool {
        self.vacate(key, |_| ()).is_some()
    }

    /// Live values.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_key_never_reaches_a_reused_record() {
        let mut r: Records<Option<&str>> = Records::default();
        let k1 = r.insert(Some("first"));
        let k2 = r.insert(Some("second"));
        assert_eq!(r.remove(k1), Some(Some("first")));
        assert_eq!(r.get(k1), None);
        assert_eq!(r.remove(k1), None, "removed once");
        let k3 = r.insert(Some("third"));
        assert_eq!(k3.idx(), k1.idx(), "the vacant record is reused");
        assert_eq!(r.get(k1), None, "but the old key stays stale");
        assert_eq!(r.get(k3), Some(&Some("third")));
        assert_eq!(r.get(k2), Some(&Some("second")));
        assert_eq!(r.len(), 2);
        assert_eq!(r.get(Key::NONE), None);
        *r.get_mut(k2).unwrap() = None;
        assert_eq!(r.get(k2), Some(&None));
    }

    #[test]
    fn vacant_records_are_reused_last_freed_first_and_emptying_frees_them() {
        let mut r: Records<u32> = Records::default();
        let keys: Vec<Key> = (0..4).map(|i| r.insert(i)).collect();
        r.remove(keys[1]).unwrap();
        r.remove(keys[3]).unwrap();
        assert_eq!(r.insert(7).idx(), keys[3].idx());
        assert_eq!(r.insert(8).idx(), keys[1].idx());
        assert_eq!(r.insert(9).idx(), 4);
        assert_eq!(r.len(), 5);
        for k in r.records.iter().map(|x| x.generation).collect::<Vec<_>>() {
            assert_ne!(k, VACANT);
        }
        let live: Vec<Key> = (0..5u32)
            .map(|idx| Key::new(idx, r.records[idx as usize].generation))
            .collect();
        for k in live {
            r.remove(k).unwrap();
        }
        assert_eq!((r.len(), r.records.capacity()), (0, 0));
        let k = r.insert(1);
        assert_eq!(k.idx(), 0);
        assert!(
            keys.iter().all(|old| r.get(*old).is_none()),
            "generations go on"
        );
    }

    #[test]
    fn remove_default_frees_a_live_key_only() {
        let mut r: Records<u32> = Records::default();
        let k1 = r.insert(0);
        let k2 = r.insert(5);
        assert!(r.remove_default(k1));
        assert!(!r.remove_default(k1), "a stale key removes nothing");
        let k3 = r.insert(0);
        assert_eq!(k3.idx(), k1.idx(), "its record is reused");
        assert!(!r.remove_default(k1), "nor a newer key at its index");
        assert_eq!((r.len(), r.get(k3), r.get(k2)), (2, Some(&0), Some(&5)));
    }

    #[test]
    fn the_generation_counter_skips_the_vacant_mark_when_it_wraps() {
        let mut r: Records<u32> = Records {
            next_generation: VACANT - 1,
            ..Records::default()
        };
        assert_eq!(r.insert(1).generation(), VACANT - 1);
        assert_eq!(r.insert(2).generation(), 0);
    }
}

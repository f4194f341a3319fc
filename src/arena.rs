//! Generational storage over `slab`: a [`Key`] names one insertion, so a key of
//! a removed value never reaches a newer value stored in the same slot.

use slab::Slab;
use std::fmt;

/// Removes `key` from a small list of keys, if present (order is not kept).
pub(crate) fn remove_key<A: smallvec::Array<Item = Key>>(
    list: &mut smallvec::SmallVec<A>,
    key: Key,
) {
    if let Some(pos) = list.iter().position(|&k| k == key) {
        list.swap_remove(pos);
    }
}

/// A slot index plus the generation of the value stored there, kept as one
/// word (`idx` in the low half, `generation` in the high half), so that it
/// is passed and stored in one register and one 8-byte move. Aligned to 4
/// bytes, as the two `u32` fields were, so that no record holding a key
/// grows (a slab entry of 64 bytes would take 72).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
pub(crate) struct Key(u64);

impl Key {
    /// A message made by the framework itself (a timeout's response, say).
    pub(crate) const FRAMEWORK: Key = Key::new(u32::MAX, u32::MAX - 2);

    /// A sender on another locality (as seen where its message arrives).
    pub(crate) const REMOTE: Key = Key::new(u32::MAX, u32::MAX - 1);

    /// A key that no arena ever hands out (used for "no actor").
    pub(crate) const NONE: Key = Key::new(u32::MAX, u32::MAX);

    /// The key of slot `idx` holding generation `generation`.
    #[inline(always)]
    pub(crate) const fn new(idx: u32, generation: u32) -> Key {
        Key(idx as u64 | ((generation as u64) << 32))
    }

    /// The slot index (the low half).
    #[inline(always)]
    pub(crate) const fn idx(self) -> u32 {
        self.0 as u32
    }

    /// The generation (the high half).
    #[inline(always)]
    pub(crate) const fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The key as one word (`idx` in the low half): stored whole, so
    /// that a copy read back at once is one 8-byte load of one 8-byte
    /// store (two 4-byte stores read as one load stall: docs/benchmarks.md).
    #[inline(always)]
    pub(crate) const fn to_word(self) -> u64 {
        self.0
    }

    /// The key stored as [`to_word`](Self::to_word) made it.
    #[inline(always)]
    pub(crate) const fn from_word(word: u64) -> Key {
        Key(word)
    }

    pub(crate) fn is_none(self) -> bool {
        self == Key::NONE
    }
}

impl Ord for Key {
    /// By `idx`, then `generation` (as the two fields' order was).
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.idx(), self.generation()).cmp(&(other.idx(), other.generation()))
    }
}

impl PartialOrd for Key {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::hash::Hash for Key {
    /// The two halves, as the two fields were hashed (so [`KeyMap`]'s
    /// hashes, and its order of iteration, stay as they were).
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u32(self.idx());
        state.write_u32(self.generation());
    }
}

impl Default for Key {
    /// [`Key::NONE`].
    fn default() -> Self {
        Key::NONE
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.idx(), self.generation())
    }
}

/// A map by [`Key`], hashed by a multiply and a rotate per word (keys are
/// the crate's own, never an attacker's: no need for SipHash's cost).
pub(crate) type KeyMap<V> = IdMap<Key, V>;

/// A map by an id the crate makes (a [`Key`], a `RequestId`), hashed as
/// [`KeyMap`] is.
pub(crate) type IdMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// The hasher of [`KeyMap`] and [`IdMap`] (FxHash's step).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(u32::from(b));
        }
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

struct Entry<T> {
    generation: u32,
    value: T,
}

/// A slab whose keys carry a generation.
///
/// Generations come from one counter per arena, so two insertions never share a
/// key until the counter wraps after 2^32 insertions *and* lands on the same slot.
pub(crate) struct Arena<T> {
    slab: Slab<Entry<T>>,
    next_generation: u32,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            slab: Slab::new(),
            next_generation: 0,
        }
    }
}

impl<T> Arena<T> {
    /// Stores a value made from its own key.
    #[inline(always)]
    pub(crate) fn insert_with(&mut self, make: impl FnOnce(Key) -> T) -> Key {
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1);
        // `insert` takes the vacant slot `vacant_key` names (a vacant entry's
        // `insert` would look the value up again, for a reference not used).
        let idx = u32::try_from(self.slab.vacant_key())
            .expect("more than 2^32 live entries in one arena");
        let key = Key::new(idx, generation);
        let at = self.slab.insert(Entry {
            generation,
            value: make(key),
        });
        debug_assert_eq!(at, idx as usize);
        key
    }

    /// The key the next value stored gets (by [`insert`](Self::insert) or
    /// [`insert_with`](Self::insert_with)), if nothing is stored before.
    #[inline(always)]
    pub(crate) fn next_key(&self) -> Key {
        let idx = u32::try_from(self.slab.vacant_key())
            .expect("more than 2^32 live entries in one arena");
        Key::new(idx, self.next_generation)
    }

    /// Stores a value.
    #[inline(always)]
    pub(crate) fn insert(&mut self, value: T) -> Key {
        self.insert_with(|_| value)
    }

    #[inline]
    pub(crate) fn get(&self, key: Key) -> Option<&T> {
        match self.slab.get(key.idx() as usize) {
            Some(e) if e.generation == key.generation() => Some(&e.value),
            _ => None,
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        match self.slab.get_mut(key.idx() as usize) {
            Some(e) if e.generation == key.generation() => Some(&mut e.value),
            _ => None,
        }
    }

    /// The key of the value in slot `idx`, if any.
    pub(crate) fn key_at(&self, idx: u32) -> Option<Key> {
        self.slab
            .get(idx as usize)
            .map(|e| Key::new(idx, e.generation))
    }

    pub(crate) fn contains(&self, key: Key) -> bool {
        self.get(key).is_some()
    }

    /// Removes and returns the value, if the key is still current.
    #[inline(always)]
    pub(crate) fn remove(&mut self, key: Key) -> Option<T> {
        if !self.contains(key) {
            return None;
        }
        Some(self.slab.remove(key.idx() as usize).value)
    }

    /// Every live value.
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.slab.iter().map(|(_, e)| &e.value)
    }

    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_key_never_reaches_a_reused_slot() {
        let mut a = Arena::default();
        let k1 = a.insert("first");
        assert_eq!(a.remove(k1), Some("first"));
        let k2 = a.insert("second");
        assert_eq!(k1.idx(), k2.idx(), "slab reuses the slot");
        assert_eq!(a.get(k1), None);
        assert_eq!(a.remove(k1), None);
        assert_eq!(a.get(k2), Some(&"second"));
        assert_eq!(a.len(), 1);
    }

    #[test]
    fn insert_with_sees_its_own_key() {
        let mut a = Arena::default();
        let k = a.insert_with(|k| k);
        assert_eq!(a.get(k), Some(&k));
        assert!(!k.is_none());
    }
}

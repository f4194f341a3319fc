//! The hash of an entity set's keys: a folded multiply per word, seeded at
//! random per set (the construction of `foldhash`, hashbrown's default).
//! std's SipHash took about 160 instructions per message of `e2_steady`,
//! a third of the set's cost; this takes a few. It is "minimally DoS
//! resistant", as hashbrown puts it: the seed is secret and differs per set,
//! so colliding keys cannot be chosen in advance.

use std::hash::{BuildHasher, Hasher, RandomState};

const MUL: u64 = 0x5851_f42d_4c95_7f2d;
const FINAL: u64 = 0x9e37_79b9_7f4a_7c15;

/// `a * b` as 128 bits, the halves xored.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Makes [`Fold`] hashers from a random seed.
#[derive(Clone, Debug)]
pub(super) struct Seeded {
    seed: u64,
}

impl Seeded {
    pub(super) fn new() -> Self {
        Seeded {
            seed: RandomState::new().hash_one(FINAL) | 1,
        }
    }
}

impl BuildHasher for Seeded {
    type Hasher = Fold;
    #[inline]
    fn build_hasher(&self) -> Fold {
        Fold {
            state: self.seed,
            seed: self.seed,
        }
    }
}

/// One hash in the making.
pub(super) struct Fold {
    state: u64,
    seed: u64,
}

impl Hasher for Fold {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length in the top byte: "a" and "a\0" differ.
            self.write_u64(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    #[inline]
    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.state = fold(self.state ^ n, MUL);
    }
    #[inline]
    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        fold(self.state ^ self.seed.rotate_left(32), FINAL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn distinct_keys_hash_apart_and_seeds_differ() {
        let s = Seeded::new();
        let numbers: HashSet<u64> = (0..100_000u64).map(|k| s.hash_one(k)).collect();
        assert_eq!(numbers.len(), 100_000);
        let strings: HashSet<u64> = ["", "a", "a\0", "ab", "device-1", "device-10"]
            .iter()
            .map(|k| s.hash_one(k))
            .collect();
        assert_eq!(strings.len(), 6);
        // The low bits pick the bucket: they must spread too.
        let buckets: HashSet<u64> = (0..4096u64).map(|k| s.hash_one(k) & 0xfff).collect();
        assert!(buckets.len() > 2400, "{} of 4096 buckets", buckets.len());
        assert_ne!(Seeded::new().hash_one(1u64), s.hash_one(1u64));
    }
}

//! The keys an entity feeder sends to, shared by the `e1`/`e2` feeders and
//! by the stakker program in `benches/peers/stakker-entities` (which
//! includes this file), so that both walk their actors alike.

/// The keys of a round over `keys` keys from the `i`th on, in order or
/// scattered (a stride prime to `keys`, a multiple of 2 and 5 only, so
/// that neither the set nor the direct baseline walks its actors in the
/// order they were made; with `u64::MAX` keys, every key is new). Each
/// key is the last plus a step, less `keys` past the end: the division
/// is made once per batch, not per message (one per message cost
/// `e2_ordered_direct` about 7% of its rate, in the feeder).
pub(crate) struct Keys {
    next: u64,
    step: u64,
    keys: u64,
}

impl Keys {
    pub(crate) fn at(i: u64, keys: u64, in_order: bool) -> Keys {
        let (next, step) = match (keys, in_order) {
            (u64::MAX, _) => (i, 1),
            (_, true) => (i % keys, 1 % keys),
            // (i * 48_271) mod keys, one step at a time.
            (_, false) => ((i % keys).wrapping_mul(48_271) % keys, 48_271 % keys),
        };
        Keys { next, step, keys }
    }

    /// The next key.
    #[inline]
    pub(crate) fn take(&mut self) -> u64 {
        let key = self.next;
        // `next` and `step` are below `keys`: one subtraction wraps it.
        let next = key + self.step;
        self.next = if next >= self.keys {
            next - self.keys
        } else {
            next
        };
        key
    }
}

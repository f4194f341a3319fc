//! The request table: requests waiting for their response.
//!
//! A plain data structure over a generational arena, generic over what is
//! kept per request (`V`). Each request belongs to a requester, and the
//! requests of one requester are linked in a list whose head the caller
//! keeps (in the requester's record), so that adding a request, settling
//! one, and ending all the requests of a requester that goes away are O(1)
//! per request, without a scan.

use crate::arena::{Arena, Key};

struct Entry<V> {
    owner: Key,
    prev: Key,
    next: Key,
    value: V,
}

/// Pending requests, linked per requester.
pub(crate) struct Pending<V> {
    entries: Arena<Entry<V>>,
}

impl<V> Default for Pending<V> {
    fn default() -> Self {
        Pending {
            entries: Arena::default(),
        }
    }
}

impl<V> Pending<V> {
    /// Adds a request of `owner`, whose list starts at `*head` (`Key::NONE`:
    /// empty); the value is made from the request's key.
    pub(crate) fn insert_with(
        &mut self,
        owner: Key,
        head: &mut Key,
        make: impl FnOnce(Key) -> V,
    ) -> Key {
        let next = *head;
        let key = self.entries.insert_with(|key| Entry {
            owner,
            prev: Key::NONE,
            next,
            value: make(key),
        });
        if let Some(first) = self.entries.get_mut(next) {
            first.prev = key;
        }
        *head = key;
        key
    }

    /// The value of a pending request.
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut V> {
        self.entries.get_mut(key).map(|e| &mut e.value)
    }

    /// The requester of a pending request.
    pub(crate) fn owner(&self, key: Key) -> Option<Key> {
        self.entries.get(key).map(|e| e.owner)
    }

    /// Removes a pending request from its requester's list, whose head is
    /// `*head`; `None` if it is not pending.
    pub(crate) fn remove(&mut self, key: Key, head: &mut Key) -> Option<V> {
        let entry = self.entries.remove(key)?;
        match self.entries.get_mut(entry.prev) {
            Some(prev) => prev.next = entry.next,
            None => *head = entry.next,
        }
        if let Some(next) = self.entries.get_mut(entry.next) {
            next.prev = entry.prev;
        }
        Some(entry.value)
    }

    /// Removes every request of the list that starts at `head`, oldest
    /// first (the order they were added).
    pub(crate) fn drain(&mut self, mut head: Key) -> Vec<(Key, V)> {
        let mut out = Vec::new();
        while let Some(entry) = self.entries.remove(head) {
            out.push((head, entry.value));
            head = entry.next;
        }
        out.reverse();
        out
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Against a model (a list of (owner, key) per owner): inserting,
        /// removing in any order and draining keep each owner's list exact.
        #[test]
        fn keeps_each_requesters_list(ops in proptest::collection::vec((0u8..3, 0u8..3, any::<u16>()), 0..200)) {
            let mut table: Pending<u32> = Pending::default();
            let owners = [Key { idx: 1, generation: 0 }, Key { idx: 2, generation: 0 }, Key { idx: 3, generation: 0 }];
            let mut heads = [Key::NONE; 3];
            let mut model: Vec<Vec<(Key, u32)>> = vec![Vec::new(); 3];
            for (n, (kind, who, pick)) in ops.into_iter().enumerate() {
                let who = usize::from(who);
                match kind {
                    0 | 1 => {
                        let key = table.insert_with(owners[who], &mut heads[who], |_| n as u32);
                        model[who].push((key, n as u32));
                    }
                    _ if !model[who].is_empty() => {
                        let i = usize::from(pick) % model[who].len();
                        let (key, value) = model[who].remove(i);
                        prop_assert_eq!(table.owner(key), Some(owners[who]));
                        prop_assert_eq!(table.remove(key, &mut heads[who]), Some(value));
                        prop_assert_eq!(table.remove(key, &mut heads[who]), None);
                    }
                    _ => {}
                }
                prop_assert_eq!(table.len(), model.iter().map(Vec::len).sum::<usize>());
            }
            for who in 0..3 {
                let drained = table.drain(heads[who]);
                prop_assert_eq!(&drained, &model[who]);
            }
            prop_assert_eq!(table.len(), 0);
        }
    }
}

//! The entities of a set by key, with a least-recently-used list through
//! the ones that may be passivated: touching one moves it to the front in
//! O(1), the tail is the least recently used. Beside each key's index, the
//! hash table keeps a small `hot` value (what routing a message needs), so
//! that a message to a live entity reads one bucket, not the entity's
//! record too. The hash table is shared (an `Rc`) with the set's
//! routers, which read where live entities are; so are the use stamps
//! (`Uses`, by index: entities made in order are neighbours there), which
//! routers and entity refs write.

use super::hash::Seeded;
use slab::Slab;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::rc::Rc;

/// Each key's index and hot value, shared with the set's routers.
pub(super) type Index<K, H> = Rc<RefCell<HashMap<K, (u32, H), Seeded>>>;

/// A use stamp per index (0: none since the set last read it), shared with
/// the set's routers and entity refs, which write them.
pub(super) type Uses = Rc<RefCell<Vec<u64>>>;

/// No node: the end of the list.
const NIL: u32 = u32::MAX;

struct Node<K, V> {
    key: K,
    value: V,
    prev: u32,
    next: u32,
    linked: bool,
}

/// Values by key, in a slab (indices stay put while a value lives), with
/// an intrusive list of some of them in order of use, and a hot value `H`
/// per key in the hash table itself.
pub(super) struct Table<K, V, H> {
    index: Index<K, H>,
    uses: Uses,
    nodes: Slab<Node<K, V>>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
}

impl<K: Clone + Eq + Hash, V, H: Copy> Table<K, V, H> {
    pub(super) fn new() -> Self {
        Table {
            index: Rc::new(RefCell::new(HashMap::with_hasher(Seeded::new()))),
            uses: Uses::default(),
            nodes: Slab::new(),
            head: NIL,
            tail: NIL,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The index of the value of `key`.
    #[inline]
    pub(super) fn find(&self, key: &K) -> Option<u32> {
        self.index.borrow().get(key).map(|&(idx, _)| idx)
    }

    /// The hash table, to share.
    pub(super) fn index(&self) -> Index<K, H> {
        Rc::clone(&self.index)
    }

    /// The use stamps, to share.
    pub(super) fn uses(&self) -> Uses {
        Rc::clone(&self.uses)
    }

    /// Takes the use stamp of the value at `idx` (0 if none), leaving 0.
    pub(super) fn take_use(&self, idx: u32) -> u64 {
        self.uses
            .borrow_mut()
            .get_mut(idx as usize)
            .map_or(0, std::mem::take)
    }

    /// The index of the value of `key`, and its hot value.
    #[inline]
    pub(super) fn find_hot(&self, key: &K) -> Option<(u32, H)> {
        self.index.borrow().get(key).copied()
    }

    /// Sets the hot value of the value at `idx`.
    pub(super) fn set_hot(&mut self, idx: u32, hot: H) {
        if let Some(entry) = self
            .index
            .borrow_mut()
            .get_mut(&self.nodes[idx as usize].key)
        {
            entry.1 = hot;
        }
    }

    /// Adds a value (not in the list) and its hot value; `key` must be new.
    pub(super) fn insert(&mut self, key: K, value: V, hot: H) -> u32 {
        let idx = self.nodes.insert(Node {
            key: key.clone(),
            value,
            prev: NIL,
            next: NIL,
            linked: false,
        });
        let idx = u32::try_from(idx).expect("fewer than 2^32 entities in one set");
        self.index.borrow_mut().insert(key, (idx, hot));
        let mut uses = self.uses.borrow_mut();
        match uses.get_mut(idx as usize) {
            Some(stamp) => *stamp = 0,
            None => uses.resize(idx as usize + 1, 0),
        }
        idx
    }

    /// Removes the value at `idx` (and from the list); gives back memory
    /// when the table has shrunk to a quarter of its capacity.
    pub(super) fn remove(&mut self, idx: u32) -> (K, V) {
        self.unlink(idx);
        let node = self.nodes.remove(idx as usize);
        self.index.borrow_mut().remove(&node.key);
        if let Some(stamp) = self.uses.borrow_mut().get_mut(idx as usize) {
            *stamp = 0;
        }
        self.shrink();
        (node.key, node.value)
    }

    /// Removes every value, and gives back the memory.
    pub(super) fn clear(&mut self) {
        self.nodes.clear();
        self.head = NIL;
        self.tail = NIL;
        self.shrink();
    }

    fn shrink(&mut self) {
        let mut index = self.index.borrow_mut();
        if self.nodes.is_empty() {
            self.nodes = Slab::new();
            *index = HashMap::with_hasher(index.hasher().clone());
            *self.uses.borrow_mut() = Vec::new();
        } else if index.capacity() > 64 && index.len() < index.capacity() / 4 {
            let len = index.len();
            index.shrink_to(len * 2);
            // The slab cannot move its values; it shrinks past its last one.
            self.nodes.shrink_to_fit();
            let mut uses = self.uses.borrow_mut();
            uses.truncate(self.nodes.capacity());
            uses.shrink_to_fit();
        }
    }

    #[inline]
    pub(super) fn get(&self, idx: u32) -> &V {
        &self.nodes[idx as usize].value
    }

    #[inline]
    pub(super) fn get_mut(&mut self, idx: u32) -> &mut V {
        &mut self.nodes[idx as usize].value
    }

    pub(super) fn key(&self, idx: u32) -> &K {
        &self.nodes[idx as usize].key
    }

    /// Every value, for a last pass (the set's shutdown).
    pub(super) fn indices(&self) -> Vec<u32> {
        self.nodes.iter().map(|(idx, _)| idx as u32).collect()
    }

    /// Puts the value at `idx` at the front of the list (most recently
    /// used), linking it if it was not in it.
    #[inline]
    pub(super) fn touch(&mut self, idx: u32) {
        if self.head == idx {
            return;
        }
        self.unlink(idx);
        let old_head = self.head;
        let node = &mut self.nodes[idx as usize];
        node.linked = true;
        node.prev = NIL;
        node.next = old_head;
        if old_head != NIL {
            self.nodes[old_head as usize].prev = idx;
        } else {
            self.tail = idx;
        }
        self.head = idx;
    }

    /// Takes the value at `idx` out of the list (if it is in it).
    pub(super) fn unlink(&mut self, idx: u32) {
        let node = &mut self.nodes[idx as usize];
        if !node.linked {
            return;
        }
        node.linked = false;
        let (prev, next) = (node.prev, node.next);
        node.prev = NIL;
        node.next = NIL;
        match prev {
            NIL => self.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
    }

    /// The least recently used value in the list.
    pub(super) fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(t: &Table<u32, (), ()>) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = t.head;
        while at != NIL {
            out.push(*t.key(at));
            at = t.nodes[at as usize].next;
        }
        out
    }

    #[test]
    fn touching_moves_to_the_front_and_the_tail_is_the_least_recently_used() {
        let mut t = Table::new();
        let a = t.insert(1, (), ());
        let b = t.insert(2, (), ());
        let c = t.insert(3, (), ());
        assert_eq!(t.tail(), None, "nothing is in the list until touched");
        t.touch(a);
        t.touch(b);
        t.touch(c);
        assert_eq!(order(&t), [3, 2, 1]);
        assert_eq!(t.tail(), Some(a));
        t.touch(a);
        assert_eq!(order(&t), [1, 3, 2]);
        t.unlink(c);
        assert_eq!(order(&t), [1, 2]);
        assert_eq!(t.remove(b), (2, ()));
        assert_eq!(order(&t), [1]);
        assert_eq!(t.tail(), Some(a));
        assert_eq!(t.find(&3), Some(c));
        t.remove(a);
        t.remove(c);
        assert_eq!((t.len(), t.tail(), t.find(&1)), (0, None, None));
    }

    #[test]
    fn a_table_that_empties_gives_its_memory_back() {
        let mut t: Table<u32, (), ()> = Table::new();
        let all: Vec<u32> = (0..1000).map(|k| t.insert(k, (), ())).collect();
        for idx in all {
            t.touch(idx);
        }
        for k in 0..1000 {
            let idx = t.find(&k).unwrap();
            t.remove(idx);
        }
        assert_eq!(t.index.borrow().capacity(), 0);
        assert_eq!(t.nodes.capacity(), 0);
        assert_eq!(t.uses.borrow().capacity(), 0);
    }
}

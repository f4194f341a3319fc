//! Timers: one list per distinct duration, plus an indexed heap.
//!
//! A plain data structure over a generational arena, generic over what a
//! timer does when it fires (`T`). Most timers of a program use a few
//! durations (a request timeout, a tick): the timers of one duration are due
//! in the order they were started, since the clock never goes back, so each
//! such list is a FIFO with O(1) start and O(1) cancel (doubly linked through
//! the arena). Timers of a duration that has no list (more than
//! [`MAX_LISTS`] durations in use at once) go to an indexed binary heap,
//! O(log n). Either way they fire in deadline order, ties in start order,
//! and a cancelled timer leaves nothing behind and never fires.

use crate::arena::{Arena, Key};
use smallvec::SmallVec;
use std::fmt;
use std::time::{Duration, Instant};

/// Names a timer started by [`Context::start_timer`](crate::Context::start_timer).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TimerId(pub(crate) Key);

impl fmt::Display for TimerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timer#{}.{}", self.0.idx, self.0.generation)
    }
}

/// How many durations get a list of their own at once.
pub(crate) const MAX_LISTS: usize = 8;

/// Where a pending timer is kept.
#[derive(Clone, Copy)]
enum Place {
    Heap(usize),
    List { list: u8, prev: Key, next: Key },
}

/// A pending timer.
pub(crate) struct Entry<T> {
    pub(crate) deadline: Instant,
    seq: u64,
    place: Place,
    pub(crate) owner: Key,
    pub(crate) action: T,
}

/// The timers of one duration, oldest first.
struct List {
    after: Duration,
    head: Key,
    tail: Key,
}

impl List {
    fn is_empty(&self) -> bool {
        self.head.is_none()
    }
}

/// Every pending timer of a locality.
pub(crate) struct Timers<T> {
    entries: Arena<Entry<T>>,
    lists: SmallVec<[List; 2]>,
    heap: Vec<Key>,
    seq: u64,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Timers {
            entries: Arena::default(),
            lists: SmallVec::new(),
            heap: Vec::new(),
            seq: 0,
        }
    }
}

impl<T> Timers<T> {
    /// Starts a timer due at `now + after` (`after` as given, so that timers
    /// of one duration share a list; `deadline` must be `now + after`,
    /// saturated as the caller wishes).
    pub(crate) fn start(
        &mut self,
        deadline: Instant,
        after: Duration,
        owner: Key,
        action: T,
    ) -> Key {
        let seq = self.seq;
        self.seq += 1;
        match self.list_for(after) {
            Some(list) => {
                let tail = self.lists[list].tail;
                let key = self.entries.insert(Entry {
                    deadline,
                    seq,
                    place: Place::List {
                        list: list as u8,
                        prev: tail,
                        next: Key::NONE,
                    },
                    owner,
                    action,
                });
                match self.entries.get_mut(tail) {
                    Some(Entry {
                        place: Place::List { next, .. },
                        ..
                    }) => *next = key,
                    _ => self.lists[list].head = key,
                }
                self.lists[list].tail = key;
                key
            }
            None => {
                let pos = self.heap.len();
                let key = self.entries.insert(Entry {
                    deadline,
                    seq,
                    place: Place::Heap(pos),
                    owner,
                    action,
                });
                self.heap.push(key);
                self.sift_up(pos);
                key
            }
        }
    }

    /// The list of timers of duration `after`: the one it has, or an empty
    /// one taken for it; `None` if every list is in use by other durations.
    #[inline]
    fn list_for(&mut self, after: Duration) -> Option<usize> {
        if let Some(i) = self.lists.iter().position(|l| l.after == after) {
            return Some(i);
        }
        let free = self.lists.iter().position(List::is_empty);
        let i = match free {
            Some(i) => i,
            None if self.lists.len() < MAX_LISTS => {
                self.lists.push(List {
                    after,
                    head: Key::NONE,
                    tail: Key::NONE,
                });
                self.lists.len() - 1
            }
            None => return None,
        };
        self.lists[i].after = after;
        Some(i)
    }

    /// Removes a pending timer; `None` if it already fired or was cancelled.
    pub(crate) fn cancel(&mut self, key: Key) -> Option<Entry<T>> {
        let place = self.entries.get(key)?.place;
        match place {
            Place::Heap(pos) => self.remove_at(pos),
            Place::List { list, prev, next } => self.unlink(list, prev, next),
        }
        self.entries.remove(key)
    }

    fn unlink(&mut self, list: u8, prev: Key, next: Key) {
        let list = &mut self.lists[usize::from(list)];
        match self.entries.get_mut(prev) {
            Some(Entry {
                place: Place::List { next: n, .. },
                ..
            }) => *n = next,
            _ => list.head = next,
        }
        match self.entries.get_mut(next) {
            Some(Entry {
                place: Place::List { prev: p, .. },
                ..
            }) => *p = prev,
            _ => list.tail = prev,
        }
    }

    /// A mark for [`pop_due`](Timers::pop_due): timers started from now on
    /// are not due in the round that took it.
    pub(crate) fn round(&self) -> u64 {
        self.seq
    }

    /// The earliest pending timer: its key, deadline and start sequence.
    fn earliest(&self) -> Option<(Key, Instant, u64)> {
        let heads = self.lists.iter().map(|l| l.head);
        let top = self.heap.first().copied();
        heads
            .chain(top)
            .filter_map(|key| self.entries.get(key).map(|e| (key, e.deadline, e.seq)))
            .min_by_key(|&(_, deadline, seq)| (deadline, seq))
    }

    /// Removes and returns the earliest timer if it is due at `now` and was
    /// started before `round` was taken.
    pub(crate) fn pop_due(&mut self, now: Instant, round: u64) -> Option<(Key, Entry<T>)> {
        let (key, deadline, seq) = self.earliest()?;
        if deadline > now || seq >= round {
            return None;
        }
        self.cancel(key).map(|e| (key, e))
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.earliest().map(|(_, deadline, _)| deadline)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn owner(&self, key: Key) -> Option<Key> {
        self.entries.get(key).map(|e| e.owner)
    }

    fn entry(&self, key: Key) -> &Entry<T> {
        self.entries.get(key).expect("heap holds only live timers")
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (a, b) = (self.entry(self.heap[a]), self.entry(self.heap[b]));
        (a.deadline, a.seq) < (b.deadline, b.seq)
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        for pos in [a, b] {
            let key = self.heap[pos];
            if let Some(e) = self.entries.get_mut(key) {
                e.place = Place::Heap(pos);
            }
        }
    }

    fn remove_at(&mut self, pos: usize) {
        let last = self.heap.len() - 1;
        self.swap(pos, last);
        self.heap.pop();
        if pos < self.heap.len() {
            self.sift_down(pos);
            self.sift_up(pos);
        }
    }

    fn sift_up(&mut self, mut pos: usize) {
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if !self.less(pos, parent) {
                break;
            }
            self.swap(pos, parent);
            pos = parent;
        }
    }

    fn sift_down(&mut self, mut pos: usize) {
        loop {
            let (l, r) = (2 * pos + 1, 2 * pos + 2);
            let mut min = pos;
            if l < self.heap.len() && self.less(l, min) {
                min = l;
            }
            if r < self.heap.len() && self.less(r, min) {
                min = r;
            }
            if min == pos {
                return;
            }
            self.swap(pos, min);
            pos = min;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fired(t: &mut Timers<u32>, now: Instant) -> Vec<Key> {
        std::iter::from_fn(|| t.pop_due(now, u64::MAX).map(|(k, _)| k)).collect()
    }

    fn start(t: &mut Timers<u32>, t0: Instant, now_ms: u64, after_ms: u64) -> Key {
        let after = Duration::from_millis(after_ms);
        let deadline = t0 + Duration::from_millis(now_ms) + after;
        t.start(deadline, after, Key::NONE, 0)
    }

    #[test]
    fn fire_in_deadline_order_ties_in_start_order() {
        let t0 = Instant::now();
        let mut t = Timers::default();
        let ms = |n| t0 + Duration::from_millis(n);
        let keys: Vec<Key> = [30, 10, 20, 10, 5]
            .iter()
            .map(|&d| start(&mut t, t0, 0, d))
            .collect();
        assert_eq!(t.next_deadline(), Some(ms(5)));
        assert!(fired(&mut t, ms(4)).is_empty());
        assert_eq!(
            fired(&mut t, ms(20)),
            vec![keys[4], keys[1], keys[3], keys[2]]
        );
        assert_eq!(fired(&mut t, ms(100)), vec![keys[0]]);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn timers_started_in_a_round_are_not_due_in_it() {
        let t0 = Instant::now();
        let mut t = Timers::default();
        let a = start(&mut t, t0, 0, 0);
        let round = t.round();
        let b = start(&mut t, t0, 0, 0);
        assert_eq!(t.pop_due(t0, round).map(|(k, _)| k), Some(a));
        assert!(t.pop_due(t0, round).is_none(), "b waits for the next round");
        assert_eq!(t.pop_due(t0, t.round()).map(|(k, _)| k), Some(b));
    }

    #[test]
    fn more_durations_than_lists_go_to_the_heap_in_the_same_order() {
        let t0 = Instant::now();
        let mut t = Timers::default();
        let keys: Vec<Key> = (0..3 * MAX_LISTS as u64)
            .map(|i| start(&mut t, t0, 0, 100 - i))
            .collect();
        assert_eq!(t.lists.len(), MAX_LISTS);
        assert_eq!(t.heap.len(), 2 * MAX_LISTS);
        let order = fired(&mut t, t0 + Duration::from_secs(1));
        let expected: Vec<Key> = keys.iter().rev().copied().collect();
        assert_eq!(order, expected);
        // Emptied lists are reused by new durations.
        start(&mut t, t0, 0, 1000);
        assert_eq!(t.lists.len(), MAX_LISTS);
        assert!(t.heap.is_empty());
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Start at the current time with one of a few durations (or a rare one).
        Start(u8),
        Cancel(usize),
        Advance(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<u8>().prop_map(Op::Start),
            2 => any::<usize>().prop_map(Op::Cancel),
            2 => (0u8..50).prop_map(Op::Advance),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Against a model: timers fire at their deadline, in (deadline, start)
        /// order, cancelled ones never, and every one once.
        #[test]
        fn behaves_as_a_sorted_model(ops in proptest::collection::vec(op(), 0..300)) {
            let t0 = Instant::now();
            let mut t = Timers::default();
            let mut model: Vec<(u64, u64, Key)> = Vec::new(); // (deadline ms, seq, key)
            let mut started: Vec<Key> = Vec::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for op in ops {
                match op {
                    Op::Start(d) => {
                        // Mostly a few durations (lists), sometimes many (heap).
                        let after = if d < 200 { u64::from(d % 4) * 10 } else { u64::from(d) };
                        let key = start(&mut t, t0, now, after);
                        model.push((now + after, seq, key));
                        started.push(key);
                        seq += 1;
                    }
                    Op::Cancel(i) if !started.is_empty() => {
                        let key = started[i % started.len()];
                        let pending = model.iter().position(|m| m.2 == key);
                        prop_assert_eq!(t.cancel(key).is_some(), pending.is_some());
                        if let Some(p) = pending {
                            model.remove(p);
                        }
                    }
                    Op::Cancel(_) => {}
                    Op::Advance(ms) => {
                        now += u64::from(ms);
                        model.sort();
                        let due: Vec<Key> = model.iter().filter(|m| m.0 <= now).map(|m| m.2).collect();
                        model.retain(|m| m.0 > now);
                        prop_assert_eq!(fired(&mut t, t0 + Duration::from_millis(now)), due);
                    }
                }
                prop_assert_eq!(t.len(), model.len());
                let next = model.iter().map(|m| m.0).min();
                prop_assert_eq!(t.next_deadline(), next.map(|ms| t0 + Duration::from_millis(ms)));
            }
        }
    }
}

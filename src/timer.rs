//! Timers: an indexed binary heap over a generational arena.
//!
//! Timers fire in deadline order, ties in start order. Cancelling removes the
//! entry from the heap at once (O(log n)), so cancelled timers leave nothing
//! behind and a cancelled timer never fires.

use crate::arena::{Arena, Key};
use crate::locality::Core;
use std::fmt;
use std::time::Instant;

/// Names a timer started by [`Context::start_timer`](crate::Context::start_timer).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TimerId(pub(crate) Key);

impl fmt::Display for TimerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timer#{}", self.0.idx)
    }
}

/// A user callback, erased over the actor type.
pub(crate) type UserTimerFn = Box<dyn FnOnce(&mut Core, Key, TimerId)>;

/// What happens when a timer fires.
pub(crate) enum TimerAction {
    /// A user callback on the owning actor.
    User(UserTimerFn),
    /// The owner's init did not finish in time.
    InitTimeout,
    /// The owner's shutdown did not finish in time.
    ShutdownTimeout,
    /// A request of the owner got no reply in time.
    Request(Key),
    /// The owner (a supervisor) restarts its child in `slot`.
    Restart { slot: usize },
}

pub(crate) struct TimerEntry {
    pub(crate) deadline: Instant,
    seq: u64,
    heap_pos: usize,
    pub(crate) owner: Key,
    pub(crate) action: TimerAction,
}

/// Every pending timer of a locality.
#[derive(Default)]
pub(crate) struct Timers {
    entries: Arena<TimerEntry>,
    heap: Vec<Key>,
    seq: u64,
}

impl Timers {
    pub(crate) fn start(&mut self, deadline: Instant, owner: Key, action: TimerAction) -> Key {
        let seq = self.seq;
        self.seq += 1;
        let heap_pos = self.heap.len();
        let key = self.entries.insert(TimerEntry {
            deadline,
            seq,
            heap_pos,
            owner,
            action,
        });
        self.heap.push(key);
        self.sift_up(heap_pos);
        key
    }

    /// Removes a pending timer; `None` if it already fired or was cancelled.
    pub(crate) fn cancel(&mut self, key: Key) -> Option<TimerEntry> {
        let pos = self.entries.get(key)?.heap_pos;
        self.remove_at(pos);
        self.entries.remove(key)
    }

    /// A mark for [`pop_due`](Timers::pop_due): timers started from now on
    /// are not due in the round that took it.
    pub(crate) fn round(&self) -> u64 {
        self.seq
    }

    /// Removes and returns the earliest timer if it is due at `now` and was
    /// started before `round` was taken.
    pub(crate) fn pop_due(&mut self, now: Instant, round: u64) -> Option<(Key, TimerEntry)> {
        let &key = self.heap.first()?;
        let entry = self.entry(key);
        if entry.deadline > now || entry.seq >= round {
            return None;
        }
        self.remove_at(0);
        self.entries.remove(key).map(|e| (key, e))
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.heap.first().map(|&k| self.entry(k).deadline)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn owner(&self, key: Key) -> Option<Key> {
        self.entries.get(key).map(|e| e.owner)
    }

    fn entry(&self, key: Key) -> &TimerEntry {
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
                e.heap_pos = pos;
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
    use std::time::Duration;

    fn fired(t: &mut Timers, now: Instant) -> Vec<Key> {
        std::iter::from_fn(|| t.pop_due(now, u64::MAX).map(|(k, _)| k)).collect()
    }

    #[test]
    fn fire_in_deadline_order_ties_in_start_order() {
        let t0 = Instant::now();
        let mut t = Timers::default();
        let ms = |n| t0 + Duration::from_millis(n);
        let keys: Vec<Key> = [30, 10, 20, 10, 5]
            .iter()
            .map(|&d| t.start(ms(d), Key::NONE, TimerAction::InitTimeout))
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
    fn cancel_is_idempotent_and_keeps_the_heap_ordered() {
        let t0 = Instant::now();
        let mut t = Timers::default();
        let keys: Vec<Key> = (0..50u64)
            .map(|i| {
                t.start(
                    t0 + Duration::from_millis((i * 37) % 50),
                    Key::NONE,
                    TimerAction::InitTimeout,
                )
            })
            .collect();
        for k in keys.iter().step_by(3) {
            assert!(t.cancel(*k).is_some());
            assert!(t.cancel(*k).is_none());
        }
        let order = fired(&mut t, t0 + Duration::from_secs(1));
        assert_eq!(order.len(), 50 - keys.iter().step_by(3).count());
        let deadlines: Vec<u64> = order
            .iter()
            .map(|k| keys.iter().position(|x| x == k).unwrap() as u64 * 37 % 50)
            .collect();
        assert!(deadlines.windows(2).all(|w| w[0] <= w[1]), "{deadlines:?}");
    }
}

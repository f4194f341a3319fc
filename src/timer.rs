//! Timers: one list per distinct duration, plus an indexed heap.
//!
//! A plain data structure over a generational arena, generic over what a
//! timer carries (`T`: what to do when it fires, or a whole pending request).
//! Most timers of a program use a few durations (a request timeout, a tick):
//! the timers of one duration are due in the order they were started, since
//! the clock never goes back, so each such list is a FIFO with O(1) start and
//! O(1) cancel (doubly linked through the arena). Timers of a duration that
//! has no list (more than [`MAX_LISTS`] durations in use at once) go to an
//! indexed binary heap, O(log n). Either way they fire in deadline order,
//! ties in start order (a sequence number the caller gives, so that several
//! timer sets can share one order), and a cancelled timer leaves nothing
//! behind and never fires.
//!
//! Each timer also belongs to an owner (a key of an arena: its slot index
//! names the owner here), and the timers of one owner are linked in a list
//! whose head the set keeps by that index: cancelling one, or all of an
//! owner's at once, needs no scan, and no lookup of the owner.

mod slots;

use crate::arena::Key;
use slots::{Slots, Vacancy};
use std::fmt;

/// Names a timer started by [`Context::start_timer`](crate::Context::start_timer).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TimerId(pub(crate) Key);

impl fmt::Display for TimerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timer#{}.{}", self.0.idx(), self.0.generation())
    }
}

/// How many durations get a list of their own at once.
pub(crate) const MAX_LISTS: usize = 8;

/// No entry: the end of a list. Links between entries are slot indices, not
/// keys (a linked entry is always live, so no generation is needed), which
/// keeps an entry small: it is moved on every start and cancel.
const NIL: u32 = u32::MAX;

/// Where a pending timer is kept.
#[derive(Clone, Copy)]
enum Place {
    Heap(u32),
    List {
        list: u8,
        prev: u32,
        next: u32,
    },
    /// Nowhere: the record's slot is free.
    Vacant,
}

/// What a timer carries, with a placeholder for a free slot's record
/// (never fired: the slot is vacant).
pub(crate) trait Action {
    /// The placeholder.
    fn vacant() -> Self;
}

/// A point on a locality's clock: nanoseconds from an epoch the caller
/// chooses (signed: a clock set before its epoch reads negative). Integer
/// ticks, not `Instant`s: a deadline is one addition and one comparison.
pub(crate) type Ticks = i64;

/// When a timer is due: `deadline` is `now + after` (the caller saturates
/// it as it wishes), `after` in nanoseconds (below `u64::MAX`, the mark of
/// a list not taken); `seq` orders timers with the same deadline.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Due {
    pub(crate) deadline: Ticks,
    pub(crate) after: u64,
    pub(crate) seq: u64,
}

/// A pending timer's record, in its slot.
pub(crate) struct Record<T> {
    deadline: Ticks,
    seq: u64,
    place: Place,
    owner: Key,
    /// The owner's list: the timer started before this one, and after.
    older: u32,
    newer: u32,
    action: T,
}

impl<T: Action> Vacancy for Record<T> {
    fn vacant() -> Self {
        Record {
            deadline: 0,
            seq: 0,
            place: Place::Vacant,
            owner: Key::NONE,
            older: NIL,
            newer: NIL,
            action: T::vacant(),
        }
    }
    #[inline(always)]
    fn is_vacant(&self) -> bool {
        matches!(self.place, Place::Vacant)
    }
}

/// A timer taken out of its set (fired or cancelled).
pub(crate) struct Entry<T> {
    pub(crate) owner: Key,
    /// The owner's list: the timer started before this one, and after.
    older: u32,
    newer: u32,
    pub(crate) action: T,
}

/// The timers of one duration, oldest first.
#[derive(Clone, Copy)]
struct List {
    after: u64,
    head: u32,
    tail: u32,
}

impl List {
    fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

/// A set of pending timers.
pub(crate) struct Timers<T> {
    entries: Slots<Record<T>>,
    /// The lists, the first `used` of them taken (in place: no indirection
    /// on a timer's start).
    lists: [List; MAX_LISTS],
    used: u8,
    /// The list used last (a hint: checked before use).
    last: u8,
    heap: Vec<Key>,
    /// The newest timer of each owner (by the owner's slot index; [`NIL`]:
    /// none), where its list of timers starts.
    heads: Vec<u32>,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Timers {
            entries: Slots::default(),
            // A list not taken yet has a duration no timer has (all are
            // cut to a century), so that `list_for` needs no bounds test.
            lists: [List {
                after: u64::MAX,
                head: NIL,
                tail: NIL,
            }; MAX_LISTS],
            used: 0,
            last: 0,
            heap: Vec::new(),
            heads: Vec::new(),
        }
    }
}

impl<T: Action> Timers<T> {
    /// Starts a timer of `owner` (a key of an arena: one slot index is one
    /// owner, whose timers all go when it does, see `cancel_all`). Timers
    /// of one `after` share a list, so `after`
    /// must be the duration the deadline was computed from (below
    /// `u64::MAX`, the mark of a list not taken), and the clock must
    /// never go back between two starts.
    #[inline(always)]
    pub(crate) fn start(&mut self, due: Due, owner: Key, action: T) -> Key {
        debug_assert!(due.after < u64::MAX, "a timer's duration is cut first");
        // A start mostly finds a list (the heap is out of line: the common
        // path keeps fewer registers).
        let Some(list) = self.list_for(due.after) else {
            return self.start_in_heap(due, owner, action);
        };
        let tail = self.lists[list].tail;
        let place = Place::List {
            list: list as u8,
            prev: tail,
            next: NIL,
        };
        let key = self.insert(due, place, owner, action);
        match self.entries.get_mut_at(tail) {
            Some(Record {
                place: Place::List { next, .. },
                ..
            }) => *next = key.idx(),
            _ => self.lists[list].head = key.idx(),
        }
        self.lists[list].tail = key.idx();
        key
    }

    /// `start` for a timer whose duration has no list.
    #[cold]
    #[inline(never)]
    fn start_in_heap(&mut self, due: Due, owner: Key, action: T) -> Key {
        let place = Place::Heap(self.heap.len() as u32);
        let key = self.insert(due, place, owner, action);
        self.push_heap(key);
        key
    }

    /// A new record, at the newest end of its owner's list, not yet in its
    /// place (`place` says where it goes).
    #[inline(always)]
    fn insert(&mut self, due: Due, place: Place, owner: Key, action: T) -> Key {
        let older = self.heads.get(owner.idx() as usize).copied().unwrap_or(NIL);
        // Written in place, field by field.
        let (key, record) = self.entries.insert();
        record.deadline = due.deadline;
        record.seq = due.seq;
        record.place = place;
        record.owner = owner;
        record.older = older;
        record.newer = NIL;
        // The record was vacant: its action is a placeholder that holds
        // nothing, so it is overwritten without running its drop.
        std::mem::forget(std::mem::replace(&mut record.action, action));
        if let Some(e) = self.entries.get_mut_at(older) {
            e.newer = key.idx();
        }
        self.set_head(owner, key.idx());
        key
    }

    /// Makes slot `idx` (or [`NIL`]) the newest timer of `owner`.
    #[inline(always)]
    fn set_head(&mut self, owner: Key, idx: u32) {
        match self.heads.get_mut(owner.idx() as usize) {
            Some(head) => *head = idx,
            None => self.first_head(owner, idx),
        }
    }

    /// The first timer of an owner of a slot index not seen yet.
    #[cold]
    #[inline(never)]
    fn first_head(&mut self, owner: Key, idx: u32) {
        let at = owner.idx() as usize;
        // Owners are slots of an arena of live actors: a key such as
        // `Key::NONE` (no slot) has no list, rather than a huge table.
        if at >= 1 << 28 {
            return;
        }
        self.heads.resize(at + 1, NIL);
        self.heads[at] = idx;
    }

    /// Puts a timer without a list in the heap (out of line: a start
    /// mostly finds a list, and keeps fewer registers without this).
    #[cold]
    #[inline(never)]
    fn push_heap(&mut self, key: Key) {
        let pos = self.heap.len();
        self.heap.push(key);
        self.sift_up(pos);
    }

    /// The list of timers of duration `after`: the one it has, or an empty
    /// one taken for it; `None` if every list is in use by other durations.
    #[inline(always)]
    fn list_for(&mut self, after: u64) -> Option<usize> {
        // Most starts use the duration of the one before (a request timeout).
        let last = usize::from(self.last) % MAX_LISTS;
        if self.lists[last].after == after {
            return Some(last);
        }
        let i = self.find_list(after)?;
        self.last = i as u8;
        Some(i)
    }

    /// The list for timers of `after`, made if there is room.
    fn find_list(&mut self, after: u64) -> Option<usize> {
        if let Some(i) = self.lists().iter().position(|l| l.after == after) {
            return Some(i);
        }
        let free = self.lists().iter().position(List::is_empty);
        let i = match free {
            Some(i) => i,
            None if usize::from(self.used) < MAX_LISTS => {
                self.used += 1;
                usize::from(self.used) - 1
            }
            None => return None,
        };
        self.lists[i].after = after;
        Some(i)
    }

    /// Removes a pending timer; `None` if it already fired or was
    /// cancelled.
    #[inline(always)]
    pub(crate) fn cancel(&mut self, key: Key) -> Option<Entry<T>> {
        let entry = self.take(key)?;
        self.detach(&entry);
        Some(entry)
    }

    /// Takes a timer out of its place and the arena (not yet out of its
    /// owner's list: see `detach`). One lookup: the record is read in place
    /// and its slot freed first (it keeps a vacant record).
    #[inline(always)]
    pub(crate) fn take(&mut self, key: Key) -> Option<Entry<T>> {
        let record = self.entries.remove(key)?;
        let place = std::mem::replace(&mut record.place, Place::Vacant);
        let entry = Entry {
            owner: record.owner,
            older: record.older,
            newer: record.newer,
            action: std::mem::replace(&mut record.action, T::vacant()),
        };
        match place {
            Place::Heap(pos) => self.remove_at(pos as usize),
            Place::List { list, prev, next } => self.unlink(list, prev, next),
            Place::Vacant => {} // not reachable: `remove` finds live records only
        }
        Some(entry)
    }

    /// Takes a removed timer out of its owner's list (the list of one
    /// pending request at a time is the owner's head alone).
    #[inline(always)]
    pub(crate) fn detach(&mut self, entry: &Entry<T>) {
        if let Some(older) = self.entries.get_mut_at(entry.older) {
            older.newer = entry.newer;
        }
        match self.entries.get_mut_at(entry.newer) {
            Some(newer) => newer.older = entry.older,
            None => self.set_head(entry.owner, entry.older), // it was the newest
        }
    }

    /// Whether `owner` (its slot index) has a pending timer.
    #[inline(always)]
    pub(crate) fn has_any(&self, owner: Key) -> bool {
        self.heads
            .get(owner.idx() as usize)
            .is_some_and(|&head| head != NIL)
    }

    /// Removes every timer of `owner` (of its slot index), oldest first.
    pub(crate) fn cancel_all(&mut self, owner: Key) -> Vec<(Key, Entry<T>)> {
        let mut out = Vec::new();
        let Some(head) = self.heads.get_mut(owner.idx() as usize) else {
            return out;
        };
        let mut idx = std::mem::replace(head, NIL);
        while let Some(key) = self.entries.key_at(idx) {
            let Some(entry) = self.take(key) else {
                break; // not reachable: a listed timer is pending
            };
            idx = entry.older;
            out.push((key, entry));
        }
        out.reverse();
        out
    }

    fn unlink(&mut self, list: u8, prev: u32, next: u32) {
        let list = &mut self.lists[usize::from(list)];
        match self.entries.get_mut_at(prev) {
            Some(Record {
                place: Place::List { next: n, .. },
                ..
            }) => *n = next,
            _ => list.head = next,
        }
        match self.entries.get_mut_at(next) {
            Some(Record {
                place: Place::List { prev: p, .. },
                ..
            }) => *p = prev,
            _ => list.tail = prev,
        }
    }

    /// The earliest pending timer: its key, deadline and start sequence.
    pub(crate) fn earliest(&self) -> Option<(Key, Ticks, u64)> {
        let heads = self.lists().iter().map(|l| self.key_at(l.head));
        let top = self.heap.first().copied();
        heads
            .chain(top)
            .filter_map(|key| self.entries.get(key).map(|e| (key, e.deadline, e.seq)))
            .min_by_key(|&(_, deadline, seq)| (deadline, seq))
    }

    /// Removes and returns the earliest timer if it is due at `now` and its
    /// sequence is below `round` (it started before the round began). It is
    /// still in its owner's list: `detach` it.
    pub(crate) fn pop_due(&mut self, now: Ticks, round: u64) -> Option<(Key, Entry<T>)> {
        let (key, deadline, seq) = self.earliest()?;
        if deadline > now || seq >= round {
            return None;
        }
        self.take(key).map(|e| (key, e))
    }

    #[cfg(test)]
    pub(crate) fn next_deadline(&self) -> Option<Ticks> {
        self.earliest().map(|(_, deadline, _)| deadline)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The lists taken.
    #[inline(always)]
    fn lists(&self) -> &[List] {
        &self.lists[..usize::from(self.used)]
    }

    /// The key of the live entry at slot `idx` (`Key::NONE` for [`NIL`]).
    fn key_at(&self, idx: u32) -> Key {
        self.entries.key_at(idx).unwrap_or(Key::NONE)
    }

    /// When the timer at `key` is due, if it is pending.
    #[cfg(feature = "nats")]
    pub(crate) fn deadline(&self, key: Key) -> Option<Ticks> {
        self.entries.get(key).map(|e| e.deadline)
    }

    pub(crate) fn owner(&self, key: Key) -> Option<Key> {
        self.entries.get(key).map(|e| e.owner)
    }

    /// What the pending timer at `key` carries, to change it.
    #[inline(always)]
    pub(crate) fn action_mut(&mut self, key: Key) -> Option<&mut T> {
        self.entries.get_mut(key).map(|e| &mut e.action)
    }

    fn entry(&self, key: Key) -> &Record<T> {
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
                e.place = Place::Heap(pos as u32);
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
mod tests;

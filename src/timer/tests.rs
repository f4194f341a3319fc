//! Unit tests of the timers: deadline order, rounds, the heap beside the
//! lists, an owner's timers at once, and a model test.

use super::*;
use proptest::prelude::*;

/// `n` milliseconds in ticks (nanoseconds).
fn millis(n: u64) -> Ticks {
    Ticks::try_from(n).unwrap() * 1_000_000
}

/// An arbitrary start of the clock.
const T0: Ticks = 1_000_000_007;

impl Action for u32 {
    fn vacant() -> Self {
        0
    }
}

/// The owner of the timers of a `Set`.
const OWNER: Key = Key::new(2, 5);

/// A timer set (of one owner) and its sequence.
struct Set {
    t: Timers<u32>,
    seq: u64,
}

impl Set {
    fn new() -> Set {
        Set {
            t: Timers::default(),
            seq: 0,
        }
    }
    fn start(&mut self, t0: Ticks, now_ms: u64, after_ms: u64) -> Key {
        let after = millis(after_ms);
        let deadline = t0 + millis(now_ms) + after;
        self.seq += 1;
        let due = Due {
            deadline,
            after: after as u64,
            seq: self.seq,
        };
        self.t.start(due, OWNER, 0)
    }
    fn fired(&mut self, now: Ticks) -> Vec<Key> {
        self.fired_before(now, u64::MAX)
    }
    fn fired_before(&mut self, now: Ticks, round: u64) -> Vec<Key> {
        let mut out = Vec::new();
        while let Some((k, e)) = self.t.pop_due(now, round) {
            self.t.detach(&e);
            out.push(k);
        }
        out
    }
    fn cancel(&mut self, key: Key) -> bool {
        self.t.cancel(key).is_some()
    }
}

#[test]
fn fire_in_deadline_order_ties_in_start_order() {
    let t0 = T0;
    let mut s = Set::new();
    let ms = |n| t0 + millis(n);
    let keys: Vec<Key> = [30, 10, 20, 10, 5]
        .iter()
        .map(|&d| s.start(t0, 0, d))
        .collect();
    assert_eq!(s.t.next_deadline(), Some(ms(5)));
    assert!(s.fired(ms(4)).is_empty());
    assert_eq!(s.fired(ms(20)), vec![keys[4], keys[1], keys[3], keys[2]]);
    assert_eq!(s.fired(ms(100)), vec![keys[0]]);
    assert_eq!(s.t.len(), 0);
    // The owner's list is empty, and goes on from there.
    assert!(s.t.cancel_all(OWNER).is_empty());
    let next = s.start(t0, 100, 10);
    assert_eq!(s.t.cancel_all(OWNER).len(), 1);
    assert!(s.t.owner(next).is_none());
}

#[test]
fn timers_started_in_a_round_are_not_due_in_it() {
    let t0 = T0;
    let mut s = Set::new();
    let a = s.start(t0, 0, 0);
    let round = s.seq + 1;
    let b = s.start(t0, 0, 0);
    assert_eq!(
        s.fired_before(t0, round),
        vec![a],
        "b waits for the next round"
    );
    assert_eq!(s.fired_before(t0, s.seq + 1), vec![b]);
}

#[test]
fn more_durations_than_lists_go_to_the_heap_in_the_same_order() {
    let t0 = T0;
    let mut s = Set::new();
    let keys: Vec<Key> = (0..3 * MAX_LISTS as u64)
        .map(|i| s.start(t0, 0, 100 - i))
        .collect();
    assert_eq!(s.t.lists().len(), MAX_LISTS);
    assert_eq!(s.t.heap.len(), 2 * MAX_LISTS);
    let order = s.fired(t0 + millis(1000));
    let expected: Vec<Key> = keys.iter().rev().copied().collect();
    assert_eq!(order, expected);
    // Emptied lists are reused by new durations.
    s.start(t0, 0, 1000);
    assert_eq!(s.t.lists().len(), MAX_LISTS);
    assert!(s.t.heap.is_empty());
}

#[test]
fn an_owners_timers_are_cancelled_all_at_once_oldest_first() {
    let t0 = T0;
    let mut s = Set::new();
    let keys: Vec<Key> = (0..5).map(|i| s.start(t0, 0, i % 2 * 1000)).collect();
    assert!(s.cancel(keys[2]));
    let all: Vec<Key> = s.t.cancel_all(OWNER).into_iter().map(|(k, _)| k).collect();
    assert_eq!(all, [keys[0], keys[1], keys[3], keys[4]]);
    assert_eq!(s.t.len(), 0);
    assert!(s.t.next_deadline().is_none());
}

#[test]
fn owners_keep_their_own_lists_whatever_ends_their_timers() {
    let (a, b) = (OWNER, Key::new(0, 1));
    let mut t: Timers<u32> = Timers::default();
    let mut seq = 0;
    let mut start = |t: &mut Timers<u32>, owner, after_ms| {
        seq += 1;
        let (deadline, after) = (T0 + millis(after_ms), millis(after_ms) as u64);
        t.start(
            Due {
                deadline,
                after,
                seq,
            },
            owner,
            0,
        )
    };
    let a1 = start(&mut t, a, 10);
    let b1 = start(&mut t, b, 5);
    let a2 = start(&mut t, a, 10);
    let b2 = start(&mut t, b, 10);
    let a3 = start(&mut t, a, 10);
    assert_eq!(t.cancel(a2).map(|e| e.owner), Some(a), "the middle one");
    let (fired, e) = t.pop_due(T0 + millis(5), u64::MAX).expect("b1 is due");
    assert_eq!((fired, e.owner), (b1, b));
    t.detach(&e);
    assert_eq!(t.cancel(a3).map(|e| e.owner), Some(a), "the newest one");
    let keys = |all: Vec<(Key, Entry<u32>)>| all.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(keys(t.cancel_all(a)), [a1]);
    assert_eq!(keys(t.cancel_all(b)), [b2]);
    assert_eq!(t.len(), 0);
    // A key that names no slot owns no list (and makes no table).
    let none = start(&mut t, Key::NONE, 10);
    assert!(t.cancel_all(Key::NONE).is_empty());
    assert!(t.cancel(none).is_some());
    assert!(t.heads.len() <= 3);
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
        let t0 = T0;
        let mut s = Set::new();
        let mut model: Vec<(u64, u64, Key)> = Vec::new(); // (deadline ms, seq, key)
        let mut started: Vec<Key> = Vec::new();
        let (mut now, mut seq) = (0u64, 0u64);
        for op in ops {
            match op {
                Op::Start(d) => {
                    // Mostly a few durations (lists), sometimes many (heap).
                    let after = if d < 200 { u64::from(d % 4) * 10 } else { u64::from(d) };
                    let key = s.start(t0, now, after);
                    model.push((now + after, seq, key));
                    started.push(key);
                    seq += 1;
                }
                Op::Cancel(i) if !started.is_empty() => {
                    let key = started[i % started.len()];
                    let pending = model.iter().position(|m| m.2 == key);
                    prop_assert_eq!(s.cancel(key), pending.is_some());
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
                    prop_assert_eq!(s.fired(t0 + millis(now)), due);
                }
            }
            prop_assert_eq!(s.t.len(), model.len());
            let next = model.iter().map(|m| m.0).min();
            prop_assert_eq!(s.t.next_deadline(), next.map(|ms| t0 + millis(ms)));
        }
        let rest: Vec<Key> = s.t.cancel_all(OWNER).into_iter().map(|(k, _)| k).collect();
        let mut expected: Vec<(u64, Key)> = model.iter().map(|m| (m.1, m.2)).collect();
        expected.sort();
        prop_assert_eq!(rest, expected.into_iter().map(|(_, k)| k).collect::<Vec<Key>>());
        prop_assert_eq!(s.t.len(), 0);
    }
}

//! Tests of the queue's look-ahead ([`LookAhead`]): which entries' hints
//! the context is given, when, and that wrapping, growing or clearing the
//! buffer keeps the look-ahead on entry boundaries.

use super::*;
use proptest::prelude::*;
use std::cell::RefCell;

/// Records the hints it is given, with the deliveries made by then.
#[derive(Default)]
struct Ctx {
    queue: Queue<Ctx>,
    delivered: Vec<u64>,
    /// (hint, deliveries made when it was given).
    hints: RefCell<Vec<(u64, usize)>>,
    /// Ids to push again (with id + 1000) when they are delivered.
    echo: Vec<u64>,
    /// Hints after which to ask for no more (`LookAhead::look_ahead`).
    quiet_at: Vec<u64>,
}

impl LookAhead for Ctx {
    fn look_ahead(&self, hint: u64) -> bool {
        self.hints.borrow_mut().push((hint, self.delivered.len()));
        !self.quiet_at.contains(&hint)
    }
}

impl Owner for Ctx {
    fn queue(&mut self) -> &mut Queue<Ctx> {
        &mut self.queue
    }
}

/// An envelope whose hint is its id, with `N` words of payload.
struct Hinted<const N: usize> {
    id: u64,
    _payload: [u64; N],
}

impl<const N: usize> Envelope<Ctx> for Hinted<N> {
    const HINTS: bool = true;
    fn hint(&self) -> u64 {
        self.id
    }
    fn deliver(self, ctx: &mut Ctx) {
        Queue::look_ahead(ctx);
        ctx.delivered.push(self.id);
        if ctx.echo.contains(&self.id) {
            ctx.queue.push(hinted::<N>(self.id + 1000));
        }
    }
}

fn hinted<const N: usize>(id: u64) -> Hinted<N> {
    Hinted {
        id,
        _payload: [id; N],
    }
}

/// An envelope without a hint, whose delivery does not look ahead.
struct Plain(u64);

impl Envelope<Ctx> for Plain {
    fn deliver(self, ctx: &mut Ctx) {
        ctx.delivered.push(self.0);
    }
}

fn run_all(ctx: &mut Ctx) {
    while Queue::run_next(ctx) {}
}

/// Each hint was given once, in queue order, for an entry not yet
/// delivered and at most `LOOK_AHEAD` entries (of three words) behind the
/// next one to be; `expected` are the ids hinted.
fn check_hints(ctx: &Ctx, expected: &[u64]) {
    let hints = ctx.hints.borrow();
    let ids: Vec<u64> = hints.iter().map(|&(id, _)| id).collect();
    assert_eq!(ids, expected);
    for &(id, done) in hints.iter() {
        let at = ctx
            .delivered
            .iter()
            .position(|&d| d == id)
            .expect("delivered");
        assert!(at > done, "{id} hinted after its delivery began");
        assert!(at - done <= LOOK_AHEAD, "{id} hinted {} ahead", at - done);
    }
}

#[test]
fn a_stream_of_entries_is_hinted_look_ahead_entries_ahead_each_once_but_the_first() {
    let mut ctx = Ctx::default();
    for id in 0..100 {
        ctx.queue.push(hinted::<1>(id));
    }
    run_all(&mut ctx);
    assert_eq!(ctx.delivered, (0..100).collect::<Vec<_>>());
    check_hints(&ctx, &(1..100).collect::<Vec<_>>());
    // The window fills two entries per delivery, then moves one per
    // delivery, `LOOK_AHEAD` entries ahead.
    for &(id, done) in ctx.hints.borrow().iter() {
        let ahead = (id as usize) - done;
        if done < LOOK_AHEAD {
            assert!(ahead <= LOOK_AHEAD, "{id}");
        } else {
            assert_eq!(ahead, LOOK_AHEAD, "{id}");
        }
    }
}

#[test]
fn a_stream_through_a_wrapping_ring_is_hinted_each_entry_once_but_each_wrap_s_first() {
    // 60 entries of three words always wait in a ring of 256 words: the
    // writer goes back to the start again and again, and the look goes on
    // at the start with the reader, from the entry after the first there
    // (the reader takes that one before any look sees it).
    let mut ctx = Ctx::default();
    let total = 3_000;
    for id in 0..60 {
        ctx.queue.push(hinted::<1>(id));
    }
    let mut first_at_start = Vec::new();
    for id in 60..total {
        assert!(Queue::run_next(&mut ctx));
        ctx.queue.push(hinted::<1>(id));
        if ctx.queue.write == 3 {
            first_at_start.push(id);
        }
    }
    run_all(&mut ctx);
    assert!(
        first_at_start.len() > 30,
        "wrapped {} times",
        first_at_start.len()
    );
    assert_eq!(ctx.queue.copied, 0, "never grown");
    assert_eq!(ctx.delivered, (0..total).collect::<Vec<_>>());
    let expected: Vec<u64> = (1..total)
        .filter(|id| !first_at_start.contains(id))
        .collect();
    check_hints(&ctx, &expected);
}

#[test]
fn one_entry_at_a_time_is_never_hinted() {
    let mut ctx = Ctx {
        echo: (0..10).map(|i| i * 1000).collect(),
        ..Ctx::default()
    };
    ctx.queue.push(hinted::<2>(0));
    run_all(&mut ctx);
    assert_eq!(ctx.delivered.len(), 11);
    assert!(ctx.hints.borrow().is_empty(), "{:?}", ctx.hints.borrow());
}

#[test]
fn an_entry_without_a_hint_ends_the_look_at_the_entries_waiting_then() {
    let mut ctx = Ctx::default();
    ctx.queue.push(hinted::<2>(0));
    ctx.queue.push(hinted::<20>(1)); // larger: takes more of the window
    ctx.queue.push(Plain(2));
    ctx.queue.push(hinted::<0>(3));
    run_all(&mut ctx);
    assert_eq!(ctx.delivered, [0, 1, 2, 3]);
    check_hints(&ctx, &[1]);
    ctx.queue.push(hinted::<0>(4));
    ctx.queue.push(hinted::<0>(5));
    run_all(&mut ctx);
    check_hints(&ctx, &[1, 5]);
}

#[test]
fn a_context_that_asks_for_quiet_is_given_no_hints_of_the_entries_then_waiting() {
    let mut ctx = Ctx {
        quiet_at: vec![3],
        ..Ctx::default()
    };
    for id in 0..20 {
        ctx.queue.push(hinted::<1>(id));
    }
    // 4 to 19 were waiting when 3 asked for quiet; 20 to 29 come later.
    for _ in 0..6 {
        assert!(Queue::run_next(&mut ctx));
    }
    for id in 20..30 {
        ctx.queue.push(hinted::<1>(id));
    }
    run_all(&mut ctx);
    assert_eq!(ctx.delivered, (0..30).collect::<Vec<_>>());
    let ids: Vec<u64> = ctx.hints.borrow().iter().map(|&(id, _)| id).collect();
    assert_eq!(ids[..3], [1, 2, 3]);
    let after: Vec<u64> = ids[3..].to_vec();
    assert!(after.iter().all(|&id| id >= 20), "{after:?}");
    assert!(!after.is_empty(), "looking again after the quiet entries");
}

#[derive(Debug, Clone)]
enum Op {
    Push(u8),
    Run,
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..4).prop_map(Op::Push),
        5 => Just(Op::Run),
        1 => Just(Op::Clear),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Pushes of several sizes, deliveries and clears in any order (the
    /// buffer wraps, grows and shrinks): each hint is of an entry still
    /// waiting behind the next one, given once, in order.
    #[test]
    fn hints_stay_on_entries_whatever_the_buffer_does(ops in proptest::collection::vec(op(), 0..400)) {
        let mut ctx = Ctx::default();
        let mut waiting = std::collections::VecDeque::new();
        let mut last_hint = None;
        for (id, op) in ops.into_iter().enumerate() {
            let id = id as u64;
            match op {
                Op::Push(0) => ctx.queue.push(hinted::<0>(id)),
                Op::Push(1) => ctx.queue.push(hinted::<1>(id)),
                Op::Push(2) => ctx.queue.push(hinted::<9>(id)),
                Op::Push(_) => ctx.queue.push(Plain(id)),
                Op::Run => {
                    let before = ctx.hints.borrow().len();
                    let ran = Queue::run_next(&mut ctx);
                    prop_assert_eq!(ran, waiting.pop_front().is_some());
                    for &(hint, _) in &ctx.hints.borrow()[before..] {
                        prop_assert!(waiting.contains(&hint), "{} is not waiting", hint);
                        prop_assert!(Some(hint) > last_hint, "{} again or out of order", hint);
                        last_hint = Some(hint);
                    }
                }
                Op::Clear => {
                    ctx.queue.clear();
                    waiting.clear();
                }
            }
            if matches!(op, Op::Push(_)) {
                waiting.push_back(id);
            }
        }
    }
}

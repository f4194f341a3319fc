//! The queue's ring: how it wraps, grows, and gives memory
//! back (`queue/room.rs`), with the entries delivered in order and each
//! dropped once.

use super::super::room::{KEEP_WORDS, MIN_WORDS};
use super::*;

#[test]
fn growth_while_draining_keeps_order_and_memory() {
    // Each delivery pushes, and pushes come between deliveries, so the
    // buffer fills while the cursor is past its start: the writer wraps to
    // the start, or the buffer grows (and reallocates), many times
    // over; then the burst ends and the buffer shrinks.
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    let n = 5000;
    ctx.echo = (0..n).collect();
    for id in 0..n {
        ctx.queue.push(env(id, [id; 4], &drops));
        if id % 3 == 0 {
            assert!(Queue::run_next(&mut ctx));
        }
    }
    run_all(&mut ctx);
    let expected: Vec<u64> = {
        let mut model: VecDeque<u64> = VecDeque::new();
        let mut out = Vec::new();
        for id in 0..n {
            model.push_back(id);
            if id % 3 == 0 {
                let d = model.pop_front().unwrap();
                out.push(d);
                if d < n {
                    model.push_back(d + 1000);
                }
            }
        }
        while let Some(d) = model.pop_front() {
            out.push(d);
            if d < n {
                model.push_back(d + 1000);
            }
        }
        out
    };
    assert_eq!(ctx.delivered, expected);
    assert_eq!(drops.get() as usize, expected.len());
    // Small traffic after the burst gives the memory back (each time the
    // queue is found empty).
    for round in 0..20 {
        ctx.queue.push(env(round, (), &drops));
        run_all(&mut ctx);
    }
    assert!(
        ctx.queue.capacity_bytes() <= 4 * KEEP_WORDS * WORD,
        "{} bytes kept",
        ctx.queue.capacity_bytes()
    );
}

#[test]
fn a_queue_that_never_empties_gives_a_burst_back() {
    // A burst of 5,000 entries grows the buffer, and is delivered; then a
    // stream where 100 entries always wait (each delivery pushes one, so
    // the queue is never found empty again) walks the buffer from end to
    // end: the writer wraps to its start each time it reaches the end,
    // and it gives memory back then, down to a few times what waits (an
    // entry is five words), in order.
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    let burst = 5_000;
    for id in 0..burst {
        ctx.queue.push(env(id, id, &drops));
    }
    run_all(&mut ctx);
    let grown = ctx.queue.capacity_bytes();
    assert!(grown >= (burst as usize) * 5 * WORD, "{grown} bytes");
    let mut next = burst;
    for _ in 0..100 {
        ctx.queue.push(env(next, next, &drops));
        next += 1;
    }
    for _ in 0..300_000 {
        ctx.queue.push(env(next, next, &drops));
        next += 1;
        assert!(Queue::run_next(&mut ctx));
    }
    let kept = ctx.queue.capacity_bytes();
    assert!(
        kept <= 16 * 101 * 5 * WORD,
        "{kept} bytes kept of {grown} for 100 waiting entries"
    );
    run_all(&mut ctx);
    let expected: Vec<u64> = (0..next).collect();
    assert_eq!(ctx.delivered, expected);
    assert_eq!(drops.get() as u64, next);
}

#[test]
fn a_feeder_s_turns_do_not_make_the_buffer_shrink_and_grow_again() {
    // A feeder's turn pushes a batch and a tick after it; the batch is
    // delivered, then the tick, whose delivery pushes the next turn: the
    // queue is never found empty, and what waits swings from a few entries
    // to a whole batch. An entry is four words here: a turn is 4,004, and
    // the buffer, grown to 4,096 by the first turn, is full each turn
    // with the turn's first 23 entries waiting. It must not shrink then
    // (the turn's peak fell between two wraps) only to grow again at once,
    // turn after turn.
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    let mut id = 0;
    let mut changes = 0;
    let mut capacity = 0;
    for turn in 0..3_000 {
        if turn > 0 {
            // The tick of the turn before.
            assert!(Queue::run_next(&mut ctx));
        }
        for _ in 0..1_000 {
            ctx.queue.push(env(id, (), &drops));
            id += 1;
            if ctx.queue.capacity_bytes() != capacity {
                capacity = ctx.queue.capacity_bytes();
                changes += 1;
            }
        }
        ctx.queue.push(env(id, (), &drops)); // the tick
        id += 1;
        for _ in 0..1_000 {
            assert!(Queue::run_next(&mut ctx));
        }
    }
    assert!(changes <= 20, "the buffer changed size {changes} times");
    run_all(&mut ctx);
    let expected: Vec<u64> = (0..id).collect();
    assert_eq!(ctx.delivered, expected);
    assert_eq!(drops.get() as u64, id);
}

/// Passes itself on `left` more times, as in a ping-pong: one envelope
/// waits at a time, pushed from inside the delivery of the one before.
struct Relay {
    left: u32,
    payload: String,
    counted: Counted,
}

impl Envelope<Ctx> for Relay {
    fn deliver(self, ctx: &mut Ctx) {
        ctx.delivered.push(u64::from(self.left));
        if self.left > 0 {
            ctx.queue.push(Relay {
                left: self.left - 1,
                payload: self.payload.clone(),
                counted: Counted {
                    drops: self.counted.drops.clone(),
                },
            });
        }
    }
}

#[test]
fn one_envelope_at_a_time_walks_the_buffer_and_starts_again_at_its_end() {
    // The cursor is not moved back when the queue empties: pushes go on
    // after it until the buffer is full, and then start again from the
    // beginning (the queue is empty then), so the buffer never grows.
    let drops = Rc::new(Cell::new(0));
    let relay = |left| Relay {
        left,
        payload: format!("relay {left}"),
        counted: Counted {
            drops: drops.clone(),
        },
    };
    let mut ctx = Ctx::default();
    ctx.queue.push(relay(1000));
    for _ in 0..500 {
        assert!(Queue::run_next(&mut ctx));
        assert_eq!(ctx.queue.len(), 1);
    }
    assert_eq!(ctx.queue.capacity_bytes(), MIN_WORDS * WORD);
    assert_eq!(drops.get(), 500);
    // One waits, behind a cursor far from the start: cleared once.
    ctx.queue.clear();
    assert_eq!(drops.get(), 501);
    assert!(ctx.queue.is_empty());
    // Run to the end: found empty, the buffer kept (it is small).
    ctx.queue.push(relay(300));
    assert_eq!(run_all(&mut ctx), 301);
    assert_eq!(drops.get(), 501 + 301);
    assert_eq!(ctx.queue.capacity_bytes(), MIN_WORDS * WORD);
    let expected: Vec<u64> = (501..=1000).rev().chain((0..=300).rev()).collect();
    assert_eq!(ctx.delivered, expected);
    // Dropping the queue with one waiting drops it once.
    ctx.queue.push(relay(5));
    assert!(Queue::run_next(&mut ctx));
    drop(ctx);
    assert_eq!(drops.get(), 501 + 301 + 2);
}

#[test]
fn a_slowly_growing_backlog_is_copied_only_when_the_buffer_grows() {
    // A producer a little faster than its consumer: 11 entries a turn
    // pushed, 10 delivered. The ring wraps as it fills and grows when it
    // is full, so each entry is copied about once per doubling: fewer
    // words copied than pushed (a buffer that moved its waiting entries to
    // its start whenever it filled copied about eight words per word
    // pushed here).
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    let mut id = 0;
    let mut pushed_words = 0;
    let mut wrapped = 0;
    for _ in 0..20_000 {
        for _ in 0..11 {
            ctx.queue.push(env(id, id, &drops)); // five words
            id += 1;
            pushed_words += 5;
        }
        for _ in 0..10 {
            assert!(Queue::run_next(&mut ctx));
        }
        if ctx.queue.end != UNWRAPPED {
            wrapped += 1;
        }
    }
    assert!(wrapped > 1000, "the ring wrapped in {wrapped} turns only");
    assert!(
        ctx.queue.copied < pushed_words,
        "{} words copied for {pushed_words} pushed",
        ctx.queue.copied
    );
    run_all(&mut ctx);
    assert_eq!(ctx.delivered, (0..id).collect::<Vec<_>>());
    assert_eq!(drops.get() as u64, id);
}

/// Pushes entries of 5 words and delivers some until the ring is wrapped:
/// the entries `0..` are pushed in order, what was delivered is in
/// `ctx.delivered`; returns the next id.
fn wrap(ctx: &mut Ctx, drops: &Rc<Cell<u32>>) -> u64 {
    let mut id = 0;
    // Fill the first buffer (256 words: 51 entries), deliver 20 of them,
    // then push until the writer goes back to the start.
    for _ in 0..51 {
        ctx.queue.push(env(id, id, drops));
        id += 1;
    }
    for _ in 0..20 {
        assert!(Queue::run_next(ctx));
    }
    ctx.queue.push(env(id, id, drops));
    id += 1;
    assert_ne!(ctx.queue.end, UNWRAPPED, "wrapped");
    assert_eq!(ctx.queue.capacity_bytes(), MIN_WORDS * WORD);
    id
}

#[test]
fn a_wrapped_ring_delivers_in_order_grows_and_drops_each_entry_once() {
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    let mut id = wrap(&mut ctx, &drops);
    assert_eq!(ctx.queue.len(), 32);
    // Fill the room before the reader (20 entries, one taken), then grow
    // while wrapped: the back stretch, then the front one, copied in order.
    for _ in 0..30 {
        ctx.queue.push(env(id, [id; 3], &drops));
        id += 1;
    }
    assert_eq!(ctx.queue.end, UNWRAPPED, "grown: one stretch again");
    assert!(ctx.queue.capacity_bytes() >= 2 * MIN_WORDS * WORD);
    assert!(ctx.queue.copied > 0);
    assert_eq!(ctx.queue.len(), 62);
    assert_eq!(run_all(&mut ctx), 62);
    assert_eq!(ctx.delivered, (0..id).collect::<Vec<_>>());
    assert_eq!(drops.get() as u64, id);
}

#[test]
fn a_wrapped_ring_reads_on_at_its_start() {
    // Delivering past the ring's end goes on at its start (through the
    // `Wrap` entry, in the same `run_next`), and nothing is copied.
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    let id = wrap(&mut ctx, &drops);
    for _ in 0..31 {
        assert!(Queue::run_next(&mut ctx));
    }
    assert_ne!(ctx.queue.end, UNWRAPPED, "the `Wrap` entry is next");
    assert_eq!(ctx.queue.len(), 1);
    assert!(Queue::run_next(&mut ctx));
    assert_eq!(
        ctx.queue.end, UNWRAPPED,
        "the reader went back to the start"
    );
    assert_eq!((ctx.queue.read, ctx.queue.write), (5, 5));
    assert!(ctx.queue.is_empty());
    assert!(!Queue::run_next(&mut ctx));
    assert_eq!(ctx.delivered, (0..id).collect::<Vec<_>>());
    assert_eq!(drops.get() as u64, id);
    assert_eq!(ctx.queue.copied, 0, "nothing was copied");
}

#[test]
fn clearing_or_dropping_a_wrapped_ring_drops_each_entry_once() {
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    let id = wrap(&mut ctx, &drops);
    ctx.queue.clear();
    assert_eq!(drops.get() as u64, id);
    assert!(ctx.queue.is_empty());
    assert_eq!(ctx.queue.capacity_bytes(), 0);

    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    let id = wrap(&mut ctx, &drops);
    drop(ctx);
    assert_eq!(drops.get() as u64, id);
}

#[test]
fn a_panic_while_delivering_the_ring_s_last_entry_keeps_the_rest() {
    // The last entry before the ring's end panics: it is dropped once,
    // and the next delivery goes on at the start.
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    for id in 0..50 {
        ctx.queue.push(env(id, id, &drops)); // 250 of 255 usable words
    }
    let mut last = env(50, 50u64, &drops);
    last.panics = true;
    ctx.queue.push(last); // ends at word 255: the end of the back stretch
    for _ in 0..10 {
        assert!(Queue::run_next(&mut ctx));
    }
    ctx.queue.push(env(51, 51u64, &drops)); // no room at the end: wraps
    assert_ne!(ctx.queue.end, UNWRAPPED);
    for _ in 10..50 {
        assert!(Queue::run_next(&mut ctx));
    }
    let caught = catch_unwind(AssertUnwindSafe(|| Queue::run_next(&mut ctx)));
    assert!(caught.is_err());
    assert_eq!(drops.get(), 51);
    assert_eq!(ctx.queue.len(), 1);
    assert_eq!(run_all(&mut ctx), 1);
    assert_eq!(ctx.queue.end, UNWRAPPED);
    assert_eq!(ctx.delivered, (0..52).collect::<Vec<_>>());
    assert_eq!(drops.get(), 52);
}

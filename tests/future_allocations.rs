//! Futures as messages allocate when they start, never when they are
//! polled (issue 16, case 4): a future polled 10 times and one polled
//! 10,000 times cost the same allocations, counted by a global allocator
//! (on this test's thread only).

mod counting;

use commutator::prelude::*;
use commutator::testing::Harness;
use counting::allocations;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

#[global_allocator]
static COUNTING: counting::Counting = counting::Counting;

/// Pending `left` times (waking itself each time), then ready.
struct Yields {
    left: u32,
}

struct Done;

impl Future for Yields {
    type Output = Done;
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Done> {
        if self.left == 0 {
            return Poll::Ready(Done);
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Starts a `Yields` future for each `u32` it gets; drops the outputs.
struct Runner;

impl Actor for Runner {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Done, _: &mut Context<'_, Self>| {});
        ctx.subscribe(|_: &mut Self, go: &u32, ctx: &mut Context<'_, Self>| {
            ctx.spawn_future(Yields { left: *go });
        });
    }
}

/// Allocations from the start of a future polled `polls + 1` times to its output.
fn cost(t: &mut Harness, runner: &Address, polls: u32) -> u64 {
    let before = allocations();
    t.send(runner, polls).expect("send");
    t.run_until_idle();
    allocations() - before
}

#[test]
fn polling_a_future_allocates_nothing() {
    let mut t = Harness::named("alloc");
    let runner = t.spawn_root(Runner).finish().expect("runner");
    t.run_until_idle();
    // Warm up: the futures table, the ready lists, the queue.
    cost(&mut t, &runner, 10_000);
    let few = cost(&mut t, &runner, 10);
    let many = cost(&mut t, &runner, 10_000);
    assert!(few > 0, "starting a future allocates");
    assert_eq!(
        few, many,
        "10 polls cost {few} allocations, 10,000 cost {many}"
    );
}

//! The worker-pool workloads (issue 18), a module of `workloads`:
//! - `p1_pool_1x1` and `p2_pool_2x2`: requests with some CPU work each, to a
//!   pool of one worker on one other locality, then of two workers on two
//!   other localities (threads), in the same run; `p2_over_p1 ratio` is the
//!   second rate over the first (the second core at work).

use super::{COUNTERS, Go, done, n, new_system, timed};
use commutator::prelude::*;
use std::time::Duration;

const N_POOL: u64 = 200_000;
/// Iterations of the CPU work of one pool request.
const WORK: u64 = 5_000;
/// Requests a pool client keeps in flight.
const WINDOW: u64 = 64;

struct Crunch(u64);
impl Request for Crunch {
    type Response = u64;
}

struct Cruncher;
impl Actor for Cruncher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Crunch>, ctx: &mut Context<'_, Self>| {
                let mut x = q.payload().0;
                for i in 0..WORK {
                    x = std::hint::black_box(
                        x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i),
                    );
                }
                ctx.reply(q, x);
            },
        );
    }
}

/// Keeps `WINDOW` requests in flight until `total` are answered.
struct PoolClient {
    pool: Address,
    sent: u64,
    answered: u64,
    total: u64,
}

impl Actor for PoolClient {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, _: &Go, ctx: &mut Context<'_, Self>| {
            while me.sent < me.total.min(WINDOW) {
                me.next(ctx);
            }
        });
        ctx.subscribe(
            |me: &mut Self, r: &Response<Crunch>, ctx: &mut Context<'_, Self>| {
                assert!(r.result().is_ok(), "request failed: {r:?}");
                me.answered += 1;
                if me.answered == me.total {
                    done(ctx);
                } else if me.sent < me.total {
                    me.next(ctx);
                }
            },
        );
    }
}

impl PoolClient {
    fn next(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.request(&self.pool, Crunch(self.sent), Duration::from_secs(60));
        self.sent += 1;
    }
}

/// A pool of one worker per locality in `threads` systems of their own.
fn pool_run(workload: &str, threads: usize) -> f64 {
    let total = n(N_POOL);
    let mut joins = Vec::new();
    let mut handles = Vec::new();
    for t in 0..threads {
        let (tx, rx) = std::sync::mpsc::channel();
        joins.push(std::thread::spawn(move || {
            let mut system = System::named(format!("W{t}")).expect("system");
            tx.send(system.handle()).expect("handle");
            system.run()
        }));
        handles.push(rx.recv().expect("the worker locality starts"));
    }
    let (mut system, root) = new_system(Supervisor);
    let mut pool = Pool::new(|| Cruncher).size(0).route_request::<Crunch>();
    for handle in &handles {
        pool = pool.on(handle, 1);
    }
    drop(handles);
    let pool = system
        .spawn(&root, pool)
        .name("pool")
        .finish()
        .expect("pool");
    let client = PoolClient {
        pool,
        sent: 0,
        answered: 0,
        total,
    };
    let client = system.spawn(&root, client).finish().expect("client");
    let secs = timed(workload, total, system, &client, Go(None, 0));
    for join in joins {
        join.join().expect("a worker thread").expect("its system");
    }
    total as f64 / secs
}

/// Runs the pool workloads that `run` selects.
pub(super) fn main(run: &dyn Fn(&str) -> bool) {
    let one = run("p1_pool_1x1").then(|| pool_run("p1_pool_1x1", 1));
    let two = run("p2_pool_2x2").then(|| pool_run("p2_pool_2x2", 2));
    if let (Some(one), Some(two), None) = (one, two, COUNTERS.get()) {
        println!("commutator p2_over_p1 ratio {:.2}", two / one);
    }
}

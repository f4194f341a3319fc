//! The benchmark workloads of `../shared/bench-peers`, on commutator, on a
//! `System`'s own mio loop (the same deployment as the stakker_mio peer).
//!
//! This module is shared by the two bench targets (`Cargo.toml`):
//!
//! - `workloads` (`benches/timed.rs`): the timed runs, on the system
//!   allocator as is. Each workload prints
//!   `commutator <workload> <count> <seconds> <rate_per_sec>`.
//! - `allocations` (`benches/allocations.rs`): a counting global allocator,
//!   each workload once at a tenth of its count. Prints
//!   `commutator <workload> allocations_per_op <N>` (allocations from the kick
//!   to the end of `run()`, shutdown included, per message, request or actor;
//!   for `w5_threads` the whole workload, both systems and the thread
//!   included) and `commutator w6_scale bytes_per_idle_actor <N>` (heap bytes
//!   per idle actor with one subscription, at the full 1,000,000 actors: the
//!   figure depends on how full the tables are).
//!
//! `cargo bench` runs both; `cargo bench --bench workloads -- w3` runs one
//! workload of one target. The entity-set and pool workloads (`e1` to `e3`,
//! `p1`, `p2`) are in `workloads/entities.rs`. With the features `tokio`
//! and `calloop` (`cargo bench --all-features`), `w1` and `w3` also run on
//! those backends (`w1_pingpong_tokio`, `w3_reqresp_calloop`, ...; in
//! `workloads/backends.rs`).

#[cfg(all(unix, any(feature = "tokio", feature = "calloop")))]
mod backends;
mod entities;
mod keys;
mod pools;
mod threads;

use commutator::prelude::*;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

const N_PINGPONG: u64 = 10_000_000;
const N_PUBSUB: u64 = 1_000_000;
const N_SUBS: usize = 8;
const PUB_BATCH: u64 = 1_000;
const N_REQRESP: u64 = 1_000_000;
const N_SPAWN: usize = 100_000;
const N_IDLE: usize = 1_000_000;
const N_THREADS: u64 = 2_000_000;

/// What the allocations target divides the message, request and actor
/// counts by (not the idle population of `w6_scale`).
const ALLOCATIONS_DIV: u16 = 10;

/// What the counts are divided by: `cargo bench` passes `--bench` (1);
/// anything else (e.g. `cargo test --all-targets`) gets a smoke run with a
/// thousandth of the counts; `COMMUTATOR_BENCH_DIV=<n>` sets it (for
/// instruction counts under callgrind, see `benches/instructions.sh`). The
/// allocations target divides the operations by `ALLOCATIONS_DIV` more.
static DIV: AtomicU16 = AtomicU16::new(1);
/// What the idle population of `w6_scale` is divided by (`DIV` without the
/// allocations target's reduction).
static SCALE_DIV: AtomicU16 = AtomicU16::new(1);

fn n<T: From<u16> + std::ops::Div<Output = T>>(count: T) -> T {
    count / T::from(DIV.load(Relaxed))
}

// ---------------- allocation counts (the allocations target only) ----------------

/// What a counting global allocator knows.
pub trait Counters: Sync {
    /// Allocations (and reallocations) so far.
    fn allocations(&self) -> u64;
    /// Bytes allocated and not freed yet.
    fn live_bytes(&self) -> isize;
}

/// Set by the allocations target: the runs count allocations instead of time.
static COUNTERS: OnceLock<&'static dyn Counters> = OnceLock::new();
/// Allocations when the measured part began.
static MARK: AtomicU64 = AtomicU64::new(0);

fn mark() {
    if let Some(c) = COUNTERS.get() {
        MARK.store(c.allocations(), Relaxed);
    }
}

// ---------------- harness ----------------

thread_local! {
    /// When the workload's last message was handled (before the shutdown).
    static DONE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Marks the end of the timed part and shuts the tree down.
fn done<A: Actor>(ctx: &mut Context<'_, A>) {
    DONE.with(|d| d.set(Some(Instant::now())));
    ctx.shutdown_supervisor();
}

/// Prints the workload's line: its rate, or (allocations target) its
/// allocations per operation since the last `mark`.
fn report(workload: &str, count: u64, secs: f64) {
    match COUNTERS.get() {
        None => println!(
            "commutator {workload} {count} {secs:.6} {:.0}",
            count as f64 / secs
        ),
        Some(c) => {
            let allocations = c.allocations() - MARK.load(Relaxed);
            println!(
                "commutator {workload} allocations_per_op {:.4}",
                allocations as f64 / count as f64
            );
        }
    }
}

/// Brings the tree up, sends the kick, times `run()` (or counts the
/// allocations in it); returns the seconds timed.
fn timed<M: Send + 'static>(
    workload: &str,
    count: u64,
    mut system: System,
    to: &Address,
    kick: M,
) -> f64 {
    system.locality().run_until_idle(Instant::now());
    DONE.with(|d| d.set(None));
    mark();
    let t0 = Instant::now();
    system.send(to, kick).map_err(|e| e.error).expect("kick");
    system.run().expect("run");
    // w4 times its whole run (spawn, start, shutdown); the others stop at `done`.
    let end = DONE.with(Cell::get).unwrap_or_else(Instant::now);
    let secs = end.duration_since(t0).as_secs_f64();
    report(workload, count, secs);
    secs
}

fn new_system(root: impl Actor) -> (System, Address) {
    let mut system = System::new().expect("system");
    let root = system
        .spawn_root(root)
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("root");
    (system, root)
}

/// Starts a workload; carries the partner's address where one is needed, and
/// how many messages to exchange.
struct Go(Option<Address>, u64);

// ---------------- w1: two actors, strictly alternating ----------------

struct Ping(u64);

#[derive(Default)]
struct Player {
    other: Option<Address>,
}

impl Actor for Player {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_ping);
        ctx.subscribe(Self::on_go);
    }
}

impl Player {
    fn on_go(&mut self, go: &Go, ctx: &mut Context<'_, Self>) {
        self.other = go.0.clone();
        if let Some(other) = &self.other {
            ctx.send(other, Ping(go.1));
        }
    }

    fn on_ping(&mut self, ping: &Ping, ctx: &mut Context<'_, Self>) {
        match &self.other {
            Some(other) if ping.0 > 1 => ctx.send(other, Ping(ping.0 - 1)),
            _ => done(ctx),
        }
    }
}

fn pingpong(workload: &str, idle: usize) {
    let (mut system, root) = new_system(Supervisor);
    let live = COUNTERS.get().map(|c| c.live_bytes());
    for _ in 0..idle {
        system.spawn(&root, Idle).finish().expect("idle");
    }
    system.locality().run_until_idle(Instant::now());
    if let (Some(c), Some(live), true) = (COUNTERS.get(), live, idle > 0) {
        let per_actor = (c.live_bytes() - live) as f64 / idle as f64;
        println!("commutator {workload} bytes_per_idle_actor {per_actor:.0}");
    }
    let a = system.spawn(&root, Player::default()).finish().expect("a");
    let b = system
        .spawn(
            &root,
            Player {
                other: Some(a.clone()),
            },
        )
        .finish()
        .expect("b");
    timed(
        workload,
        n(N_PINGPONG),
        system,
        &a,
        Go(Some(b), n(N_PINGPONG)),
    );
}

/// An idle actor with one subscription, for w6 and the bytes-per-actor figure.
struct Idle;

struct Never;

impl Actor for Idle {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Never, _: &mut Context<'_, Self>| {});
    }
}

// ---------------- w2: one publisher, 8 subscribers on its address ----------------

struct Item(u64);
struct Tick;

struct Publisher {
    me: Option<Address>,
    sent: u64,
}

impl Actor for Publisher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.me = Some(ctx.address().clone());
        ctx.subscribe(Self::on_go);
        ctx.subscribe(Self::on_tick);
    }
}

impl Publisher {
    fn on_go(&mut self, _: &Go, ctx: &mut Context<'_, Self>) {
        self.on_tick(&Tick, ctx);
    }

    fn on_tick(&mut self, _: &Tick, ctx: &mut Context<'_, Self>) {
        let Some(me) = self.me.clone() else { return };
        let end = (self.sent + PUB_BATCH).min(n(N_PUBSUB));
        while self.sent < end {
            ctx.send(&me, Item(self.sent));
            self.sent += 1;
        }
        if self.sent < n(N_PUBSUB) {
            ctx.send(&me, Tick);
        }
    }
}

struct Reader {
    publisher: Address,
    got: u64,
    total: Rc<Cell<u64>>,
    /// The deliveries of the whole run (computed once, as the peers do).
    target: u64,
}

impl Actor for Reader {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let publisher = self.publisher.clone();
        if let Err(e) = ctx.subscribe_on(&publisher, Self::on_item) {
            ctx.fail(e);
        }
    }
}

impl Reader {
    fn on_item(&mut self, item: &Item, ctx: &mut Context<'_, Self>) {
        self.got = self.got.wrapping_add(item.0 | 1);
        let total = self.total.get() + 1;
        self.total.set(total);
        if total == self.target {
            done(ctx);
        }
    }
}

fn w2() {
    let (mut system, root) = new_system(Supervisor);
    let publisher = system
        .spawn(&root, Publisher { me: None, sent: 0 })
        .finish()
        .expect("publisher");
    let total = Rc::new(Cell::new(0));
    for _ in 0..N_SUBS {
        let reader = Reader {
            publisher: publisher.clone(),
            got: 0,
            total: total.clone(),
            target: n(N_PUBSUB) * N_SUBS as u64,
        };
        system.spawn(&root, reader).finish().expect("reader");
    }
    timed(
        "w2_fanout",
        n(N_PUBSUB) * N_SUBS as u64,
        system,
        &publisher,
        Go(None, 0),
    );
}

// ---------------- w3: request/response, a timeout armed per request ----------------

struct Add(u64);

impl Request for Add {
    type Response = u64;
}

struct Server;

impl Actor for Server {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Add>, ctx: &mut Context<'_, Self>| {
                ctx.reply(q, q.payload().0 + 1)
            },
        );
    }
}

struct Client {
    server: Address,
    i: u64,
    /// The requests of the whole run (computed once, as the peers do).
    target: u64,
}

impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_go);
        ctx.subscribe(Self::on_reply);
    }
}

impl Client {
    fn next(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.request(&self.server, Add(self.i), Duration::from_secs(5));
    }

    fn on_go(&mut self, _: &Go, ctx: &mut Context<'_, Self>) {
        self.next(ctx);
    }

    fn on_reply(&mut self, r: &Response<Add>, ctx: &mut Context<'_, Self>) {
        assert_eq!(
            r.result().ok(),
            Some(&(self.i + 1)),
            "request {} failed",
            self.i
        );
        self.i += 1;
        if self.i < self.target {
            self.next(ctx);
        } else {
            done(ctx);
        }
    }
}

fn w3() {
    let (mut system, root) = new_system(Supervisor);
    let server = system.spawn(&root, Server).finish().expect("server");
    let client = system
        .spawn(
            &root,
            Client {
                server,
                i: 0,
                target: n(N_REQRESP),
            },
        )
        .finish()
        .expect("client");
    timed("w3_reqresp", n(N_REQRESP), system, &client, Go(None, 0));
}

// ---------------- w4: spawn 100,000 actors through the lifecycle, then shut down ----------------

/// The actors started so far, and how many the run makes (computed once,
/// as the peers do), shared by the spawner and its actors.
struct Started {
    count: Cell<usize>,
    target: usize,
}

struct Spawner {
    started: Rc<Started>,
}

impl Actor for Spawner {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_go);
    }
}

impl Spawner {
    fn on_go(&mut self, _: &Go, ctx: &mut Context<'_, Self>) {
        for _ in 0..self.started.target {
            let tiny = Tiny {
                started: self.started.clone(),
            };
            if let Err(e) = ctx.spawn(tiny).finish() {
                ctx.fail(e);
                return;
            }
        }
    }
}

/// One word, as stakker's `Tiny` (bytes per actor are compared).
struct Tiny {
    started: Rc<Started>,
}

impl Actor for Tiny {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let count = self.started.count.get() + 1;
        self.started.count.set(count);
        if count == self.started.target {
            // the spawner is the root: everything goes, and the shutdown is timed too
            ctx.shutdown_supervisor();
        }
    }
}

fn w4() {
    let started = Rc::new(Started {
        count: Cell::new(0),
        target: n(N_SPAWN),
    });
    let (system, root) = new_system(Spawner {
        started: started.clone(),
    });
    DONE.with(|d| d.set(None));
    timed("w4_spawn", n(N_SPAWN) as u64, system, &root, Go(None, 0));
    assert_eq!(started.count.get(), n(N_SPAWN));
}

/// Runs the workloads named on the command line (all without a name):
/// timed, or with `counters` (the allocations target) counted.
pub fn main(counters: Option<&'static dyn Counters>) {
    let div: Option<u16> = std::env::var("COMMUTATOR_BENCH_DIV")
        .ok()
        .and_then(|d| d.parse().ok());
    let bench = std::env::args().any(|a| a == "--bench");
    let div = div.unwrap_or(if bench { 1 } else { 1000 }).max(1);
    SCALE_DIV.store(div, Relaxed);
    match counters {
        None => DIV.store(div, Relaxed),
        Some(c) => {
            DIV.store(div.saturating_mul(ALLOCATIONS_DIV), Relaxed);
            let _ = COUNTERS.set(c);
        }
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| {
        let selected = filter.is_empty() || filter.iter().any(|f| name.starts_with(f.as_str()));
        if selected {
            mark();
        }
        selected
    };
    if run("w1_pingpong") {
        pingpong("w1_pingpong", 0);
    }
    if run("w2_fanout") {
        w2();
    }
    if run("w3_reqresp") {
        w3();
    }
    if run("w4_spawn") {
        w4();
    }
    if run("w5_threads") {
        threads::w5(false);
    }
    if run("w5_pipelined") {
        threads::w5(true);
    }
    if run("w6_scale") {
        pingpong("w6_scale", N_IDLE / usize::from(SCALE_DIV.load(Relaxed)));
    }
    entities::main(&run);
    #[cfg(all(unix, any(feature = "tokio", feature = "calloop")))]
    backends::main(&run);
}

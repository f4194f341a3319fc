//! The benchmark workloads of `../shared/bench-peers`, on commutator, on a
//! `System`'s own mio loop (the same deployment as the stakker_mio peer).
//!
//! `cargo bench` runs them all; `cargo bench --bench workloads -- w3` runs one.
//! Each prints `commutator <workload> <count> <seconds> <rate_per_sec>`; the
//! `alloc` lines give allocations per message in the timed part (a counting
//! global allocator) and bytes per idle actor.

use commutator::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System as SystemAlloc};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

const N_PINGPONG: u64 = 10_000_000;
const N_PUBSUB: u64 = 1_000_000;
const N_SUBS: usize = 8;
const PUB_BATCH: u64 = 1_000;
const N_REQRESP: u64 = 1_000_000;
const N_SPAWN: usize = 100_000;
const N_IDLE: usize = 1_000_000;
const N_THREADS: u64 = 2_000_000;

/// `cargo bench` passes `--bench`; anything else (e.g. `cargo test
/// --all-targets`) gets a smoke run with a thousandth of the counts.
static SMOKE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn n<T: From<u16> + std::ops::Div<Output = T>>(count: T) -> T {
    if SMOKE.load(Relaxed) {
        count / T::from(1000)
    } else {
        count
    }
}

// ---------------- a counting allocator ----------------

struct Counting;

thread_local! {
    // Per thread, so that counting does not make two threads that allocate
    // and free each other's messages (w5) share a cache line they would not
    // share without it. The single-threaded workloads read the main thread's.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
}

fn count(allocations: u64, bytes: isize) {
    // `try_with`: an allocation during thread teardown is not counted.
    let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + allocations));
    let _ = LIVE_BYTES.try_with(|l| l.set(l.get() + bytes));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(1, layout.size() as isize);
        unsafe { SystemAlloc.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(0, -(layout.size() as isize));
        unsafe { SystemAlloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(1, new_size as isize - layout.size() as isize);
        unsafe { SystemAlloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

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

fn report(workload: &str, count: u64, secs: f64) {
    println!(
        "commutator {workload} {count} {secs:.6} {:.0}",
        count as f64 / secs
    );
}

/// Brings the tree up, sends the kick, times `run()` and the allocations in it.
fn timed<M: Send + 'static>(workload: &str, count: u64, mut system: System, to: &Address, kick: M) {
    system.locality().run_until_idle(Instant::now());
    DONE.with(|d| d.set(None));
    let allocations = ALLOCATIONS.with(Cell::get);
    let t0 = Instant::now();
    system.send(to, kick).map_err(|e| e.error).expect("kick");
    system.run().expect("run");
    // w4 times its whole run (spawn, start, shutdown); the others stop at `done`.
    let end = DONE.with(Cell::get).unwrap_or_else(Instant::now);
    let whole = (ALLOCATIONS.with(Cell::get) - allocations) as f64 / count as f64;
    report(workload, count, end.duration_since(t0).as_secs_f64());
    eprintln!(
        "alloc {workload}: {whole:.4} allocations per message (whole run, shutdown included)"
    );
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
    let live = LIVE_BYTES.with(Cell::get);
    for _ in 0..idle {
        system.spawn(&root, Idle).finish().expect("idle");
    }
    system.locality().run_until_idle(Instant::now());
    if idle > 0 {
        let per_actor = (LIVE_BYTES.with(Cell::get) - live) as f64 / idle as f64;
        eprintln!(
            "alloc {workload}: {idle} idle actors with a subscription each, {per_actor:.0} bytes per idle actor"
        );
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
        if total == n(N_PUBSUB) * N_SUBS as u64 {
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
        if self.i < n(N_REQRESP) {
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
        .spawn(&root, Client { server, i: 0 })
        .finish()
        .expect("client");
    timed("w3_reqresp", n(N_REQRESP), system, &client, Go(None, 0));
}

// ---------------- w4: spawn 100,000 actors through the lifecycle, then shut down ----------------

struct Spawner {
    started: Rc<Cell<usize>>,
}

impl Actor for Spawner {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_go);
    }
}

impl Spawner {
    fn on_go(&mut self, _: &Go, ctx: &mut Context<'_, Self>) {
        for _ in 0..n(N_SPAWN) {
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

struct Tiny {
    started: Rc<Cell<usize>>,
}

impl Actor for Tiny {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.started.set(self.started.get() + 1);
        if self.started.get() == n(N_SPAWN) {
            // the spawner is the root: everything goes, and the shutdown is timed too
            ctx.shutdown_supervisor();
        }
    }
}

fn w4() {
    let started = Rc::new(Cell::new(0));
    let (system, root) = new_system(Spawner {
        started: started.clone(),
    });
    DONE.with(|d| d.set(None));
    timed("w4_spawn", n(N_SPAWN) as u64, system, &root, Go(None, 0));
    assert_eq!(started.get(), n(N_SPAWN));
}

// ---------------- w5: ping-pong across two threads ----------------

thread_local! {
    static STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Messages in flight in `w5_pipelined`.
const WINDOW: u64 = 1_000;

/// Finds the player on L1, then starts the game (and the clock).
struct Kicker {
    player: Address,
}

impl Actor for Kicker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let player = self.player.clone();
        ctx.discover("player")
            .wait()
            .then(move |_: &mut Self, other, ctx| {
                STARTED.with(|s| s.set(Some(Instant::now())));
                ctx.send(&player, Go(Some(other.clone()), n(N_THREADS)));
            });
    }
}

/// The L0 side of `w5_pipelined`: starts `WINDOW` rallies of `count /
/// WINDOW` hops each (an even number: each ends here), done when all have.
#[derive(Default)]
struct Rallies {
    other: Option<Address>,
    ended: u64,
}

impl Actor for Rallies {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_go);
        ctx.subscribe(Self::on_ping);
    }
}

impl Rallies {
    fn on_go(&mut self, go: &Go, ctx: &mut Context<'_, Self>) {
        self.other = go.0.clone();
        if let Some(other) = &self.other {
            for _ in 0..WINDOW {
                ctx.send(other, Ping(go.1 / WINDOW));
            }
        }
    }

    fn on_ping(&mut self, ping: &Ping, ctx: &mut Context<'_, Self>) {
        match &self.other {
            Some(other) if ping.0 > 1 => ctx.send(other, Ping(ping.0 - 1)),
            _ => {
                self.ended += 1;
                if self.ended == WINDOW {
                    done(ctx);
                }
            }
        }
    }
}

/// Strict alternation (`pipelined: false`: one message in flight) or
/// `WINDOW` messages in flight; the same count of messages either way.
fn w5(pipelined: bool) {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let mut system = System::named("L1").expect("system");
        tx.send(system.handle()).expect("handle");
        system.run()
    });
    let l1 = rx.recv().expect("L1 starts");
    let mut system = System::named("L0").expect("system");
    let config = SupervisorConfig::default().with_registry();
    let root = system
        .spawn_root(Supervisor)
        .supervisor(config)
        .finish()
        .expect("root");
    let here = if pipelined {
        system.spawn(&root, Rallies::default()).finish()
    } else {
        system.spawn(&root, Player::default()).finish()
    }
    .expect("player");
    let back = here.clone();
    let there = move || Player {
        other: Some(back.clone()),
    };
    system
        .spawn_on(&l1, &root, there)
        .register_as("player")
        .finish()
        .expect("player on L1");
    system
        .spawn(&root, Kicker { player: here })
        .finish()
        .expect("kicker");
    DONE.with(|d| d.set(None));
    system.run().expect("run");
    drop(l1);
    thread.join().expect("L1 joins").expect("L1 runs");
    let (start, end) = (STARTED.with(Cell::get), DONE.with(Cell::get));
    let secs = end
        .zip(start)
        .map_or(0.0, |(e, s)| e.duration_since(s).as_secs_f64());
    let name = if pipelined {
        "w5_pipelined"
    } else {
        "w5_threads"
    };
    report(name, n(N_THREADS), secs);
}

fn main() {
    SMOKE.store(!std::env::args().any(|a| a == "--bench"), Relaxed);
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| filter.is_empty() || filter.iter().any(|f| name.starts_with(f.as_str()));
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
        w5(false);
    }
    if run("w5_pipelined") {
        w5(true);
    }
    if run("w6_scale") {
        pingpong("w6_scale", n(N_IDLE));
    }
}

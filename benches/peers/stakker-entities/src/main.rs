//! stakker's side of commutator's `e2_direct` / `e2_ordered_direct`:
//! 10,000,000 messages sent round-robin to 100,000 live actors, in the
//! order they were made or scattered, by a feeder that sends 1,000 per
//! turn and then calls itself again; beside its own w1 (ping-pong of two
//! actors), so that the ratio of the two can be set beside commutator's.
use stakker::*;
use stakker_mio::mio::{Events, Poll};
use stakker_mio::MioPoll;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// commutator's key sequence, the same file.
#[path = "../../../workloads/keys.rs"]
mod keys;
use keys::Keys;

const N_PINGPONG: u64 = 10_000_000;
const N_LIVE: u64 = 100_000;
const N_STEADY: u64 = 10_000_000;
const BATCH: u64 = 1_000;

fn report(wl: &str, count: u64, secs: f64) {
    println!("stakker {} {} {:.6} {:.0}", wl, count, secs, count as f64 / secs);
}

fn run_loop(s: &mut Stakker, mp: &MioPoll, done: &Rc<Cell<bool>>) {
    let mut idle_pending = s.run(Instant::now(), false);
    let mut io_pending = false;
    while !done.get() {
        let maxdur =
            s.next_wait_max(Instant::now(), Duration::from_secs(1), idle_pending || io_pending);
        let (activity, iop) = mp.poll(maxdur).expect("poll");
        io_pending = iop;
        idle_pending = s.run(Instant::now(), !activity);
    }
}

fn new_stakker() -> (Stakker, MioPoll) {
    let mut s = Stakker::new(Instant::now());
    let mp = MioPoll::new(&mut s, Poll::new().unwrap(), Events::with_capacity(1024), 0).unwrap();
    (s, mp)
}

struct Pp {
    other: Option<Actor<Pp>>,
    done: Rc<Cell<bool>>,
}
impl Pp {
    fn init(_cx: CX![], done: Rc<Cell<bool>>) -> Option<Self> {
        Some(Self { other: None, done })
    }
    fn set_other(&mut self, _cx: CX![], other: Actor<Pp>) {
        self.other = Some(other);
    }
    fn ping(&mut self, _cx: CX![], n: u64) {
        if n > 1 {
            call!([self.other.as_ref().unwrap()], ping(n - 1));
        } else {
            self.done.set(true);
        }
    }
}

fn w1() {
    let (mut s, mp) = new_stakker();
    let done = Rc::new(Cell::new(false));
    let a = actor!(s, Pp::init(done.clone()), ret_nop!());
    let b = actor!(s, Pp::init(done.clone()), ret_nop!());
    call!([a], set_other((*b).clone()));
    call!([b], set_other((*a).clone()));
    s.run(Instant::now(), false);
    let t0 = Instant::now();
    call!([a], ping(N_PINGPONG));
    run_loop(&mut s, &mp, &done);
    report("w1_pingpong", N_PINGPONG, t0.elapsed().as_secs_f64());
}

/// Counts the hits of every entity; sets `done` at the target.
struct Entity {
    hits: Rc<Cell<u64>>,
    target: u64,
    done: Rc<Cell<bool>>,
}
impl Entity {
    fn init(_cx: CX![], hits: Rc<Cell<u64>>, target: u64, done: Rc<Cell<bool>>) -> Option<Self> {
        Some(Self { hits, target, done })
    }
    fn hit(&mut self, _cx: CX![]) {
        let hits = self.hits.get() + 1;
        self.hits.set(hits);
        if hits == self.target {
            self.done.set(true);
        }
    }
}

struct Feeder {
    actors: Vec<ActorOwn<Entity>>,
    sent: u64,
    total: u64,
    in_order: bool,
}
impl Feeder {
    fn init(_cx: CX![], actors: Vec<ActorOwn<Entity>>, total: u64, in_order: bool) -> Option<Self> {
        Some(Self { actors, sent: 0, total, in_order })
    }
    fn batch(&mut self, cx: CX![]) {
        let end = (self.sent + BATCH).min(self.total);
        let mut keys = Keys::at(self.sent, self.actors.len() as u64, self.in_order);
        while self.sent < end {
            let at = keys.take();
            call!([self.actors[at as usize]], hit());
            self.sent += 1;
        }
        if self.sent < self.total {
            call!([cx], batch());
        }
    }
}

/// `STAKKER_BENCH_DIV`: the message count divided by it (callgrind's
/// runs); there are 100,000 actors whatever it is.
fn steady() -> u64 {
    let div: u64 = std::env::var("STAKKER_BENCH_DIV").ok().and_then(|d| d.parse().ok()).unwrap_or(1);
    N_STEADY / div.max(1)
}

fn e2(workload: &str, in_order: bool) {
    let total = steady();
    let (mut s, mp) = new_stakker();
    let done = Rc::new(Cell::new(false));
    let hits = Rc::new(Cell::new(0));
    let actors: Vec<ActorOwn<Entity>> = (0..N_LIVE)
        .map(|_| actor!(s, Entity::init(hits.clone(), total, done.clone()), ret_nop!()))
        .collect();
    s.run(Instant::now(), false);
    let feeder = actor!(s, Feeder::init(actors, total, in_order), ret_nop!());
    s.run(Instant::now(), false);
    let t0 = Instant::now();
    call!([feeder], batch());
    run_loop(&mut s, &mp, &done);
    report(workload, total, t0.elapsed().as_secs_f64());
    assert_eq!(hits.get(), total);
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let all = which.is_empty();
    if all || which == "w1" {
        w1();
    }
    if all || which == "e2_ordered_direct" {
        e2("e2_ordered_direct", true);
    }
    if all || which == "e2_direct" {
        e2("e2_direct", false);
    }
}

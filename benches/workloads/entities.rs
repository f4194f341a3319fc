//! The entity-set and pool workloads (issue 18), beside w1 to w6:
//!
//! - `e1_create`: 1,000,000 messages to as many distinct keys, each making
//!   its entity (creation on first message), timed until the last one is
//!   handled.
//! - `e2_steady`: 10,000,000 messages through the set to 100,000 live
//!   entities (made before the clock starts), in batches of 1,000, in an
//!   order that jumps around memory; `e2_direct`: the same messages sent
//!   straight to 100,000 plain actors (the baseline). `e2_ordered_steady`
//!   and `e2_ordered_direct`: the same with the keys in the order the
//!   entities were made (neighbours in memory). `e2_routed` and
//!   `e2_ordered_routed`: as `e2_steady`, sent through an `EntityRouter`
//!   (straight to the live entity, not through the set's handler). `e2_ref`
//!   and `e2_ordered_ref`: as `e2_steady`, sent through an `EntityRef` per
//!   key (no lookup of the key while the entity stays live; each ref sends
//!   once before the clock starts, so that it has looked its key up, as a
//!   direct send's `Address` is resolved before). `e2_instances` and
//!   `e2_ordered_instances`: the same messages sent straight to the set's
//!   own entities (their addresses collected as they start): what the
//!   refs' sends would cost if they were plain sends to the same actors.
//!   Whatever the counts are
//!   divided by (`COMMUTATOR_BENCH_DIV` < 100: callgrind's runs), there are
//!   100,000 entities: only the messages are fewer, so the difference of
//!   two runs is the cost of a message among 100,000 entities.
//! - `e3_memory` (allocations target only): heap bytes per live entity
//!   (100,000 made on a fresh locality), and per passivated one: what a
//!   second round of 100,000 other keys, made and passivated, leaves beyond
//!   the first (whose tables keep their capacity, a high-water mark, also
//!   printed: `bytes_of_table_capacity_per_entity`).
//! - `p1_pool_1x1` and `p2_pool_2x2`: see `pools.rs`.

use super::keys::Keys;
use super::{COUNTERS, Go, SCALE_DIV, done, n, new_system, timed};
use commutator::prelude::*;
use commutator::{EntityRef, EntityRouter, EntityStats, StatsHandle};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

const N_CREATE: u64 = 1_000_000;
const N_LIVE: u64 = 100_000;
const N_STEADY: u64 = 10_000_000;
const BATCH: u64 = 1_000;

/// A message to an entity.
struct Hit;
/// The last hit was handled.
struct Finished;
struct Tick;

/// Counts the hits of every entity; tells the feeder at the target.
#[derive(Clone)]
struct Count {
    hits: Rc<Cell<u64>>,
    target: Rc<Cell<u64>>,
    feeder: Rc<Cell<Option<Address>>>,
}

thread_local! {
    /// The entities' addresses in the order they start (that of their
    /// keys), while `e2_..._instances` collects them.
    static INSTANCES: RefCell<Option<Vec<Address>>> = const { RefCell::new(None) };
}

struct Entity(Count);

thread_local! {
    /// Where each entity's actor object lies, in the order they start
    /// (`Some` while `e2` or `e2_direct` probes, with `LAYOUT_PROBE` set).
    static PROBE: RefCell<Option<Vec<usize>>> = const { RefCell::new(None) };
}

/// Starts probing where the entities lie, if `LAYOUT_PROBE` is set.
fn probe_start() {
    if std::env::var_os("LAYOUT_PROBE").is_some() {
        PROBE.with(|p| *p.borrow_mut() = Some(Vec::new()));
    }
}

/// With `LAYOUT_PROBE` set: how far apart consecutive entities' actor
/// objects lie (the commonest steps between two, and how many go up), on
/// stderr, before the timed part (`docs/entities.md`, "Where the entities
/// lie").
fn probe_report(what: &str) {
    PROBE.with(|p| {
        let Some(v) = p.borrow_mut().take() else {
            return;
        };
        let mut deltas: std::collections::HashMap<isize, usize> = Default::default();
        let mut up = 0;
        for w in v.windows(2) {
            let d = w[1] as isize - w[0] as isize;
            *deltas.entry(d).or_default() += 1;
            if d > 0 {
                up += 1;
            }
        }
        let mut top: Vec<_> = deltas.into_iter().collect();
        top.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
        top.truncate(6);
        eprintln!(
            "probe {what}: n={} increasing={} top strides={:?} first={:x?}",
            v.len(),
            up,
            top,
            &v[..v.len().min(4)]
        );
    });
}

impl Actor for Entity {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        PROBE.with(|p| {
            if let Some(probe) = p.borrow_mut().as_mut() {
                probe.push(self as *const Self as usize);
            }
        });
        INSTANCES.with(|i| {
            if let Some(instances) = i.borrow_mut().as_mut() {
                instances.push(ctx.address().clone());
            }
        });
        ctx.subscribe(|me: &mut Self, _: &Hit, ctx: &mut Context<'_, Self>| {
            let hits = me.0.hits.get() + 1;
            me.0.hits.set(hits);
            if hits == me.0.target.get()
                && let Some(feeder) = me.0.feeder.take()
            {
                ctx.send(&feeder, Finished);
            }
        });
    }
}

/// The live entities of `e2`: 100,000, fewer only in test runs (counts
/// divided by 100 or more).
fn live_keys() -> u64 {
    if SCALE_DIV.load(Relaxed) < 100 {
        N_LIVE
    } else {
        n(N_LIVE)
    }
}

/// The root: sends `total` hits in batches, to keys `0..total` (`e1`) or
/// in rounds over `keys` keys (`e2`).
struct Feeder {
    set: Option<Address>,
    me: Option<Address>,
    sent: u64,
    total: u64,
    keys: u64,
    in_order: bool,
    sends: Sends,
}

/// How the feeder of `e2` sends.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    /// `Keyed` to the set.
    Set,
    /// Through an `EntityRouter`.
    Router,
    /// Through an `EntityRef` per key (made before the timed part).
    Ref,
    /// Straight to the entities' addresses (the set's own instances:
    /// what a ref's send would cost if it were a direct send).
    Instances,
}

/// How the feeder sends, with the handles it needs.
enum Sends {
    Set,
    Router(EntityRouter<u64>),
    Refs(Vec<EntityRef<u64>>),
    Instances(Vec<Address>),
}

impl Actor for Feeder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.me = Some(ctx.address().clone());
        ctx.subscribe(|me: &mut Self, go: &Go, ctx: &mut Context<'_, Self>| {
            me.set = go.0.clone();
            me.batch(ctx);
        });
        ctx.subscribe(|me: &mut Self, _: &Tick, ctx: &mut Context<'_, Self>| me.batch(ctx));
        ctx.subscribe(|_: &mut Self, _: &Finished, ctx: &mut Context<'_, Self>| done(ctx));
        ctx.subscribe(|me: &mut Self, a: &Actors, _: &mut Context<'_, Self>| {
            me.sends = Sends::Instances(a.0.clone());
        });
        ctx.subscribe(|me: &mut Self, _: &Warm, ctx: &mut Context<'_, Self>| {
            if let Sends::Refs(refs) = &me.sends {
                for r in refs {
                    r.send(ctx, Hit).expect("sent");
                }
            }
        });
    }
}

/// Before the timed part: one message through each ref, so that each
/// caches where its entity is (as a direct send's `Address` is resolved
/// before the clock starts).
struct Warm;

impl Feeder {
    fn batch(&mut self, ctx: &mut Context<'_, Self>) {
        let (Some(set), Some(me)) = (self.set.clone(), self.me.clone()) else {
            return;
        };
        let end = (self.sent + BATCH).min(self.total);
        let mut keys = Keys::at(self.sent, self.keys, self.in_order);
        match &self.sends {
            Sends::Router(router) => {
                while self.sent < end {
                    let key = keys.take();
                    router.send(ctx, key, Hit).expect("routed");
                    self.sent += 1;
                }
            }
            Sends::Refs(refs) => {
                while self.sent < end {
                    let key = keys.take();
                    refs[key as usize].send(ctx, Hit).expect("sent");
                    self.sent += 1;
                }
            }
            Sends::Instances(actors) => {
                while self.sent < end {
                    let key = keys.take();
                    ctx.send(&actors[key as usize], Hit);
                    self.sent += 1;
                }
            }
            Sends::Set => {}
        }
        while self.sent < end {
            let key = keys.take();
            ctx.send(&set, Keyed::new(key, Hit));
            self.sent += 1;
        }
        if self.sent < self.total {
            ctx.send(&me, Tick);
        }
    }
}

fn entity_system(
    total: u64,
    keys: u64,
    in_order: bool,
    via: Via,
) -> (System, Address, Address, Count, StatsHandle<EntityStats>) {
    let count = Count {
        hits: Rc::default(),
        target: Rc::new(Cell::new(total)),
        feeder: Rc::default(),
    };
    let made = count.clone();
    let set = EntitySet::new(move |_: &u64| Entity(made.clone())).route::<Hit>();
    let stats = set.stats();
    let sends = match via {
        Via::Set => Sends::Set,
        Via::Router => Sends::Router(set.router()),
        Via::Ref => Sends::Refs((0..keys).map(|k| set.entity(k)).collect()),
        Via::Instances => Sends::Set,
    };
    let (mut system, root) = new_system(Feeder {
        set: None,
        me: None,
        sent: 0,
        total,
        keys,
        in_order,
        sends,
    });
    count.feeder.set(Some(root.clone()));
    let set = system
        .spawn(&root, set)
        .name("entities")
        .finish()
        .expect("set");
    (system, root, set, count, stats)
}

fn e1() {
    let total = n(N_CREATE);
    let (system, root, set, _count, stats) = entity_system(total, u64::MAX, true, Via::Set);
    timed("e1_create", total, system, &root, Go(Some(set), total));
    assert_eq!(stats.get().created, total, "one entity per key");
}

fn e2(workload: &str, in_order: bool, via: Via) {
    let keys = live_keys();
    let total = n(N_STEADY);
    probe_start();
    if via == Via::Instances {
        INSTANCES.with(|i| *i.borrow_mut() = Some(Vec::new()));
    }
    let (mut system, root, set, count, stats) = entity_system(total, keys, in_order, via);
    count.target.set(u64::MAX);
    for key in 0..keys {
        system.send(&set, Keyed::new(key, Hit)).expect("warm-up");
    }
    system.locality().run_until_idle(Instant::now());
    assert_eq!(stats.get().live as u64, keys, "every entity is live");
    if via == Via::Ref {
        system.send(&root, Warm).expect("warm-up");
        system.locality().run_until_idle(Instant::now());
    }
    if let Some(actors) = INSTANCES.with(|i| i.borrow_mut().take()) {
        assert_eq!(actors.len() as u64, keys, "every entity's address");
        system.send(&root, Actors(actors)).expect("instances");
        system.locality().run_until_idle(Instant::now());
    }
    probe_report(workload);
    count.hits.set(0);
    count.target.set(total);
    timed(workload, total, system, &root, Go(Some(set), total));
}

/// Sends `total` hits round-robin straight to `actors` (no set): the
/// baseline of `e2`, with the same memory traffic over 100,000 actors.
struct Direct {
    actors: Vec<Address>,
    me: Option<Address>,
    sent: u64,
    total: u64,
    in_order: bool,
}

impl Actor for Direct {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.me = Some(ctx.address().clone());
        ctx.subscribe(|me: &mut Self, _: &Go, ctx: &mut Context<'_, Self>| me.batch(ctx));
        ctx.subscribe(|me: &mut Self, _: &Tick, ctx: &mut Context<'_, Self>| me.batch(ctx));
        ctx.subscribe(|_: &mut Self, _: &Finished, ctx: &mut Context<'_, Self>| done(ctx));
        ctx.subscribe(|me: &mut Self, a: &Actors, _: &mut Context<'_, Self>| {
            me.actors = a.0.clone();
        });
    }
}

impl Direct {
    fn batch(&mut self, ctx: &mut Context<'_, Self>) {
        let Some(me) = self.me.clone() else { return };
        let end = (self.sent + BATCH).min(self.total);
        let mut keys = Keys::at(self.sent, self.actors.len() as u64, self.in_order);
        while self.sent < end {
            let at = keys.take();
            let to = &self.actors[at as usize];
            ctx.send(to, Hit);
            self.sent += 1;
        }
        if self.sent < self.total {
            ctx.send(&me, Tick);
        }
    }
}

fn e2_direct(workload: &str, in_order: bool) {
    let keys = live_keys();
    let total = n(N_STEADY);
    probe_start();
    let mut system = System::new().expect("system");
    let root = system
        .spawn_root(Direct {
            actors: Vec::new(),
            me: None,
            sent: 0,
            total,
            in_order,
        })
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("root");
    let count = Count {
        hits: Rc::default(),
        target: Rc::new(Cell::new(total)),
        feeder: Rc::new(Cell::new(Some(root.clone()))),
    };
    let actors: Vec<Address> = (0..keys)
        .map(|_| {
            system
                .spawn(&root, Entity(count.clone()))
                .finish()
                .expect("actor")
        })
        .collect();
    system.send(&root, Actors(actors)).expect("actors");
    // Started before the clock, as the sets' entities are.
    system.locality().run_until_idle(Instant::now());
    probe_report(workload);
    timed(workload, total, system, &root, Go(None, total));
}

/// Hands the `Direct` root its actors.
struct Actors(Vec<Address>);

/// Heap bytes per live entity, and kept per passivated entity.
fn e3() {
    let Some(counters) = COUNTERS.get() else {
        return; // a figure of the allocations target only
    };
    let entities = N_LIVE / u64::from(SCALE_DIV.load(Relaxed));
    let mut locality = Locality::named("e3");
    let t0 = locality.now();
    let count = Count {
        hits: Rc::default(),
        target: Rc::new(Cell::new(u64::MAX)),
        feeder: Rc::default(),
    };
    let set = EntitySet::new(move |_: &u64| Entity(count.clone()))
        .route::<Hit>()
        .idle_after(Duration::from_secs(1));
    let stats = set.stats();
    let set = locality
        .spawn_root(set)
        .name("entities")
        .finish()
        .expect("set");
    locality.run_until_idle(t0);
    let mut round = |from: u64, at: Duration| {
        let before = counters.live_bytes();
        for key in from..from + entities {
            locality.send(&set, Keyed::new(key, Hit)).expect("hit");
        }
        locality.run_until_idle(t0 + at);
        let live = counters.live_bytes();
        assert_eq!(stats.get().live as u64, entities);
        locality.run_until_idle(t0 + at + Duration::from_secs(1));
        assert_eq!(stats.get().live, 0, "every entity passivated");
        (before, live, counters.live_bytes())
    };
    // The first round grows the locality's tables (they keep their
    // capacity); the second reuses them, so what it leaves is what a
    // passivated entity keeps.
    let (before, live, high_water) = round(0, Duration::from_secs(1));
    let (_, _, after) = round(entities, Duration::from_secs(3));
    let per = |bytes: isize| bytes as f64 / entities as f64;
    println!(
        "commutator e3_memory bytes_per_live_entity {:.0}",
        per(live - before)
    );
    println!(
        "commutator e3_memory bytes_kept_per_passivated_entity {:.1}",
        per(after - high_water)
    );
    println!(
        "commutator e3_memory bytes_of_table_capacity_per_entity {:.0}",
        per(high_water - before)
    );
}

/// Runs the entity and pool workloads that `run` selects.
pub(super) fn main(run: &dyn Fn(&str) -> bool) {
    if run("e1_create") {
        e1();
    }
    if run("e2_steady") {
        e2("e2_steady", false, Via::Set);
    }
    if run("e2_direct") {
        e2_direct("e2_direct", false);
    }
    if run("e2_ordered_steady") {
        e2("e2_ordered_steady", true, Via::Set);
    }
    if run("e2_ordered_direct") {
        e2_direct("e2_ordered_direct", true);
    }
    if run("e2_routed") {
        e2("e2_routed", false, Via::Router);
    }
    if run("e2_ordered_routed") {
        e2("e2_ordered_routed", true, Via::Router);
    }
    if run("e2_ref") {
        e2("e2_ref", false, Via::Ref);
    }
    if run("e2_ordered_ref") {
        e2("e2_ordered_ref", true, Via::Ref);
    }
    if run("e2_instances") {
        e2("e2_instances", false, Via::Instances);
    }
    if run("e2_ordered_instances") {
        e2("e2_ordered_instances", true, Via::Instances);
    }
    if run("e3_memory") {
        e3();
    }
    super::pools::main(run);
}

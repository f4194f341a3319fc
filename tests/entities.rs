//! Entity sets on a manual clock: made on the first message, held messages
//! in order, passivation, the cap, failures, inspection names.

mod common;

use common::{Clock, Log, root_on_l0};
use commutator::{
    Actor, Address, Context, EntitySet, EntityStats, ErrorCode, Keyed, Locality, Request,
    RequestMsg, Response, RestartPolicy, StatsHandle,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

/// A reading from sender `.0`, numbered `.1`.
struct Reading(u32, u32);
/// Makes the entity fail (a panic in its handler).
struct Boom;
/// Makes the entity shut itself down.
struct Leave;

/// Asks an entity how many readings its instance has had.
struct Get(u32);
impl Request for Get {
    /// (instance number, readings)
    type Response = (u32, u32);
}

/// How the test's devices behave.
#[derive(Clone, Default)]
struct Plan {
    /// Hold init this long (ms), with a resource.
    hold_init: Option<u64>,
    /// Hold shutdown this long (ms), with a resource.
    hold_shutdown: Option<u64>,
    /// Keys whose init fails.
    failing: Vec<u32>,
}

struct Device {
    instance: u32,
    readings: u32,
    plan: Plan,
    log: Log,
    key: u32,
}

impl Device {
    fn say(&self, ctx: &Context<'_, Self>, what: impl std::fmt::Display) {
        self.log
            .push(format!("{} ({}) {what}", ctx.name(), self.instance));
    }

    fn hold(ctx: &mut Context<'_, Self>, ms: u64, kind: u32) {
        ctx.acquire_resource(kind);
        ctx.start_timer(Duration::from_millis(ms), move |_: &mut Self, ctx, _| {
            ctx.release_resource(kind).unwrap();
        });
    }
}

impl Actor for Device {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.say(ctx, "init_start");
        ctx.subscribe(|me: &mut Self, r: &Reading, ctx: &mut Context<'_, Self>| {
            me.readings += 1;
            me.say(ctx, format!("got {}.{}", r.0, r.1));
        });
        ctx.subscribe(|_: &mut Self, _: &Boom, _: &mut Context<'_, Self>| panic!("boom"));
        ctx.subscribe(|_: &mut Self, _: &Leave, ctx: &mut Context<'_, Self>| ctx.shutdown());
        ctx.subscribe(
            |me: &mut Self, q: &RequestMsg<Get>, ctx: &mut Context<'_, Self>| {
                me.say(ctx, "asked");
                ctx.reply(q, (me.instance, me.readings));
            },
        );
        if self.plan.failing.contains(&self.key) {
            ctx.fail(commutator::Error::failure("no such device"));
        } else if let Some(ms) = self.plan.hold_init {
            Self::hold(ctx, ms, 1);
        }
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.say(ctx, "on_start");
    }
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.say(ctx, "shutdown_start");
        if let Some(ms) = self.plan.hold_shutdown {
            Self::hold(ctx, ms, 2);
        }
    }
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.say(ctx, "shutdown_finish");
    }
}

/// A set of devices keyed by number, each instance numbered per key.
fn devices(log: &Log, plan: Plan) -> EntitySet<u32, Device> {
    let log = log.clone();
    let instances: Rc<RefCell<HashMap<u32, u32>>> = Rc::default();
    EntitySet::new(move |key: &u32| {
        let mut counts = instances.borrow_mut();
        let n = counts.entry(*key).or_insert(0);
        *n += 1;
        Device {
            instance: *n,
            readings: 0,
            plan: plan.clone(),
            log: log.clone(),
            key: *key,
        }
    })
    .route::<Reading>()
    .route::<Boom>()
    .route::<Leave>()
    .route_request::<Get>(|q| q.0)
}

/// Sends requests to the set on `Ask` and logs the responses.
struct Asker {
    set: Address,
    log: Log,
}
struct Ask(u32);

impl Actor for Asker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, ask: &Ask, ctx: &mut Context<'_, Self>| {
            ctx.request(&me.set, Get(ask.0), Duration::from_secs(10));
        });
        ctx.subscribe(
            |me: &mut Self, r: &Response<Get>, _: &mut Context<'_, Self>| {
                let line = match r.result() {
                    Ok((instance, readings)) => {
                        format!("{}: ({instance}) {readings}", r.request().0)
                    }
                    Err(e) => format!("{}: {:?}", r.request().0, e.code()),
                };
                me.log.push(format!("asker {line}"));
            },
        );
    }
}

struct Fixture {
    l: Locality,
    root: Address,
    clock: Clock,
    set: Address,
    stats: StatsHandle<EntityStats>,
    log: Log,
}

impl Fixture {
    fn new(
        make: impl FnOnce(EntitySet<u32, Device>) -> EntitySet<u32, Device>,
        plan: Plan,
    ) -> Self {
        let (mut l, root) = root_on_l0();
        let clock = Clock { t0: l.now() };
        let log = Log::new();
        let set = make(devices(&log, plan));
        let stats = set.stats();
        let set = l.spawn(&root, set).name("devices").finish().unwrap();
        l.run_until_idle(clock.t0);
        Fixture {
            l,
            root,
            clock,
            set,
            stats,
            log,
        }
    }

    fn send<M: Send + 'static>(&mut self, key: u32, message: M) {
        self.l.send(&self.set, Keyed::new(key, message)).unwrap();
    }

    fn at(&mut self, ms: u64) -> Vec<String> {
        self.l.run_until_idle(self.clock.at(ms));
        self.log.take()
    }

    fn asker(&mut self) -> Address {
        let asker = Asker {
            set: self.set.clone(),
            log: self.log.clone(),
        };
        let asker = self
            .l
            .spawn(&self.root, asker)
            .name("asker")
            .finish()
            .unwrap();
        self.l.run_until_idle(self.clock.t0);
        asker
    }
}

#[test]
fn the_first_message_for_a_key_makes_its_entity_named_by_the_key() {
    let mut f = Fixture::new(|s| s, Plan::default());
    assert_eq!(f.stats.get().created, 0, "nothing is made before a message");
    f.send(42, Reading(0, 0));
    assert_eq!(
        f.at(0),
        [
            "devices/42 (1) init_start",
            "devices/42 (1) on_start",
            "devices/42 (1) got 0.0",
        ]
    );
    f.send(42, Reading(0, 1));
    assert_eq!(
        f.at(0),
        ["devices/42 (1) got 0.1"],
        "later messages go straight to it"
    );
    let s = f.stats.get();
    assert_eq!((s.live, s.created, s.buffered), (1, 1, 0));
    assert_eq!(f.l.stats().actors, 3, "the root, the set and one device");
}

/// Two senders interleave while the entity holds its init; each one's
/// order is kept, and nothing reaches the entity before its `on_start`.
#[test]
fn messages_that_arrive_while_the_entity_initializes_wait_and_keep_their_order() {
    let plan = Plan {
        hold_init: Some(10),
        ..Plan::default()
    };
    let mut f = Fixture::new(|s| s, plan);
    let asker = f.asker();
    for n in 0..3 {
        f.send(7, Reading(0, n));
        f.l.send(&asker, Ask(7)).unwrap();
    }
    assert_eq!(f.at(0), ["devices/7 (1) init_start"]);
    f.send(7, Reading(0, 3));
    assert_eq!(f.at(5), Vec::<String>::new());
    assert_eq!(f.stats.get().buffered, 7);
    assert_eq!(
        f.at(10),
        [
            "devices/7 (1) on_start",
            "devices/7 (1) got 0.0",
            "devices/7 (1) got 0.1",
            "devices/7 (1) got 0.2",
            "devices/7 (1) asked",
            "devices/7 (1) asked",
            "devices/7 (1) asked",
            "devices/7 (1) got 0.3",
            "asker 7: (1) 3",
            "asker 7: (1) 3",
            "asker 7: (1) 3",
        ],
        "in the order they reached the set: the readings sent straight from \
         outside, then the asker's requests (sent when it got its `Ask`s), \
         then the reading sent later"
    );
    assert_eq!(f.stats.get().buffered, 0);
}

#[test]
fn an_idle_entity_is_passivated_through_its_lifecycle_and_made_again_on_its_next_message() {
    let mut f = Fixture::new(
        |s| s.idle_after(Duration::from_millis(100)),
        Plan::default(),
    );
    f.send(1, Reading(0, 0));
    f.send(2, Reading(0, 0));
    f.at(0);
    f.send(2, Reading(0, 1)); // keeps 2 busy until 150
    f.at(50);
    assert_eq!(f.at(99), Vec::<String>::new());
    assert_eq!(
        f.at(100),
        [
            "devices/1 (1) shutdown_start",
            "devices/1 (1) shutdown_finish"
        ]
    );
    assert_eq!(
        f.at(150),
        [
            "devices/2 (1) shutdown_start",
            "devices/2 (1) shutdown_finish"
        ]
    );
    let s = f.stats.get();
    assert_eq!((s.live, s.passivated), (0, 2));
    let stores = f.l.stats();
    assert_eq!(
        (stores.actors, stores.timers, stores.queued),
        (2, 0, 0),
        "nothing is kept of a passivated entity, and no timer runs for none"
    );
    assert_eq!(
        (stores.dropped_stale, stores.dropped_unsubscribed),
        (0, 0),
        "no message was lost on the way"
    );
    f.send(1, Reading(0, 2));
    assert_eq!(
        f.at(200),
        [
            "devices/1 (2) init_start",
            "devices/1 (2) on_start",
            "devices/1 (2) got 0.2"
        ]
    );
}

#[test]
fn a_message_that_arrives_while_its_entity_is_passivated_reaches_the_new_instance() {
    let plan = Plan {
        hold_shutdown: Some(10),
        ..Plan::default()
    };
    let mut f = Fixture::new(|s| s.idle_after(Duration::from_millis(100)), plan);
    f.send(1, Reading(0, 0));
    f.at(0);
    assert_eq!(f.at(100), ["devices/1 (1) shutdown_start"]);
    f.send(1, Reading(0, 1));
    assert_eq!(
        f.at(105),
        Vec::<String>::new(),
        "held, not given to the leaving instance"
    );
    assert_eq!(f.stats.get().buffered, 1);
    assert_eq!(
        f.at(110),
        [
            "devices/1 (1) shutdown_finish",
            "devices/1 (2) init_start",
            "devices/1 (2) on_start",
            "devices/1 (2) got 0.1",
        ]
    );
    let stores = f.l.stats();
    assert_eq!((stores.dropped_stale, stores.dropped_unsubscribed), (0, 0));
}

#[test]
fn an_entity_that_shuts_itself_down_leaves_later_messages_to_its_next_instance() {
    let plan = Plan {
        hold_shutdown: Some(10),
        ..Plan::default()
    };
    let mut f = Fixture::new(|s| s, plan);
    f.send(1, Reading(0, 0));
    f.send(1, Leave);
    f.at(0);
    f.send(1, Reading(0, 1));
    assert_eq!(f.at(5), Vec::<String>::new());
    assert_eq!(
        f.at(10),
        [
            "devices/1 (1) shutdown_finish",
            "devices/1 (2) init_start",
            "devices/1 (2) on_start",
            "devices/1 (2) got 0.1",
        ]
    );
}

#[test]
fn at_the_cap_the_least_recently_used_entity_is_passivated_for_a_new_key() {
    let mut f = Fixture::new(|s| s.max_live(2), Plan::default());
    f.send(1, Reading(0, 0));
    f.send(2, Reading(0, 0));
    f.at(0);
    f.send(1, Reading(0, 1)); // 2 is now the least recently used
    f.at(0);
    f.send(3, Reading(0, 0));
    assert_eq!(
        f.at(0),
        [
            "devices/2 (1) shutdown_start",
            "devices/2 (1) shutdown_finish",
            "devices/3 (1) init_start",
            "devices/3 (1) on_start",
            "devices/3 (1) got 0.0",
        ]
    );
    let s = f.stats.get();
    assert_eq!((s.live, s.passivated, s.refused, s.waiting), (2, 1, 0, 0));
}

#[test]
fn at_the_cap_with_no_idle_entity_a_new_key_is_refused_with_entity_limit() {
    let plan = Plan {
        hold_init: Some(10),
        ..Plan::default()
    };
    let mut f = Fixture::new(|s| s.max_live(1), plan);
    let asker = f.asker();
    f.l.send(&asker, Ask(1)).unwrap(); // 1 initializes until 10: not idle
    f.at(0);
    f.l.send(&asker, Ask(2)).unwrap();
    f.send(2, Reading(0, 0));
    assert_eq!(f.at(1), ["asker 2: EntityLimit"]);
    assert_eq!(f.stats.get().refused, 2, "the request and the message");
    assert_eq!(
        f.at(10),
        [
            "devices/1 (1) on_start",
            "devices/1 (1) asked",
            "asker 1: (1) 0"
        ],
        "the entity that was there is not disturbed"
    );
    f.l.send(&asker, Ask(2)).unwrap(); // now 1 is idle: it makes room
    assert_eq!(
        f.at(10),
        [
            "devices/1 (1) shutdown_start",
            "devices/1 (1) shutdown_finish",
            "devices/2 (1) init_start"
        ]
    );
    assert_eq!(
        f.at(20),
        [
            "devices/2 (1) on_start",
            "devices/2 (1) asked",
            "asker 2: (1) 0"
        ]
    );
}

#[test]
fn a_failing_entity_is_restarted_without_touching_its_siblings() {
    let mut f = Fixture::new(|s| s.restart(RestartPolicy::OnFailure), Plan::default());
    f.send(1, Reading(0, 0));
    f.send(2, Reading(0, 0));
    f.at(0);
    f.send(1, Boom);
    f.send(1, Reading(0, 1)); // after the panic: waits for the restarted instance
    f.send(2, Reading(0, 1));
    assert_eq!(
        f.at(0),
        [
            "devices/2 (1) got 0.1",
            "devices/1 (1) shutdown_start",
            "devices/1 (1) shutdown_finish",
            "devices/1 (2) init_start",
            "devices/1 (2) on_start",
            "devices/1 (2) got 0.1",
        ]
    );
    let s = f.stats.get();
    assert_eq!((s.live, s.created, s.restarts), (2, 2, 1));
}

#[test]
fn an_entity_that_fails_its_init_gets_none_of_its_messages_and_the_next_one_tries_again() {
    let plan = Plan {
        failing: vec![13],
        ..Plan::default()
    };
    let mut f = Fixture::new(|s| s, plan);
    let asker = f.asker();
    f.l.send(&asker, Ask(13)).unwrap();
    f.send(13, Reading(0, 0));
    let lines = f.at(0);
    assert_eq!(lines.last().unwrap(), "asker 13: Unavailable");
    assert!(!lines.iter().any(|l| l.contains("got")));
    assert_eq!(f.stats.get().refused, 2);
    f.l.send(&asker, Ask(13)).unwrap();
    let lines = f.at(1);
    assert!(lines.contains(&"devices/13 (2) init_start".to_string()));
    assert_eq!(f.stats.get().live, 0);
}

#[test]
fn a_full_buffer_refuses_more_and_a_closing_set_refuses_everything() {
    let plan = Plan {
        hold_init: Some(10),
        ..Plan::default()
    };
    let mut f = Fixture::new(|s| s.max_buffered(2), plan);
    let asker = f.asker();
    f.send(1, Reading(0, 0));
    f.send(1, Reading(0, 1));
    f.l.send(&asker, Ask(1)).unwrap();
    assert_eq!(
        f.at(0),
        ["devices/1 (1) init_start", "asker 1: Unavailable"]
    );
    f.at(10);
    f.l.shutdown(&f.set).unwrap();
    f.l.send(&asker, Ask(1)).unwrap();
    let lines = f.at(11);
    assert!(
        lines.contains(&"asker 1: Unavailable".to_string()),
        "{lines:?}"
    );
    assert_eq!(f.stats.get().refused, 2);
}

#[test]
fn settings_that_cannot_work_fail_the_sets_init() {
    for (what, set) in [
        (
            "Always",
            devices(&Log::new(), Plan::default()).restart(RestartPolicy::Always),
        ),
        (
            "idle 0",
            devices(&Log::new(), Plan::default()).idle_after(Duration::ZERO),
        ),
        ("cap 0", devices(&Log::new(), Plan::default()).max_live(0)),
        (
            "buffer 0",
            devices(&Log::new(), Plan::default()).max_buffered(0),
        ),
    ] {
        let mut l = Locality::new();
        l.spawn_root(set).name("devices").finish().unwrap();
        l.run_until_idle(l.now());
        assert!(l.is_finished(), "{what}");
        let reason = l.exit_reason().expect("a failed init");
        assert!(
            reason
                .chain()
                .any(|e| e.code() == ErrorCode::InvalidArgument),
            "{what}: {reason:#}"
        );
    }
}

#[test]
fn inspection_names_entities_by_key_the_same_every_run() {
    let run = || {
        let lines = Rc::new(RefCell::new(Vec::new()));
        let sink = lines.clone();
        let mut f = Fixture::new(|s| s, Plan::default());
        f.l.inspect_with(1, move |line| sink.borrow_mut().push(line.to_string()));
        f.send(42, Reading(0, 0));
        f.at(0);
        lines.take()
    };
    let first = run();
    assert!(
        first
            .iter()
            .any(|l| l.contains("Reading L0/devices#") && l.contains("-> L0/devices/42#")),
        "{first:#?}"
    );
    assert_eq!(first, run());
}

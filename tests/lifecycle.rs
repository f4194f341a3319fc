//! The actor lifecycle in a supervision tree: hook order, cleanup, children
//! spawned later, a synchronized start. Failures: `lifecycle_failures.rs`;
//! init and shutdown timeouts: `lifecycle_timeouts.rs`; plugin votes:
//! `lifecycle_plugins.rs`.

mod common;

use common::lifecycle::{Nudge, Probe, Stop, probe_root};
use common::{Clock, Log};
use commutator::{
    Actor, ActorState, Address, Context, ErrorCode, Locality, Supervisor, SupervisorConfig,
};
use std::time::Duration;

/// root#1 → { sup#2 → { leaf1#4, leaf2#5 }, leaf0#3 }.
struct Tree {
    locality: Locality,
    root: Address,
    sup: Address,
    leaf0: Address,
}

fn tree(log: &Log) -> Tree {
    let (mut locality, root) = probe_root(log, SupervisorConfig::default());
    let sup = locality
        .spawn(&root, Probe::new(log))
        .name("sup")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let leaf0 = locality
        .spawn(&root, Probe::new(log))
        .name("leaf0")
        .finish()
        .unwrap();
    locality
        .spawn(&sup, Probe::new(log))
        .name("leaf1")
        .finish()
        .unwrap();
    locality
        .spawn(&sup, Probe::new(log))
        .name("leaf2")
        .finish()
        .unwrap();
    Tree {
        locality,
        root,
        sup,
        leaf0,
    }
}

#[test]
fn hooks_run_in_tree_order_from_spawn_through_shutdown() {
    let clock = Clock::new();
    let log = Log::new();
    let Tree {
        mut locality,
        root,
        sup,
        leaf0,
    } = tree(&log);
    assert_eq!(root.to_string(), "L0/root#1");
    assert_eq!(sup.to_string(), "L0/sup#2");
    assert_eq!(leaf0.to_string(), "L0/leaf0#3");

    locality.run_until_idle(clock.at(0));
    log.push("-- operational --");
    locality.send(&leaf0, Stop).unwrap();
    locality.run_until_idle(clock.at(0));

    assert!(locality.is_finished());
    insta::assert_snapshot!(log.text());
}

#[test]
fn hooks_follow_the_supervision_order() {
    // The rules behind the snapshot above, checked one by one.
    let clock = Clock::new();
    let log = Log::new();
    let Tree {
        mut locality,
        leaf0,
        ..
    } = tree(&log);
    locality.run_until_idle(clock.at(0));
    locality.send(&leaf0, Stop).unwrap();
    locality.run_until_idle(clock.at(0));
    let lines = log.lines();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(&format!("{line} ")))
            .unwrap_or_else(|| panic!("no `{line}` in {lines:#?}"))
    };

    for (parent, children) in [
        ("root#1", &["sup#2", "leaf0#3"][..]),
        ("sup#2", &["leaf1#4", "leaf2#5"][..]),
    ] {
        for child in children {
            let (p, c) = (parent, child);
            assert!(
                at(&format!("{c} init_finish")) < at(&format!("{p} init_finish")),
                "{c} confirms before {p}"
            );
            assert!(
                at(&format!("{p} on_start")) < at(&format!("{c} on_start")),
                "{p} starts before {c}"
            );
            assert!(at(&format!("{p} shutdown_start")) < at(&format!("{c} shutdown_start")));
            assert!(
                at(&format!("{c} shutdown_finish")) < at(&format!("{p} shutdown_finish")),
                "{c} is down before {p}"
            );
        }
    }
    // Five actors, five hooks each, plus the one trigger.
    assert_eq!(lines.len(), 5 * 5 + 1);
}

/// Makes an identity, subscribes on another actor's address, and starts a timer.
struct Busy {
    other: Address,
}

struct Anything;

impl Actor for Busy {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_anything);
        let extra = ctx.create_address("extra").unwrap();
        ctx.subscribe_on(&extra, Self::on_anything).unwrap();
        let other = self.other.clone();
        ctx.subscribe_on(&other, Self::on_anything).unwrap();
        ctx.start_timer(Duration::from_secs(3600), |_: &mut Busy, _, _| {});
    }
}

impl Busy {
    fn on_anything(&mut self, _: &Anything, _: &mut Context<'_, Self>) {}
}

#[test]
fn the_locality_finishes_when_the_root_is_gone_and_frees_everything() {
    let clock = Clock::new();
    let log = Log::new();
    let Tree {
        mut locality,
        sup,
        leaf0,
        ..
    } = tree(&log);
    locality
        .spawn(
            &sup,
            Busy {
                other: leaf0.clone(),
            },
        )
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    let stats = locality.stats();
    assert_eq!((stats.actors, stats.addresses, stats.timers), (6, 7, 1));
    assert!(!locality.is_finished());
    assert!(locality.exit_reason().is_none());

    locality.send(&leaf0, Stop).unwrap();
    locality.run_until_idle(clock.at(0));

    assert!(locality.is_finished());
    assert!(leaf0.is_closed());
    let reason = locality
        .exit_reason()
        .expect("a finished locality has a reason");
    assert_eq!(reason.code(), ErrorCode::Normal);
    let stats = locality.stats();
    assert_eq!(
        (
            stats.actors,
            stats.addresses,
            stats.subscriptions,
            stats.timers,
            stats.queued
        ),
        (0, 0, 0, 0, 0),
        "{stats:?}"
    );
    assert_eq!(locality.next_deadline(), None);
    assert!(!locality.has_pending());
}

/// A supervisor that spawns a child once it is operational.
struct Grower {
    log: Log,
}

impl Actor for Grower {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let child = Probe::new(&self.log);
        ctx.spawn(child)
            .name("late")
            .finish()
            .expect("an operational supervisor spawns");
    }
}

#[test]
fn a_child_spawned_by_an_operational_supervisor_is_started() {
    let clock = Clock::new();
    let log = Log::new();
    let mut locality = Locality::named("L0");
    locality
        .spawn_root(Grower { log: log.clone() })
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();

    locality.run_until_idle(clock.at(0));

    assert_eq!(
        log.lines(),
        [
            "late#2 init_start [INITIALIZING]",
            "late#2 init_finish [INITIALIZED]",
            "late#2 on_start [OPERATIONAL]",
        ]
    );
    assert_eq!(locality.stats().actors, 2);
}

#[test]
fn a_synchronized_start_starts_late_children_together() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = common::root_on_l0();
    let config = SupervisorConfig::default().synchronize_start(true);
    let sup = l
        .spawn(&root, Supervisor)
        .name("sup")
        .supervisor(config)
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    // Two children spawned after the supervisor is operational; one holds its init.
    let quick = l
        .spawn(&sup, common::Scripted::new("quick", &log))
        .finish()
        .unwrap();
    let slow = common::Scripted::new("slow", &log).on_init(|_, ctx| {
        ctx.acquire_resource(0);
        ctx.subscribe(
            |_: &mut common::Scripted, _: &Nudge, ctx: &mut Context<'_, common::Scripted>| {
                let _ = ctx.release_resource(0);
            },
        );
    });
    let slow = l.spawn(&sup, slow).finish().unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        l.state_of(&quick),
        Some(ActorState::Initialized),
        "held until its sibling is ready"
    );
    assert_eq!(l.state_of(&slow), Some(ActorState::Initializing));
    l.send(&slow, Nudge).unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(l.state_of(&quick), Some(ActorState::Operational));
    assert_eq!(l.state_of(&slow), Some(ActorState::Operational));
    let trace = log.lines();
    assert!(
        common::pos(&trace, "slow init_finish") < common::pos(&trace, "quick on_start"),
        "{trace:#?}"
    );
}

/// Records its number when it finishes its shutdown.
struct Numbered(usize, std::rc::Rc<std::cell::RefCell<Vec<usize>>>);

impl Actor for Numbered {
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.1.borrow_mut().push(self.0);
    }
}

/// A plain leaf: no hooks of its own.
struct Quiet;
impl Actor for Quiet {}

#[test]
fn a_supervisor_shutdown_stops_each_of_many_children_once_in_spawn_order() {
    // More children than the supervisor reads at a time, some of them
    // plain leaves (which go at once), some with a hook.
    let clock = Clock::new();
    let mut locality = Locality::named("L0");
    let root = locality
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    for i in 0..100 {
        if i % 3 == 0 {
            locality.spawn(&root, Quiet).finish().unwrap();
        }
        locality
            .spawn(&root, Numbered(i, seen.clone()))
            .finish()
            .unwrap();
    }
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.stats().actors, 1 + 100 + 34);
    locality.shutdown(&root).unwrap();
    locality.run_until_idle(clock.at(0));
    assert!(locality.is_finished());
    assert_eq!(*seen.borrow(), (0..100).collect::<Vec<_>>());
}

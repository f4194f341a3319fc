//! The actor lifecycle in a supervision tree: hook order, cleanup, init
//! failures, init and shutdown timeouts.

mod common;

use common::{Clock, Log, short};
use commutator::{
    Actor, ActorState, Address, Context, Error, ErrorCode, InitFailurePolicy, Locality, Plugin,
    Supervisor, SupervisorConfig, Vote,
};
use std::time::Duration;

/// Logs every hook as `name#n hook [STATE]`; on `Stop` asks its supervisor
/// to shut down; optionally fails its init or its start.
#[derive(Clone)]
struct Probe {
    log: Log,
    fail_init: Option<&'static str>,
    fail_start: Option<&'static str>,
}

/// Tells a `Probe` to call `shutdown_supervisor()`.
struct Stop;

impl Probe {
    fn new(log: &Log) -> Probe {
        Probe {
            log: log.clone(),
            fail_init: None,
            fail_start: None,
        }
    }

    fn failing_init(log: &Log, why: &'static str) -> Probe {
        Probe {
            fail_init: Some(why),
            ..Probe::new(log)
        }
    }

    fn failing_start(log: &Log, why: &'static str) -> Probe {
        Probe {
            fail_start: Some(why),
            ..Probe::new(log)
        }
    }

    fn trace(&self, ctx: &Context<'_, Self>, what: &str) {
        self.log
            .push(format!("{} {what} [{}]", short(ctx.address()), ctx.state()));
    }

    fn on_stop(&mut self, _: &Stop, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "shutdown_supervisor()");
        ctx.shutdown_supervisor();
    }
}

impl Actor for Probe {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "init_start");
        ctx.subscribe(Self::on_stop);
        if let Some(why) = self.fail_init {
            ctx.fail(Error::failure(why));
        }
    }

    fn init_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "init_finish");
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "on_start");
        if let Some(why) = self.fail_start {
            ctx.fail(Error::failure(why));
        }
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "shutdown_start");
    }

    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "shutdown_finish");
    }
}

/// A root supervisor `root#1` on a locality named `L0`.
fn probe_root(log: &Log, config: SupervisorConfig) -> (Locality, Address) {
    let mut locality = Locality::named("L0");
    let root = locality
        .spawn_root(Probe::new(log))
        .name("root")
        .supervisor(config)
        .finish()
        .unwrap();
    (locality, root)
}

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

#[test]
fn a_failed_init_shuts_down_the_whole_supervisor_by_default() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = probe_root(&log, SupervisorConfig::default());
    locality
        .spawn(&root, Probe::new(&log))
        .name("good")
        .finish()
        .unwrap();
    locality
        .spawn(&root, Probe::failing_init(&log, "no database"))
        .name("bad")
        .finish()
        .unwrap();

    locality.run_until_idle(clock.at(0));

    assert!(locality.is_finished());
    assert!(
        !log.lines().iter().any(|l| l.contains("on_start")),
        "nothing started: {:#?}",
        log.lines()
    );
    let reason = locality.exit_reason().expect("finished");
    assert_eq!(reason.code(), ErrorCode::ChildInitFailed);
    assert_eq!(reason.root_cause().code(), ErrorCode::Failure);
    insta::assert_snapshot!(format!("{reason:#}"));
    insta::assert_snapshot!("default_policy_trace", log.text());
    assert_eq!(locality.stats().actors, 0);
}

#[test]
fn a_failed_init_stops_the_supervisor_even_if_the_other_children_confirm_afterwards() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = probe_root(&log, SupervisorConfig::default());
    locality
        .spawn(&root, Probe::failing_init(&log, "no database"))
        .name("bad")
        .finish()
        .unwrap();
    locality
        .spawn(&root, Probe::new(&log))
        .name("good")
        .finish()
        .unwrap();

    locality.run_until_idle(clock.at(0));

    assert!(locality.is_finished());
    assert!(
        !log.lines().iter().any(|l| l.contains("on_start")),
        "nothing started: {:#?}",
        log.lines()
    );
    assert_eq!(
        format!("{:#}", locality.exit_reason().unwrap()),
        "child init failed (L0/root#1)\n  <- init failed (L0/bad#2)\n  <- actor failure (no database)"
    );
    assert!(
        !log.lines()
            .iter()
            .any(|l| l.starts_with("root#1 init_finish")),
        "the root confirms its init only when every child has: {:#?}",
        log.lines()
    );
}

#[test]
fn a_failed_init_deep_in_the_tree_escalates_to_the_root() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = probe_root(&log, SupervisorConfig::default());
    let sup = locality
        .spawn(&root, Probe::new(&log))
        .name("sup")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    locality
        .spawn(&sup, Probe::failing_init(&log, "no database"))
        .name("bad")
        .finish()
        .unwrap();

    locality.run_until_idle(clock.at(0));

    assert!(locality.is_finished());
    let reason = format!("{:#}", locality.exit_reason().expect("finished"));
    assert_eq!(
        reason,
        "child init failed (L0/root#1)\n  <- child init failed (L0/sup#2)\n  <- init failed (L0/bad#3)\
         \n  <- actor failure (no database)"
    );
}

#[test]
fn with_the_shutdown_child_policy_only_the_failed_child_goes() {
    let clock = Clock::new();
    let log = Log::new();
    let config = SupervisorConfig::default().init_failure(InitFailurePolicy::ShutdownChild);
    let (mut locality, root) = probe_root(&log, config);
    locality
        .spawn(&root, Probe::new(&log))
        .name("good")
        .finish()
        .unwrap();
    let bad = locality
        .spawn(&root, Probe::failing_init(&log, "no database"))
        .name("bad")
        .finish()
        .unwrap();

    locality.run_until_idle(clock.at(0));

    assert!(!locality.is_finished());
    let lines = log.lines();
    assert!(
        lines.contains(&"root#1 on_start [OPERATIONAL]".to_string()),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&"good#2 on_start [OPERATIONAL]".to_string()),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("bad#3 on_start")),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&"bad#3 shutdown_finish [SHUT_DOWN]".to_string()),
        "{lines:#?}"
    );
    assert_eq!(locality.stats().actors, 2);
    assert_eq!(
        locality.shutdown(&bad).unwrap_err().code(),
        ErrorCode::StaleAddress
    );
}

#[test]
fn a_failure_after_init_shuts_down_only_that_actor() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = probe_root(&log, SupervisorConfig::default());
    locality
        .spawn(&root, Probe::new(&log))
        .name("good")
        .finish()
        .unwrap();
    locality
        .spawn(&root, Probe::failing_start(&log, "lost the connection"))
        .name("flaky")
        .finish()
        .unwrap();

    locality.run_until_idle(clock.at(0));

    assert!(!locality.is_finished());
    assert_eq!(locality.stats().actors, 2);
    let lines = log.lines();
    assert!(
        lines.contains(&"flaky#3 shutdown_finish [SHUT_DOWN]".to_string()),
        "{lines:#?}"
    );
}

#[test]
fn a_root_that_fails_finishes_the_locality_with_its_reason() {
    let clock = Clock::new();
    let log = Log::new();
    let mut locality = Locality::named("L0");
    locality
        .spawn_root(Probe::failing_start(&log, "out of coffee"))
        .name("solo")
        .finish()
        .unwrap();

    locality.run_until_idle(clock.at(0));

    assert!(locality.is_finished());
    assert_eq!(
        locality.exit_reason().unwrap().to_string(),
        "actor failure (out of coffee)"
    );
}

// Nothing in the API can hold an init or a shutdown open: a leaf initializes
// and shuts down within the message that starts it, and a supervisor waits
// only for its children, which do the same. What can stretch either across
// time is the loop itself: a dispatch that runs out of budget while the clock
// moves on. The timeout tests below slice dispatch with a budget of 1 to get
// there.

#[test]
fn an_init_timeout_fails_init_on_the_manual_clock() {
    let clock = Clock::new();
    let log = Log::new();
    let mut locality = Locality::named("L0");
    let root = locality
        .spawn_root(Probe::new(&log))
        .name("root")
        .supervisor(SupervisorConfig::default())
        .init_timeout(Duration::from_millis(10))
        .finish()
        .unwrap();
    locality
        .spawn(&root, Probe::new(&log))
        .name("late")
        .finish()
        .unwrap();

    locality.set_budget(1);
    locality.dispatch(clock.at(0)); // the root starts its init; its child has not yet
    assert_eq!(log.lines(), ["root#1 init_start [INITIALIZING]"]);
    assert_eq!(locality.next_deadline(), Some(clock.at(10)));
    locality.dispatch(clock.at(9)); // the child is Init'ed, but has not confirmed yet
    assert!(!locality.is_finished());
    locality.dispatch(clock.at(10)); // the init timeout fires first
    locality.set_budget(commutator::DEFAULT_BUDGET);
    locality.run_until_idle(clock.at(10));

    assert!(locality.is_finished());
    let reason = locality.exit_reason().unwrap();
    assert_eq!(reason.code(), ErrorCode::InitTimeout);
    assert_eq!(reason.to_string(), "init timeout (L0/root#1)");
    assert_eq!(
        log.lines(),
        [
            "root#1 init_start [INITIALIZING]",
            "late#2 init_start [INITIALIZING]",
            "late#2 init_finish [INITIALIZED]",
            "root#1 shutdown_start [SHUTTING_DOWN]",
            "late#2 shutdown_start [SHUTTING_DOWN]",
            "late#2 shutdown_finish [SHUT_DOWN]",
            "root#1 shutdown_finish [SHUT_DOWN]",
        ]
    );
}

#[test]
fn a_completed_init_disarms_its_init_timeout() {
    let clock = Clock::new();
    let log = Log::new();
    let mut locality = Locality::named("L0");
    let root = locality
        .spawn_root(Probe::new(&log))
        .name("root")
        .supervisor(SupervisorConfig::default())
        .init_timeout(Duration::from_millis(10))
        .finish()
        .unwrap();
    locality
        .spawn(&root, Probe::new(&log))
        .name("child")
        .finish()
        .unwrap();

    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.stats().timers, 0);
    assert_eq!(locality.next_deadline(), None);
    locality.run_until_idle(clock.at(1000));
    assert!(!locality.is_finished());
}

#[test]
fn a_shutdown_timeout_is_a_contract_violation_that_finishes_the_locality() {
    let clock = Clock::new();
    let log = Log::new();
    let mut locality = Locality::named("L0");
    let root = locality
        .spawn_root(Probe::new(&log))
        .name("root")
        .supervisor(SupervisorConfig::default())
        .shutdown_timeout(Duration::from_millis(10))
        .finish()
        .unwrap();
    // A supervisor: it is asked to shut down by a message, in a later
    // dispatch step (a leaf here would be asked by a direct call, at once).
    let child = locality
        .spawn(&root, Probe::new(&log))
        .name("child")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.shutdown(&root).unwrap();
    locality.set_budget(1);
    locality.dispatch(clock.at(0)); // the root starts shutting down; its child has not yet
    assert_eq!(
        log.lines().last().unwrap(),
        "root#1 shutdown_start [SHUTTING_DOWN]"
    );
    assert_eq!(locality.next_deadline(), Some(clock.at(10)));
    locality.dispatch(clock.at(10)); // the shutdown timeout fires first

    assert!(locality.is_finished());
    assert!(child.is_closed());
    let reason = locality.exit_reason().unwrap();
    assert_eq!(reason.code(), ErrorCode::ShutdownTimeout);
    assert_eq!(reason.to_string(), "shutdown timeout (L0/root#1)");
    assert!(!locality.has_pending());
    assert_eq!(
        locality.dispatch(clock.at(20)),
        0,
        "a finished locality does nothing"
    );
}

#[test]
fn a_completed_shutdown_disarms_its_shutdown_timeout() {
    let clock = Clock::new();
    let log = Log::new();
    let mut locality = Locality::named("L0");
    let root = locality
        .spawn_root(Probe::new(&log))
        .name("root")
        .supervisor(SupervisorConfig::default())
        .shutdown_timeout(Duration::from_millis(10))
        .finish()
        .unwrap();
    locality
        .spawn(&root, Probe::new(&log))
        .name("child")
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.shutdown(&root).unwrap();
    locality.run_until_idle(clock.at(0));
    locality.run_until_idle(clock.at(1000));

    assert!(locality.is_finished());
    assert_eq!(locality.exit_reason().unwrap().code(), ErrorCode::Normal);
    assert_eq!(locality.stats().timers, 0);
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

// ---------------- plugin votes ----------------

/// A user plugin that votes as its shared switch says, and logs every vote.
#[derive(Clone)]
struct Gate {
    name: &'static str,
    open: std::rc::Rc<std::cell::Cell<bool>>,
    fail: bool,
    log: Log,
}

impl Plugin<common::Scripted> for Gate {
    fn name(&self) -> &'static str {
        self.name
    }
    fn init_vote(
        &mut self,
        _: &mut common::Scripted,
        _: &mut Context<'_, common::Scripted>,
    ) -> Vote {
        self.log.push(format!("{} init_vote", self.name));
        match (self.open.get(), self.fail) {
            (true, true) => Vote::Failed(Error::failure(self.name)),
            (true, false) => Vote::Ready,
            (false, _) => Vote::Pending,
        }
    }
    fn shutdown_vote(
        &mut self,
        _: &mut common::Scripted,
        _: &mut Context<'_, common::Scripted>,
    ) -> Vote {
        self.log.push(format!("{} shutdown_vote", self.name));
        if self.open.get() {
            Vote::Ready
        } else {
            Vote::Pending
        }
    }
}

struct Nudge;

fn gated(log: &Log) -> common::Scripted {
    common::Scripted::new("gated", log).on_init(|_, ctx| {
        ctx.subscribe(
            |_: &mut common::Scripted, _: &Nudge, ctx: &mut Context<'_, common::Scripted>| {
                ctx.continue_lifecycle();
            },
        );
    })
}

fn switch(on: bool) -> std::rc::Rc<std::cell::Cell<bool>> {
    std::rc::Rc::new(std::cell::Cell::new(on))
}

#[test]
fn plugins_vote_on_init_in_order_and_pending_holds_the_actor() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = common::root_on_l0();
    let (a, b) = (switch(false), switch(false));
    let gate = |name, open: &std::rc::Rc<std::cell::Cell<bool>>| Gate {
        name,
        open: open.clone(),
        fail: false,
        log: log.clone(),
    };
    let actor = l
        .spawn(&root, gated(&log))
        .plugin(gate("first", &a))
        .plugin(gate("second", &b))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&actor), Some(ActorState::Initializing));
    assert_eq!(
        log.take(),
        ["gated init_start", "first init_vote"],
        "the second is not polled yet"
    );
    b.set(true);
    l.send(&actor, Nudge).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        log.take(),
        ["first init_vote"],
        "still the first that holds"
    );
    a.set(true);
    l.send(&actor, Nudge).unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(
        log.take()[..3],
        ["first init_vote", "second init_vote", "gated init_finish"]
    );
    assert_eq!(l.state_of(&actor), Some(ActorState::Operational));
}

#[test]
fn a_failed_vote_shuts_the_actor_down_with_the_error_as_its_reason() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = common::root_on_l0();
    let gate = Gate {
        name: "broken",
        open: switch(true),
        fail: true,
        log: log.clone(),
    };
    l.spawn(&root, gated(&log))
        .name("gated")
        .plugin(gate)
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert!(l.is_finished());
    assert_eq!(
        format!("{:#}", l.exit_reason().unwrap()),
        "child init failed (L0/root#1)\n  <- init failed (L0/gated#2)\n  <- actor failure (broken)"
    );
}

#[test]
fn plugins_vote_on_shutdown_in_reverse_order() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = common::root_on_l0();
    let (a, b) = (switch(true), switch(true));
    let gate = |name, open: &std::rc::Rc<std::cell::Cell<bool>>| Gate {
        name,
        open: open.clone(),
        fail: false,
        log: log.clone(),
    };
    let actor = l
        .spawn(&root, gated(&log))
        .plugin(gate("first", &a))
        .plugin(gate("second", &b))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    a.set(false);
    log.take();
    l.shutdown(&actor).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        log.take(),
        [
            "gated shutdown_start",
            "second shutdown_vote",
            "first shutdown_vote"
        ]
    );
    assert_eq!(l.state_of(&actor), Some(ActorState::ShuttingDown));
    a.set(true);
    l.send(&actor, Nudge).unwrap(); // subscriptions live until shutdown finishes
    l.run_until_idle(clock.at(2));
    assert_eq!(
        log.take(),
        ["first shutdown_vote", "gated shutdown_finish"],
        "the second is not polled again"
    );
    assert_eq!(l.state_of(&actor), None);
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

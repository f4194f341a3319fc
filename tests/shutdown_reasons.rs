//! Shutdown reasons in reach (issue 15, items 2 and 5): an actor reads its
//! own reason in `shutdown_start` / `shutdown_finish`; a supervisor hears of
//! each child's init and shutdown, with the child's address and reason; the
//! init-failure policy holds while the supervisor initializes, and a child
//! that fails its init later goes alone.

mod common;

use common::{Boss, Clock, Log, Scripted, root_on, root_on_l0};
use commutator::*;
use std::time::Duration;

/// Logs its state and shutdown reason in its last two hooks.
struct Reader(Log);
impl Actor for Reader {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let reason = ctx.shutdown_reason().map(|r| r.to_string());
        self.0.push(format!("on_start {reason:?}"));
    }
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        let reason = ctx.shutdown_reason().map(|r| r.to_string());
        self.0
            .push(format!("shutdown_start [{}] {reason:?}", ctx.state()));
    }
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        let reason = ctx.shutdown_reason().map(|r| r.to_string());
        self.0
            .push(format!("shutdown_finish [{}] {reason:?}", ctx.state()));
    }
}

#[test]
fn an_actor_reads_its_own_shutdown_reason_in_its_last_hooks() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    l.spawn(&root, Reader(log.clone())).finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        log.lines(),
        [
            "on_start None",
            "shutdown_start [SHUTTING_DOWN] Some(\"supervisor shutdown\")",
            // As in rotor, `shutdown_finish` sees SHUT_DOWN.
            "shutdown_finish [SHUT_DOWN] Some(\"supervisor shutdown\")",
        ]
    );
}

#[test]
fn a_failure_is_the_reason_the_actor_reads() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    struct Failing(Log);
    impl Actor for Failing {
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.fail(Error::failure("disk full"));
        }
        fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
            let reason = ctx.shutdown_reason().expect("set from shutdown_start on");
            self.0.push(format!("{reason:#}"));
        }
    }
    let config = SupervisorConfig::default();
    let boss = l
        .spawn(&root, Boss::new("boss", &log))
        .supervisor(config)
        .finish()
        .unwrap();
    l.spawn(&boss, Failing(log.clone()))
        .name("failing")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(
        log.lines(),
        [
            "boss child init failing#3: ok",
            "actor failure (disk full)",
            "boss child down failing#3: actor failure (disk full)",
        ]
    );
}

#[test]
fn a_supervisor_hears_each_childs_init_and_shutdown_with_its_address_and_reason() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let boss = l
        .spawn(&root, Boss::new("boss", &log))
        .name("boss")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let a = l
        .spawn(&boss, Scripted::new("a", &Log::new()))
        .name("a")
        .finish()
        .unwrap();
    l.spawn(&boss, Scripted::new("b", &Log::new()))
        .name("b")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    // Under an operational supervisor, a leaf confirms its init by a direct call.
    l.spawn(&boss, Scripted::new("c", &Log::new()))
        .name("c")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&a).unwrap();
    l.run_until_idle(clock.at(1));
    l.shutdown(&boss).unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(
        log.lines(),
        [
            "boss child init a#3: ok",
            "boss child init b#4: ok",
            "boss child init c#5: ok",
            "boss child down a#3: normal shutdown",
            "boss child down b#4: supervisor shutdown",
            "boss child down c#5: supervisor shutdown",
        ]
    );
}

#[test]
fn a_supervisor_hears_of_its_registry_too() {
    let clock = Clock::new();
    let log = Log::new();
    let mut l = Locality::named("L0");
    let boss = l
        .spawn_root(Boss::new("boss", &log))
        .name("boss")
        .supervisor(SupervisorConfig::default().with_registry())
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&boss).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        log.lines(),
        [
            "boss child init registry#2: ok",
            "boss child down registry#2: supervisor shutdown",
        ]
    );
}

fn failing_init(name: &'static str, log: &Log) -> Scripted {
    Scripted::new(name, log).on_init(|_, ctx| ctx.fail(Error::failure("no config")))
}

#[test]
fn while_the_supervisor_initializes_a_failed_child_init_takes_it_down() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let boss = l
        .spawn(&root, Boss::new("boss", &log))
        .name("boss")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.spawn(&boss, failing_init("bad", &Log::new()))
        .name("bad")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(
        log.lines(),
        [
            "boss child init bad#3: init failed (L0/bad#3)\n  <- actor failure (no config)",
            "boss child down bad#3: init failed (L0/bad#3)\n  <- actor failure (no config)",
        ]
    );
    assert!(
        l.is_finished(),
        "the default policy took boss down, and its failed init the root"
    );
}

#[test]
fn a_child_that_fails_its_init_under_an_operational_supervisor_goes_alone() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let boss = l
        .spawn(&root, Boss::new("boss", &log))
        .name("boss")
        .supervisor(SupervisorConfig::default()) // ShutdownSupervisor
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&boss), Some(ActorState::Operational));
    let late = l
        .spawn(&boss, failing_init("late", &Log::new()))
        .name("late")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(l.state_of(&late), None);
    assert_eq!(
        l.state_of(&boss),
        Some(ActorState::Operational),
        "the policy holds only while the supervisor initializes"
    );
    assert_eq!(
        log.lines(),
        [
            "boss child init late#3: init failed (L0/late#3)\n  <- actor failure (no config)",
            "boss child down late#3: init failed (L0/late#3)\n  <- actor failure (no config)",
        ]
    );
}

#[test]
fn a_restarted_child_that_fails_its_init_is_restarted_again_within_its_limit() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let boss = l
        .spawn(&root, Boss::new("boss", &log))
        .name("boss")
        .supervisor(SupervisorConfig::default()) // ShutdownSupervisor
        .finish()
        .unwrap();
    // The first instance crashes once started; every restart fails its init.
    let mut first = true;
    l.spawn_with(&boss, move || {
        let restarted = !std::mem::replace(&mut first, false);
        Scripted::new("w", &Log::new())
            .on_init(move |_, ctx| {
                if restarted {
                    ctx.fail(Error::failure("bad restart"));
                }
            })
            .on_start(|_, ctx| ctx.fail(Error::failure("crash")))
    })
    .name("w")
    .restart(RestartPolicy::Always)
    .restart_limit(2, Duration::from_secs(60))
    .finish()
    .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(
        l.state_of(&boss),
        Some(ActorState::Operational),
        "boss restarted its child twice, gave up, and carries on"
    );
    let bad = "init failed (L0/w#N)\n  <- actor failure (bad restart)";
    assert_eq!(
        log.lines(),
        [
            "boss child init w#3: ok".to_string(),
            "boss child down w#3: actor failure (crash)".to_string(),
            format!("boss child init w#4: {}", bad.replace('N', "4")),
            format!("boss child down w#4: {}", bad.replace('N', "4")),
            format!("boss child init w#5: {}", bad.replace('N', "5")),
            format!("boss child down w#5: {}", bad.replace('N', "5")),
        ]
    );
}

#[test]
fn a_supervisor_hears_of_a_child_on_another_locality() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l0, root) = root_on("L0");
    let mut l1 = Locality::named("L1");
    let handle = l1.handle();
    let boss = l0
        .spawn(&root, Boss::new("boss", &log))
        .name("boss")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l0.spawn_on(&handle, &boss, || Scripted::new("far", &Log::new()))
        .name("far")
        .finish()
        .unwrap();
    drop(handle);
    for _ in 0..5 {
        l0.run_until_idle(clock.at(0));
        l1.run_until_idle(clock.at(0));
    }
    l0.shutdown(&root).unwrap();
    for _ in 0..5 {
        l0.run_until_idle(clock.at(1));
        l1.run_until_idle(clock.at(1));
    }
    assert!(l0.is_finished() && l1.is_finished());
    let lines: Vec<String> = log.lines();
    assert_eq!(
        lines,
        [
            "boss child init far#1: ok",
            "boss child down far#1: supervisor shutdown",
        ]
    );
}

#[test]
fn a_supervisor_that_overrides_one_hook_hears_it_for_every_child() {
    // Its `on_child_init` is the default (found on the first call and not
    // called again); `on_child_shutdown` is heard for each child.
    struct Counter(Log);
    impl Actor for Counter {
        fn on_child_shutdown(&mut self, child: &Address, _: &Error, _: &mut Context<'_, Self>) {
            self.0.push(format!("down {}", child.actor_name()));
        }
    }
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let sup = l
        .spawn(&root, Counter(log.clone()))
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    for name in ["a", "b"] {
        l.spawn(&sup, Scripted::new(name, &Log::new()))
            .name(name)
            .finish()
            .unwrap();
    }
    l.run_until_idle(clock.at(0));
    for name in ["c", "d"] {
        l.spawn(&sup, Scripted::new(name, &Log::new()))
            .name(name)
            .finish()
            .unwrap();
    }
    l.run_until_idle(clock.at(1));
    l.shutdown(&sup).unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(log.lines(), ["down a", "down b", "down c", "down d"]);
}

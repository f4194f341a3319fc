//! Supervision: restart policies, delays and back-off, restart limits within
//! a period, escalation up the tree, autoshutdown, and cause chains.

mod common;

use common::{Clock, Log, Slot, root_on_l0};
use commutator::*;
use std::time::Duration;

/// Ends the worker: with a failure, or normally.
#[derive(Clone, Copy)]
enum Quit {
    Fail,
    Normal,
}

/// A worker numbered by instance; it publishes its address in `me`.
struct Worker {
    instance: u32,
    log: Log,
    me: Slot<Address>,
    restart_me: bool,
}

impl Actor for Worker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log.push(format!("worker {} up", self.instance));
        self.me.set(ctx.address().clone());
        ctx.subscribe(
            |_: &mut Self, q: &Quit, ctx: &mut Context<'_, Self>| match q {
                Quit::Fail => ctx.fail(Error::failure("boom")),
                Quit::Normal => ctx.shutdown(),
            },
        );
    }
    fn should_restart(&self, _: &Error) -> bool {
        self.restart_me
    }
}

/// A factory of workers numbered 1, 2, 3... and the slot with the live one's address.
fn workers(log: &Log, restart_me: bool) -> (impl FnMut() -> Worker + 'static, Slot<Address>) {
    let me = Slot::new();
    let (slot, log) = (me.clone(), log.clone());
    let mut made = 0;
    let factory = move || {
        made += 1;
        Worker {
            instance: made,
            log: log.clone(),
            me: slot.clone(),
            restart_me,
        }
    };
    (factory, me)
}

struct World {
    l: Locality,
    clock: Clock,
    root: Address,
    log: Log,
}

impl World {
    fn new() -> World {
        let (l, root) = root_on_l0();
        World {
            l,
            clock: Clock::new(),
            root,
            log: Log::new(),
        }
    }
    fn at(&mut self, ms: u64) {
        self.l.run_until_idle(self.clock.at(ms));
    }
    fn quit(&mut self, worker: &Slot<Address>, how: Quit, ms: u64) {
        self.l.send(&worker.get(), how).unwrap();
        self.at(ms);
    }
    fn ups(&self) -> usize {
        self.log
            .lines()
            .iter()
            .filter(|l| l.ends_with(" up"))
            .count()
    }
}

fn restarts_for(policy: RestartPolicy, how: Quit, restart_me: bool) -> usize {
    let mut w = World::new();
    let (factory, worker) = workers(&w.log, restart_me);
    w.l.spawn_with(&w.root, factory)
        .name("worker")
        .restart(policy)
        .finish()
        .unwrap();
    w.at(0);
    w.quit(&worker, how, 1);
    w.ups() - 1
}

#[test]
fn each_restart_policy_restarts_when_it_says() {
    use RestartPolicy::*;
    assert_eq!(restarts_for(Never, Quit::Fail, true), 0);
    assert_eq!(restarts_for(Always, Quit::Fail, false), 1);
    assert_eq!(restarts_for(Always, Quit::Normal, false), 1);
    assert_eq!(restarts_for(OnFailure, Quit::Fail, false), 1);
    assert_eq!(restarts_for(OnFailure, Quit::Normal, false), 0);
    assert_eq!(restarts_for(OnNormalExit, Quit::Normal, false), 1);
    assert_eq!(restarts_for(OnNormalExit, Quit::Fail, false), 0);
    assert_eq!(restarts_for(AskActor, Quit::Fail, true), 1);
    assert_eq!(restarts_for(AskActor, Quit::Normal, true), 1);
    assert_eq!(restarts_for(AskActor, Quit::Fail, false), 0);
}

#[test]
fn a_restart_is_a_new_instance_from_the_factory_at_a_new_address() {
    let mut w = World::new();
    let (factory, worker) = workers(&w.log, false);
    w.l.spawn_with(&w.root, factory)
        .name("worker")
        .restart(RestartPolicy::Always)
        .finish()
        .unwrap();
    w.at(0);
    let first = worker.get();
    w.quit(&worker, Quit::Fail, 1);
    let second = worker.get();
    assert_ne!(first, second);
    assert_eq!(
        (first.to_string(), second.to_string()),
        ("L0/worker#2".into(), "L0/worker#3".into())
    );
    assert_eq!(w.l.state_of(&first), None);
    assert_eq!(w.l.state_of(&second), Some(ActorState::Operational));
    assert_eq!(
        w.log.lines(),
        ["worker 1 up", "worker 2 up"],
        "state is not carried over"
    );
}

#[test]
fn a_restart_waits_for_its_delay_and_backs_off() {
    let mut w = World::new();
    let (factory, worker) = workers(&w.log, false);
    let b =
        w.l.spawn_with(&w.root, factory)
            .name("worker")
            .restart(RestartPolicy::Always);
    b.restart_delay(Duration::from_millis(10))
        .restart_backoff(Duration::from_millis(25))
        .restart_limit(10, Duration::from_secs(60))
        .finish()
        .unwrap();
    w.at(0);
    // Delays: 10, 20, then 25 (capped): each restart happens exactly then.
    let mut t = 0;
    for (n, delay) in [10, 20, 25, 25].into_iter().enumerate() {
        w.quit(&worker, Quit::Fail, t);
        w.at(t + delay - 1);
        assert_eq!(w.ups(), n + 1, "not before its delay");
        w.at(t + delay);
        assert_eq!(w.ups(), n + 2, "right at its delay");
        t += delay;
    }
}

#[test]
fn after_the_limit_within_the_period_the_supervisor_gives_up() {
    let mut w = World::new();
    let (factory, worker) = workers(&w.log, false);
    let b =
        w.l.spawn_with(&w.root, factory)
            .name("worker")
            .restart(RestartPolicy::Always);
    b.restart_limit(2, Duration::from_millis(100))
        .finish()
        .unwrap();
    w.at(0);
    w.quit(&worker, Quit::Fail, 0);
    w.quit(&worker, Quit::Fail, 10);
    assert_eq!(w.ups(), 3);
    w.quit(&worker, Quit::Fail, 20);
    assert_eq!(w.ups(), 3, "a third restart within 100 ms is one too many");
    assert_eq!(w.l.state_of(&worker.get()), None);
    assert_eq!(
        w.l.state_of(&w.root),
        Some(ActorState::Operational),
        "no escalation asked"
    );
}

#[test]
fn restarts_older_than_the_period_do_not_count() {
    let mut w = World::new();
    let (factory, worker) = workers(&w.log, false);
    let b =
        w.l.spawn_with(&w.root, factory)
            .name("worker")
            .restart(RestartPolicy::Always);
    b.restart_limit(2, Duration::from_millis(100))
        .finish()
        .unwrap();
    w.at(0);
    for t in [0, 60, 120, 180, 240] {
        w.quit(&worker, Quit::Fail, t);
    }
    assert_eq!(
        w.ups(),
        6,
        "never two restarts within 100 ms before the third"
    );
}

/// A supervisor that makes its own worker in `init_start`, so that a restart
/// of the supervisor restarts its whole subtree.
struct Team {
    log: Log,
    worker: Slot<Address>,
    escalate: bool,
}

impl Actor for Team {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log.push("team up");
        let (log, me, restart_me) = (self.log.clone(), self.worker.clone(), false);
        let mut made = 0;
        let factory = move || {
            made += 1;
            Worker {
                instance: made,
                log: log.clone(),
                me: me.clone(),
                restart_me,
            }
        };
        let mut b = ctx.spawn_with(factory).name("worker");
        if self.escalate {
            b = b.escalate_failure();
        }
        if let Err(e) = b.finish() {
            ctx.fail(e);
        }
    }
}

#[test]
fn an_escalated_failure_shuts_the_supervisor_down_and_its_parent_decides_again() {
    let mut w = World::new();
    let worker = Slot::new();
    let (log, slot) = (w.log.clone(), worker.clone());
    let team = move || Team {
        log: log.clone(),
        worker: slot.clone(),
        escalate: true,
    };
    let b =
        w.l.spawn_with(&w.root, team)
            .name("team")
            .supervisor(SupervisorConfig::default());
    b.restart(RestartPolicy::OnFailure).finish().unwrap();
    w.at(0);
    let first = worker.get();
    w.quit(&worker, Quit::Fail, 1);
    // The worker escalated: the team went down with FailureEscalation, and the
    // root restarted the team, which made a new worker.
    assert_eq!(
        w.log.lines(),
        ["team up", "worker 1 up", "team up", "worker 1 up"]
    );
    assert_ne!(worker.get(), first);
    assert_eq!(w.l.state_of(&worker.get()), Some(ActorState::Operational));
}

#[test]
fn without_escalation_a_failed_child_goes_alone() {
    let mut w = World::new();
    let worker = Slot::new();
    let (log, slot) = (w.log.clone(), worker.clone());
    let team = move || Team {
        log: log.clone(),
        worker: slot.clone(),
        escalate: false,
    };
    let team =
        w.l.spawn_with(&w.root, team)
            .name("team")
            .supervisor(SupervisorConfig::default());
    let team = team.restart(RestartPolicy::OnFailure).finish().unwrap();
    w.at(0);
    w.quit(&worker, Quit::Fail, 1);
    assert_eq!(w.l.state_of(&team), Some(ActorState::Operational));
    assert_eq!(w.log.lines(), ["team up", "worker 1 up"]);
}

#[test]
fn a_failure_deep_in_the_tree_escalates_to_the_root_with_the_whole_cause_chain() {
    // root -> a -> b -> flaky, each escalating; flaky is restarted once.
    let mut w = World::new();
    let mut parent = w.root.clone();
    for name in ["a", "b"] {
        let b =
            w.l.spawn(&parent, Supervisor)
                .name(name)
                .supervisor(SupervisorConfig::default());
        parent = b.escalate_failure().finish().unwrap();
    }
    let (factory, worker) = workers(&w.log, false);
    let b =
        w.l.spawn_with(&parent, factory)
            .name("flaky")
            .restart(RestartPolicy::OnFailure);
    b.restart_limit(1, Duration::from_secs(1))
        .escalate_failure()
        .finish()
        .unwrap();
    w.at(0);
    w.quit(&worker, Quit::Fail, 1);
    assert!(!w.l.is_finished(), "one restart is allowed");
    w.quit(&worker, Quit::Fail, 2);
    assert!(w.l.is_finished());
    let reason = w.l.exit_reason().unwrap();
    assert_eq!(reason.code(), ErrorCode::FailureEscalation);
    assert_eq!(reason.root_cause().code(), ErrorCode::Failure);
    insta::assert_snapshot!(format!("{reason:#}"));
}

#[test]
fn autoshutdown_ends_the_supervisor_when_its_child_ends() {
    // Normally: the supervisor ends normally too.
    let mut w = World::new();
    let sup =
        w.l.spawn(&w.root, Supervisor)
            .name("sup")
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
    let (factory, worker) = workers(&w.log, false);
    w.l.spawn_with(&sup, factory)
        .name("main")
        .autoshutdown_supervisor()
        .finish()
        .unwrap();
    w.at(0);
    let inspected = Log::new();
    let lines = inspected.clone();
    w.l.inspect_with(2, move |line| lines.push(line));
    w.quit(&worker, Quit::Normal, 1);
    assert_eq!(w.l.state_of(&sup), None);
    assert!(
        inspected
            .lines()
            .contains(&"L0: [ChildDown(normal shutdown)] L0/sup#2 -> L0/root#1".to_string())
    );

    // On a failure: the supervisor's reason is "child down" with the cause.
    let mut w = World::new();
    let (factory, worker) = workers(&w.log, false);
    w.l.spawn_with(&w.root, factory)
        .name("main")
        .autoshutdown_supervisor()
        .finish()
        .unwrap();
    w.at(0);
    w.quit(&worker, Quit::Fail, 1);
    assert!(w.l.is_finished());
    assert_eq!(
        format!("{:#}", w.l.exit_reason().unwrap()),
        "child down (L0/root#1)\n  <- actor failure (boom)"
    );
}

#[test]
fn a_child_that_fails_its_init_is_restarted_when_the_supervisor_lets_it_go_alone() {
    let mut w = World::new();
    let config = SupervisorConfig::default().init_failure(InitFailurePolicy::ShutdownChild);
    let sup =
        w.l.spawn(&w.root, Supervisor)
            .name("sup")
            .supervisor(config)
            .finish()
            .unwrap();
    // The first instance fails its init; the second succeeds.
    let mut made = 0;
    let log = w.log.clone();
    let factory = move || {
        made += 1;
        Flaky {
            fail: made == 1,
            log: log.clone(),
        }
    };
    w.l.spawn_with(&sup, factory)
        .restart(RestartPolicy::OnFailure)
        .finish()
        .unwrap();
    w.at(0);
    assert_eq!(w.log.lines(), ["flaky init fails", "flaky init ok"]);
    assert_eq!(w.l.state_of(&sup), Some(ActorState::Operational));
}

struct Flaky {
    fail: bool,
    log: Log,
}

impl Actor for Flaky {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        if self.fail {
            self.log.push("flaky init fails");
            ctx.fail(Error::failure("no database"));
        } else {
            self.log.push("flaky init ok");
        }
    }
}

#[test]
fn a_supervisor_waits_for_a_child_restarting_during_its_own_init() {
    let mut w = World::new();
    let config = SupervisorConfig::default().init_failure(InitFailurePolicy::ShutdownChild);
    let sup =
        w.l.spawn(&w.root, Supervisor)
            .name("sup")
            .supervisor(config)
            .finish()
            .unwrap();
    let mut made = 0;
    let log = w.log.clone();
    let factory = move || {
        made += 1;
        Flaky {
            fail: made == 1,
            log: log.clone(),
        }
    };
    let b =
        w.l.spawn_with(&sup, factory)
            .restart(RestartPolicy::OnFailure);
    b.restart_delay(Duration::from_millis(50)).finish().unwrap();
    w.at(0);
    assert_eq!(
        w.l.state_of(&sup),
        Some(ActorState::Initializing),
        "waiting for the restart"
    );
    w.at(50);
    assert_eq!(w.l.state_of(&sup), Some(ActorState::Operational));
}

#[test]
fn a_supervisor_that_shuts_down_drops_pending_restarts() {
    let mut w = World::new();
    let (factory, worker) = workers(&w.log, false);
    let b =
        w.l.spawn_with(&w.root, factory)
            .name("worker")
            .restart(RestartPolicy::Always);
    b.restart_delay(Duration::from_secs(10)).finish().unwrap();
    w.at(0);
    w.quit(&worker, Quit::Fail, 1);
    assert_eq!(w.l.stats().timers, 1, "the restart is pending");
    w.l.shutdown(&w.root.clone()).unwrap();
    w.at(2);
    assert!(w.l.is_finished());
    assert_eq!(w.l.stats().timers, 0);
    assert_eq!(w.ups(), 1);
}

#[test]
fn supervision_settings_that_cannot_work_are_refused() {
    let mut w = World::new();
    let log = w.log.clone();
    let (factory, _) = workers(&log, false);
    let e =
        w.l.spawn(&w.root, Flaky { fail: false, log })
            .restart(RestartPolicy::Always)
            .finish()
            .unwrap_err();
    assert_eq!(
        e.code(),
        ErrorCode::InvalidArgument,
        "a restart needs a factory"
    );
    let mut l2 = Locality::named("L1");
    let e = l2
        .spawn_root(Supervisor)
        .escalate_failure()
        .finish()
        .unwrap_err();
    assert_eq!(
        e.code(),
        ErrorCode::InvalidArgument,
        "a root has nobody to escalate to"
    );
    let e = l2
        .spawn_root(Supervisor)
        .restart_delay(Duration::from_millis(5))
        .finish()
        .unwrap_err();
    assert_eq!(
        e.code(),
        ErrorCode::InvalidArgument,
        "nor anybody to restart it"
    );
    assert_eq!(l2.stats().actors, 0);
    drop(factory);
    assert_eq!(w.l.stats().actors, 1, "nothing was spawned");
}

//! Misuse of the API, spawning: every refused spawn returns its documented
//! `ErrorCode` and changes nothing.

mod common;

use common::misuse::{Tester, finished_locality, probe, stores};
use common::{Clock, Idle, Log, root_on, root_on_l0};
use commutator::{
    Actor, Context, ErrorCode, Locality, RestartPolicy, Supervisor, SupervisorConfig,
};

#[test]
fn spawning_under_an_actor_that_is_not_a_supervisor_fails_with_not_a_supervisor() {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    let leaf = locality.spawn(&root, Idle).name("leaf").finish().unwrap();
    locality.run_until_idle(clock.at(0));
    let before = locality.stats();

    let err = locality.spawn(&leaf, Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::NotASupervisor);
    assert_eq!(err.context(), Some("L0/leaf#2"));
    assert_eq!(locality.stats(), before);
    // Not even an actor number was used up.
    let next = locality.spawn(&root, Idle).name("next").finish().unwrap();
    assert_eq!(next.to_string(), "L0/next#3");
}

#[test]
fn spawning_under_a_supervisor_that_is_shutting_down_fails() {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    // A supervisor: it is asked to shut down by a message, in a later
    // dispatch step (a leaf here would be asked by a direct call, at once).
    locality
        .spawn(&root, Idle)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    // Stop between two dispatch steps, while the root waits for its child.
    locality.shutdown(&root).unwrap();
    locality.set_budget(1);
    locality.dispatch(clock.at(0));
    assert!(!locality.is_finished());
    let before = locality.stats();

    let err = locality.spawn(&root, Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::SupervisorShuttingDown);
    assert_eq!(locality.stats(), before);
    locality.set_budget(commutator::DEFAULT_BUDGET);
    locality.run_until_idle(clock.at(0));
    assert!(locality.is_finished());
}

/// A supervisor that tries to spawn a child while it shuts down.
struct LateSpawner {
    log: Log,
}

impl Actor for LateSpawner {
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        let result = ctx.spawn(Idle).finish().map(|_| ()).map_err(|e| e.code());
        self.log
            .push(format!("spawn in shutdown_start: {result:?}"));
    }
}

#[test]
fn a_supervisor_cannot_spawn_a_child_while_it_shuts_down() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let late = locality
        .spawn(&root, LateSpawner { log: log.clone() })
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    let actors = locality.stats().actors;

    locality.shutdown(&late).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(
        log.lines(),
        ["spawn in shutdown_start: Err(SupervisorShuttingDown)"]
    );
    assert_eq!(locality.stats().actors, actors - 1);
}

#[test]
fn spawning_under_a_supervisor_that_is_gone_fails_with_supervisor_shutting_down() {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    let sup = locality
        .spawn(&root, Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&sup).unwrap();
    locality.run_until_idle(clock.at(0));
    let before = locality.stats();

    let err = locality.spawn(&sup, Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::SupervisorShuttingDown);
    assert_eq!(locality.stats(), before);
}

#[test]
fn spawning_under_an_address_of_another_locality_fails_with_foreign_address() {
    let clock = Clock::new();
    let (mut here, _) = root_on_l0();
    let (mut there, their_root) = root_on("L1");
    here.run_until_idle(clock.at(0));
    there.run_until_idle(clock.at(0));
    let (before_here, before_there) = (here.stats(), there.stats());

    let err = here.spawn(&their_root, Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::ForeignAddress);
    assert_eq!(err.context(), Some("L1/root#1"));
    assert_eq!(here.stats(), before_here);
    assert_eq!(there.stats(), before_there);
}

#[test]
fn spawn_root_on_a_finished_locality_fails_with_locality_finished() {
    let (mut locality, _) = finished_locality();
    let before = locality.stats();

    let err = locality
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap_err();

    assert_eq!(err.code(), ErrorCode::LocalityFinished);
    assert_eq!(locality.stats(), before);
    assert!(locality.is_finished());
}

#[test]
fn spawn_on_a_finished_locality_fails_with_locality_finished_and_changes_nothing() {
    let clock = Clock::new();
    let (mut l, root) = root_on_l0();
    l.run_until_idle(clock.at(0));
    let gone = Locality::named("L1");
    let handle = gone.handle();
    drop(gone); // as when the other thread's System has ended
    assert!(handle.is_closed());
    let before = stores(&l);

    let err = l.spawn_on(&handle, &root, || Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::LocalityFinished);
    assert_eq!(err.context(), Some("L1"));
    assert_eq!(stores(&l), before);
    // No child record was left behind: numbering goes on, and the root's
    // shutdown does not wait for a child that will never report.
    let next = l.spawn(&root, Idle).name("next").finish().unwrap();
    assert_eq!(next.to_string(), "L0/next#2");
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(0));
    assert!(l.is_finished());
}

#[test]
fn spawn_on_under_a_foreign_or_non_supervisor_address_is_refused() {
    let clock = Clock::new();
    let (mut l, root) = root_on_l0();
    let leaf = l.spawn(&root, Idle).name("leaf").finish().unwrap();
    l.run_until_idle(clock.at(0));
    let (mut there, their_root) = root_on("L1");
    there.run_until_idle(clock.at(0));
    let handle = there.handle();
    let before = (stores(&l), there.stats());

    let foreign = l.spawn_on(&handle, &their_root, || Idle).finish();
    let leafy = l.spawn_on(&handle, &leaf, || Idle).finish();

    assert_eq!(foreign.unwrap_err().code(), ErrorCode::ForeignAddress);
    assert_eq!(leafy.unwrap_err().code(), ErrorCode::NotASupervisor);
    assert_eq!((stores(&l), there.stats()), before);
    assert!(!there.has_pending(), "nothing was posted to L1");
}

#[test]
fn supervision_settings_on_a_root_fail_with_invalid_argument() {
    let mut l = Locality::named("L0");
    let before = stores(&l);
    let attempts = [
        l.spawn_root(Supervisor)
            .restart(RestartPolicy::Always)
            .finish(),
        l.spawn_root(Supervisor).escalate_failure().finish(),
        l.spawn_root(Supervisor).autoshutdown_supervisor().finish(),
    ];
    for attempt in attempts {
        assert_eq!(attempt.unwrap_err().code(), ErrorCode::InvalidArgument);
    }
    assert_eq!(stores(&l), before);
    assert!(!l.is_finished(), "no root was anchored, so none went");
    let root = l.spawn_root(Supervisor).name("root").finish().unwrap();
    assert_eq!(root.to_string(), "L0/root#1", "no actor number was used up");
}

#[test]
fn a_restart_policy_without_a_factory_is_refused_from_a_context_too() {
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let spawner = l
        .spawn(&root, Tester { log: log.clone() })
        .name("spawner")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.run_until_idle(Clock::new().at(0));
    let before = stores(&l);

    let said = probe(
        &mut l,
        &spawner,
        |ctx| {
            let e = ctx
                .spawn(Idle)
                .restart(RestartPolicy::OnFailure)
                .finish()
                .unwrap_err();
            format!("{:?}", e.code())
        },
        &log,
    );

    assert_eq!(said, "InvalidArgument");
    assert_eq!(stores(&l), before);
    l.shutdown(&spawner).unwrap();
    l.run_until_idle(Clock::new().at(0));
    assert_eq!(l.state_of(&spawner), None, "no child record holds it");
}

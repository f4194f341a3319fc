//! The actor lifecycle: init and shutdown timeouts.

mod common;

use common::lifecycle::Probe;
use common::{Clock, Log};
use commutator::{ErrorCode, Locality, SupervisorConfig};
use std::time::Duration;

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

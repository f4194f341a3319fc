//! The actor lifecycle: init failures (per the supervisor's policy, deep in
//! the tree) and failures after init, down to the root's.

mod common;

use common::lifecycle::{Probe, probe_root};
use common::{Clock, Log};
use commutator::{ErrorCode, InitFailurePolicy, Locality, SupervisorConfig};

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

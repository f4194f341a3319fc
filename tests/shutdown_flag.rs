//! A supervisor (or a `System`) shuts down when a shared flag is set, read
//! at an interval of the user's choice (issue 15, item 7; rotor's
//! `shutdown_flag`).

mod common;

use common::{Clock, Log, Scripted, root_on_l0};
use commutator::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

fn flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

#[test]
fn a_root_supervisor_shuts_down_once_its_flag_is_read_set() {
    let log = Log::new();
    let stop = flag();
    let mut l = Locality::named("L0");
    let clock = Clock { t0: l.now() }; // the locality's clock, as its timers read it
    let config =
        SupervisorConfig::default().shutdown_flag(stop.clone(), Duration::from_millis(100));
    let root = l
        .spawn_root(Supervisor)
        .supervisor(config)
        .finish()
        .unwrap();
    l.spawn(&root, Scripted::new("worker", &log))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.next_deadline(), Some(clock.at(100)), "the first reading");
    l.run_until_idle(clock.at(100));
    assert_eq!(
        l.state_of(&root),
        Some(ActorState::Operational),
        "not set yet"
    );
    stop.store(true, Ordering::Release);
    l.run_until_idle(clock.at(199));
    assert_eq!(
        l.state_of(&root),
        Some(ActorState::Operational),
        "read every 100 ms"
    );
    l.run_until_idle(clock.at(200));
    assert!(l.is_finished());
    let reason = l.exit_reason().unwrap();
    assert!(reason.is_normal());
    assert_eq!(reason.to_string(), "normal shutdown (shutdown flag set)");
    assert!(log.lines().contains(&"worker shutdown_finish".to_string()));
}

#[test]
fn an_inner_supervisor_with_a_flag_goes_alone() {
    let stop = flag();
    let (mut l, root) = root_on_l0();
    let clock = Clock { t0: l.now() };
    let config = SupervisorConfig::default().shutdown_flag(stop.clone(), Duration::from_millis(10));
    let inner = l
        .spawn(&root, Supervisor)
        .supervisor(config)
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    stop.store(true, Ordering::Release);
    l.run_until_idle(clock.at(10));
    assert_eq!(l.state_of(&inner), None);
    assert_eq!(l.state_of(&root), Some(ActorState::Operational));
    assert_eq!(l.stats().timers, 0, "nothing reads the flag any more");
}

#[test]
fn the_flag_is_read_no_more_once_its_supervisor_is_gone() {
    let stop = flag();
    let mut l = Locality::named("L0");
    let clock = Clock { t0: l.now() };
    let config = SupervisorConfig::default().shutdown_flag(stop, Duration::from_millis(10));
    let root = l
        .spawn_root(Supervisor)
        .supervisor(config)
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(1));
    assert!(l.is_finished());
    assert_eq!(l.stats().timers, 0);
}

#[test]
fn a_flag_read_every_zero_is_refused() {
    let mut l = Locality::named("L0");
    let config = SupervisorConfig::default().shutdown_flag(flag(), Duration::ZERO);
    let error = l
        .spawn_root(Supervisor)
        .supervisor(config)
        .finish()
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert_eq!(l.stats().actors, 0);
}

/// Runs `body` on a thread; fails the test if it takes more than 20 s.
fn within_20s(body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        body();
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("ended within 20 s");
}

#[test]
fn a_supervisor_flag_set_from_another_thread_ends_the_system() {
    within_20s(|| {
        let stop = flag();
        let mut system = System::named("S").unwrap();
        let config =
            SupervisorConfig::default().shutdown_flag(stop.clone(), Duration::from_millis(5));
        system
            .spawn_root(Supervisor)
            .supervisor(config)
            .finish()
            .unwrap();
        let setter = std::thread::spawn(move || stop.store(true, Ordering::Release));
        system.run().unwrap();
        setter.join().unwrap();
    });
}

#[test]
fn a_system_flag_shuts_every_root_down() {
    within_20s(|| {
        let log = Log::new();
        let stop = flag();
        let mut system = System::named("S").unwrap();
        system.set_shutdown_flag(stop.clone(), Duration::from_millis(5));
        // Two roots, neither a supervisor with a flag of its own.
        system
            .spawn_root(Scripted::new("a", &log))
            .finish()
            .unwrap();
        system
            .spawn_root(Scripted::new("b", &log))
            .finish()
            .unwrap();
        let setter = std::thread::spawn(move || stop.store(true, Ordering::Release));
        system.run().unwrap();
        setter.join().unwrap();
        let lines = log.lines();
        assert!(lines.contains(&"a shutdown_finish".to_string()));
        assert!(lines.contains(&"b shutdown_finish".to_string()));
    });
}

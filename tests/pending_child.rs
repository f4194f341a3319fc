//! `spawn_on(..).finish_pending()` gives the parent a `PendingChild`: the
//! child's address at once (reserved on the other locality, as `finish()`
//! returns it), and the spawn's outcome once the other locality has made
//! the child, or failed to (issue 15, item 10).

mod common;

use common::{Boss, Clock, Log, root_on};
use commutator::*;
use std::sync::mpsc;
use std::time::Duration;

struct Idle;
impl Actor for Idle {}

#[test]
fn a_child_made_elsewhere_is_reached_through_its_pending_handle() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l0, root) = root_on("L0");
    let mut l1 = Locality::named("L1");
    let handle = l1.handle();
    let boss = l0
        .spawn(&root, Boss::new("boss", &log))
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let pending = l0
        .spawn_on(&handle, &boss, || Idle)
        .name("far")
        .finish_pending()
        .unwrap();
    drop(handle);
    let far = pending.address().clone();
    assert_eq!(far.to_string(), "L1/far#1", "known at once");
    assert!(pending.result().is_none(), "L1 has not made it yet");
    assert_eq!(format!("{pending:?}"), "PendingChild(L1/far#1: pending)");
    assert_eq!(l1.state_of(&far), None);
    l0.run_until_idle(clock.at(0));
    l1.run_until_idle(clock.at(0));
    assert_eq!(
        pending.result().unwrap().unwrap(),
        far,
        "made by L1's dispatch"
    );
    assert_eq!(l1.state_of(&far), Some(ActorState::Initialized));
    assert_eq!(format!("{pending:?}"), "PendingChild(L1/far#1: made)");
    for _ in 0..3 {
        l0.run_until_idle(clock.at(0));
        l1.run_until_idle(clock.at(0));
    }
    assert_eq!(l1.state_of(&far), Some(ActorState::Operational));
    // The supervisor heard the same address.
    assert_eq!(log.lines(), ["boss child init far#1: ok"]);
}

#[test]
fn a_pending_child_resolves_to_the_error_when_its_locality_is_dropped_first() {
    let (mut l0, root) = root_on("L0");
    let l1 = Locality::named("L1");
    let handle = l1.handle();
    let pending = l0
        .spawn_on(&handle, &root, || Idle)
        .finish_pending()
        .unwrap();
    drop(handle);
    drop(l1);
    let result = pending.result().expect("resolved when L1 closed");
    assert_eq!(result.unwrap_err().code(), ErrorCode::LocalityFinished);
    assert!(pending.address().is_closed());
}

#[test]
fn a_pending_child_resolves_to_the_error_when_its_factory_panics() {
    let clock = Clock::new();
    let (mut l0, root) = root_on("L0");
    let mut l1 = Locality::named("L1");
    let handle = l1.handle();
    let config = SupervisorConfig::default().init_failure(InitFailurePolicy::ShutdownChild);
    let sup = l0
        .spawn(&root, Supervisor)
        .supervisor(config)
        .finish()
        .unwrap();
    l0.run_until_idle(clock.at(0));
    let pending = l0
        .spawn_on(&handle, &sup, || -> Idle { panic!("no memory") })
        .finish_pending()
        .unwrap();
    drop(handle);
    l1.run_until_idle(clock.at(0));
    let error = pending.result().unwrap().unwrap_err();
    assert_eq!(error.code(), ErrorCode::Panicked);
    assert!(error.to_string().contains("no memory"), "{error}");
}

#[test]
fn wait_blocks_until_another_thread_has_made_the_child() {
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (handle_tx, handle_rx) = mpsc::channel();
        let other = std::thread::spawn(move || {
            let mut system = System::named("T1").unwrap();
            handle_tx.send(system.handle()).unwrap();
            system.run()
        });
        let handle = handle_rx.recv().unwrap();
        let mut system = System::named("T0").unwrap();
        let root = system
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let pending = system
            .spawn_on(&handle, &root, || Idle)
            .name("far")
            .finish_pending()
            .unwrap();
        drop(handle);
        // T1 runs on its own thread: this one may wait for it.
        let far = pending.wait(Duration::from_secs(10)).unwrap().unwrap();
        system.shutdown(&root).unwrap();
        system.run().unwrap();
        other.join().unwrap().unwrap();
        done_tx.send(far.to_string()).unwrap();
    });
    let far = done_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("within 20 s");
    assert_eq!(far, "T1/far#1");
}

#[test]
fn wait_gives_up_after_its_timeout() {
    let (mut l0, root) = root_on("L0");
    let l1 = Locality::named("L1");
    let handle = l1.handle();
    let pending = l0
        .spawn_on(&handle, &root, || Idle)
        .finish_pending()
        .unwrap();
    // Nobody runs L1: the answer cannot come.
    assert!(pending.wait(Duration::from_millis(1)).is_none());
    drop(handle);
    drop(l1);
}

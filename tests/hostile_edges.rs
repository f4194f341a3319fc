//! Issue 14 ("Hostile input: no crash, no hang, bounded memory"), cases 2,
//! 5, 7 and 8: each test failed (or hung) before its fix. Anything that
//! could hang runs on a thread of its own under a deadline, so a regression
//! fails the test instead of stalling CI.

use commutator::*;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `test` on a thread of its own; fails if it does not end within
/// `limit` (a hang or a blow-up fails instead of stalling the suite).
fn within(limit: Duration, test: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let worker = thread::spawn(move || {
        test();
        let _ = tx.send(());
    });
    match rx.recv_timeout(limit) {
        Ok(()) => worker.join().expect("the test thread ended"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The test panicked: pass its panic on.
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the test did not end within {limit:?}"),
    }
}

struct Idle;
impl Actor for Idle {}

// ---------------------------------------------------------------------
// Case 2: children of one supervisor exit in linear time.

/// How many children: 100,000, twice as many in release, where the
/// quadratic code was fast enough to need them to fail clearly.
const MANY: usize = if cfg!(debug_assertions) {
    100_000
} else {
    200_000
};

/// Generous for the linear code (0.5 s in debug, 0.2 s in release), far
/// below what the quadratic code took (over 60 s in debug; in release 10.6 s
/// for 100,000 exits, 4.1 s for 100,000 synchronized starts, four times
/// that for 200,000).
fn linear_limit() -> Duration {
    if cfg!(debug_assertions) {
        Duration::from_secs(60)
    } else {
        Duration::from_secs(5)
    }
}

/// 100,000 children (`MANY`) of one supervisor, asked to go one by one; each exit
/// used to rescan every child (`start_children`): 21.6 s in release.
#[test]
fn a_hundred_thousand_children_exit_one_by_one_in_linear_time() {
    within(linear_limit(), || {
        let mut l = Locality::named("many");
        let t0 = l.now();
        let root = l
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let children: Vec<Address> = (0..MANY)
            .map(|_| l.spawn(&root, Idle).finish().unwrap())
            .collect();
        l.run_until_idle(t0);
        assert_eq!(l.stats().actors, MANY + 1);
        for child in &children {
            l.shutdown(child).unwrap();
            l.run_until_idle(t0);
        }
        assert_eq!(l.stats().actors, 1, "every child is gone");
        assert_eq!(l.state_of(&root), Some(ActorState::Operational));
        l.shutdown(&root).unwrap();
        l.run_until_idle(t0);
        assert!(l.is_finished());
    });
}

/// A synchronized start: 100,000 children spawned one by one, each started
/// once it has initialized; each start used to rescan every child.
#[test]
fn a_hundred_thousand_children_start_one_by_one_under_a_synchronized_start_in_linear_time() {
    within(linear_limit(), || {
        let mut l = Locality::named("sync");
        let t0 = l.now();
        let root = l
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default().synchronize_start(true))
            .finish()
            .unwrap();
        l.run_until_idle(t0);
        let mut last = None;
        for _ in 0..MANY {
            let child = l.spawn(&root, Idle).finish().unwrap();
            l.run_until_idle(t0);
            last = Some(child);
        }
        let last = last.unwrap();
        assert_eq!(l.state_of(&last), Some(ActorState::Operational));
        assert_eq!(l.stats().actors, MANY + 1);
        l.shutdown(&root).unwrap();
        l.run_until_idle(t0);
        assert!(l.is_finished());
    });
}

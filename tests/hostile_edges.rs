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

// ---------------------------------------------------------------------
// Case 5: a dropped locality does not leave another one waiting.

/// Steps every locality on its own clock until nothing is left to do.
fn step(ls: &mut [&mut Locality]) {
    for _ in 0..20 {
        for l in ls.iter_mut() {
            let now = l.now();
            l.run_until_idle(now);
        }
    }
}

/// `L0` with a root supervisor, and `L1` with a child of it made there
/// (`spawn_on`), set up by `child`; both stepped until operational.
fn root_with_a_child_on_l1(
    child: impl FnOnce(&mut Locality, &LocalityHandle, &Address),
) -> (Locality, Locality, Address) {
    let mut l0 = Locality::named("L0");
    let mut l1 = Locality::named("L1");
    let root = l0
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let handle = l1.handle();
    child(&mut l0, &handle, &root);
    drop(handle);
    step(&mut [&mut l0, &mut l1]);
    assert_eq!(l0.state_of(&root), Some(ActorState::Operational));
    assert_eq!(l1.stats().actors, 1, "the child lives on L1");
    (l0, l1, root)
}

/// L0's root shuts down after L1, where its child lived, was dropped: it
/// used to wait for that child forever (SHUTTING_DOWN for good).
#[test]
fn a_supervisor_whose_child_locality_was_dropped_finishes_its_shutdown() {
    within(Duration::from_secs(20), || {
        let (mut l0, l1, root) = root_with_a_child_on_l1(|l0, l1, root| {
            l0.spawn_on(l1, root, || Idle).finish().unwrap();
        });
        drop(l1);
        l0.shutdown(&root).unwrap();
        step(&mut [&mut l0]);
        assert!(l0.is_finished(), "the root waits for its lost child");
        assert_eq!(l0.exit_reason(), Some(&Error::normal()));
    });
}

/// The same when L1 is dropped with the root's shutdown request still in
/// its inbox.
#[test]
fn a_supervisor_finishes_when_the_locality_of_the_child_it_asked_to_go_is_dropped() {
    within(Duration::from_secs(20), || {
        let (mut l0, l1, root) = root_with_a_child_on_l1(|l0, l1, root| {
            l0.spawn_on(l1, root, || Idle).finish().unwrap();
        });
        l0.shutdown(&root).unwrap();
        step(&mut [&mut l0]);
        assert_eq!(l0.state_of(&root), Some(ActorState::ShuttingDown));
        drop(l1);
        step(&mut [&mut l0]);
        assert!(l0.is_finished(), "the root waits for its lost child");
    });
}

/// An operational supervisor hears of the loss as the child's reason,
/// `LocalityLost` naming the locality, and applies its policies: here the
/// child escalates, so the root fails with it.
#[test]
fn a_lost_locality_is_a_child_down_that_names_it() {
    within(Duration::from_secs(20), || {
        let (mut l0, l1, _root) = root_with_a_child_on_l1(|l0, l1, root| {
            l0.spawn_on(l1, root, || Idle)
                .escalate_failure()
                .finish()
                .unwrap();
        });
        drop(l1);
        step(&mut [&mut l0]);
        assert!(l0.is_finished());
        let reason = l0.exit_reason().expect("the root failed").clone();
        assert_eq!(reason.code(), ErrorCode::FailureEscalation, "{reason}");
        let lost = reason.root_cause();
        assert_eq!(lost.code(), ErrorCode::LocalityLost, "{reason}");
        assert_eq!(lost.context(), Some("L1"), "{reason}");
    });
}

/// Dropping the locality of a supervisor asks its children elsewhere to go,
/// and asks linked clients elsewhere to unlink: nothing on L0 waits for L1.
#[test]
fn a_dropped_locality_lets_its_children_and_linked_clients_elsewhere_go() {
    within(Duration::from_secs(20), || {
        let mut l0 = Locality::named("L0");
        let mut l1 = Locality::named("L1");
        let l0_handle = l0.handle();
        let l1_root = l1
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        l1.spawn_on(&l0_handle, &l1_root, || Idle).finish().unwrap();
        drop(l0_handle);
        let l0_root = l0
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let server = l1_root.clone();
        let client = l0.spawn(&l0_root, Client { server }).finish().unwrap();
        step(&mut [&mut l0, &mut l1]);
        assert_eq!(l1.state_of(&l1_root), Some(ActorState::Operational));
        assert_eq!(l0.state_of(&client), Some(ActorState::Operational));
        assert_eq!(l0.stats().actors, 3, "root, client, and L1's child");
        drop(l1);
        step(&mut [&mut l0]);
        assert_eq!(l0.state_of(&client), None, "the client unlinked");
        assert_eq!(l0.stats().actors, 1, "L1's child went");
        assert_eq!(l0.state_of(&l0_root), Some(ActorState::Operational));
    });
}

/// Links to its server during init.
struct Client {
    server: Address,
}
impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.link(&self.server);
    }
}

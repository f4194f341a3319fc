//! Issue 14 ("Hostile input: no crash, no hang, bounded memory"), cases 2,
//! 5 and 8: each test failed (or hung) before its fix. Anything that
//! could hang runs on a thread of its own under a deadline, so a regression
//! fails the test instead of stalling CI. Case 7 (nothing starts in
//! `shutdown_finish`) is in `tests/shutdown_finish.rs`.

mod common;
use common::{Idle, within};
use commutator::RestartPolicy;
use commutator::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

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
        ctx.link(&self.server).expect("a first link");
    }
}

// ---------------------------------------------------------------------
// Case 8: a supervisor that gives up on its last child is not silent.

/// Fails as soon as it starts.
struct Flaky;
impl Actor for Flaky {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.fail(Error::failure("lost its connection"));
    }
}

/// A middle supervisor that makes a [`Flaky`] child, restarted once at most
/// and escalating when given up on (as in `examples/supervisor_tree.rs`).
struct Middle;
impl Actor for Middle {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let made = ctx
            .spawn_with(|| Flaky)
            .name("flaky")
            .restart(RestartPolicy::OnFailure)
            .restart_limit(1, Duration::from_secs(1))
            .escalate_failure()
            .finish();
        if let Err(e) = made {
            ctx.fail(e);
        }
    }
}

/// `L0/root` (with `config`) over `middle` (no `escalate_failure`) over
/// `flaky`, run on a manual clock until idle; inspection lines at level 1
/// go to the returned log.
fn tree(config: SupervisorConfig) -> (Locality, Address, Rc<RefCell<Vec<String>>>) {
    let mut l = Locality::named("L0");
    let lines = Rc::new(RefCell::new(Vec::new()));
    let sink = lines.clone();
    l.inspect_with(1, move |line| sink.borrow_mut().push(line.to_string()));
    let t0 = l.now();
    let root = l
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(config)
        .finish()
        .unwrap();
    l.spawn(&root, Middle)
        .name("middle")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.run_until_idle(t0);
    (l, root, lines)
}

/// By default the root carries on without children (rotor's way), but no
/// longer silently: each give-up is counted and shown by inspection.
#[test]
fn a_supervisor_that_gives_up_on_its_last_child_says_so() {
    within(Duration::from_secs(20), || {
        let (l, root, lines) = tree(SupervisorConfig::default());
        assert_eq!(l.state_of(&root), Some(ActorState::Operational));
        assert_eq!(l.stats().actors, 1, "only the root is left");
        assert_eq!(l.stats().children_given_up, 2, "flaky, then middle");
        let lines = lines.borrow();
        let gave_up: Vec<&String> = lines.iter().filter(|l| l.contains("gave up")).collect();
        assert_eq!(gave_up.len(), 2, "{lines:#?}");
        assert!(
            gave_up[0].starts_with("L0: L0/middle#2 gave up on child L0/flaky#")
                && gave_up[0].contains("restart limit reached")
                && gave_up[0].ends_with("; escalating"),
            "{}",
            gave_up[0]
        );
        assert!(
            gave_up[1]
                .starts_with("L0: L0/root#1 gave up on child L0/middle#2: failure escalation")
                && gave_up[1].contains("lost its connection")
                && gave_up[1].ends_with("; carrying on"),
            "{}",
            gave_up[1]
        );
    });
}

/// Opted in, the root shuts down with the failure that emptied it, and
/// `System::run` returns it (it used to run forever).
#[test]
fn a_supervisor_made_to_shut_down_when_childless_ends_with_the_failure() {
    within(Duration::from_secs(20), || {
        let mut system = System::named("L0").unwrap();
        let root = system
            .spawn_root(Supervisor)
            .name("root")
            .supervisor(SupervisorConfig::default().shutdown_when_childless(true))
            .finish()
            .unwrap();
        system
            .spawn(&root, Middle)
            .name("middle")
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let reason = system.run().unwrap_err();
        let codes: Vec<ErrorCode> = reason.chain().map(Error::code).collect();
        assert_eq!(
            codes,
            [
                ErrorCode::ChildDown,
                ErrorCode::FailureEscalation,
                ErrorCode::RestartLimit,
                ErrorCode::Failure
            ],
            "{reason:#}"
        );
        assert_eq!(reason.context(), Some("L0/root#1: no child left"));
        assert_eq!(system.stats().children_given_up, 2);
    });
}

/// Its own registry does not count as a child; a last child that ended
/// normally ends the supervisor normally.
#[test]
fn a_supervisor_with_only_its_registry_left_is_childless_and_ends_as_its_child_did() {
    within(Duration::from_secs(20), || {
        let mut l = Locality::named("L0");
        let t0 = l.now();
        let root = l
            .spawn_root(Supervisor)
            .supervisor(
                SupervisorConfig::default()
                    .with_registry()
                    .shutdown_when_childless(true),
            )
            .finish()
            .unwrap();
        let one = l.spawn(&root, Idle).finish().unwrap();
        let two = l.spawn(&root, Idle).finish().unwrap();
        l.run_until_idle(t0);
        l.shutdown(&one).unwrap();
        l.run_until_idle(t0);
        assert_eq!(l.state_of(&root), Some(ActorState::Operational), "one left");
        l.shutdown(&two).unwrap();
        l.run_until_idle(t0);
        assert!(l.is_finished(), "no child left but the registry");
        let reason = l.exit_reason().unwrap();
        assert!(reason.is_normal(), "{reason}");
        assert_eq!(l.stats().children_given_up, 0, "nothing failed");
    });
}

/// Opted in, a supervisor still carries on while it has another child.
#[test]
fn a_supervisor_made_to_shut_down_when_childless_carries_on_while_a_child_is_left() {
    within(Duration::from_secs(20), || {
        let mut l = Locality::named("L0");
        let t0 = l.now();
        let root = l
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default().shutdown_when_childless(true))
            .finish()
            .unwrap();
        l.spawn(&root, Idle).finish().unwrap();
        l.spawn(&root, Middle)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        l.run_until_idle(t0);
        assert_eq!(l.state_of(&root), Some(ActorState::Operational));
        assert_eq!(l.stats().actors, 2, "the root and its idle child");
        assert_eq!(l.stats().children_given_up, 2);
    });
}

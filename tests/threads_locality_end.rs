//! When a locality served on a thread ends: once its last handle is dropped
//! (even during a dispatch), not while messages to it wait in its inbox, and
//! when a contract violation stops it, without holding its foreign
//! supervisor.
//!
//! Every test is bounded: threads are joined with a deadline, and no test
//! asserts on timing.

mod common;

use common::threads::{l0_root, serve};
use commutator::*;
use std::time::Duration;

/// Holds a handle on its own locality until it is dropped.
struct HoldsItsLocality {
    _handle: LocalityHandle,
}

impl Actor for HoldsItsLocality {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.shutdown();
    }
}

#[test]
fn a_locality_finishes_when_its_last_handle_is_dropped_during_a_dispatch() {
    // The root holds the locality's only handle: it is dropped with the root,
    // inside the dispatch that shuts the root down.
    let mut l0 = Locality::named("L0");
    let handle = l0.handle();
    l0.spawn_root(HoldsItsLocality { _handle: handle })
        .finish()
        .unwrap();
    let now = l0.now();
    l0.run_until_idle(now);
    assert_eq!(l0.stats().actors, 0);
    assert!(l0.is_finished(), "nothing is left that could use it");
    assert!(!l0.has_pending());
}

#[test]
fn a_child_spawned_on_another_locality_is_made_even_if_the_handle_is_dropped_at_once() {
    // The spawn request is in L1's inbox when the last handle on L1 goes.
    let mut l0 = Locality::named("L0");
    let mut l1 = Locality::named("L1");
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let handle = l1.handle();
    l0.spawn_on(&handle, &root, || HoldsNothing)
        .name("remote")
        .finish()
        .unwrap();
    drop(handle);
    let now = l0.now();
    for _ in 0..4 {
        l0.run_until_idle(now);
        l1.run_until_idle(now);
    }
    assert_eq!(l1.stats().actors, 1, "the child was made on L1");
    assert_eq!(l0.state_of(&root), Some(ActorState::Operational));
    l0.shutdown(&root).unwrap();
    for _ in 0..4 {
        l0.run_until_idle(now);
        l1.run_until_idle(now);
    }
    assert!(l0.is_finished() && l1.is_finished());
}

struct HoldsNothing;

impl Actor for HoldsNothing {}

/// Publishes its address for the test.
struct Target {
    me: std::sync::Arc<std::sync::Mutex<Option<Address>>>,
}

impl Actor for Target {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        *self.me.lock().unwrap() = Some(ctx.address().clone());
    }
}

#[derive(Clone)]
struct Heard;

/// Subscribes to `Heard` on an address of another locality.
struct Subscriber {
    to: Address,
}

impl Actor for Subscriber {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let to = self.to.clone();
        ctx.subscribe_external(&to, |_: &mut Self, _: &Heard, _| {})
            .unwrap();
    }
}

#[test]
fn a_locality_does_not_finish_while_messages_to_it_wait_in_its_inbox() {
    // L1's last actor is gone and its last handle goes while a subscriber's
    // unsubscription waits in L1's inbox: L1 must answer it before it
    // finishes, or the subscriber's shutdown waits forever.
    let mut l0 = Locality::named("L0");
    let mut l1 = Locality::named("L1");
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let handle = l1.handle();
    let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
    let me = slot.clone();
    l0.spawn_on(&handle, &root, move || Target { me: me.clone() })
        .name("target")
        .finish()
        .unwrap();
    let now = l0.now();
    let settle = |l0: &mut Locality, l1: &mut Locality| {
        for _ in 0..4 {
            l0.run_until_idle(now);
            l1.run_until_idle(now);
        }
    };
    settle(&mut l0, &mut l1);
    let target = slot.lock().unwrap().clone().expect("made on L1");
    let subscriber = l0
        .spawn(&root, Subscriber { to: target.clone() })
        .name("subscriber")
        .finish()
        .unwrap();
    settle(&mut l0, &mut l1);
    assert_eq!(l1.stats().subscriptions, 1, "the forwarder is installed");

    l1.shutdown(&target).unwrap();
    settle(&mut l0, &mut l1);
    assert_eq!(l1.stats().actors, 0);
    assert!(!l1.is_finished(), "a handle is left");
    l0.shutdown(&subscriber).unwrap();
    l0.run_until_idle(now); // the unsubscription is posted to L1
    drop(handle);
    settle(&mut l0, &mut l1);

    assert_eq!(l0.state_of(&subscriber), None, "its shutdown ended");
    assert!(l1.is_finished());
}

/// Holds its shutdown with a resource it never releases.
struct Stuck;

impl Actor for Stuck {
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.acquire_resource(0);
    }
}

#[test]
fn a_locality_stopped_by_a_contract_violation_releases_its_foreign_supervisor() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    l0.spawn_on(l1.handle(), &root, || Stuck)
        .name("stuck")
        .shutdown_timeout(Duration::from_millis(20))
        .finish()
        .unwrap();
    // The root starts only once every child (the one on L1 too) has initialized.
    l0.spawn(&root, Quitter).finish().unwrap();
    l0.run()
        .expect("L0 ends: its child on L1 was abandoned, not waited for forever");
    let reason = l1.finish().unwrap_err();
    assert_eq!(reason.code(), ErrorCode::ShutdownTimeout);
}

/// Shuts the tree down as soon as it is operational.
struct Quitter;

impl Actor for Quitter {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.shutdown_supervisor();
    }
}

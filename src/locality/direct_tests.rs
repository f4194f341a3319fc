//! A direct lifecycle call (`supervisor::local`) that meets an actor whose
//! code runs (its cell borrowed, as during one of its handlers) falls back
//! to the message, and nothing is lost. No public call leads there today;
//! these tests borrow the cell by hand.

use super::Locality;
use crate::actor::typed_actor;
use crate::arena::Key;
use crate::{Actor, ActorState, Address, Context, Error, Supervisor, SupervisorConfig};
use std::cell::RefCell;
use std::rc::Rc;

type Log = Rc<RefCell<Vec<String>>>;

/// Logs its shutdown hooks.
struct Leaf(Log);
impl Actor for Leaf {
    fn shutdown_start(&mut self, _: &mut Context<'_, Self>) {
        self.0.borrow_mut().push("shutdown_start".into());
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.0.borrow_mut().push("shutdown_finish".into());
    }
}

/// An operational root supervisor with one operational `Leaf`.
fn tree(log: &Log) -> (Locality, Address, Address) {
    let mut l = Locality::named("L0");
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let leaf = l.spawn(&root, Leaf(log.clone())).finish().unwrap();
    let now = l.now();
    l.run_until_idle(now);
    assert_eq!(l.state_of(&leaf), Some(ActorState::Operational));
    (l, root, leaf)
}

fn owner(l: &Locality, address: &Address) -> Key {
    l.core.routes.address(address.key()).unwrap().owner
}

#[test]
fn a_busy_leaf_is_asked_to_shut_down_by_a_message_and_runs_every_hook() {
    let log = Log::default();
    let (mut l, root, leaf) = tree(&log);
    let (root_key, leaf_key) = (owner(&l, &root), owner(&l, &leaf));
    let cell = typed_actor::<Leaf>(&l.core, leaf_key).unwrap();
    {
        let _running = cell.borrow_mut();
        crate::lifecycle::on_shutdown_request(&mut l.core, root_key, Error::normal());
        assert_eq!(l.state_of(&leaf), Some(ActorState::Operational));
        assert_eq!(l.core.queue.len(), 1, "its ShutdownRequest waits");
    }
    drop(cell);
    let now = l.now();
    l.run_until_idle(now);
    assert!(l.is_finished());
    assert_eq!(*log.borrow(), ["shutdown_start", "shutdown_finish"]);
}

#[test]
fn a_leaf_whose_busy_supervisor_is_told_by_a_message_that_it_is_down() {
    let log = Log::default();
    let (mut l, root, leaf) = tree(&log);
    let (root_key, leaf_key) = (owner(&l, &root), owner(&l, &leaf));
    let cell = typed_actor::<Supervisor>(&l.core, root_key).unwrap();
    {
        let _running = cell.borrow_mut();
        crate::lifecycle::on_shutdown_request(&mut l.core, leaf_key, Error::normal());
        assert_eq!(l.state_of(&leaf), None, "the leaf is gone");
        assert_eq!(l.core.queue.len(), 1, "its ChildDown waits");
    }
    drop(cell);
    let now = l.now();
    l.run_until_idle(now);
    assert_eq!(*log.borrow(), ["shutdown_start", "shutdown_finish"]);
    let sup = l.core.actors.get(root_key).unwrap().supervisor.as_deref();
    assert!(sup.unwrap().children.is_empty(), "the supervisor heard");
    assert_eq!(l.state_of(&root), Some(ActorState::Operational));
}

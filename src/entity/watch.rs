//! Child events: what the core tells a supervisor that asked for them (an
//! entity set or a pool) about its children.
//!
//! The core calls [`started`] when a supervisor sends `Start` to a child, and
//! [`down`] when it has decided about a child that went down (not while the
//! supervisor shuts down itself: it would hear it too late). A supervisor
//! asks for these events by subscribing to [`ChildEvent`] on its main
//! address; for every other supervisor each call costs a lookup and sends
//! nothing. The event is queued behind what the supervisor just sent (the
//! child's `Start`), so when the supervisor hears `Started`, the child has run
//! its `on_start`. [`leaving`] is synchronous: the core calls it when an
//! actor leaves OPERATIONAL, and a supervisor that keeps a counter for it
//! (an entity set: its locality's version) sees it move at once.

use crate::actor::{ActorCell, Parent};
use crate::address::Address;
use crate::arena::Key;
use crate::error::Error;
use crate::locality::Core;
use crate::message::UserEnvelope;
use crate::routing::Found;
use std::any::TypeId;

/// A change in a child's life, as its supervisor sees it.
#[derive(Debug)]
pub(crate) enum ChildEvent {
    /// The supervisor started the child at `address` (in `slot`).
    Started { slot: usize, address: Address },
    /// The child in `slot` went down; `restarting` if the supervisor will
    /// make a new instance in the same slot (it reports `Started` again).
    Down {
        slot: usize,
        address: Option<Address>,
        reason: Error,
        restarting: bool,
    },
}

/// A supervisor here asks for its children's events or counts their
/// steps out of OPERATIONAL (an entity set, a pool): from now on the core's
/// calls here look (before, none could find anything: they return at once).
pub(crate) fn watching(core: &mut Core) {
    core.child_watch = true;
}

/// The supervisor `me`'s main address, if it subscribed to child events.
fn watcher(core: &Core, me: Key) -> Option<Key> {
    if !core.child_watch {
        return None;
    }
    let dest = core.actors.get(me)?.main;
    match core.routes.find(dest, TypeId::of::<ChildEvent>()) {
        Found::One(_) | Found::Many => Some(dest),
        Found::NoSubscriber | Found::Stale => None,
    }
}

fn report(core: &mut Core, dest: Key, event: ChildEvent) {
    core.enqueue(UserEnvelope {
        dest,
        sender: Key::FRAMEWORK,
        message: event,
    });
}

/// Actor `me` leaves OPERATIONAL (it starts shutting down, the only way
/// out): if its supervisor, on this locality, counts such steps (an
/// entity set: its entity refs' caches go stale), the count moves. Once
/// per actor; a few loads for others.
#[inline(never)]
pub(crate) fn leaving(core: &Core, me: Key) {
    if !core.child_watch {
        return;
    }
    let Some(Parent::Local { key, .. }) = core.actors.get(me).and_then(ActorCell::parent) else {
        return;
    };
    let Some(owner) = core.routes.address(key).map(|a| a.owner) else {
        return;
    };
    if core
        .actors
        .get(owner)
        .and_then(|c| c.supervisor.as_deref())
        .is_some_and(|s| s.counts_leaving)
    {
        core.entities.bump();
    }
}

/// Supervisor `me` started its child at `address`, in `slot`.
pub(crate) fn started(core: &mut Core, me: Key, slot: usize, address: &Address) {
    if let Some(dest) = watcher(core, me) {
        let address = address.clone();
        report(core, dest, ChildEvent::Started { slot, address });
    }
}

/// The supervisor at main address `sup` started its child `child` (an
/// actor here), in `slot`: [`started`], with the child's address copied
/// only for a watcher.
pub(crate) fn started_here(core: &mut Core, sup: Key, slot: usize, child: Key) {
    if core.child_watch
        && let Found::One(_) | Found::Many = core.routes.find(sup, TypeId::of::<ChildEvent>())
        && let Some(address) = core.address_of(child).cloned()
    {
        report(core, sup, ChildEvent::Started { slot, address });
    }
}

/// Supervisor `me` decided about its child in `slot` that went down.
pub(crate) fn down(
    core: &mut Core,
    me: Key,
    slot: usize,
    address: Option<Address>,
    reason: &Error,
    restarting: bool,
) {
    if let Some(dest) = watcher(core, me) {
        let event = ChildEvent::Down {
            slot,
            address,
            reason: reason.clone(),
            restarting,
        };
        report(core, dest, event);
    }
}

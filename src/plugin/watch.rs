//! Watching another actor's lifecycle (Erlang's monitor, Akka's watch,
//! rotor's lifetime observers).
//!
//! The watcher keeps a record of each watch (its id and the address it
//! watches); the watched actor keeps its watchers (their main address, the
//! id, the address they watched). On each transition the watched actor
//! sends every watcher a framework message (`WatchMsg::Event`), through the
//! same queue or inbox as its other messages, so events keep their order
//! with what it sends. The watcher's locality delivers it as a [`Watched`]
//! user message to the watcher's main address, unless the watch was
//! removed meanwhile; the last event (`ShutDown`, `Gone`) ends the record.
//! A watch on another locality is asked for by a message (`WatchMsg::Add`);
//! a gone address, or a finished locality, answers `Gone`.

use crate::actor::ActorCell;
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::lifecycle::SystemMsg;
use crate::locality::Core;
use crate::message::UserEnvelope;
use crate::queue::Envelope;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Names a watch, for [`Context::unwatch`](crate::Context::unwatch);
/// returned by [`Context::watch`](crate::Context::watch) and carried by
/// each [`Watched`] event. Unique in the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WatchId(u64);

/// A step in a watched actor's lifecycle.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LifecycleEvent {
    /// It is INITIALIZED: every plugin voted ready.
    Initialized,
    /// It is OPERATIONAL.
    Started,
    /// It started shutting down, for this reason.
    ShuttingDown(Error),
    /// It is gone, for this reason (its locality's loss or stop, if that
    /// is how it went). The last event of a watch.
    ShutDown(Error),
    /// It was gone already when the watch was asked for (or its locality
    /// had finished): its reason is not known. The last event of a watch.
    Gone,
}

/// `initialized`, `started`, `shutting down: <reason>`, `shut down:
/// <reason>`, `gone` (the reason printed as the error prints: `{:#}` for its
/// whole chain).
impl fmt::Display for LifecycleEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, reason) = match self {
            LifecycleEvent::Initialized => ("initialized", None),
            LifecycleEvent::Started => ("started", None),
            LifecycleEvent::ShuttingDown(r) => ("shutting down: ", Some(r)),
            LifecycleEvent::ShutDown(r) => ("shut down: ", Some(r)),
            LifecycleEvent::Gone => ("gone", None),
        };
        f.write_str(what)?;
        match reason {
            Some(r) if f.alternate() => write!(f, "{r:#}"),
            Some(r) => write!(f, "{r}"),
            None => Ok(()),
        }
    }
}

impl LifecycleEvent {
    /// `true` for the last event of a watch (`ShutDown`, `Gone`).
    pub fn is_last(&self) -> bool {
        matches!(self, LifecycleEvent::ShutDown(_) | LifecycleEvent::Gone)
    }
}

/// What a watcher receives, at its main address, for each step of an actor
/// it watches ([`Context::watch`](crate::Context::watch)): subscribe to
/// `Watched` to hear it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Watched {
    /// The watch this event is for.
    pub id: WatchId,
    /// The address that was watched.
    pub address: Address,
    /// What happened.
    pub event: LifecycleEvent,
}

/// Framework traffic of watches.
#[derive(Debug)]
pub(crate) enum WatchMsg {
    /// Watcher → watched: add me (`watched`: the address asked for).
    Add {
        watcher: Address,
        id: u64,
        watched: Address,
    },
    /// Watcher → watched: remove this watch.
    Remove { watcher: Address, id: u64 },
    /// Watched → watcher: an event.
    Event {
        id: u64,
        watched: Address,
        event: LifecycleEvent,
    },
}

impl WatchMsg {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            WatchMsg::Add { .. } => "Watch",
            WatchMsg::Remove { .. } => "Unwatch",
            WatchMsg::Event { .. } => "Watched",
        }
    }
}

/// A watcher of an actor, as the actor keeps it.
pub(crate) struct Watcher {
    to: Address,
    id: u64,
    watched: Address,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Watcher side: `me` watches the actor at `target`.
pub(crate) fn watch(core: &mut Core, me: Key, target: &Address) -> Result<WatchId> {
    let local = target.locality_id() == core.id();
    let owner = match local {
        true => core.routes.address(target.key()).map(|slot| slot.owner),
        false => None,
    };
    if owner == Some(me) {
        let why = "an actor cannot watch itself";
        return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
    }
    let Some(watcher) = core.address_of(me).cloned() else {
        return Err(target.stale_error());
    };
    let Some(cell) = core.actors.get_mut(me) else {
        return Err(target.stale_error());
    };
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    cell.plugins().watching.push((id, target.clone()));
    let added = match owner {
        Some(owner) => core.actors.get_mut(owner).map(|cell| {
            cell.plugins().watchers.push(Watcher {
                to: watcher.clone(),
                id,
                watched: target.clone(),
            })
        }),
        None if local => None,
        None => {
            let msg = WatchMsg::Add {
                watcher: watcher.clone(),
                id,
                watched: target.clone(),
            };
            core.send_system(target, SystemMsg::Watch(Box::new(msg)))
                .then_some(())
        }
    };
    if added.is_none() {
        gone(core, &watcher, id, target.clone());
    }
    Ok(WatchId(id))
}

/// Tells `watcher` that the address its watch `id` is on is gone.
fn gone(core: &mut Core, watcher: &Address, id: u64, watched: Address) {
    let event = LifecycleEvent::Gone;
    let msg = WatchMsg::Event { id, watched, event };
    core.send_system(watcher, SystemMsg::Watch(Box::new(msg)));
}

/// Watcher side: ends watch `id` of `me`; `false` if it had none such (or
/// the watch ended already).
pub(crate) fn unwatch(core: &mut Core, me: Key, id: WatchId) -> bool {
    let Some(watcher) = core.address_of(me).cloned() else {
        return false;
    };
    let Some(cell) = core.actors.get_mut(me) else {
        return false;
    };
    let Some(watching) = cell.plugins_mut().map(|p| &mut p.watching) else {
        return false;
    };
    let Some(at) = watching.iter().position(|(w, _)| *w == id.0) else {
        return false;
    };
    let (id, target) = watching.swap_remove(at);
    remove(core, watcher, id, &target);
    true
}

/// Removes the watch `id` of `watcher` at `target` (directly if it lives here).
fn remove(core: &mut Core, watcher: Address, id: u64, target: &Address) {
    if target.locality_id() != core.id() {
        let msg = WatchMsg::Remove { watcher, id };
        core.send_system(target, SystemMsg::Watch(Box::new(msg)));
        return;
    }
    let owner = core.routes.address(target.key()).map(|slot| slot.owner);
    if let Some(cell) = owner.and_then(|owner| core.actors.get_mut(owner)) {
        forget(cell, &watcher, id);
    }
}

fn forget(cell: &mut ActorCell, watcher: &Address, id: u64) {
    if let Some(plugins) = cell.plugins_mut() {
        plugins
            .watchers
            .retain(|w| !(w.id == id && &w.to == watcher));
    }
}

/// A watch message for `dest`, an address of this locality.
pub(crate) fn deliver(core: &mut Core, dest: Key, msg: WatchMsg) {
    let owner = core.routes.address(dest).map(|slot| slot.owner);
    let Some(cell) = owner.and_then(|owner| core.actors.get_mut(owner)) else {
        return undeliverable(core, msg);
    };
    match msg {
        WatchMsg::Add {
            watcher,
            id,
            watched,
        } => cell.plugins().watchers.push(Watcher {
            to: watcher,
            id,
            watched,
        }),
        WatchMsg::Remove { watcher, id } => forget(cell, &watcher, id),
        WatchMsg::Event { id, watched, event } => {
            let Some(watching) = cell.plugins_mut().map(|p| &mut p.watching) else {
                return;
            };
            // Unwatched meanwhile: nothing more of it is heard.
            let Some(at) = watching.iter().position(|(w, _)| *w == id) else {
                return;
            };
            if event.is_last() {
                watching.swap_remove(at);
            }
            let message = Watched {
                id: WatchId(id),
                address: watched,
                event,
            };
            let envelope = UserEnvelope {
                dest,
                sender: Key::FRAMEWORK,
                message,
            };
            envelope.deliver(core);
        }
    }
}

/// A watch message whose address is gone: a watch asked for is answered.
pub(crate) fn undeliverable(core: &mut Core, msg: WatchMsg) {
    if let WatchMsg::Add {
        watcher,
        id,
        watched,
    } = msg
    {
        gone(core, &watcher, id, watched);
    }
}

/// A watch message to a locality that has finished: a watch asked for is
/// answered (from outside any locality).
pub(crate) fn refuse(msg: WatchMsg) -> Option<(Address, SystemMsg)> {
    let WatchMsg::Add {
        watcher,
        id,
        watched,
    } = msg
    else {
        return None;
    };
    let event = LifecycleEvent::Gone;
    let msg = WatchMsg::Event { id, watched, event };
    Some((watcher, SystemMsg::Watch(Box::new(msg))))
}

/// `true` if anyone watches the actor (so its events are worth making).
#[inline]
pub(crate) fn watched(cell: &ActorCell) -> bool {
    cell.rare
        .as_deref()
        .is_some_and(|r| !r.plugins.watchers.is_empty())
}

/// Actor `me` enters a new state: tell its watchers (the caller checked
/// that it has some, with [`watched`]).
#[cold]
#[inline(never)]
pub(crate) fn notify(core: &mut Core, me: Key, event: LifecycleEvent) {
    let Some(plugins) = core.actors.get(me).and_then(|c| c.plugins_ref()) else {
        return;
    };
    let to: Vec<_> = plugins
        .watchers
        .iter()
        .map(|w| (w.to.clone(), w.id, w.watched.clone()))
        .collect();
    let mut closed = Vec::new();
    for (to, id, watched) in to {
        let event = event.clone();
        let msg = WatchMsg::Event { id, watched, event };
        if !core.send_system_in_order(&to, SystemMsg::Watch(Box::new(msg))) {
            closed.push((to, id));
        }
    }
    // Watchers on a finished locality hear nothing again.
    if let Some(cell) = core.actors.get_mut(me) {
        for (to, id) in closed {
            forget(cell, &to, id);
        }
    }
}

/// The actor in `cell` (removed, its main address `address`) is gone with
/// `reason`: its watchers hear it, and the actors it watched forget it.
#[inline]
pub(crate) fn finished(core: &mut Core, cell: &mut ActorCell, address: &Address, reason: &Error) {
    if cell.rare.is_some() {
        finished_watches(core, cell, address, reason);
    }
}

#[inline(never)]
fn finished_watches(core: &mut Core, cell: &mut ActorCell, address: &Address, reason: &Error) {
    let Some(plugins) = cell.plugins_mut() else {
        return;
    };
    let (watchers, watching) = (
        std::mem::take(&mut plugins.watchers),
        std::mem::take(&mut plugins.watching),
    );
    for w in watchers {
        let event = LifecycleEvent::ShutDown(reason.clone());
        let msg = WatchMsg::Event {
            id: w.id,
            watched: w.watched,
            event,
        };
        core.send_system_in_order(&w.to, SystemMsg::Watch(Box::new(msg)));
    }
    for (id, target) in watching {
        remove(core, address.clone(), id, &target);
    }
}

/// The locality stops with `cell`'s actor in it (lost, or a contract
/// violation): what to tell the watchers elsewhere, and the actors it
/// watches elsewhere.
pub(crate) fn abandon(
    core_id: u32,
    cell: &ActorCell,
    address: &Address,
    error: &Error,
    notes: &mut Vec<(Address, SystemMsg)>,
) {
    let Some(plugins) = cell.plugins_ref() else {
        return;
    };
    for w in plugins
        .watchers
        .iter()
        .filter(|w| w.to.locality_id() != core_id)
    {
        let msg = WatchMsg::Event {
            id: w.id,
            watched: w.watched.clone(),
            event: LifecycleEvent::ShutDown(error.clone()),
        };
        notes.push((w.to.clone(), SystemMsg::Watch(Box::new(msg))));
    }
    for (id, target) in plugins.watching.iter() {
        if target.locality_id() != core_id {
            let watcher = address.clone();
            let msg = WatchMsg::Remove { watcher, id: *id };
            notes.push((target.clone(), SystemMsg::Watch(Box::new(msg))));
        }
    }
}

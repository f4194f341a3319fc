//! The shutdown half of the lifecycle: an actor asks for its own shutdown
//! or fails, its supervisor (or the locality, for a root) asks it to shut
//! down, it votes with its plugins until all are ready, and it finishes:
//! its hooks run, its children, addresses and timers go, and its supervisor
//! hears `ChildDown`.

use super::{SystemMsg, enter, set_cell_state, state, to_self};
use crate::actor::{ActorState, Hook, ParentLink, call_hook};
use crate::arena::Key;
use crate::error::Error;
use crate::locality::Core;
use crate::locality::fire::TimerAction;
use crate::plugin::watch::{self, LifecycleEvent};
use crate::plugin::{self, Vote, external, link};
use crate::supervisor::{self, ChildId};

/// The actor asks to be shut down: through its supervisor, or directly for a root.
pub(crate) fn request_own_shutdown(core: &mut Core, me: Key, reason: Error) {
    let Some(cell) = core.actors.get(me) else {
        return;
    };
    if cell.state >= ActorState::ShuttingDown {
        return;
    }
    match &cell.parent {
        Some(_) => {
            let child = ChildId::of(&cell.address);
            ParentLink::send_of(core, me, |slot| SystemMsg::ShutdownTrigger {
                child: Some((slot, child)),
                reason,
            });
        }
        None => to_self(core, me, SystemMsg::ShutdownRequest { reason }),
    }
}

/// A failure reported by the actor itself.
pub(crate) fn fail(core: &mut Core, me: Key, error: Error) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    match cell.state {
        ActorState::New | ActorState::Initializing => {
            cell.rare().init_failure.get_or_insert(error);
            to_self(core, me, SystemMsg::Poll);
        }
        ActorState::Initialized | ActorState::Operational => request_own_shutdown(core, me, error),
        ActorState::ShuttingDown | ActorState::ShutDown => {}
    }
}

/// Starts shutting the actor down (once; later requests are ignored).
pub(crate) fn on_shutdown_request(core: &mut Core, me: Key, reason: Error) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let before = cell.state;
    if before >= ActorState::ShuttingDown {
        return;
    }
    cell.reason = Some(reason);
    let timer = cell.rare.as_deref().map(|r| {
        let after = r.config.shutdown_timeout;
        after.map(|after| (after, TimerAction::ShutdownTimeout))
    });
    if timer.is_none() {
        // No timeout, no watchers: only the state changes.
        set_cell_state(cell, ActorState::ShuttingDown);
    }
    if before == ActorState::Operational && core.child_watch {
        // Its supervisor here may count it (an entity set's version).
        crate::entity::watch::leaving(core, me);
    }
    if let Some(timer) = timer
        && enter(core, me, ActorState::ShuttingDown, timer)
    {
        let reason = core.actors.get(me).and_then(|c| c.reason.clone());
        let event = LifecycleEvent::ShuttingDown(reason.unwrap_or_else(Error::normal));
        watch::notify(core, me, event);
    }
    if before >= ActorState::Initializing {
        call_hook(core, me, Hook::ShutdownStart);
    }
    // A plain actor (no plugin state, no children: most leaves) has
    // nothing to deregister, unsubscribe, stop or unlink.
    // Without user plugins either, its votes are all ready: it finishes.
    let Some(cell) = core.actors.get(me) else {
        return;
    };
    if cell.rare.is_none() && cell.supervisor.is_none() {
        if cell.state == ActorState::ShuttingDown && !cell.actor.has_plugins() {
            return finish_shutdown(core, me);
        }
    } else {
        crate::plugin::registry::deregister_all(core, me);
        external::unsubscribe_all(core, me);
        supervisor::shutdown_children(core, me);
        link::unlink_clients(core, me);
    }
    try_shutdown(core, me);
}

/// Counts the shutdown votes (in reverse plugin order); finishes when all are ready.
pub(crate) fn try_shutdown(core: &mut Core, me: Key) {
    if state(core, me) != Some(ActorState::ShuttingDown) {
        return;
    }
    match plugin::shutdown_vote(core, me) {
        Vote::Ready => finish_shutdown(core, me),
        Vote::Pending => {}
        Vote::Failed(error) => core.contract_violation(error),
    }
}

/// The debug line of an actor gone (out of line: it is seldom enabled).
#[cold]
#[inline(never)]
fn log_down(address: &crate::address::Address, reason: &Error) {
    tracing::debug!(actor = %address, reason = reason.as_dyn_error(), "shut down");
}

fn finish_shutdown(core: &mut Core, me: Key) {
    // As in rotor, `shutdown_finish` sees SHUT_DOWN.
    if let Some(cell) = core.actors.get_mut(me) {
        set_cell_state(cell, ActorState::ShutDown);
        if let Some(key) = cell
            .rare
            .as_deref_mut()
            .and_then(|r| r.lifecycle_timer.take())
        {
            core.cancel_timer(key);
        }
    }
    call_hook(core, me, Hook::ShutdownFinish);
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let main = cell.address.key();
    // Its timers and requests are listed by its slot in their sets.
    if let Some(rare) = cell.rare.as_deref_mut() {
        let (subscriptions, identities) = (
            std::mem::take(&mut rare.foreign_subscriptions),
            std::mem::take(&mut rare.identities),
        );
        for sub in subscriptions {
            crate::subscription::unsubscribe(core, sub);
        }
        end_timers_and_requests(core, me);
        for address in identities {
            crate::subscription::remove_address(core, address);
        }
    } else {
        end_timers_and_requests(core, me);
    }
    crate::subscription::remove_address(core, main);
    crate::future::actor_gone(core, me);
    // Kept in an `Option`, dropped in place at the end (a cell is moved
    // once, out of the arena, not again into the drop's panic guard).
    let mut removed = core.actors.remove(me);
    let Some(cell) = removed.as_mut() else {
        return;
    };
    if let Some(plugins) = cell.plugins_ref() {
        link::notify_servers(core, &cell.address, plugins);
        core.io.borrow_mut().forget(plugins.io.iter().copied());
    }
    let reason = cell.reason.take().unwrap_or_else(Error::normal);
    watch::finished(core, cell, &reason);
    let actor = &cell.actor;
    let restart =
        crate::actor::guarded(core, me, || actor.should_restart(&reason)).unwrap_or(false);
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        log_down(&cell.address, &reason);
    }
    let (parent, child, leaf) = (
        cell.take_parent(),
        ChildId::of(&cell.address),
        cell.supervisor.is_none(),
    );
    // The actor's own `Drop` is user code. It goes before its supervisor
    // hears of it, which may finish the supervisor at once.
    let _ = crate::actor::guarded(core, me, || removed = None);
    let Some(parent) = parent else {
        return core.unanchor(Some(reason));
    };
    let reason = match leaf {
        true => match supervisor::local::report_down(core, &parent, child, reason, restart) {
            Ok(()) => return,
            Err(reason) => reason,
        },
        false => reason,
    };
    let down = SystemMsg::ChildDown {
        slot: parent.slot(),
        child,
        reason,
        restart,
    };
    parent.send(core, down);
    if !parent.is_local() {
        core.unanchor(None);
    }
}

/// Cancels the timers of actor `me` and ends its pending requests.
#[inline(always)]
fn end_timers_and_requests(core: &mut Core, me: Key) {
    if core.timers.has_any(me) {
        core.timers.cancel_all(me);
    }
    if core.requests.has_any(me) {
        crate::request::requester_gone(core, me);
    }
}

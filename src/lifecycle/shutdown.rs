//! The shutdown half of the lifecycle: an actor asks for its own shutdown
//! or fails, its supervisor (or the locality, for a root) asks it to shut
//! down, it votes with its plugins until all are ready, and it finishes:
//! its hooks run, its children, addresses and timers go, and its supervisor
//! hears `ChildDown`.

use super::{SystemMsg, enter, set_cell_state, state, to_self};
use crate::actor::{ActorCell, ActorState, Hook, ParentLink, call_hook_known, skips};
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
            let child = cell.child_id(core.id());
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
    let _ = shutdown_request(core, me, reason, false, Key::NONE);
}

/// [`on_shutdown_request`] by a direct call from the supervisor of leaf
/// `me` at `address` (`supervisor::local::stop_leaf`; `sup` is that
/// supervisor's key, which hears of the leaf's end), shown by
/// inspection as the message it stands for; only if the actor is a leaf
/// none of whose code runs now. `Err` gives the reason back: send
/// `ShutdownRequest`.
pub(crate) fn stop_idle_leaf(
    core: &mut Core,
    me: Key,
    address: Key,
    reason: Error,
    sup: Key,
) -> Result<(), Error> {
    if core.inspect.level >= 2 {
        let idle = |c: &ActorCell| c.supervisor.is_none() && !c.actor.busy();
        if !core.actors.get(me).is_some_and(idle) {
            return Err(reason);
        }
        let code = reason.code();
        crate::inspect::step(core, "ShutdownRequest", Some(code), None, address);
        on_shutdown_request(core, me, reason);
        return Ok(());
    }
    shutdown_request(core, me, reason, true, sup)
}

/// [`on_shutdown_request`], or [`stop_idle_leaf`] if `direct` (without
/// inspection, asked by the supervisor at `sup`): one look at the cell
/// for the checks and the request.
#[inline(always)]
fn shutdown_request(
    core: &mut Core,
    me: Key,
    reason: Error,
    direct: bool,
    sup: Key,
) -> Result<(), Error> {
    let Some(cell) = core.actors.get_mut(me) else {
        return if direct { Err(reason) } else { Ok(()) };
    };
    if direct && (cell.supervisor.is_some() || cell.actor.busy()) {
        return Err(reason);
    }
    let before = cell.state;
    if before >= ActorState::ShuttingDown {
        return Ok(());
    }
    let hooks = cell.hooks;
    let timer = cell.rare.as_deref().map(|r| {
        let after = r.config.shutdown_timeout;
        after.map(|after| (after, TimerAction::ShutdownTimeout))
    });
    if timer.is_none() {
        // No timeout, no watchers: only the state changes.
        set_cell_state(&core.routes, cell, ActorState::ShuttingDown);
        // A plain leaf (no plugin state, no children, no user plugins)
        // whose shutdown hooks are known defaults: nothing runs before it
        // finishes, its votes are all ready (an entity set that counts its
        // children leaving OPERATIONAL hears of it first).
        if cell.supervisor.is_none()
            && (direct || !cell.actor.busy())
            && (before < ActorState::Initializing
                || skips(&core.type_names, Hook::ShutdownStart, hooks))
            && skips(&core.type_names, Hook::ShutdownFinish, hooks)
        {
            set_cell_state(&core.routes, cell, ActorState::ShutDown);
            let (main, plain) = (cell.main, cell.rare.is_none());
            if before == ActorState::Operational && core.child_watch {
                crate::entity::watch::leaving(core, me);
            }
            finish_removal(core, me, main, sup, reason, plain);
            return Ok(());
        }
    }
    // Kept until the actor is gone (its hooks may ask for it), beside the
    // cells: a plain leaf that goes at once never keeps it.
    core.reasons.insert(me, reason);
    if before == ActorState::Operational && core.child_watch {
        // Its supervisor here may count it (an entity set's version).
        crate::entity::watch::leaving(core, me);
    }
    if let Some(timer) = timer
        && enter(core, me, ActorState::ShuttingDown, timer)
    {
        let reason = core.actors.get(me).and(core.reasons.get(&me).cloned());
        let event = LifecycleEvent::ShuttingDown(reason.unwrap_or_else(Error::normal));
        watch::notify(core, me, event);
    }
    if before >= ActorState::Initializing {
        call_hook_known(core, me, Hook::ShutdownStart, hooks);
    }
    // A plain actor (no plugin state, no children: most leaves) has
    // nothing to deregister, unsubscribe, stop or unlink.
    // Without user plugins either, its votes are all ready: it finishes.
    let Some(cell) = core.actors.get(me) else {
        return Ok(());
    };
    if cell.rare.is_none() && cell.supervisor.is_none() {
        if cell.state == ActorState::ShuttingDown && !cell.actor.has_plugins() {
            finish_shutdown(core, me);
            return Ok(());
        }
    } else {
        crate::plugin::registry::deregister_all(core, me);
        external::unsubscribe_all(core, me);
        supervisor::shutdown_children(core, me);
        link::unlink_clients(core, me);
    }
    try_shutdown(core, me);
    Ok(())
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
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    set_cell_state(&core.routes, cell, ActorState::ShutDown);
    let (hooks, main, rare) = (cell.hooks, cell.main, cell.rare.is_some());
    if let Some(key) = cell
        .rare
        .as_deref_mut()
        .and_then(|r| r.lifecycle_timer.take())
    {
        core.cancel_timer(key);
    }
    // Skipped as a known default, the hook leaves the cell as it was.
    if (call_hook_known(core, me, Hook::ShutdownFinish, hooks) || rare) && !finish_rare(core, me) {
        return;
    }
    // Its reason, kept beside the cells until its hooks are done.
    let reason = core.reasons.remove(&me).unwrap_or_else(Error::normal);
    if core.reasons.is_empty() && core.reasons.capacity() > 64 {
        // A burst of shutdowns is over: the map gives its room back.
        core.reasons = Default::default();
    }
    finish_removal(core, me, main, Key::NONE, reason, false);
}

/// What an actor with a rare part (or whose `shutdown_finish` ran) may
/// hold besides its main address and its timers and requests (which
/// [`finish_removal`] ends): subscriptions elsewhere, identities. `false`
/// if the actor is gone.
#[inline(never)]
fn finish_rare(core: &mut Core, me: Key) -> bool {
    let Some(cell) = core.actors.get_mut(me) else {
        return false;
    };
    if let Some(rare) = cell.rare.as_deref_mut() {
        let (subscriptions, identities) = (
            std::mem::take(&mut rare.foreign_subscriptions),
            std::mem::take(&mut rare.identities),
        );
        for sub in subscriptions {
            crate::subscription::unsubscribe(core, sub);
        }
        for address in identities {
            crate::subscription::remove_address(core, address);
        }
    }
    true
}

/// The end of actor `me` (SHUT_DOWN, its hooks done) at its `main`
/// address: the address and the cell go, `should_restart` and its `Drop`
/// run, and its supervisor hears of it (`sup`: the supervisor's key, if
/// the caller knows it, else `Key::NONE`), with `reason` (taken out of
/// its cell, if it was kept there); `plain`: the caller read that the
/// cell has no rare part (`false` if it does not know).
fn finish_removal(core: &mut Core, me: Key, main: Key, sup: Key, reason: Error, plain: bool) {
    // Its timers and requests are listed by its slot in their sets.
    end_timers_and_requests(core, me);
    // An address without subscriptions (most), when nothing remembers
    // removed addresses: only its slot goes.
    // The cell keeps no copy of its main address: the slot's goes with it.
    let quiet = core.inspect.level == 0 && core.dead_letters.is_none();
    // A plain actor's (no rare part: no watchers, servers or I/O to tell)
    // when the debug line is off: nothing after this needs its address
    // but its id (this locality's, its key), so the address goes with its
    // slot at once, not moved out for later (the moves of the removed
    // slot through the stack stalled the loads that read it back).
    let dropped = plain
        && quiet
        && !tracing::level_enabled!(tracing::Level::DEBUG)
        && core.routes.discard_unsubscribed(main);
    let address = match (dropped, quiet) {
        (true, _) => None,
        (false, true) => core
            .routes
            .remove_unsubscribed(main)
            .map(|info| info.address),
        (false, false) => None,
    };
    let address = match address {
        Some(address) => Some(address),
        None if dropped => None,
        None => crate::subscription::remove_address(core, main),
    };
    crate::future::actor_gone(core, me);
    // Kept in an `Option`, dropped in place at the end (a cell is moved
    // once, out of the arena, not again into the drop's panic guard).
    let mut removed = core.actors.remove(me);
    let Some(cell) = removed.as_mut() else {
        return;
    };
    let child = match &address {
        Some(address) => ChildId::of(address),
        None if dropped => ChildId::new(core.id(), main),
        None => return,
    };
    if let Some(address) = &address {
        if let Some(plugins) = cell.plugins_ref() {
            link::notify_servers(core, address, plugins);
            core.io.borrow_mut().forget(plugins.io.iter().copied());
        }
        watch::finished(core, cell, address, &reason);
    }
    let (parent, leaf) = (cell.take_parent(), cell.supervisor.is_none());
    // `should_restart`, then the actor's own `Drop`: user code, behind one
    // panic guard. The `Drop` goes before its supervisor hears of it,
    // which may finish the supervisor at once.
    let mut restart = false;
    let ended = crate::actor::guarded(core, me, || {
        if let Some(cell) = &removed {
            restart = cell.actor.should_restart(&reason);
            if let Some(address) = &address
                && tracing::level_enabled!(tracing::Level::DEBUG)
            {
                log_down(address, &reason);
            }
        }
        removed = None;
    });
    // A panic in `Drop` leaves the cell dropped (`None`); one in
    // `should_restart` (caught, logged, `false`) leaves it: the debug
    // line and the `Drop` follow, behind a guard of their own, as before.
    if ended.is_err() && removed.is_some() {
        if let Some(address) = &address
            && tracing::level_enabled!(tracing::Level::DEBUG)
        {
            log_down(address, &reason);
        }
        let _ = crate::actor::guarded(core, me, || removed = None);
    }
    let Some(parent) = parent else {
        return core.unanchor(Some(reason));
    };
    let reason = match leaf {
        true => match supervisor::local::report_down(core, &parent, child, reason, restart, sup) {
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

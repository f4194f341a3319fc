//! Lifecycle steps between a leaf (an actor that is not a supervisor) and
//! its supervisor on the same locality, taken by a direct call instead of a
//! framework message when that changes nothing anyone could see, or only
//! what the lifecycle leaves open:
//!
//! - **Init confirmation and start**: a leaf that finishes its init under an
//!   operational supervisor here confirms and is started at once, in the
//!   same dispatch step (no `InitConfirm`, no `Start`). Messages already
//!   queued for it then reach it OPERATIONAL rather than INITIALIZED.
//! - **Shutdown request**: a supervisor asks a leaf here to shut down by a
//!   direct call when nothing waits in the queue (the message would have
//!   been the next one delivered) and, during its own shutdown, when it has
//!   no linked clients to ask (their `UnlinkRequest`s would have come
//!   after). Once one request has gone as a message, the queue is no longer
//!   empty, so the leaf's later siblings go by message too, in order.
//! - **Child down**: a leaf that finished its shutdown tells its supervisor
//!   here by a direct call when nothing waits in the queue.
//!
//! Each direct step is shown by inspection (level 2) as the message it
//! stands for, when it happens. Only leaves take these steps, and a step
//! never calls on to the supervisor's own supervisor (a supervisor's
//! confirmation, start and `ChildDown` always go as messages), so the calls
//! nest a bounded number of levels whatever the depth of the tree. A direct
//! call never runs the code of an actor whose hook or handler is running
//! (its cell is borrowed): then the message goes as before.

use crate::actor::{ActorCell, ActorState, Notice, Parent, ParentLink};
use crate::arena::Key;
use crate::error::Error;
use crate::lifecycle;
use crate::locality::Core;
use crate::supervisor::{
    ChildId, ChildRecord, ChildState, HOOK_INIT, hear, restart, start_children,
};

/// `true` if `cell` is a leaf none of whose code runs now.
fn idle_leaf(cell: &ActorCell) -> bool {
    cell.supervisor.is_none() && !cell.actor.busy()
}

/// What [`confirm_init`] needs of a leaf, read with its cell.
#[derive(Clone, Copy)]
pub(crate) struct Leaf {
    sup_address: Key,
    slot: usize,
    /// Its main address's key (on this locality).
    mine: Key,
}

impl Leaf {
    /// The leaf at `cell`, if it is an idle leaf with a supervisor here.
    #[inline]
    pub(crate) fn of(cell: &ActorCell) -> Option<Leaf> {
        match idle_leaf(cell) {
            true => Leaf::at_init(cell),
            false => None,
        }
    }

    /// [`Leaf::of`] at the delivery of the leaf's `Init` (`lifecycle::on_init`,
    /// run by the dispatch loop, never inside a hook or handler): none of
    /// its code runs then, so it is not asked whether it is busy.
    #[inline]
    pub(crate) fn at_init(cell: &ActorCell) -> Option<Leaf> {
        let Some(Parent::Local {
            key: sup_address,
            slot,
        }) = cell.parent().filter(|_| cell.supervisor.is_none())
        else {
            return None;
        };
        // The supervisor's record of this child holds a clone of its
        // address: the same key on the same locality.
        let mine = cell.main;
        Some(Leaf {
            sup_address,
            slot,
            mine,
        })
    }
}

/// Leaf `me` has initialized: if its supervisor lives here and is
/// operational, confirm by a direct call, and be started at once unless a
/// synchronized start holds it. `false`: nothing was done, send
/// `InitConfirm`.
pub(crate) fn confirm_init(core: &mut Core, me: Key) -> bool {
    match core.actors.get(me).and_then(Leaf::of) {
        Some(leaf) => confirm_leaf_init(core, me, leaf),
        None => false,
    }
}

/// [`confirm_init`] for the leaf `me` as its cell is now (`leaf`).
#[inline(always)]
pub(crate) fn confirm_leaf_init(core: &mut Core, me: Key, leaf: Leaf) -> bool {
    let Leaf {
        sup_address,
        slot,
        mine,
    } = leaf;
    let mine = (mine, core.id());
    let Some(sup_key) = core.routes.address(sup_address).map(|info| info.owner) else {
        return false;
    };
    let is_mine = |r: &&mut ChildRecord| {
        r.state == ChildState::Initializing
            && r.address
                .as_ref()
                .is_some_and(|a| (a.key(), a.locality_id()) == mine)
    };
    let Some(mut sup_cell) = core.actors.get_mut(sup_key) else {
        return false;
    };
    if sup_cell.state != ActorState::Operational {
        return false;
    }
    if sup_cell
        .supervisor
        .as_deref()
        .is_some_and(|s| s.hears(HOOK_INIT))
    {
        // A busy supervisor could not hear of it (`on_child_init`): message.
        if sup_cell.actor.busy() {
            return false;
        }
        let Some(child) = sup_cell
            .supervisor
            .as_deref_mut()
            .and_then(|s| s.children.get_mut(slot))
            .filter(is_mine)
            .and_then(|r| r.address.clone())
        else {
            return false;
        };
        hear(core, sup_key, HOOK_INIT, Notice::ChildInit(&child, Ok(())));
        // Looked up again: the hook queues what it does, so the records
        // are as they were.
        sup_cell = match core.actors.get_mut(sup_key) {
            Some(cell) => cell,
            None => return false,
        };
    }
    let Some(sup) = sup_cell.supervisor.as_deref_mut() else {
        return false;
    };
    let record = match sup.children.get_mut(slot) {
        Some(record) if is_mine(&record) => record,
        _ => return false,
    };
    record.state = ChildState::Initialized;
    record.initializing = false;
    sup.initializing -= 1;
    let synchronized = sup.config.synchronize_start;
    if synchronized {
        sup.held.insert(slot);
    } else {
        record.state = ChildState::Started;
    }
    let my_address = (core.inspect.level >= 2).then_some(mine.0);
    if let Some(my_address) = my_address {
        crate::inspect::step(core, "InitConfirm", None, Some(my_address), sup_address);
    }
    if synchronized {
        start_children(core, sup_key);
    } else {
        if let Some(my_address) = my_address {
            crate::inspect::step(core, "Start", None, None, my_address);
        }
        lifecycle::on_start(core, me);
        if core.child_watch {
            crate::entity::watch::started_here(core, sup_address, slot, me);
        }
    }
    true
}

/// A child whose supervisor asks it to shut down: if it is a leaf here and
/// nothing waits in the queue, does it by a direct call (`sup`: the key of
/// the supervisor that asks). `Err` gives the reason back: send
/// `ShutdownRequest`.
#[inline]
pub(crate) fn stop_leaf(
    core: &mut Core,
    child: ChildId,
    reason: Error,
    sup: Key,
) -> Result<(), Error> {
    if !core.queue.is_empty() {
        return Err(reason);
    }
    let Some(address) = child.local_key(core.id()) else {
        return Err(reason);
    };
    let Some(actor) = core.routes.address(address).map(|slot| slot.owner) else {
        return Err(reason);
    };
    lifecycle::stop_idle_leaf(core, actor, address, reason, sup)
}

/// Leaf `child` (removed: the locality holds it no more) has shut down:
/// tells its supervisor here by a direct call if nothing waits in the
/// queue and none of the supervisor's code runs. `sup`: the supervisor's
/// key if the caller knows it (it asked the leaf to stop by a direct
/// call), else `Key::NONE` (found from its address). `Err` gives the
/// reason back: send `ChildDown`.
#[inline]
pub(crate) fn report_down(
    core: &mut Core,
    parent: &ParentLink,
    child: ChildId,
    reason: Error,
    restart: bool,
    sup: Key,
) -> Result<(), Error> {
    if !core.queue.is_empty() {
        return Err(reason);
    }
    let &ParentLink::Local {
        key: sup_address,
        slot,
    } = parent
    else {
        return Err(reason);
    };
    let slot = slot as usize;
    let sup_key = match sup.is_none() {
        // The supervisor that asked is the leaf's (its record of the leaf
        // is checked again by `child_down_here`).
        false => sup,
        true => match core.routes.address(sup_address) {
            Some(info) => info.owner,
            None => return Err(reason),
        },
    };
    debug_assert!(
        core.routes.address(sup_address).map(|i| i.owner) == Some(sup_key),
        "the supervisor that asked owns the leaf's supervisor address"
    );
    let down = restart::DownHere { child, sup_address };
    restart::child_down_here(core, sup_key, slot, down, reason, restart)
}

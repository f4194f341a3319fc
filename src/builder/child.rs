//! A child's place under its supervisor: the checks, the slot and the
//! record, and the plain child's short way through [`Builder::finish`](super::Builder::finish).

use crate::actor::{Actor, ActorCell, ActorState, ParentLink, registry_of};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::Core;
use crate::spawn::spawn_plain;
use crate::supervisor::restart::{Respawn, Supervision, SupervisionConfig};
use crate::supervisor::{ChildRecord, ChildState};

/// [`Builder::finish`] for a plain child (`Builder::is_plain`) of the
/// supervisor at `parent`: the same steps, without the settings to check
/// and carry.
pub(super) fn finish_plain<A: Actor>(core: &mut Core, parent: Key, actor: A) -> Result<Address> {
    // One look at the supervisor: its checks and the slot.
    let (sup_address, slot) = {
        // The usual case inline (a supervisor not shutting down); the
        // errors from `parent_cell`.
        let cell = match core.actors.get(parent) {
            Some(cell) if cell.state < ActorState::ShuttingDown && cell.supervisor.is_some() => {
                cell
            }
            _ => parent_cell(core, parent)?,
        };
        let sup = cell.supervisor.as_deref().expect("checked by parent_cell");
        (cell.main, sup.children.vacant_key())
    };
    // Its registry is found from a local link when asked (`registry_of`);
    // the other link (a slot past `u32`) carries it.
    let (link, registry) = match u32::try_from(slot) {
        Ok(slot) if slot < u32::MAX => {
            let link = ParentLink::Local {
                key: sup_address,
                slot,
            };
            (link, None)
        }
        _ => {
            let sup_address = core.address_of(parent).expect("checked").clone();
            let registry = core.actors.get(parent).and_then(|cell| {
                let kept = cell.supervisor.as_deref().and_then(|s| s.registry.as_ref());
                kept.or_else(|| registry_of(core, cell)).cloned()
            });
            (ParentLink::new(core, &sup_address, slot), registry)
        }
    };
    let address = spawn_plain(core, link, registry, actor);
    // `add_child` without supervision.
    let sup = crate::supervisor::sup_mut(core, parent).expect("checked by parent_cell");
    let inserted = sup.children.insert(ChildRecord {
        address: Some(address.clone()),
        state: ChildState::Initializing,
        initializing: true,
        stop_pending: false,
    });
    debug_assert_eq!(
        inserted, slot,
        "nothing was added to the supervisor meanwhile"
    );
    sup.initializing += 1;
    Ok(address)
}

/// The slot the next child of `parent` gets, and the supervisor's address.
pub(super) fn child_slot(core: &mut Core, parent: Key) -> (Address, usize) {
    let (address, slot) = local_slot(core, parent);
    (address.clone(), slot)
}

/// The slot the next child of `parent` gets, and the supervisor's address.
pub(super) fn local_slot(core: &Core, parent: Key) -> (&Address, usize) {
    let cell = core.actors.get(parent).expect("checked by prepare");
    let slot = cell
        .supervisor
        .as_deref()
        .expect("checked by prepare")
        .children
        .vacant_key();
    let address = Core::main_address(&core.routes, cell).expect("a live actor's main address");
    (address, slot)
}

/// Records a new child in `parent`'s `slot` (as `child_slot` said).
pub(super) fn add_child(
    core: &mut Core,
    parent: Key,
    slot: usize,
    address: Option<Address>,
    supervision: Option<Supervision>,
) {
    let record = ChildRecord {
        address,
        state: ChildState::Initializing,
        initializing: true,
        stop_pending: false,
    };
    let sup = crate::supervisor::sup_mut(core, parent).expect("checked by prepare");
    if let Some(supervision) = supervision {
        sup.supervised.insert(slot, supervision);
    }
    let inserted = sup.children.insert(record);
    debug_assert_eq!(
        inserted, slot,
        "nothing else was added to the supervisor meanwhile"
    );
    sup.initializing += 1;
}

/// A child's supervision, if its settings are not the default ones.
pub(super) fn supervised(
    config: SupervisionConfig,
    respawn: Option<Respawn>,
) -> Option<Supervision> {
    config.is_set().then(|| Supervision::new(config, respawn))
}

/// Checks that the actor at `key` may take a child now; returns the
/// registry the child inherits: the one the supervisor keeps for its
/// descendants, else its own.
pub(super) fn check_parent(core: &Core, key: Key) -> Result<Option<Address>> {
    let cell = parent_cell(core, key)?;
    let kept = cell.supervisor.as_ref().and_then(|s| s.registry.as_ref());
    Ok(kept
        .or_else(|| registry_of(core, cell))
        .map(|r| Address::clone(r)))
}

/// The cell of the supervisor at `key`, if it may take a child now.
fn parent_cell(core: &Core, key: Key) -> Result<&ActorCell> {
    let Some(cell) = core.actors.get(key) else {
        return Err(
            Error::new(ErrorCode::SupervisorShuttingDown).with_context("supervisor is gone")
        );
    };
    let name =
        || Core::main_address(&core.routes, cell).map_or_else(String::new, Address::to_string);
    if cell.supervisor.is_none() {
        return Err(Error::new(ErrorCode::NotASupervisor).with_context(name()));
    }
    if cell.state >= ActorState::ShuttingDown {
        return Err(Error::new(ErrorCode::SupervisorShuttingDown).with_context(name()));
    }
    Ok(cell)
}

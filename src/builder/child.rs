//! A child's place under its supervisor: the checks, the slot and the
//! record, and the plain child's short way through [`Builder::finish`](super::Builder::finish).

use crate::actor::{Actor, ActorConfig, ActorState, ParentLink};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::Core;
use crate::spawn::{Settings, Spec, spawn_once};
use crate::supervisor::restart::{Respawn, Supervision, SupervisionConfig};
use crate::supervisor::{ChildRecord, ChildState};

/// [`Builder::finish`] for a plain child (`Builder::is_plain`) of the
/// supervisor at `parent`: the same steps, without the settings to check
/// and carry.
pub(super) fn finish_plain<A: Actor>(core: &mut Core, parent: Key, actor: A) -> Result<Address> {
    let inherited = check_parent(core, parent)?;
    let (sup_address, slot) = local_slot(core, parent);
    let link = match u32::try_from(slot) {
        Ok(slot) if slot < u32::MAX => ParentLink::Local {
            key: sup_address.key(),
            slot,
        },
        _ => ParentLink::new(core, sup_address, slot),
    };
    let settings = Settings {
        name: None,
        config: ActorConfig::default(),
        supervisor: None,
        registry: inherited,
        explicit_registry: false,
        register_as: Vec::new(),
    };
    let spec = Spec {
        settings,
        plugins: Vec::new(),
    };
    let address = spawn_once(core, Some(link), spec, actor)?;
    add_child(core, parent, slot, Some(address.clone()), None);
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
    (&cell.address, slot)
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
    let Some(cell) = core.actors.get(key) else {
        return Err(
            Error::new(ErrorCode::SupervisorShuttingDown).with_context("supervisor is gone")
        );
    };
    if cell.supervisor.is_none() {
        return Err(Error::new(ErrorCode::NotASupervisor).with_context(cell.address.to_string()));
    }
    if cell.state >= ActorState::ShuttingDown {
        return Err(
            Error::new(ErrorCode::SupervisorShuttingDown).with_context(cell.address.to_string())
        );
    }
    let kept = cell.supervisor.as_ref().and_then(|s| s.registry.as_ref());
    Ok(kept.or(cell.registry.as_ref()).map(|r| Address::clone(r)))
}

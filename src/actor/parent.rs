//! An actor's link to its supervisor: as code passes it about
//! ([`ParentLink`]), and as a cell keeps it ([`CellParent`], 12 bytes).

use super::{ActorCell, lifecycle};
use crate::address::Address;
use crate::arena::Key;
use crate::locality::Core;

/// The supervisor of an actor, and the actor's slot among its children:
/// for a supervisor on this locality, the routing key of its main address
/// (16 bytes, no copy of the address and no reference count); for one
/// elsewhere, its address, boxed.
pub(crate) enum ParentLink {
    Local { key: Key, slot: u32 },
    Remote(Box<(Address, usize)>),
}

impl ParentLink {
    /// The link to the supervisor at `address`, for a child on `core`'s locality.
    pub(crate) fn new(core: &Core, address: &Address, slot: usize) -> ParentLink {
        match u32::try_from(slot) {
            Ok(slot) if slot < u32::MAX && address.is_of(&core.shared) => ParentLink::Local {
                key: address.key(),
                slot,
            },
            _ => ParentLink::Remote(Box::new((address.clone(), slot))),
        }
    }

    /// The child's slot among the supervisor's children.
    #[inline]
    pub(crate) fn slot(&self) -> usize {
        match self {
            ParentLink::Local { slot, .. } => *slot as usize,
            ParentLink::Remote(remote) => remote.1,
        }
    }

    /// `true` if the supervisor lives on the child's locality.
    #[inline]
    pub(crate) fn is_local(&self) -> bool {
        matches!(self, ParentLink::Local { .. })
    }

    /// Sends framework traffic to the supervisor (`core.send_system`).
    pub(crate) fn send(&self, core: &mut Core, msg: lifecycle::SystemMsg) -> bool {
        match self {
            ParentLink::Local { key, .. } => {
                core.enqueue(lifecycle::SysEnvelope { dest: *key, msg });
                true
            }
            ParentLink::Remote(remote) => core.send_system(&remote.0, msg),
        }
    }

    /// Sends framework traffic to the supervisor of actor `me`; `msg`
    /// gets the child's slot. `false` if it has none (a root), or its
    /// locality has finished.
    pub(crate) fn send_of(
        core: &mut Core,
        me: Key,
        msg: impl FnOnce(usize) -> lifecycle::SystemMsg,
    ) -> bool {
        let Some(parent) = core.actors.get(me).and_then(ActorCell::parent) else {
            return false;
        };
        match parent {
            Parent::Local { key, slot } => {
                let msg = msg(slot);
                core.enqueue(lifecycle::SysEnvelope { dest: key, msg });
                true
            }
            Parent::Remote(to, slot) => {
                let to = to.clone();
                core.send_system(&to, msg(slot))
            }
        }
    }
}

/// A parent link as a cell keeps it (12 bytes): the routing key of a
/// local supervisor's address and the slot (plus one, so that an
/// `Option` of it needs no more room); a supervisor elsewhere is
/// `Key::REMOTE`, its link in `Rare::far_parent`.
#[derive(Clone, Copy)]
pub(crate) struct CellParent {
    key: Key,
    slot: std::num::NonZeroU32,
}

/// A cell's parent link, borrowed.
#[derive(Clone, Copy)]
pub(crate) enum Parent<'c> {
    Local { key: Key, slot: usize },
    Remote(&'c Address, usize),
}

impl ActorCell {
    /// The cell's parent field for `link`, and the far link to keep in
    /// `Rare::far_parent`, if it is one.
    #[inline]
    pub(crate) fn split_parent(
        link: Option<ParentLink>,
    ) -> (Option<CellParent>, Option<Box<(Address, usize)>>) {
        match link {
            None => (None, None),
            Some(ParentLink::Local { key, slot }) => {
                // A local link's slot is below `u32::MAX` (`ParentLink::new`).
                let slot = std::num::NonZeroU32::MIN.saturating_add(slot);
                (Some(CellParent { key, slot }), None)
            }
            Some(ParentLink::Remote(far)) => {
                let slot = std::num::NonZeroU32::MIN;
                (
                    Some(CellParent {
                        key: Key::REMOTE,
                        slot,
                    }),
                    Some(far),
                )
            }
        }
    }

    /// The actor's supervisor, `None` for a root.
    #[inline]
    pub(crate) fn parent(&self) -> Option<Parent<'_>> {
        let parent = self.parent?;
        if parent.key != Key::REMOTE {
            let slot = parent.slot.get() as usize - 1;
            return Some(Parent::Local {
                key: parent.key,
                slot,
            });
        }
        let far = self.rare.as_deref()?.far_parent.as_deref()?;
        Some(Parent::Remote(&far.0, far.1))
    }

    /// Takes the parent link out (the actor is gone).
    pub(crate) fn take_parent(&mut self) -> Option<ParentLink> {
        let parent = self.parent.take()?;
        if parent.key != Key::REMOTE {
            let slot = parent.slot.get() - 1;
            return Some(ParentLink::Local {
                key: parent.key,
                slot,
            });
        }
        let far = self.rare.as_deref_mut()?.far_parent.take()?;
        Some(ParentLink::Remote(far))
    }
}

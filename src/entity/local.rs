//! What a locality keeps for its entity sets ([`Local`], a field of the
//! core): the version their entity refs check, and the sets' addresses by
//! a small id, so that an entity ref's message carries neither the set nor
//! a count of it, only the id, and finds the set again if its cache turned
//! out stale.

use crate::arena::Key;
use crate::locality::Core;
use crate::queue::Envelope;
use slab::Slab;
use std::cell::Cell;
use std::rc::Rc;

/// The entity sets of one locality.
pub(crate) struct Local {
    /// Moves whenever an entity of any set here may stop being live (the
    /// sets bump it, and the core when an entity leaves OPERATIONAL,
    /// `watch::leaving`) and when a set closes: what an
    /// [`EntityRef`](super::EntityRef) saw live at this version is still
    /// live, with the same instance, while it has not moved. One per
    /// locality, shared by its sets, so that a send and a delivery read it
    /// from the core, not from the set. Its values come from a counter of
    /// the thread ([`bump`]): no two localities of a thread ever hold the
    /// same one, so a ref's cached version names its locality too, and a
    /// send checks both with one compare (a ref is not `Send`).
    pub(crate) version: Rc<Cell<u64>>,
    /// The open sets' address keys, by id.
    sets: Slab<Key>,
}

impl Default for Local {
    fn default() -> Self {
        Local {
            version: Rc::new(Cell::new(next_version())),
            sets: Slab::new(),
        }
    }
}

thread_local! {
    /// The last version handed out on this thread.
    static VERSIONS: Cell<u64> = const { Cell::new(0) };
}

/// A version never handed out before on this thread.
fn next_version() -> u64 {
    VERSIONS.with(|last| {
        let next = last.get().wrapping_add(1);
        last.set(next);
        next
    })
}

/// Moves a locality's version (`Local::version`, as a set or the core
/// holds it) to a value never used before on this thread.
pub(crate) fn bump(version: &Cell<u64>) {
    version.set(next_version());
}

impl Local {
    /// Registers a set (its address key): its id.
    pub(super) fn register(&mut self, set: Key) -> u32 {
        u32::try_from(self.sets.insert(set)).unwrap_or(u32::MAX)
    }

    /// The address key of set `id`, if it is registered.
    pub(super) fn set(&self, id: u32) -> Option<Key> {
        self.sets.get(id as usize).copied()
    }
}

/// Unregisters set `id` once every message queued before now has been
/// delivered: queued, so that an entity ref's message sent before the set
/// closed still finds it (none is sent after: a closed set refuses).
pub(super) fn unregister_later(core: &mut Core, id: u32) {
    core.enqueue(Unregister(id));
}

struct Unregister(u32);

impl Envelope<Core> for Unregister {
    fn deliver(self, core: &mut Core) {
        core.entities.sets.try_remove(self.0 as usize);
    }
}

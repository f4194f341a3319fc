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
use std::sync::atomic::{AtomicU64, Ordering};

/// The entity sets of one locality.
pub(crate) struct Local {
    /// Moves whenever an entity of any set here may stop being live (the
    /// sets bump it, and the core when an entity leaves OPERATIONAL,
    /// `watch::leaving`) and when a set closes: what an
    /// [`EntityRef`](super::EntityRef) saw live at this version is still
    /// live, with the same instance, while it has not moved. One per
    /// locality, shared by its sets, so that a send and a delivery read it
    /// from the core, not from the set, in one load (it is kept here, not
    /// behind a pointer). No two localities of the process ever hold the
    /// same value ([`Local::bump`]), so a ref's cached version names its
    /// locality too, and a send checks both with one compare.
    pub(crate) version: Cell<u64>,
    /// The open sets' address keys, by id.
    sets: Slab<Key>,
}

impl Default for Local {
    fn default() -> Self {
        Local {
            version: Cell::new(fresh_run()),
            sets: Slab::new(),
        }
    }
}

/// The last run of versions handed out in the process.
static RUNS: AtomicU64 = AtomicU64::new(0);

/// The first version of a run no locality has had: a run (the high 32
/// bits) per locality, and a new one when its count (the low 32 bits)
/// wraps.
fn fresh_run() -> u64 {
    (RUNS.fetch_add(1, Ordering::Relaxed) + 1) << 32
}

impl Local {
    /// Moves the locality's version (`Local::version`) to a value no
    /// locality has had: its count goes up by one (the low 32 bits, which
    /// an entity ref's message carries), or, when it would wrap, a new run
    /// starts.
    pub(crate) fn bump(&self) {
        let next = self.version.get().wrapping_add(1);
        self.version
            .set(if next as u32 == 0 { fresh_run() } else { next });
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_never_shared_between_localities_even_when_a_count_wraps() {
        let (a, b) = (Local::default(), Local::default());
        assert_ne!(a.version.get(), b.version.get());
        a.bump();
        assert_eq!(a.version.get() as u32, 1, "the count moves by one");
        a.version.set(a.version.get() | u64::from(u32::MAX));
        let before = a.version.get();
        a.bump();
        let after = a.version.get();
        assert_eq!(after as u32, 0, "a wrapped count starts a new run");
        assert_ne!(after >> 32, before >> 32);
        assert_ne!(after >> 32, b.version.get() >> 32);
    }
}

//! Actors on demand: entity sets (an actor per key, made on its first
//! message, passivated when idle) and worker pools (N identical workers
//! behind one address, here or on other localities).
//!
//! Both are supervisors with an address of their own that route what they
//! receive to their children. `docs/entities.md` explains the design and
//! what is guaranteed.
//!
//! - `set.rs`: [`EntitySet`] and its routing by key; `router.rs`:
//!   [`EntityRouter`], sends that skip the set for live entities;
//!   `entity_ref.rs`: [`EntityRef`], a handle per entity that also skips
//!   the key's lookup; `set/instances.rs`:
//!   creation, passivation, limits, idle time; `table.rs` keeps the
//!   entities in least-recently-used order, by a hash of their keys
//!   (`hash.rs`).
//! - `pool.rs`: [`Pool`] and its workers; `pool/routing.rs`: round-robin or
//!   to the least loaded worker, requests in flight.
//! - `settings.rs`: what a set or pool builds each child with.
//! - `watch.rs`: the child events the core reports to them; `local.rs`:
//!   what a locality keeps for its sets (the entity refs' version, the
//!   sets by id).

mod entity_ref;
mod hash;
mod local;
mod pool;
mod router;
mod set;
mod settings;
mod table;
pub(crate) mod watch;

pub use entity_ref::EntityRef;
pub(crate) use local::Local;
pub use pool::{Pool, PoolStats, PoolStrategy};
pub use router::EntityRouter;
pub use set::{EntitySet, EntityStats};

use crate::arena::Key;
use crate::locality::Core;
use crate::supervisor::{InitFailurePolicy, SupervisorConfig, SupervisorState};
use std::cell::Cell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

/// A message for the entity of `key` in an [`EntitySet`]: send it to the
/// set's address, and the set delivers the message to that entity (making
/// it first if needed).
///
/// The set takes the message out when it routes it, so it needs neither
/// `Clone` nor `Sync`; a second subscriber to `Keyed` on the set's address
/// would find it empty.
///
/// ```
/// use commutator::Keyed;
/// struct Reading(f64);
/// let keyed = Keyed::new("device-42".to_string(), Reading(21.5));
/// assert_eq!(keyed.key(), "device-42");
/// ```
pub struct Keyed<K, M> {
    key: K,
    message: Cell<Option<M>>,
}

impl<K, M> Keyed<K, M> {
    /// `message` for the entity of `key`.
    pub fn new(key: K, message: M) -> Self {
        Keyed {
            key,
            message: Cell::new(Some(message)),
        }
    }

    /// The entity's key.
    pub fn key(&self) -> &K {
        &self.key
    }

    /// Takes the message out (`None` once taken).
    pub(crate) fn take(&self) -> Option<M> {
        self.message.take()
    }
}

impl<K: fmt::Debug, M> fmt::Debug for Keyed<K, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Keyed({:?})", self.key)
    }
}

/// A live view of counters kept by an [`EntitySet`] or a [`Pool`]: take it
/// with their `stats()` before spawning them, read it any time on the same
/// thread.
#[derive(Debug, Clone, Default)]
pub struct StatsHandle<T: Copy>(Rc<Cell<T>>);

impl<T: Copy> StatsHandle<T> {
    /// The counters now.
    pub fn get(&self) -> T {
        self.0.get()
    }

    /// Changes the counters.
    pub(crate) fn update(&self, f: impl FnOnce(&mut T)) {
        let mut value = self.0.get();
        f(&mut value);
        self.0.set(value);
    }
}

/// Makes actor `me` a supervisor whose children's failed inits are theirs
/// alone (an entity set or a pool is one, however it was built).
pub(crate) fn make_supervisor(core: &mut Core, me: Key) {
    // Its children inherit the registry it uses (`actor::registry_of`).
    let registry = core
        .actors
        .get(me)
        .and_then(|cell| crate::actor::registry_of(core, cell).cloned());
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    match cell.supervisor.as_deref_mut() {
        Some(sup) => sup.config.init_failure = InitFailurePolicy::ShutdownChild,
        None => {
            let config = SupervisorConfig::default().init_failure(InitFailurePolicy::ShutdownChild);
            let mut state = SupervisorState::new(config);
            state.registry = registry;
            cell.supervisor = Some(Box::new(state));
        }
    }
}

/// Delivers `message` to the handlers on the local address `dest` at once,
/// from inside a handler of `me` (a set or pool routing it): one queue trip
/// for the user's message, not two. `false` if the receiving handler
/// panicked (its actor fails, as in the dispatch loop).
pub(crate) fn deliver_now<M: 'static>(core: &mut Core, me: Key, dest: Key, message: &M) -> bool {
    let routed = catch_unwind(AssertUnwindSafe(|| {
        crate::subscription::route(core, dest, me, message)
    }));
    let fine = match routed {
        Ok(()) => true,
        Err(payload) => {
            core.handler_panicked(payload);
            false
        }
    };
    core.running = me.to_word(); // the router's handler goes on
    fine
}

//! [`EntityRouter`]: sends for an [`EntitySet`](super::EntitySet)'s keys
//! that skip the set's own dispatch when the entity is live.
//!
//! A send through a router is one envelope in the locality's queue, like
//! any send. When it is delivered, it reads the set's hash table (shared
//! with the router): if the key's entity is live (the set has given it
//! everything it held) and its actor is operational, the message goes
//! straight to the entity's handlers; otherwise it is delivered to the set
//! as a [`Keyed`], and the set holds it, makes the entity, or refuses it,
//! as for a `Keyed` sent to it. The decision is taken at delivery, with
//! what the set knows then, so messages are never given to an instance
//! that is leaving, and per-sender FIFO holds across routers and the set.

use super::Keyed;
use super::set::Live;
use super::table::{Index, Uses};
use crate::actor::{Actor, ActorState};
use crate::arena::Key;
use crate::context::Context;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::Core;
use crate::queue::Envelope;
use crate::subscription::Next;
use std::cell::Cell;
use std::fmt;
use std::hash::Hash;
use std::rc::Rc;
use std::time::Instant;

/// What a set shares with its routers.
pub(super) struct Shared<K> {
    /// The set's address key, once its init has started.
    pub(super) set: Cell<Key>,
    /// Its locality.
    pub(super) locality: Cell<u32>,
    /// The set takes messages (from its init to its shutdown).
    pub(super) open: Cell<bool>,
    /// Messages may go straight to live entities (from the set's init to
    /// its shutdown).
    pub(super) direct: Cell<bool>,
    /// The set keeps an order of use (idle time or a cap): a delivery
    /// stamps the entity's use (`uses`) with the time.
    pub(super) ordered: Cell<bool>,
    /// Time 0 of those stamps.
    pub(super) epoch: Cell<Instant>,
    /// The last stamp made, and the locality's time it was made at (the
    /// clock moves once per dispatch: the stamp is computed once per
    /// dispatch).
    stamp: Cell<(Instant, u64)>,
    /// The set's id in its locality's `Local` (from its init on).
    pub(super) id: Cell<u32>,
    pub(super) index: Index<K, Live>,
    /// Use stamps by table index, written by routers and entity refs.
    pub(super) uses: Uses,
}

impl<K> Shared<K> {
    pub(super) fn new(index: Index<K, Live>, uses: Uses) -> Self {
        let now = Instant::now();
        Shared {
            set: Cell::new(Key::NONE),
            locality: Cell::new(u32::MAX),
            open: Cell::new(false),
            direct: Cell::new(false),
            ordered: Cell::new(false),
            epoch: Cell::new(now),
            stamp: Cell::new((now, 1)),
            id: Cell::new(u32::MAX),
            index,
            uses,
        }
    }

    /// Stamps the entity at table index `idx` as used at `now`, if the
    /// set keeps an order of use.
    #[inline]
    pub(super) fn stamp(&self, idx: u32, now: Instant) {
        if self.ordered.get() {
            self.stamp_use(idx, now);
        }
    }

    /// Stamps the entity at table index `idx` as used at `now` (the set
    /// keeps an order of use).
    #[inline]
    pub(super) fn stamp_use(&self, idx: u32, now: Instant) {
        let (at, mut stamp) = self.stamp.get();
        if at != now {
            let since = now.saturating_duration_since(self.epoch.get());
            stamp = u64::try_from(since.as_nanos()).unwrap_or(u64::MAX).max(1);
            self.stamp.set((now, stamp));
        }
        if let Some(used) = self.uses.borrow_mut().get_mut(idx as usize) {
            *used = stamp;
        }
    }
}

/// Sends messages for the keys of one [`EntitySet`](crate::EntitySet),
/// from actors of the set's locality: a send is the same as sending
/// [`Keyed::new(key, message)`](Keyed) to the set, with the same
/// guarantees (messages held in order while the entity is not live, made on
/// the first message, never lost, per-sender FIFO), but a message for a
/// live entity goes to it without passing through the set's handler: one
/// routing step, as a direct send. In a set with idle time or a cap, such
/// a delivery counts as use: it stamps the entity's use, which the set
/// reads when the entity becomes its least recently used (so an entity
/// used only through routers is passivated between the idle time and
/// twice it after its last message).
///
/// Take it with [`EntitySet::router`](crate::EntitySet::router) before
/// spawning the set; clones are cheap. It is not `Send`: it works on the
/// set's locality only. For a key sent to often, keep an
/// [`EntityRef`](super::EntityRef) ([`entity`](EntityRouter::entity)):
/// its sends skip the key's lookup too.
pub struct EntityRouter<K> {
    pub(super) shared: Rc<Shared<K>>,
}

impl<K> Clone for EntityRouter<K> {
    fn clone(&self) -> Self {
        EntityRouter {
            shared: Rc::clone(&self.shared),
        }
    }
}

impl<K> fmt::Debug for EntityRouter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntityRouter")
            .field("open", &self.shared.open.get())
            .finish_non_exhaustive()
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> EntityRouter<K> {
    /// Sends `message` for the entity of `key`, from the actor of `ctx`.
    /// [`ErrorCode::Unavailable`] if the set has not started its init yet
    /// or is shutting down (or gone); [`ErrorCode::InvalidArgument`] from
    /// an actor of another locality.
    pub fn send<A: Actor, M: Send + 'static>(
        &self,
        ctx: &mut Context<'_, A>,
        key: K,
        message: M,
    ) -> Result<()> {
        let shared = &self.shared;
        if !shared.open.get() {
            let why = "entity set not started, or shutting down";
            return Err(Error::new(ErrorCode::Unavailable).with_context(why));
        }
        if shared.locality.get() != ctx.core.id() {
            let why = "an entity router sends from its set's locality only";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        ctx.core.enqueue(Routed {
            shared: Rc::clone(shared),
            key,
            sender: ctx.me,
            message,
        });
        Ok(())
    }
}

impl<K> EntityRouter<K> {
    /// A handle for the entity of `key` that caches where its live
    /// instance is: its sends do not look the key up (see [`EntityRef`](super::EntityRef)).
    pub fn entity(&self, key: K) -> super::EntityRef<K> {
        super::EntityRef::new(Rc::clone(&self.shared), key)
    }
}

/// A router's message in the queue.
pub(super) struct Routed<K, M> {
    pub(super) shared: Rc<Shared<K>>,
    pub(super) key: K,
    pub(super) sender: Key,
    pub(super) message: M,
}

impl<K: Eq + Hash + Send + 'static, M: Send + 'static> Envelope<Core> for Routed<K, M> {
    #[inline]
    fn deliver(self, core: &mut Core) {
        let Routed {
            shared,
            key,
            sender,
            message,
        } = self;
        if shared.direct.get()
            && let Some(dest) = live(&shared, &key, core)
        {
            return deliver_to(core, dest, sender, message);
        }
        deliver_to(core, shared.set.get(), sender, Keyed::new(key, message));
    }
}

/// Delivers `message` to the local address `dest` now, as the dispatch
/// loop delivers a user message (kept apart from `UserEnvelope::deliver`
/// so that the queue still inlines that one; inlined in the envelopes
/// that call it, which saves a call's prologue per message).
#[inline(always)]
pub(super) fn deliver_to<M: Send + 'static>(core: &mut Core, dest: Key, sender: Key, message: M) {
    crate::subscription::route(core, dest, sender, &message);
    if !matches!(core.next, Next::Done) {
        after(core, dest, sender, message);
    }
}

/// A handler forwarded the message, or nobody heard it.
#[cold]
#[inline(never)]
fn after<M: Send + 'static>(core: &mut Core, dest: Key, sender: Key, message: M) {
    match std::mem::replace(&mut core.next, Next::Done) {
        Next::Forward(to, by) => core.send(&to, by, message),
        Next::Dropped(reason) if crate::dead_letter::wanted::<M>(core) => {
            let destination = crate::inspect::address_name(core, dest);
            crate::dead_letter::post(core, destination, sender, reason, message);
        }
        _ => {}
    }
}

/// The address key of the live entity of `key`, if its actor is
/// operational; stamped as used now if the set keeps an order of use.
#[inline]
fn live<K: Eq + Hash>(shared: &Shared<K>, key: &K, core: &Core) -> Option<Key> {
    let (idx, live) = *shared.index.borrow().get(key)?;
    if live.dest.is_none() || !operational(core, live.actor) {
        return None;
    }
    shared.stamp(idx, core.now);
    Some(live.dest)
}

/// The actor `actor` is operational.
#[inline]
pub(super) fn operational(core: &Core, actor: Key) -> bool {
    core.actors
        .get(actor)
        .is_some_and(|c| c.state == ActorState::Operational)
}

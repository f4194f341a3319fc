//! [`EntityRef`]: a handle per entity that caches where its live instance
//! is, so that a send through it neither hashes the key nor passes through
//! the set's handler.
//!
//! The handle keeps, beside the key, what the set's hash table said of the
//! entity when it was last read: the live instance's address key, the
//! locality's *version* then (unique to the locality), and the set's id
//! there (`Local`). The version moves whenever an entity of a set of that
//! locality stops being live (passivated, leaving on its own, gone) and
//! when a set closes: the sets bump it, and the core, synchronously,
//! whenever an entity's actor leaves OPERATIONAL for whatever reason (its
//! own shutdown, a failure: `entity::watch::leaving`), before the set
//! hears of it. So while the version has not moved, an entity seen live
//! (and operational) is still live, with the same instance, having got
//! everything the set held for it, and operational. A send compares the
//! cached version with the locality's (read from the core), reads the hash
//! table again if it moved, and queues what the cache says: a direct
//! send's envelope and one word (the version's count, the set's id),
//! nothing of the set counted, no key. At delivery the message goes
//! straight to the entity if the version is still the one the send saw
//! (from there, a direct send's delivery); otherwise the set is found by
//! its id and given the message for the instance it names, and takes it
//! as a [`Keyed`](super::Keyed) for that instance's key (straight to the
//! live entity, or held for the next instance). Every decision is taken at
//! delivery, in queue order, on what the set knows then: per-sender FIFO
//! holds across refs, routers and `Keyed` sends.

use super::router::{Routed, Shared, deliver_to, operational};
use crate::actor::Actor;
use crate::arena::Key;
use crate::context::Context;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::Core;
use crate::message::ResolvedEnvelope;
use crate::queue::Envelope;
use std::any::TypeId;
use std::cell::Cell;
use std::fmt;
use std::hash::Hash;
use std::rc::Rc;

/// Where the live instance was, at a version of the locality.
#[derive(Clone, Copy)]
struct Cached {
    dest: Key,
    /// The first subscription there to the type of the send that read
    /// the table (`Routes::first_of`): the route its messages' deliveries
    /// take while it is still the only one of its channel, for their type
    /// (`ResolvedEnvelope`), without the address's slot.
    route: Key,
    /// Unique to the locality too (`Local::version`).
    version: u64,
    /// The set's id in its locality (`Local`).
    set: u32,
    /// The entity's index in the set's table, to stamp its use on a send
    /// if the set keeps an order of use; `NO_STAMP` otherwise.
    stamp: u32,
}

/// The set keeps no order of use: a send stamps nothing.
const NO_STAMP: u32 = u32::MAX;

impl Cached {
    /// Nothing cached: the next send reads the hash table.
    const NONE: Cached = Cached {
        dest: Key::NONE,
        route: Key::NONE,
        version: u64::MAX,
        set: u32::MAX,
        stamp: NO_STAMP,
    };
}

/// A handle for the entity of one key of an
/// [`EntitySet`](crate::EntitySet), kept by actors of the set's locality:
/// [`send`](EntityRef::send) is the same as sending
/// [`Keyed::new(key, message)`](crate::Keyed) to the set, with the same
/// guarantees (made on the first message, held in order while not live,
/// never given to a leaving instance, never lost through passivation,
/// per-sender FIFO with `Keyed` sends and [`EntityRouter`](crate::EntityRouter)
/// sends), but a message for a live entity goes to it as a direct send
/// does: the handle caches where the live instance is, and the locality
/// tells it (by a version that moves whenever an entity there stops being
/// live) when that may have changed; the next send then looks the key up
/// again. A send does not clone the key. It keeps nothing in the set: a
/// passivated entity still keeps 0 bytes there, whoever holds handles for
/// it.
///
/// Send the message types the set routes ([`EntitySet::route`](crate::EntitySet::route)):
/// one of another type reaches a live entity while the handle's cache is
/// fresh, and is dropped (a dead letter) when the set has to take it, as
/// a router's or a `Keyed` send of it is.
///
/// Take it with [`EntityRouter::entity`](crate::EntityRouter::entity) or
/// [`EntitySet::entity`](crate::EntitySet::entity); a clone copies the
/// cache. It is not `Send`.
pub struct EntityRef<K> {
    shared: Rc<Shared<K>>,
    key: K,
    cached: Cell<Cached>,
}

impl<K: Clone> Clone for EntityRef<K> {
    fn clone(&self) -> Self {
        EntityRef {
            shared: Rc::clone(&self.shared),
            key: self.key.clone(),
            cached: self.cached.clone(),
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for EntityRef<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntityRef")
            .field("key", &self.key)
            .field("open", &self.shared.open.get())
            .finish_non_exhaustive()
    }
}

impl<K> EntityRef<K> {
    pub(super) fn new(shared: Rc<Shared<K>>, key: K) -> Self {
        EntityRef {
            shared,
            key,
            cached: Cell::new(Cached::NONE),
        }
    }

    /// The entity's key.
    pub fn key(&self) -> &K {
        &self.key
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> EntityRef<K> {
    /// Sends `message` to the entity, from the actor of `ctx`.
    /// [`ErrorCode::Unavailable`] if the set has not started its init yet
    /// or is shutting down (or gone); [`ErrorCode::InvalidArgument`] from
    /// an actor of another locality.
    #[inline(always)]
    pub fn send<A: Actor, M: Send + 'static>(
        &self,
        ctx: &mut Context<'_, A>,
        message: M,
    ) -> Result<()> {
        // A live instance cached at the locality's version (which no
        // other locality ever holds): the set is open
        // (closing moves the version), and this is its locality.
        let cached = self.cached.get();
        let core = &*ctx.core;
        if cached.version != core.entities.version.get() {
            return self.send_stale(ctx, message);
        }
        if cached.stamp != NO_STAMP {
            self.shared.stamp_use(cached.stamp, core.now);
        }
        ctx.core.enqueue(self.to_entity(cached, ctx.me, message));
        Ok(())
    }

    /// A send from `sender` to the instance `cached` names, as queued.
    #[inline(always)]
    fn to_entity<M>(&self, cached: Cached, sender: Key, message: M) -> ToEntity<M> {
        ToEntity {
            dest: cached.dest,
            route: cached.route,
            sender,
            version: cached.version as u32,
            set: cached.set,
            message,
        }
    }

    /// The cache is stale, or the entity was not live: refused if the set
    /// is not open; else the cache is refreshed, and the message queued as
    /// the cache says, or as a router's message if the entity is not live.
    #[cold]
    #[inline(never)]
    fn send_stale<A: Actor, M: Send + 'static>(
        &self,
        ctx: &mut Context<'_, A>,
        message: M,
    ) -> Result<()> {
        if !self.shared.open.get() || self.shared.locality.get() != ctx.core.id() {
            return Err(self.refused());
        }
        let cached = self.look_up(ctx.core, TypeId::of::<M>());
        if cached.dest.is_none() {
            ctx.core.enqueue(Routed {
                shared: Rc::clone(&self.shared),
                key: self.key.clone(),
                sender: ctx.me,
                message,
            });
        } else {
            if cached.stamp != NO_STAMP {
                self.shared.stamp_use(cached.stamp, ctx.core.now);
            }
            ctx.core.enqueue(self.to_entity(cached, ctx.me, message));
        }
        Ok(())
    }

    /// Why a send is refused: the set is not open, or the sender is on
    /// another locality.
    #[cold]
    #[inline(never)]
    fn refused(&self) -> Error {
        if !self.shared.open.get() {
            let why = "entity set not started, or shutting down";
            return Error::new(ErrorCode::Unavailable).with_context(why);
        }
        let why = "an entity ref sends from its set's locality only";
        Error::new(ErrorCode::InvalidArgument).with_context(why)
    }

    /// Reads the hash table again: caches where the live instance is now
    /// (live for the set, and its actor operational: the set may not have
    /// heard yet that it left), or that it is not live (looked up again on
    /// the next send: the version does not move when an entity starts).
    #[cold]
    #[inline(never)]
    fn look_up(&self, core: &Core, type_id: TypeId) -> Cached {
        let shared = &*self.shared;
        let version = core.entities.version.get();
        let stamp = |idx| if shared.ordered.get() { idx } else { NO_STAMP };
        let cached = match shared.index.borrow().get(&self.key) {
            Some(&(idx, live))
                if shared.direct.get() && !live.dest.is_none() && operational(core, live.actor) =>
            {
                Cached {
                    dest: live.dest,
                    route: core.routes.first_of(live.dest, type_id),
                    version,
                    set: shared.id.get(),
                    stamp: stamp(idx),
                }
            }
            _ => Cached::NONE,
        };
        self.cached.set(cached);
        cached
    }
}

/// An entity ref's message in the queue (queued only when the cache says
/// live; a router's message otherwise): where the live instance was at
/// the send, at which version of the locality (its low 32 bits: a message
/// would have to wait behind 2^32 entities leaving on its locality to be
/// fooled), and, for the case the version moved
/// meanwhile, the set's id. A word more than a direct send's envelope.
struct ToEntity<M> {
    dest: Key,
    /// The cached route (`Cached::route`).
    route: Key,
    sender: Key,
    version: u32,
    set: u32,
    message: M,
}

impl<M: Send + 'static> Envelope<Core> for ToEntity<M> {
    const HINTS: bool = true;

    /// The destination, for the queue's look-ahead, as a direct send's.
    #[inline(always)]
    fn hint(&self) -> u64 {
        self.dest.to_word()
    }

    #[inline]
    fn deliver(self, core: &mut Core) {
        if self.version != core.entities.version.get() as u32 {
            return stale(self, core);
        }
        // A handler's send's delivery, with the route the handle cached
        // (its slow paths shared with those), after a look ahead at the
        // next entries as a direct send's (sends through many handles come
        // in turn).
        ResolvedEnvelope::new(self.route, self.dest, self.sender, self.message)
            .deliver_looking::<true>(core);
    }
}

/// The cache was stale at delivery: the message goes to the set (found by
/// its id: it stays registered until what was queued before it closed is
/// delivered) for the instance it was sent to, which the set knows until
/// that instance is down (after this message: it was live at the send).
/// The set delivers it as a `Keyed` for that instance's key: straight to
/// the live entity, or held for the next instance.
#[cold]
#[inline(never)]
fn stale<M: Send + 'static>(to: ToEntity<M>, core: &mut Core) {
    let Some(set) = core.entities.set(to.set) else {
        tracing::warn!("an entity ref's message for a set that is gone, dropped");
        return;
    };
    let message = ForInstance {
        dest: to.dest,
        message: Cell::new(Some(to.message)),
    };
    deliver_to(core, set, to.sender, message);
}

/// An entity ref's message whose cache was stale at delivery, given to its
/// set for the instance it was sent to (the set takes the message out).
pub(super) struct ForInstance<M> {
    dest: Key,
    message: Cell<Option<M>>,
}

impl<M> ForInstance<M> {
    /// The instance's address key.
    pub(super) fn dest(&self) -> Key {
        self.dest
    }

    /// Takes the message out (`None` once taken).
    pub(super) fn take(&self) -> Option<M> {
        self.message.take()
    }
}

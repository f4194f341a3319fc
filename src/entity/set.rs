//! [`EntitySet`]: an actor per key, made on its first message, passivated
//! when idle, made again on its next message. Routing is here; the
//! entities' records and lives are in `set/instances.rs`; the requests it
//! routed, for their cancellation, in `set/requests.rs`.

mod instances;
mod pending;
mod requests;

pub(super) use self::instances::Live;
use self::instances::{Asked, Entity, Held, Phase, Plain};
use self::pending::Pending;
use self::requests::Asking;

use super::entity_ref::{EntityRef, ForInstance};
use super::router::{EntityRouter, Shared};
use super::settings::{ChildSettings, child_settings_methods};
use super::table::Table;
use super::{Keyed, StatsHandle, deliver_now, make_supervisor};
use crate::actor::{Actor, ActorState};
use crate::arena::{IdMap, Key, KeyMap};
use crate::context::Context;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::Core;
use crate::request::{CancelRequest, Request, RequestId, RequestMsg};
use crate::supervisor::restart::RestartPolicy;
use crate::timer::TimerId;
use std::collections::VecDeque;
use std::fmt::{self, Display};
use std::hash::Hash;
use std::rc::Rc;
use std::time::Duration;

/// What an [`EntitySet`] counts; read it through [`EntitySet::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntityStats {
    /// Entity instances that exist now (initializing, live, shutting down
    /// or waiting for a restart).
    pub live: usize,
    /// Keys waiting for room under the cap.
    pub waiting: usize,
    /// Messages held for entities that are not live yet.
    pub buffered: usize,
    /// Instances the set made (first messages, and again after passivation).
    pub created: u64,
    /// Instances its supervisor restarted after a failure.
    pub restarts: u64,
    /// Entities the set passivated (idle, or least recently used at the cap).
    pub passivated: u64,
    /// Messages refused: at the cap with no idle entity, buffer full, set
    /// shutting down, or entity failed before it started. A refused
    /// request is answered with the error; a message is dropped.
    pub refused: u64,
}

/// Subscribes the set to one routed message type, in its `init_start`.
type Route<K, E> = Box<dyn Fn(&mut Context<'_, EntitySet<K, E>>)>;

/// A supervisor of entities: one child actor per key, made by a factory on
/// the first message for its key, passivated (shut down through the normal
/// lifecycle) when idle, and made again on its next message.
///
/// Send a [`Keyed`] message (registered with [`route`](EntitySet::route))
/// or a request whose payload names the key
/// ([`route_request`](EntitySet::route_request)) to the set's address. For a
/// live entity the set delivers it at once, in the same dispatch step (one
/// queue trip, as for a direct send); for an entity that is initializing,
/// shutting down or restarting, it holds the message and delivers it, in
/// order, once the next instance has started. Entities are named
/// `<set>/<key>` (`L0/devices/device-42#7` in inspection).
///
/// An entity set is always a supervisor whose children's failed inits are
/// their own (a child's init failure never takes the set down); build it
/// with or without [`Builder::supervisor`](crate::Builder::supervisor).
/// Settings that cannot work fail the set's init with
/// [`ErrorCode::InvalidArgument`]. `docs/entities.md` has the whole design.
///
/// # Examples
///
/// Counters by name, made on their first message and passivated after a
/// second of quiet, on a manual clock:
///
/// ```
/// use commutator::*;
/// use std::time::Duration;
///
/// struct Add(u32);
///
/// struct Counter {
///     total: u32,
/// }
/// impl Actor for Counter {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(|me: &mut Self, add: &Add, _: &mut Context<'_, Self>| me.total += add.0);
///     }
/// }
///
/// let set = EntitySet::new(|_: &String| Counter { total: 0 })
///     .route::<Add>()
///     .idle_after(Duration::from_secs(1));
/// let stats = set.stats();
/// let mut locality = Locality::new();
/// let t0 = locality.now();
/// let counters = locality.spawn_root(set).name("counters").finish()?;
/// for name in ["a", "b", "a"] {
///     locality.send(&counters, Keyed::new(name.to_string(), Add(1))).unwrap();
/// }
/// locality.run_until_idle(t0);
/// assert_eq!((stats.get().live, stats.get().created), (2, 2));
/// locality.run_until_idle(t0 + Duration::from_secs(1)); // quiet for a second
/// assert_eq!((stats.get().live, stats.get().passivated), (0, 2));
/// # Ok::<(), commutator::Error>(())
/// ```
pub struct EntitySet<K, E>
where
    K: Clone + Eq + Hash + Display + 'static,
    E: Actor,
{
    factory: Rc<dyn Fn(&K) -> E>,
    routes: Vec<Route<K, E>>,
    children: ChildSettings,
    idle: Option<Duration>,
    max_live: Option<usize>,
    max_buffered: usize,
    name: String,
    table: Table<K, Entity, Live>,
    /// The entity of each child slot (learned from the first event).
    by_slot: Vec<u32>,
    /// The entity of each instance, from its making until it is down (an
    /// entity ref's message that was stale at delivery names its instance).
    by_address: KeyMap<u32>,
    waiting: VecDeque<u32>,
    live: usize,
    stopping: usize,
    buffered: usize,
    idle_timer: Option<TimerId>,
    /// Idle time or a cap is set: the list of use is kept.
    ordered: bool,
    /// How long an entity stays at its place in the list of use.
    granularity: Duration,
    closing: bool,
    /// Requests the set routed and that are not settled yet, by id: where
    /// a `CancelRequest` for them goes.
    asked: IdMap<RequestId, Asking<K>>,
    /// What the set's routers read.
    shared: Rc<Shared<K>>,
    stats: StatsHandle<EntityStats>,
}

impl<K, E> fmt::Debug for EntitySet<K, E>
where
    K: Clone + Eq + Hash + Display + 'static,
    E: Actor,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntitySet")
            .field("name", &self.name)
            .field("stats", &self.stats.get())
            .finish_non_exhaustive()
    }
}

/// How many messages a set holds for entities that are not live, by default.
const MAX_BUFFERED: usize = 1 << 20;

impl<K, E> EntitySet<K, E>
where
    K: Clone + Eq + Hash + Display + 'static,
    E: Actor,
{
    /// A set whose entity for `key` is `factory(&key)` (called again for
    /// each new instance: after passivation, or a restart).
    pub fn new(factory: impl Fn(&K) -> E + 'static) -> Self {
        let table = Table::new();
        let shared = Rc::new(Shared::new(table.index(), table.uses()));
        EntitySet {
            factory: Rc::new(factory),
            routes: Vec::new(),
            children: ChildSettings::new(RestartPolicy::Never),
            idle: None,
            max_live: None,
            max_buffered: MAX_BUFFERED,
            name: String::new(),
            table,
            by_slot: Vec::new(),
            by_address: KeyMap::default(),
            waiting: VecDeque::new(),
            live: 0,
            stopping: 0,
            buffered: 0,
            idle_timer: None,
            ordered: false,
            granularity: Duration::ZERO,
            closing: false,
            asked: IdMap::default(),
            shared,
            stats: StatsHandle::default(),
        }
    }

    /// Routes `Keyed<K, M>` sent to the set to the entity of its key (which
    /// subscribes to `M`).
    pub fn route<M: Send + 'static>(mut self) -> Self {
        self.routes.push(Box::new(|ctx| {
            ctx.subscribe(|set: &mut Self, keyed: &Keyed<K, M>, ctx| {
                if let Some(message) = keyed.take() {
                    set.on_message(keyed.key(), message, ctx);
                }
            });
            ctx.subscribe(|set: &mut Self, to: &ForInstance<M>, ctx| {
                if let Some(message) = to.take() {
                    set.on_for_instance(to.dest(), message, ctx);
                }
            });
        }));
        self
    }

    /// Routes requests `R` sent to the set (with
    /// [`Context::request`](crate::Context::request)) to the entity of the
    /// key `key_of` reads from the payload; the entity replies to the
    /// requester directly. A request the set cannot deliver is answered
    /// with the error. When the request ends without a reply (timeout,
    /// cancel, requester gone), its `CancelRequest<R>` goes to the entity
    /// instance that has it; one still held for an entity that is not live
    /// is dropped, never delivered.
    pub fn route_request<R: Request>(mut self, key_of: impl Fn(&R) -> K + 'static) -> Self {
        let key_of = Rc::new(key_of);
        self.routes.push(Box::new(move |ctx| {
            let key_of = key_of.clone();
            ctx.subscribe(move |set: &mut Self, req: &RequestMsg<R>, ctx| {
                set.on_request(&key_of(req.payload()), req, ctx);
            });
            ctx.subscribe(|set: &mut Self, cancel: &CancelRequest<R>, ctx| {
                set.on_cancel(cancel, ctx);
            });
        }));
        self
    }

    /// Passivates an entity that got no message through the set for
    /// `idle` (on the locality's clock), give or take `idle / 64` (an
    /// entity moves in the set's order of use at most that often). Default:
    /// never.
    pub fn idle_after(mut self, idle: Duration) -> Self {
        self.idle = Some(idle);
        self
    }

    /// At most `cap` entity instances at once. A message for a new key at
    /// the cap passivates the least recently used live entity and waits for
    /// its room; with none live (all initializing or shutting down and none
    /// of them freeing room), it is refused with [`ErrorCode::EntityLimit`].
    /// Default: no cap.
    pub fn max_live(mut self, cap: usize) -> Self {
        self.max_live = Some(cap);
        self
    }

    /// At most `max` messages held for entities that are not live; more are
    /// refused with [`ErrorCode::Unavailable`]. Default: 1,048,576.
    pub fn max_buffered(mut self, max: usize) -> Self {
        self.max_buffered = max;
        self
    }

    /// Restarts a failed entity as `policy` says: [`RestartPolicy::Never`]
    /// (the default: the next message makes a new one) or
    /// [`RestartPolicy::OnFailure`]. The others would restart a passivated
    /// entity (a normal exit) and are refused.
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.children.restart = policy;
        self
    }

    child_settings_methods!("an entity");

    /// A live view of the set's counters.
    pub fn stats(&self) -> StatsHandle<EntityStats> {
        self.stats.clone()
    }

    /// A router for the set's keys: sends that reach a live entity without
    /// passing through the set's handler (see [`EntityRouter`]).
    pub fn router(&self) -> EntityRouter<K> {
        EntityRouter {
            shared: Rc::clone(&self.shared),
        }
    }

    /// A handle for the entity of `key` that caches where its live
    /// instance is (see [`EntityRef`]); the same as
    /// `self.router().entity(key)`.
    pub fn entity(&self, key: K) -> EntityRef<K> {
        EntityRef::new(Rc::clone(&self.shared), key)
    }

    fn check(&self) -> Result<()> {
        let invalid = |why: &str| {
            let why = format!("entity set {}: {why}", self.name);
            Err(Error::new(ErrorCode::InvalidArgument).with_context(why))
        };
        if !matches!(
            self.children.restart,
            RestartPolicy::Never | RestartPolicy::OnFailure
        ) {
            return invalid("entities restart only OnFailure (passivation is a normal exit)");
        }
        if self.idle.is_some_and(|idle| idle.is_zero()) {
            return invalid("the idle time must be longer than zero");
        }
        if self.max_live == Some(0) {
            return invalid("the cap must allow one entity at least");
        }
        if self.max_buffered == 0 {
            return invalid("the buffer must hold one message at least");
        }
        self.children.check(&format!("entity set {}", self.name))
    }

    // ---------------- routing ----------------

    /// The entity of `key` if it is live: its index and address key. Reads
    /// the hash table's bucket and the actor's state, not the record.
    #[inline]
    fn live_entity(&mut self, key: &K, core: &Core) -> Option<(u32, Key)> {
        let (idx, live) = self.table.find_hot(key)?;
        if live.dest.is_none() || self.closing {
            return None;
        }
        if core
            .actors
            .get(live.actor)
            .is_some_and(|c| c.state == ActorState::Operational)
        {
            Some((idx, live.dest))
        } else {
            self.leaving(idx, core); // it is going on its own: hold for the next one
            None
        }
    }

    /// The address key of the entity at `idx`, if it is live.
    #[inline]
    fn live_at(&mut self, idx: u32, core: &Core) -> Option<Key> {
        let e = self.table.get(idx);
        if e.phase != Phase::Live || self.closing {
            return None;
        }
        if core
            .actors
            .get(e.actor)
            .is_some_and(|c| c.state == ActorState::Operational)
        {
            Some(e.dest)
        } else {
            self.leaving(idx, core); // it is going on its own: hold for the next one
            None
        }
    }

    /// Delivers to a live entity and marks it used.
    #[inline]
    fn deliver<M: 'static>(
        &mut self,
        idx: u32,
        dest: Key,
        message: &M,
        ctx: &mut Context<'_, Self>,
    ) {
        if self.ordered {
            self.used(idx, ctx);
        }
        if !deliver_now(ctx.core, ctx.me, dest, message) {
            self.leaving(idx, ctx.core);
        }
    }

    /// Marks the entity at `idx` used now: to the front of the list of use,
    /// unless it went there less than `granularity` ago (a set with idle
    /// time then passivates at most that late, and moves few entities).
    fn used(&mut self, idx: u32, ctx: &mut Context<'_, Self>) {
        let now = ctx.core.now;
        let e = self.table.get_mut(idx);
        e.last_active = now;
        if now.saturating_duration_since(e.linked_at) >= self.granularity {
            e.linked_at = now;
            self.table.touch(idx);
        }
        if self.idle_timer.is_none() {
            self.arm_idle(ctx);
        }
    }

    fn on_message<M: 'static>(&mut self, key: &K, message: M, ctx: &mut Context<'_, Self>) {
        match self.live_entity(key, ctx.core) {
            Some((idx, dest)) => self.deliver(idx, dest, &message, ctx),
            None => self.hold(key, Box::new(Plain(message)), ctx),
        }
    }

    /// An entity ref's message whose cache was stale at delivery, for the
    /// instance at `dest` (known to the set until it is down: the message
    /// was sent while it was live): as a `Keyed` for its key.
    fn on_for_instance<M: 'static>(&mut self, dest: Key, message: M, ctx: &mut Context<'_, Self>) {
        match self.by_address.get(&dest) {
            Some(&idx) => {
                let key = self.table.key(idx).clone();
                self.on_message(&key, message, ctx);
            }
            None => {
                // Not seen (its instance was known when it was sent).
                tracing::warn!(set = %self.name, "entity ref message for an unknown instance");
                self.stats.update(|s| s.refused += 1);
            }
        }
    }

    fn on_request<R: Request>(
        &mut self,
        key: &K,
        req: &RequestMsg<R>,
        ctx: &mut Context<'_, Self>,
    ) {
        // Forwarded with the set as its watcher: a reply tells the set
        // (`Answered`) that the request is settled.
        let forwarded = RequestMsg {
            id: req.id,
            payload: req.payload.clone(),
            watcher: Some(ctx.address().clone()),
        };
        match self.live_entity(key, ctx.core) {
            Some((idx, dest)) => {
                let at = dest;
                self.asked.insert(
                    req.id,
                    Asking {
                        key: key.clone(),
                        at,
                    },
                );
                self.deliver(idx, dest, &forwarded, ctx);
            }
            None => {
                let at = Key::NONE;
                self.asked.insert(
                    req.id,
                    Asking {
                        key: key.clone(),
                        at,
                    },
                );
                self.hold(key, Box::new(Asked(forwarded)), ctx);
            }
        }
    }

    /// Holds a message for an entity that is not live (making it if needed).
    fn hold(&mut self, key: &K, held: Box<dyn Held>, ctx: &mut Context<'_, Self>) {
        if self.closing {
            let why = format!("entity set {} is shutting down", self.name);
            return self.refuse(
                held,
                Error::new(ErrorCode::Unavailable).with_context(why),
                ctx,
            );
        }
        if self.buffered >= self.max_buffered {
            let why = format!(
                "entity set {}: {} messages held already",
                self.name, self.buffered
            );
            return self.refuse(
                held,
                Error::new(ErrorCode::Unavailable).with_context(why),
                ctx,
            );
        }
        let idx = match self.table.find(key) {
            Some(idx) => idx,
            None => match self.admit(key, ctx) {
                Ok(idx) => idx,
                Err(error) => return self.refuse(held, error, ctx),
            },
        };
        Pending::push(&mut self.table.get_mut(idx).pending, held);
        self.buffered += 1;
        self.publish();
    }

    fn refuse(&mut self, held: Box<dyn Held>, error: Error, ctx: &mut Context<'_, Self>) {
        tracing::debug!(set = %self.name, %error, "message refused");
        if let Some(id) = held.request_id() {
            self.asked.remove(&id);
        }
        held.refuse(ctx.core, ctx.me, error);
        self.stats.update(|s| s.refused += 1);
    }

    fn publish(&self) {
        let (live, waiting, buffered) = (self.live, self.waiting.len(), self.buffered);
        self.stats.update(|s| {
            s.live = live;
            s.waiting = waiting;
            s.buffered = buffered;
        });
    }
}

impl<K, E> Actor for EntitySet<K, E>
where
    K: Clone + Eq + Hash + Display + 'static,
    E: Actor,
{
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.name = ctx.name().to_string();
        if let Err(error) = self.check() {
            return ctx.fail(error);
        }
        make_supervisor(ctx.core, ctx.me);
        super::watch::watching(ctx.core);
        // The locality's version: the core bumps it when an entity leaves
        // OPERATIONAL. The set is registered there for its refs' messages.
        if let Some(sup) = ctx
            .core
            .actors
            .get_mut(ctx.me)
            .and_then(|c| c.supervisor.as_deref_mut())
        {
            sup.counts_leaving = true;
        }
        let id = ctx.core.entities.register(ctx.address().key());
        self.shared.id.set(id);
        self.ordered = self.idle.is_some() || self.max_live.is_some();
        self.granularity = self.idle.map_or(Duration::ZERO, |idle| idle / 64);
        ctx.subscribe(Self::on_child_event);
        ctx.subscribe(Self::on_answered);
        self.shared.set.set(ctx.address().key());
        self.shared.locality.set(ctx.core.id());
        self.shared.direct.set(true);
        self.shared.ordered.set(self.ordered);
        self.shared.epoch.set(ctx.core.now);
        self.shared.open.set(true);
        for route in std::mem::take(&mut self.routes) {
            route(ctx);
        }
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.closing = true;
        self.shared.open.set(false);
        self.shared.direct.set(false);
        ctx.core.entities.bump(); // what entity refs cached is stale now
        let id = self.shared.id.replace(u32::MAX);
        if id != u32::MAX {
            super::local::unregister_later(ctx.core, id);
        }
        if let Some(timer) = self.idle_timer.take() {
            ctx.cancel_timer(timer);
        }
        // Its entities are shut down with it; what waits for them is refused.
        let why = format!("entity set {} is shutting down", self.name);
        let error = Error::new(ErrorCode::Unavailable).with_context(why);
        for idx in self.table.indices() {
            let e = self.table.get_mut(idx);
            let pending = e.pending.take();
            let waiting = e.phase == Phase::Waiting;
            for held in Pending::drain(pending) {
                self.buffered -= 1;
                self.refuse(held, error.clone(), ctx);
            }
            if waiting {
                self.table.remove(idx);
            }
        }
        self.waiting.clear();
        self.publish();
    }

    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.table.clear();
        self.by_slot = Vec::new();
        self.by_address = KeyMap::default();
        self.asked = IdMap::default();
        self.live = 0;
        self.stopping = 0;
        self.publish();
    }
}

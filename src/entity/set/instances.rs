//! The entities of an [`EntitySet`](super::EntitySet): their records,
//! the messages they hold, and what happens to them: made, started,
//! passivated, gone, restarted; room under the cap; idle time.

use super::EntitySet;
use super::pending::Pending;
use crate::actor::Actor;
use crate::address::Address;
use crate::arena::Key;
use crate::context::Context;
use crate::entity::deliver_now;
use crate::entity::watch::ChildEvent;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::Core;
use crate::request::{Request, RequestId, RequestMsg};
use crate::supervisor::ChildId;
use crate::supervisor::restart::RestartPolicy;
use std::fmt::Display;
use std::hash::Hash;
use std::time::Instant;

/// Where an entity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// No instance yet: waiting for room under the cap.
    Waiting,
    /// Its instance is initializing; messages wait.
    Starting,
    /// Operational: messages go straight to it.
    Live,
    /// Shutting down (passivated, or leaving on its own); messages wait for
    /// the next instance.
    Stopping,
    /// Down, and its supervisor will restart it; messages wait.
    Restarting,
}

/// One key's entity.
pub(super) struct Entity {
    pub(super) phase: Phase,
    /// The current instance's address, its key, and its actor's key.
    pub(super) address: Option<Address>,
    pub(super) dest: Key,
    pub(super) actor: Key,
    /// Its slot among the set's children, once the core reported it.
    pub(super) slot: Option<usize>,
    /// The current instance has started (got its messages).
    pub(super) started: bool,
    /// When the set last routed a message to it (with idle time or a cap).
    pub(super) last_active: Instant,
    /// When it was last moved to the front of the list of use, at most
    /// `granularity` before `last_active`.
    pub(super) linked_at: Instant,
    /// Messages waiting for the next instance: the first inline, a
    /// (boxed) queue from the second on.
    pub(super) pending: Option<Pending>,
}

/// A message held for an entity until it is live.
pub(super) trait Held {
    /// Delivers it to the entity's address `dest` now; `false` if the
    /// handler panicked.
    fn deliver(self: Box<Self>, core: &mut Core, me: Key, dest: Key) -> bool;
    /// It cannot be delivered: a request is answered with `error`.
    fn refuse(self: Box<Self>, core: &mut Core, me: Key, error: Error);
    /// The request's id (`None` for a plain message).
    fn request_id(&self) -> Option<RequestId> {
        None
    }
}

pub(super) struct Plain<M>(pub(super) M);

impl<M: 'static> Held for Plain<M> {
    fn deliver(self: Box<Self>, core: &mut Core, me: Key, dest: Key) -> bool {
        deliver_now(core, me, dest, &self.0)
    }
    fn refuse(self: Box<Self>, _: &mut Core, _: Key, _: Error) {}
}

pub(super) struct Asked<R: Request>(pub(super) RequestMsg<R>);

impl<R: Request> Held for Asked<R> {
    fn deliver(self: Box<Self>, core: &mut Core, me: Key, dest: Key) -> bool {
        deliver_now(core, me, dest, &self.0)
    }
    fn refuse(self: Box<Self>, core: &mut Core, me: Key, error: Error) {
        // The set forgets it itself: no `Answered` to its watcher.
        let Asked(request) = *self;
        let request = RequestMsg {
            watcher: None,
            ..request
        };
        crate::request::reply(core, me, &request, Err(error));
    }
    fn request_id(&self) -> Option<RequestId> {
        Some(self.0.id)
    }
}

/// Where a live entity's messages go, kept in the set's hash table beside
/// its key (`NOT_LIVE` while it is not live): what routing needs, in the
/// bucket the lookup reads anyway.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Live {
    /// Its address's key.
    pub(crate) dest: Key,
    /// Its actor's key (for the state check).
    pub(crate) actor: Key,
}

pub(super) const NOT_LIVE: Live = Live {
    dest: Key::NONE,
    actor: Key::NONE,
};

/// No entity (in `by_slot`).
const NIL: u32 = u32::MAX;

impl<K, E> EntitySet<K, E>
where
    K: Clone + Eq + Hash + Display + 'static,
    E: Actor,
{
    pub(super) fn has_room(&self) -> bool {
        self.max_live.is_none_or(|cap| self.live < cap)
    }

    /// A new key: its entity is made now, or waits for room at the cap.
    pub(super) fn admit(&mut self, key: &K, ctx: &mut Context<'_, Self>) -> Result<u32> {
        let now = ctx.core.now;
        if self.has_room() {
            let idx = self
                .table
                .insert(key.clone(), Entity::new(Phase::Starting, now), NOT_LIVE);
            if let Err(error) = self.spawn(idx, ctx) {
                self.table.remove(idx);
                return Err(error);
            }
            return Ok(idx);
        }
        if self.stopping <= self.waiting.len() && self.table.tail().is_none() {
            let why = format!(
                "entity set {}: {} entities live, none idle, for {key}",
                self.name, self.live
            );
            return Err(Error::new(ErrorCode::EntityLimit).with_context(why));
        }
        let idx = self
            .table
            .insert(key.clone(), Entity::new(Phase::Waiting, now), NOT_LIVE);
        self.waiting.push_back(idx);
        self.passivate_for_waiting(ctx);
        Ok(idx)
    }

    /// Makes a new instance for the entity at `idx`.
    pub(super) fn spawn(&mut self, idx: u32, ctx: &mut Context<'_, Self>) -> Result<()> {
        let key = self.table.key(idx).clone();
        let factory = self.factory.clone();
        // The factory is user code: a panic is a failed creation, not the set's.
        let first = crate::actor::guarded(ctx.core, ctx.me, || factory(&key)).map_err(|e| {
            Error::new(ErrorCode::Unavailable)
                .with_context(format!("entity set {}: no entity for {key}", self.name))
                .caused_by(e)
        })?;
        // `<set>/<key>`, built by hand: `format!` took 500 instructions
        // more per entity (`e1_create`), parsing its pieces.
        let mut name = String::with_capacity(self.name.len() + 24);
        name.push_str(&self.name);
        name.push('/');
        let _ = std::fmt::Write::write_fmt(&mut name, format_args!("{key}"));
        // Without restarts the core never calls a factory again: none is
        // kept (an allocation less between two entities' spawns).
        let builder = if self.children.restart == RestartPolicy::Never {
            ctx.spawn(first)
        } else {
            let mut first = Some(first);
            ctx.spawn_with(move || first.take().unwrap_or_else(|| factory(&key)))
        };
        let builder = builder.name(name);
        let address = self.children.apply(builder).finish()?;
        let actor = ctx
            .core
            .routes
            .address(address.key())
            .map_or(Key::NONE, |a| a.owner);
        self.by_address.insert(address.key(), idx);
        let e = self.table.get_mut(idx);
        e.phase = Phase::Starting;
        e.dest = address.key();
        e.address = Some(address);
        e.actor = actor;
        e.started = false;
        self.live += 1;
        self.stats.update(|s| s.created += 1);
        Ok(())
    }

    /// The entity at `idx` is shutting down on its own (or its handler
    /// panicked): what comes for it now waits for the next instance.
    pub(super) fn leaving(&mut self, idx: u32, core: &Core) {
        let e = self.table.get_mut(idx);
        if e.phase == Phase::Live {
            e.phase = Phase::Stopping;
            self.stopping += 1;
            self.table.unlink(idx);
            self.not_live(idx, core);
        }
    }

    /// The entity at `idx` is not live any more: routers and entity refs
    /// send to the set from now on.
    pub(super) fn not_live(&mut self, idx: u32, core: &Core) {
        self.table.set_hot(idx, NOT_LIVE);
        core.entities.bump();
    }

    /// Shuts a live entity down through its supervisor (the set).
    pub(super) fn passivate(&mut self, idx: u32, why: &str, ctx: &mut Context<'_, Self>) {
        self.table.unlink(idx);
        let e = self.table.get_mut(idx);
        let (Some(slot), Some(address), Phase::Live) = (e.slot, e.address.clone(), e.phase) else {
            return;
        };
        e.phase = Phase::Stopping;
        self.stopping += 1;
        self.not_live(idx, ctx.core);
        self.stats.update(|s| s.passivated += 1);
        tracing::debug!(entity = %address, why, "passivating");
        let reason = Error::normal().with_context(format!("{address} passivated: {why}"));
        let child = ChildId::of(&address);
        crate::supervisor::on_child_shutdown_trigger(ctx.core, ctx.me, slot, child, reason);
    }

    /// Passivates the least recently used entities while keys wait for
    /// room that no shutdown under way will free.
    pub(super) fn passivate_for_waiting(&mut self, ctx: &mut Context<'_, Self>) {
        while self.waiting.len() > self.stopping
            && let Some(victim) = self.table.tail()
        {
            if !self.fold_use(victim) {
                self.passivate(victim, "least recently used at the cap", ctx);
            }
        }
    }

    /// If a router or an entity ref delivered to the entity at `idx` since
    /// it was last moved in the list of use, moves it to the front as used
    /// then: `true`.
    pub(super) fn fold_use(&mut self, idx: u32) -> bool {
        let stamp = self.table.take_use(idx);
        let used = self.shared.epoch.get() + std::time::Duration::from_nanos(stamp);
        let e = self.table.get_mut(idx);
        if stamp == 0 || used <= e.last_active {
            return false;
        }
        e.last_active = used;
        e.linked_at = used;
        self.table.touch(idx);
        true
    }

    /// Starts waiting keys while there is room, then makes room for the rest.
    pub(super) fn make_room(&mut self, ctx: &mut Context<'_, Self>) {
        while self.has_room()
            && let Some(idx) = self.waiting.pop_front()
        {
            if let Err(error) = self.spawn(idx, ctx) {
                self.drop_entity(idx, error, ctx);
            }
        }
        self.passivate_for_waiting(ctx);
    }

    /// Refuses everything held for the entity at `idx` and forgets it.
    pub(super) fn drop_entity(&mut self, idx: u32, error: Error, ctx: &mut Context<'_, Self>) {
        self.forget_instance(idx);
        let (_, e) = self.table.remove(idx);
        if e.phase == Phase::Waiting {
            self.waiting.retain(|&w| w != idx);
        }
        for held in Pending::drain(e.pending) {
            self.buffered -= 1;
            self.refuse(held, error.clone(), ctx);
        }
    }

    /// Forgets where the current instance of the entity at `idx` is.
    pub(super) fn forget_instance(&mut self, idx: u32) {
        let e = self.table.get_mut(idx);
        if let Some(slot) = e.slot.take()
            && self.by_slot.get(slot) == Some(&idx)
        {
            self.by_slot[slot] = NIL;
        }
        if let Some(address) = e.address.take() {
            self.by_address.remove(&address.key());
        }
        e.dest = Key::NONE;
        e.actor = Key::NONE;
    }

    /// The entity a child event is about.
    pub(super) fn find_instance(&mut self, slot: usize, address: Option<&Address>) -> Option<u32> {
        let by_address = address.and_then(|a| self.by_address.get(&a.key()).copied());
        let idx = by_address.or_else(|| self.by_slot.get(slot).copied().filter(|&i| i != NIL))?;
        if self.by_slot.len() <= slot {
            self.by_slot.resize(slot + 1, NIL);
        }
        self.by_slot[slot] = idx;
        self.table.get_mut(idx).slot = Some(slot);
        Some(idx)
    }

    // ---------------- child events ----------------

    pub(super) fn on_child_event(&mut self, event: &ChildEvent, ctx: &mut Context<'_, Self>) {
        match event {
            ChildEvent::Started { slot, address } => self.on_started(*slot, address, ctx),
            ChildEvent::Down {
                slot,
                address,
                reason,
                restarting,
            } => self.on_down(*slot, address.as_ref(), reason, *restarting, ctx),
        }
        self.publish();
    }

    /// An instance started: it gets what waited for it, in order.
    pub(super) fn on_started(
        &mut self,
        slot: usize,
        address: &Address,
        ctx: &mut Context<'_, Self>,
    ) {
        let Some(idx) = self.find_instance(slot, Some(address)) else {
            return;
        };
        let actor = ctx
            .core
            .routes
            .address(address.key())
            .map_or(Key::NONE, |a| a.owner);
        // Kept while the instance is known: an entity ref's stale message
        // names the instance, not the key.
        self.by_address.insert(address.key(), idx);
        let now = ctx.core.now;
        let e = self.table.get_mut(idx);
        e.address = Some(address.clone());
        e.dest = address.key();
        e.actor = actor;
        e.phase = Phase::Live;
        e.started = true;
        e.last_active = now;
        e.linked_at = now;
        self.table.touch(idx);
        let dest = address.key();
        self.table.set_hot(idx, Live { dest, actor });
        self.table.take_use(idx); // stamps of an earlier instance
        while self.table.get(idx).pending.is_some()
            && let Some(dest) = self.live_at(idx, ctx.core)
        {
            let Some(held) = Pending::pop(&mut self.table.get_mut(idx).pending) else {
                break;
            };
            self.buffered -= 1;
            let id = held.request_id();
            let fine = held.deliver(ctx.core, ctx.me, dest);
            self.delivered(id, dest);
            if !fine {
                self.leaving(idx, ctx.core);
            }
        }
        self.arm_idle(ctx);
        self.make_room(ctx);
    }

    /// An instance went down: wait for its restart, make the next one for
    /// what waits, or forget the entity.
    pub(super) fn on_down(
        &mut self,
        slot: usize,
        address: Option<&Address>,
        reason: &Error,
        restarting: bool,
        ctx: &mut Context<'_, Self>,
    ) {
        let Some(idx) = self.find_instance(slot, address) else {
            return;
        };
        self.table.unlink(idx);
        self.not_live(idx, ctx.core);
        let e = self.table.get_mut(idx);
        if e.phase == Phase::Stopping {
            self.stopping -= 1;
        }
        let started = std::mem::take(&mut e.started);
        if restarting {
            e.phase = Phase::Restarting;
            if let Some(address) = e.address.take() {
                self.by_address.remove(&address.key());
            }
            let e = self.table.get_mut(idx);
            e.dest = Key::NONE;
            e.actor = Key::NONE;
            self.stats.update(|s| s.restarts += 1);
            return;
        }
        self.live -= 1;
        self.forget_instance(idx);
        if self.closing {
            let why = format!("entity set {} is shutting down", self.name);
            self.drop_entity(
                idx,
                Error::new(ErrorCode::Unavailable).with_context(why),
                ctx,
            );
        } else if self.table.get(idx).pending.is_none() {
            self.table.remove(idx); // nothing is kept of a passivated entity
        } else if !started {
            // It never got its messages (a failed init): they go, or the
            // next instance would fail on them again.
            let key = self.table.key(idx);
            let why = format!("entity set {}: {key} failed before it started", self.name);
            let error = Error::new(ErrorCode::Unavailable)
                .with_context(why)
                .caused_by(reason.clone());
            self.drop_entity(idx, error, ctx);
        } else if self.has_room() {
            if let Err(error) = self.spawn(idx, ctx) {
                self.drop_entity(idx, error, ctx);
            }
        } else {
            self.table.get_mut(idx).phase = Phase::Waiting;
            self.waiting.push_back(idx);
        }
        self.make_room(ctx);
    }

    // ---------------- idle time ----------------

    pub(super) fn arm_idle(&mut self, ctx: &mut Context<'_, Self>) {
        let (Some(idle), None, false) = (self.idle, self.idle_timer, self.closing) else {
            return;
        };
        let Some(tail) = self.table.tail() else {
            return;
        };
        let Some(due) = self.table.get(tail).last_active.checked_add(idle) else {
            return; // an idle time past the end of time: never
        };
        let after = due.saturating_duration_since(ctx.core.now);
        let timer = ctx.start_timer(after, |set: &mut Self, ctx, _| set.on_idle(ctx));
        self.idle_timer = (!timer.is_none()).then_some(timer);
    }

    pub(super) fn on_idle(&mut self, ctx: &mut Context<'_, Self>) {
        self.idle_timer = None;
        let Some(idle) = self.idle else { return };
        let now = ctx.core.now;
        while let Some(tail) = self.table.tail()
            && self
                .table
                .get(tail)
                .last_active
                .checked_add(idle)
                .is_some_and(|due| due <= now)
        {
            if !self.fold_use(tail) {
                self.passivate(tail, "idle", ctx);
            }
        }
        self.arm_idle(ctx);
        self.publish();
    }
}

impl Entity {
    pub(super) fn new(phase: Phase, now: Instant) -> Entity {
        Entity {
            phase,
            address: None,
            dest: Key::NONE,
            actor: Key::NONE,
            slot: None,
            started: false,
            last_active: now,
            linked_at: now,
            pending: None,
        }
    }
}

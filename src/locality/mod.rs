//! [`Locality`]: the sequential execution context, ready to embed in a mio loop.

pub(crate) mod shared;

use crate::actor::{Actor, ActorCell, ActorState};
use crate::address::Address;
use crate::arena::{Arena, Key, remove_key};
use crate::builder::{Builder, Parent};
use crate::error::{Error, ErrorCode, Result, SendError};
use crate::inspect::{Inspect, Sink};
use crate::lifecycle;
use crate::message::{Deliver, Queue, UserEnvelope};
use crate::request::PendingRequest;
use crate::subscription::{AddressSlot, SubscriptionRecord};
use crate::timer::{TimerAction, TimerId, Timers};
use shared::{LocalityShared, Remote};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tokens from this value up are reserved for the locality's own I/O sources;
/// the waker token given to [`Locality::register`] must be below it.
pub const RESERVED_TOKENS: usize = 1 << (usize::BITS - 1);

/// How many queued items one [`Locality::dispatch`] handles at most, by default.
pub const DEFAULT_BUDGET: usize = 1 << 16;

/// Counters and store sizes of a locality, for tests and monitoring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Messages routed to at least one subscribed handler list.
    pub delivered: u64,
    /// Messages dropped because nobody was subscribed to their type on their address.
    pub dropped_unsubscribed: u64,
    /// Messages dropped because their address was gone.
    pub dropped_stale: u64,
    /// Messages for another locality that had already finished.
    pub dropped_closed: u64,
    /// Replies that came after their request was settled (late or duplicate).
    pub dropped_late_replies: u64,
    /// Live actors.
    pub actors: usize,
    /// Live addresses.
    pub addresses: usize,
    /// Live subscriptions.
    pub subscriptions: usize,
    /// Pending timers (user timers, request and lifecycle timeouts).
    pub timers: usize,
    /// Requests waiting for a response.
    pub requests: usize,
    /// Items waiting in the queue.
    pub queued: usize,
}

/// The state of a locality, handed to handlers through [`Context`](crate::Context).
pub(crate) struct Core {
    pub(crate) shared: Arc<LocalityShared>,
    pub(crate) now: Instant,
    /// `false` until the first `dispatch` sets the clock.
    clock_set: bool,
    pub(crate) actors: Arena<ActorCell>,
    pub(crate) addresses: Arena<AddressSlot>,
    pub(crate) subscriptions: Arena<SubscriptionRecord>,
    pub(crate) requests: Arena<PendingRequest>,
    pub(crate) queue: Queue,
    pub(crate) timers: Timers,
    pub(crate) stats: Stats,
    pub(crate) inspect: Inspect,
    mail: Vec<Box<dyn Remote>>,
    seq: u64,
    roots: usize,
    rooted: bool,
    exit: Option<Error>,
    fault: Option<Error>,
    on_violation: Option<ViolationHandler>,
}

type ViolationHandler = Box<dyn FnMut(&Error) -> ViolationAction>;

/// What to do about a contract violation (such as a shutdown that timed out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViolationAction {
    /// Stop the locality: it finishes with the error as its exit reason (the default).
    Stop,
    /// Log it and carry on: the stuck actor stays where it is. Resources it
    /// holds may leak; rotor calls this "very shaky ground".
    Continue,
}

impl Core {
    fn new(name: Option<String>, now: Instant) -> Core {
        Core {
            shared: Arc::new(LocalityShared::new(name)),
            now,
            clock_set: false,
            actors: Arena::default(),
            addresses: Arena::default(),
            subscriptions: Arena::default(),
            requests: Arena::default(),
            queue: Queue::default(),
            timers: Timers::default(),
            stats: Stats::default(),
            inspect: Inspect::from_env(),
            mail: Vec::new(),
            seq: 0,
            roots: 0,
            rooted: false,
            exit: None,
            fault: None,
            on_violation: None,
        }
    }

    pub(crate) fn id(&self) -> u32 {
        self.shared.id
    }

    pub(crate) fn name(&self) -> &str {
        &self.shared.name
    }

    pub(crate) fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Appends an envelope to the FIFO queue.
    pub(crate) fn enqueue<E: Deliver>(&mut self, envelope: E) {
        self.queue.push(envelope);
    }

    /// Sends a user message: queued here, or posted to the address's locality.
    pub(crate) fn send<M: Send + 'static>(&mut self, to: &Address, sender: Key, message: M) {
        if to.locality_id() == self.id() {
            self.queue.push(UserEnvelope {
                dest: to.key(),
                sender,
                message,
            });
        } else {
            let accepted = to.0.locality.post_user(to.key(), message).is_ok();
            if !accepted {
                self.stats.dropped_closed += 1;
            }
            crate::inspect::forwarded::<M>(self, sender, to, accepted);
        }
    }

    /// Sends framework traffic to any address; `false` if the address's
    /// locality has finished (the message is dropped).
    pub(crate) fn send_system(&mut self, to: &Address, msg: lifecycle::SystemMsg) -> bool {
        let envelope = lifecycle::SysEnvelope {
            dest: to.key(),
            msg,
        };
        if to.locality_id() == self.id() {
            self.queue.push(envelope);
            true
        } else if to.0.locality.post(Box::new(envelope)) {
            true
        } else {
            self.stats.dropped_closed += 1;
            false
        }
    }

    /// Removes an identity of actor `me` (and every subscription on it).
    pub(crate) fn remove_identity(&mut self, me: Key, address: &Address) {
        if address.locality_id() != self.id() {
            return;
        }
        if let Some(cell) = self.actors.get_mut(me) {
            remove_key(&mut cell.identities, address.key());
        }
        crate::subscription::remove_address(self, address.key());
    }

    pub(crate) fn create_address_slot(
        &mut self,
        actor: Cow<'static, str>,
        seq: u64,
        identity: Option<Cow<'static, str>>,
    ) -> (Key, Address) {
        let shared = &self.shared;
        let key = self.addresses.insert_with(|key| AddressSlot {
            owner: Key::NONE,
            address: Address::new(shared.clone(), key, actor, seq, identity),
            channels: SmallVec::new(),
        });
        let address = self
            .addresses
            .get(key)
            .expect("just inserted")
            .address
            .clone();
        (key, address)
    }

    pub(crate) fn create_identity(&mut self, me: Key, label: Cow<'static, str>) -> Address {
        let cell = self.actors.get(me).expect("a running actor has its cell");
        let (name, seq) = (cell.name.clone(), cell.address.0.seq);
        let (key, address) = self.create_address_slot(name, seq, Some(label));
        if let Some(slot) = self.addresses.get_mut(key) {
            slot.owner = me;
        }
        if let Some(cell) = self.actors.get_mut(me) {
            cell.identities.push(key);
        }
        address
    }

    pub(crate) fn cancel_user_timer(&mut self, me: Key, timer: Key) -> bool {
        if let Some(cell) = self.actors.get_mut(me) {
            remove_key(&mut cell.timers, timer);
        }
        self.timers.cancel(timer).is_some()
    }

    pub(crate) fn root_spawned(&mut self) {
        self.roots += 1;
        self.rooted = true;
    }

    pub(crate) fn root_finished(&mut self, reason: Error) {
        self.roots -= 1;
        if self.exit.as_ref().is_none_or(Error::is_normal) {
            self.exit = Some(reason);
        }
        if self.roots == 0 {
            self.finish();
        }
    }

    /// A broken contract (such as a shutdown timeout): the handler decides;
    /// by default the locality stops with the error.
    pub(crate) fn contract_violation(&mut self, error: Error) {
        tracing::error!(locality = %self.name(), %error, "contract violation");
        let action = match self.on_violation.as_mut() {
            Some(handler) => handler(&error),
            None => ViolationAction::Stop,
        };
        if action == ViolationAction::Stop {
            self.fault.get_or_insert(error);
            self.finish();
        }
    }

    fn finish(&mut self) {
        self.shared.close();
        self.queue.clear();
    }

    fn is_finished(&self) -> bool {
        self.fault.is_some() || (self.rooted && self.roots == 0)
    }

    fn drain_mail(&mut self) {
        if !self.shared.has_mail() {
            return;
        }
        let mut mail = std::mem::take(&mut self.mail);
        self.shared.take_mail(&mut mail);
        for item in mail.drain(..) {
            item.localize(self);
        }
        self.mail = mail;
    }

    /// Fires due timers, at most `limit` of them.
    fn fire_due_timers(&mut self, limit: usize) -> usize {
        let mut fired = 0;
        while fired < limit {
            let Some((key, entry)) = self.timers.pop_due(self.now) else {
                break;
            };
            fired += 1;
            let owner = entry.owner;
            match entry.action {
                TimerAction::User(callback) => {
                    if let Some(cell) = self.actors.get_mut(owner) {
                        remove_key(&mut cell.timers, key);
                    }
                    callback(self, owner, TimerId(key));
                }
                TimerAction::InitTimeout => lifecycle::on_init_timeout(self, owner),
                TimerAction::ShutdownTimeout => lifecycle::on_shutdown_timeout(self, owner),
                TimerAction::Request(request) => crate::request::on_timeout(self, request),
                TimerAction::Restart { slot } => crate::supervisor::restart::restart_child(self, owner, slot),
            }
            if self.is_finished() {
                break;
            }
        }
        fired
    }
}

/// The sequential execution context: actors, addresses, subscriptions, timers
/// and the FIFO queue of one loop. Every message of a locality is delivered one
/// at a time, so actor state needs no locks.
///
/// A [`System`](crate::System) owns one and runs it on its own `mio::Poll`. To
/// embed it in a loop you own, [`register`](Locality::register) it on your
/// `Poll` with a token of yours, then call [`dispatch`](Locality::dispatch)
/// after each poll, waiting at most [`poll_timeout`](Locality::poll_timeout).
/// Time is passed in, so tests drive it with a manual clock:
///
/// ```
/// use commutator::*;
/// use std::time::{Duration, Instant};
///
/// struct Alarm;
/// impl Actor for Alarm {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.start_timer(Duration::from_secs(60), |_, ctx, _| ctx.shutdown_supervisor());
///     }
/// }
///
/// let mut locality = Locality::new();
/// let t0 = locality.now(); // the clock starts at creation
/// let root = locality.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
/// locality.spawn(&root, Alarm).finish()?;
/// locality.run_until_idle(t0);
/// assert!(!locality.is_finished());
/// assert_eq!(locality.next_deadline(), Some(t0 + Duration::from_secs(60)));
/// locality.run_until_idle(t0 + Duration::from_secs(60)); // no sleeping
/// assert!(locality.is_finished());
/// # Ok::<(), commutator::Error>(())
/// ```
pub struct Locality {
    core: Core,
    waker_token: Option<mio::Token>,
    budget: usize,
}

impl fmt::Debug for Locality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locality")
            .field("name", &self.core.name())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for Locality {
    fn default() -> Self {
        Locality::new()
    }
}

impl Locality {
    /// A new locality named `L<n>`. Its clock reads `Instant::now()` until the
    /// first `dispatch`, which sets it to the time given (so a manual clock may
    /// start anywhere); after that it never moves backwards.
    pub fn new() -> Locality {
        Locality::build(None)
    }

    /// A new locality with a name of your choice (it shows in every address).
    pub fn named(name: impl Into<String>) -> Locality {
        Locality::build(Some(name.into()))
    }

    fn build(name: Option<String>) -> Locality {
        Locality {
            core: Core::new(name, Instant::now()),
            waker_token: None,
            budget: DEFAULT_BUDGET,
        }
    }

    /// The locality's name.
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// Registers the locality's one `mio::Waker` on `registry` under `token`,
    /// so that messages from other threads wake your loop.
    ///
    /// Errors: [`ErrorCode::TokenClash`] if `token` is reserved (at or above
    /// [`RESERVED_TOKENS`]); [`ErrorCode::AlreadyRegisteredOnPoll`] if the
    /// locality is registered already; [`ErrorCode::Io`] from mio.
    pub fn register(&mut self, registry: &mio::Registry, token: mio::Token) -> Result<()> {
        if token.0 >= RESERVED_TOKENS {
            return Err(Error::new(ErrorCode::TokenClash)
                .with_context(format!("token {} is reserved", token.0)));
        }
        if self.waker_token.is_some() || self.core.shared.has_waker() {
            return Err(Error::new(ErrorCode::AlreadyRegisteredOnPoll)
                .with_context(self.name().to_string()));
        }
        let waker = mio::Waker::new(registry, token)?;
        self.core.shared.set_waker(waker);
        self.waker_token = Some(token);
        Ok(())
    }

    /// `true` if `token` belongs to this locality (its waker or its I/O).
    pub fn handles(&self, token: mio::Token) -> bool {
        self.waker_token == Some(token)
    }

    /// Takes a mio event that [`handles`](Locality::handles) said is ours.
    ///
    /// A wake-up needs no work here: the next `dispatch` drains the inbox.
    pub fn on_event(&mut self, event: &mio::event::Event) {
        let _ = event;
    }

    /// Runs what is due at `now`: messages from other threads, due timers, and
    /// the queue, up to the budget. Returns how many items it handled.
    ///
    /// The first `now` sets the clock (even if it is earlier than the
    /// locality's creation); after that, `now` never moves it backwards. When
    /// the budget runs out with work left, [`has_pending`](Locality::has_pending)
    /// is `true`: poll without waiting and dispatch again.
    pub fn dispatch(&mut self, now: Instant) -> usize {
        let core = &mut self.core;
        if now > core.now || !core.clock_set {
            core.now = now;
            core.clock_set = true;
        }
        let mut done = 0;
        while done < self.budget && !core.is_finished() {
            core.drain_mail();
            done += core.fire_due_timers(self.budget - done);
            if done >= self.budget {
                break;
            }
            let Some((deliver, slot)) = core.queue.pop() else {
                if core.shared.has_mail()
                    || core.timers.next_deadline().is_some_and(|d| d <= core.now)
                {
                    continue;
                }
                break;
            };
            deliver(core, slot);
            done += 1;
            while done < self.budget {
                let Some((deliver, slot)) = core.queue.pop() else {
                    break;
                };
                deliver(core, slot);
                done += 1;
            }
        }
        done
    }

    /// Dispatches at `now` until nothing is left to do at that time.
    pub fn run_until_idle(&mut self, now: Instant) -> usize {
        let mut done = self.dispatch(now);
        while self.has_pending() {
            done += self.dispatch(now);
        }
        done
    }

    /// Sets how many items one `dispatch` handles at most (at least 1).
    pub fn set_budget(&mut self, budget: usize) {
        self.budget = budget.max(1);
    }

    /// `true` if work is waiting that `dispatch` would do now.
    pub fn has_pending(&self) -> bool {
        !self.is_finished()
            && (!self.core.queue.is_empty()
                || self.core.shared.has_mail()
                || self.next_deadline().is_some_and(|d| d <= self.core.now))
    }

    /// The earliest timer deadline, if any timer is pending.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.core.timers.next_deadline()
    }

    /// How long a loop may block in `poll` before the next `dispatch` is due:
    /// zero if work is pending, `None` if only outside events can bring work.
    pub fn poll_timeout(&self, now: Instant) -> Option<Duration> {
        if self.has_pending() {
            return Some(Duration::ZERO);
        }
        self.next_deadline()
            .map(|d| d.saturating_duration_since(now))
    }

    /// The locality's clock: the latest `now` given to `dispatch`.
    pub fn now(&self) -> Instant {
        self.core.now
    }

    /// `true` once every root actor has shut down, or a contract was violated.
    pub fn is_finished(&self) -> bool {
        self.core.is_finished()
    }

    /// Why the locality finished: a contract violation, else the root's
    /// shutdown reason (the first one that was not normal, with several roots).
    pub fn exit_reason(&self) -> Option<&Error> {
        self.core.fault.as_ref().or(self.core.exit.as_ref())
    }

    /// Starts building a root actor (one with no supervisor). Make it a
    /// supervisor with [`Builder::supervisor`] to give it children.
    pub fn spawn_root<A: Actor>(&mut self, actor: A) -> Builder<'_, A> {
        if self.is_finished() {
            let error =
                Error::new(ErrorCode::LocalityFinished).with_context(self.name().to_string());
            return Builder::with_parent(&mut self.core, Parent::Invalid(error), actor);
        }
        Builder::new(&mut self.core, None, actor)
    }

    /// Starts building a child of the supervisor at `supervisor`.
    pub fn spawn<A: Actor>(&mut self, supervisor: &Address, actor: A) -> Builder<'_, A> {
        let parent = self.parent(supervisor);
        Builder::with_parent(&mut self.core, parent, actor)
    }

    /// Starts building a child of the supervisor at `supervisor` from a
    /// factory, so that it can be restarted (see [`Builder::restart`]).
    pub fn spawn_with<A: Actor>(
        &mut self,
        supervisor: &Address,
        factory: impl FnMut() -> A + 'static,
    ) -> Builder<'_, A> {
        let parent = self.parent(supervisor);
        Builder::with_factory(&mut self.core, parent, factory)
    }

    fn parent(&self, supervisor: &Address) -> Parent {
        match self.local_actor(supervisor) {
            Ok(key) => Parent::Local(key),
            Err(e) if e.code() == ErrorCode::StaleAddress => Parent::Invalid(
                Error::new(ErrorCode::SupervisorShuttingDown).with_context(supervisor.to_string()),
            ),
            Err(e) => Parent::Invalid(e),
        }
    }

    fn local_actor(&self, address: &Address) -> Result<Key> {
        if address.locality_id() != self.core.id() {
            return Err(Error::new(ErrorCode::ForeignAddress).with_context(address.to_string()));
        }
        self.core
            .addresses
            .get(address.key())
            .map(|slot| slot.owner)
            .ok_or_else(|| address.stale_error())
    }

    /// Sends a message from outside any actor (from the loop's own code).
    ///
    /// Errors: the message is handed back if the locality has finished.
    pub fn send<M: Send + 'static>(
        &mut self,
        to: &Address,
        message: M,
    ) -> Result<(), SendError<M>> {
        if self.is_finished() {
            let error =
                Error::new(ErrorCode::LocalityFinished).with_context(self.name().to_string());
            return Err(SendError { message, error });
        }
        self.core.send(to, Key::NONE, message);
        Ok(())
    }

    /// Asks the actor at `address` to shut down, through its supervisor.
    ///
    /// Errors: [`ErrorCode::StaleAddress`] if it is gone,
    /// [`ErrorCode::ForeignAddress`] if another locality serves it.
    pub fn shutdown(&mut self, address: &Address) -> Result<()> {
        let actor = self.local_actor(address)?;
        lifecycle::request_own_shutdown(&mut self.core, actor, Error::normal());
        Ok(())
    }

    /// Sets the delivery-inspection level (see [`crate::inspect`]); lines go to
    /// `tracing`, or stderr when no subscriber is installed.
    pub fn inspect(&mut self, level: u8) {
        self.core.inspect.set(level, Sink::Auto);
    }

    /// Sets the delivery-inspection level and sends each line to `sink`.
    pub fn inspect_with(&mut self, level: u8, sink: impl FnMut(&str) + 'static) {
        self.core.inspect.set(level, Sink::Custom(Box::new(sink)));
    }

    /// Sets the handler of contract violations (a shutdown timeout): it gets
    /// the error and says whether to stop the locality.
    pub fn on_contract_violation(
        &mut self,
        handler: impl FnMut(&Error) -> ViolationAction + 'static,
    ) {
        self.core.on_violation = Some(Box::new(handler));
    }

    /// The lifecycle state of the actor at `address`, if it lives here.
    pub fn state_of(&self, address: &Address) -> Option<ActorState> {
        let actor = self.local_actor(address).ok()?;
        self.core.actors.get(actor).map(|c| c.state)
    }

    /// Counters and store sizes.
    pub fn stats(&self) -> Stats {
        let c = &self.core;
        Stats {
            actors: c.actors.len(),
            addresses: c.addresses.len(),
            subscriptions: c.subscriptions.len(),
            timers: c.timers.len(),
            requests: c.requests.len(),
            queued: c.queue.len(),
            ..c.stats
        }
    }
}

impl Drop for Locality {
    fn drop(&mut self) {
        self.core.shared.close();
    }
}

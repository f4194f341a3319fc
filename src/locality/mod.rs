//! [`Locality`]: the sequential execution context, ready to embed in a mio loop.

mod core;
#[cfg(test)]
mod direct_tests;
mod embed;
pub(crate) mod fire;
mod poll_claim;
use self::poll_claim::PollClaim;
mod handle;
mod inbox;
#[cfg(test)]
mod reserve_tests;
pub(crate) mod shared;

pub use self::handle::LocalityHandle;
pub use self::inbox::{DEFAULT_INBOX_CAPACITY, MAX_INBOX_CAPACITY};

pub(crate) use self::core::Core;
pub use self::core::ViolationAction;

use crate::actor::{Actor, ActorState};
use crate::address::Address;
use crate::arena::Key;
use crate::builder::{Builder, Parent};
use crate::error::{Error, ErrorCode, Result, SendError};
use crate::inspect::Sink;
use crate::lifecycle;
use std::fmt;
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
    /// Failed children that their supervisor let go for good (not
    /// restarted); each is also logged (`WARN`) and shown by inspection.
    pub children_given_up: u64,
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
    /// Registered I/O sources.
    pub io: usize,
    /// Futures started by actors ([`Context::spawn_future`](crate::Context::spawn_future))
    /// and not finished yet.
    pub futures: usize,
    /// Items waiting in the queue.
    pub queued: usize,
    /// User messages from other threads and localities waiting in the inbox
    /// (at most its capacity, see [`Locality::set_inbox_capacity`]).
    pub inbox: usize,
    /// Messages from actors here dropped because the inbox of the
    /// destination's locality was full.
    pub dropped_full: u64,
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
    /// The poll this locality's waker is on (mio allows one waker per poll).
    poll: Option<PollClaim>,
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
            poll: None,
            waker_token: None,
            budget: DEFAULT_BUDGET,
        }
    }

    /// A thread-safe handle, for spawning children here from supervisors on
    /// other threads. While any handle lives, the locality does not finish.
    ///
    /// Making a handle also counts as being served: a locality with no actor
    /// of its own but a handle runs until the actors made through it are
    /// gone and the last handle is dropped.
    pub fn handle(&self) -> LocalityHandle {
        LocalityHandle::new(self.core.shared.clone())
    }

    /// The locality's name (`L<n>` unless named), as it shows in addresses.
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// Registers the locality's one `mio::Waker` on `registry` under `token`,
    /// so that messages from other threads wake your loop. It also lets the
    /// locality's actors register I/O sources on that poll
    /// ([`Context::register_io`](crate::Context::register_io)), under tokens
    /// from [`RESERVED_TOKENS`] up.
    ///
    /// Errors: [`ErrorCode::TokenClash`] if `token` is reserved (at or above
    /// [`RESERVED_TOKENS`]); [`ErrorCode::AlreadyRegisteredOnPoll`] if the
    /// locality is driven by a loop already (registered, given a
    /// [waker](Locality::set_waker), or in a backend), or if this poll
    /// already carries another locality (mio allows one waker per poll);
    /// [`ErrorCode::Io`] from mio.
    ///
    /// Keep the poll at least as long as the locality: a poll is known by
    /// its descriptor, so one closed first stays claimed until the locality
    /// is dropped, and a new poll that gets the same descriptor meanwhile is
    /// refused with `AlreadyRegisteredOnPoll`.
    pub fn register(&mut self, registry: &mio::Registry, token: mio::Token) -> Result<()> {
        if token.0 >= RESERVED_TOKENS {
            return Err(Error::new(ErrorCode::TokenClash)
                .with_context(format!("token {} is reserved", token.0)));
        }
        self.check_not_driven()?;
        let poll = PollClaim::claim(registry, self.name())?;
        let waker = mio::Waker::new(registry, token)?;
        self.attach_io(registry)?;
        self.core.shared.set_waker(shared::Waker::Mio(waker));
        self.waker_token = Some(token);
        self.poll = Some(poll);
        Ok(())
    }

    /// `true` if `token` belongs to this locality (its waker or its I/O):
    /// pass such events to [`on_event`](Locality::on_event).
    pub fn handles(&self, token: mio::Token) -> bool {
        self.waker_token == Some(token) || self.core.io.borrow().owns(token)
    }

    /// Takes a mio event that [`handles`](Locality::handles) said is ours.
    ///
    /// A wake-up needs no work here: the next `dispatch` drains the inbox.
    /// Readiness of an actor's source becomes an [`Io`](crate::Io) message to
    /// the actor (a late event for a closed source is ignored).
    pub fn on_event(&mut self, event: &mio::event::Event) {
        let target = self.core.io.borrow().target(event.token());
        if let Some((id, address)) = target {
            let message = crate::io::readiness(id, event);
            self.core.enqueue(crate::message::UserEnvelope {
                dest: address,
                sender: Key::NONE,
                message,
            });
        }
    }

    /// Runs what is due at `now`: messages from other threads, due timers, and
    /// the queue, up to the budget. Returns how many items it handled.
    ///
    /// The first `now` sets the clock (even if it is earlier than the
    /// locality's creation); after that, `now` never moves it backwards. When
    /// the budget runs out with work left, [`has_pending`](Locality::has_pending)
    /// is `true`: poll without waiting and dispatch again.
    pub fn dispatch(&mut self, now: Instant) -> usize {
        self.dispatch_at_most(now, self.budget)
    }

    /// [`dispatch`](Locality::dispatch) with `budget` items at most (a
    /// backend that shares its thread with other tasks takes less).
    pub(crate) fn dispatch_at_most(&mut self, now: Instant, budget: usize) -> usize {
        self.core.check_finished();
        let core = &mut self.core;
        if now > core.now || !core.clock_set {
            core.set_now(now);
            core.clock_set = true;
        }
        let budget = budget.max(1);
        let mut done = 0;
        while done < budget && !core.is_finished() {
            core.drain_mail();
            done += crate::future::poll_ready(core, budget - done);
            // Only the timers due when this round began: a timer that
            // re-arms itself at once waits for the next round, so it cannot
            // starve the queue, the inbox or the poll.
            done += core.fire_due_timers(budget - done);
            if done >= budget || core.is_finished() {
                break;
            }
            let before = done;
            done = core.run_queue(done, budget);
            if done == before
                && !core.shared.has_mail()
                && core.next_deadline().is_none_or(|d| d > core.now)
            {
                break;
            }
        }
        // What actors here sent to other localities goes in one batch each.
        self.core.flush_outboxes();
        // A handle dropped during this dispatch (by an actor here, or by
        // another thread) set the mail flag, which the loop above may have
        // consumed: look again, or nothing would wake us to finish.
        self.core.check_finished();
        done
    }

    /// Dispatches at `now` until nothing is left to do at that time (for
    /// tests on a manual clock, and for loops that want no budget).
    pub fn run_until_idle(&mut self, now: Instant) -> usize {
        let mut done = self.dispatch(now);
        while self.has_pending() {
            done += self.dispatch(now);
        }
        done
    }

    /// Sets how many user messages from other threads (and from actors of
    /// other localities) may wait in this locality's inbox; when it is full,
    /// [`Address::send`] hands the message back with
    /// [`ErrorCode::InboxFull`], [`Address::send_blocking`] waits, and
    /// [`Context::send`](crate::Context::send) drops it and counts it in
    /// [`Stats::dropped_full`]. Framework traffic and replies are never
    /// refused for room. Default: [`DEFAULT_INBOX_CAPACITY`]; values above
    /// [`MAX_INBOX_CAPACITY`] are taken as it. Lowering it refuses new
    /// messages until the inbox drains below it; nothing admitted is dropped.
    ///
    /// Errors: [`ErrorCode::InvalidArgument`] for zero.
    pub fn set_inbox_capacity(&mut self, capacity: usize) -> Result<()> {
        if capacity == 0 {
            return Err(Error::new(ErrorCode::InvalidArgument)
                .with_context("an inbox capacity of zero would refuse every message"));
        }
        self.core
            .shared
            .set_inbox_capacity(capacity.min(MAX_INBOX_CAPACITY));
        Ok(())
    }

    /// The inbox capacity (see [`set_inbox_capacity`](Locality::set_inbox_capacity)).
    pub fn inbox_capacity(&self) -> usize {
        self.core.shared.inbox_capacity()
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

    /// The earliest timer deadline, if any timer is pending (user timers,
    /// request timeouts, lifecycle timeouts and restart delays alike). With a
    /// manual clock, dispatch at this instant to fire it.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.core.next_deadline()
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

    /// For a loop that tells when it blocks: `false` while it runs (senders
    /// from other threads then skip the waker), `true` just before it blocks;
    /// returns `true` if mail came meanwhile and it must not block.
    pub(crate) fn set_parked(&self, parked: bool) -> bool {
        self.core.shared.set_parked(parked)
    }

    /// `true` if messages from other threads are waiting.
    pub(crate) fn has_mail(&self) -> bool {
        self.core.shared.has_mail()
    }

    /// `true` if an actor was ever anchored here or a handle was made.
    pub(crate) fn is_served(&self) -> bool {
        self.core.shared.served()
    }

    /// `true` once every root actor (and every child of a supervisor on
    /// another locality) has shut down and no [`LocalityHandle`] is left, or
    /// once a contract was violated.
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
            let error = self.core.shared.finished_error();
            return Builder::with_parent(&mut self.core, Parent::Invalid(error), actor);
        }
        Builder::new(&mut self.core, None, actor)
    }

    /// Starts building a child of the supervisor at `supervisor` (an address
    /// of this locality, of an actor built with
    /// [`Builder::supervisor`]).
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

    /// Starts building a child of the supervisor at `supervisor` (here), made
    /// on the locality of `locality` (see [`Context::spawn_on`](crate::Context::spawn_on)).
    pub fn spawn_on<A: Actor>(
        &mut self,
        locality: &LocalityHandle,
        supervisor: &Address,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Builder<'_, A, crate::Elsewhere<A>> {
        let parent = self.parent(supervisor);
        Builder::elsewhere(&mut self.core, parent, locality, factory)
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
            .routes
            .address(address.key())
            .map(|slot| slot.owner)
            .ok_or_else(|| address.stale_error())
    }

    /// Sends a message from outside any actor (from the loop's own code).
    /// Inspection shows its sender as `outside`.
    ///
    /// To an address of this locality, the message is queued (no bound: the
    /// loop's own code is not throttled). To another locality, this is
    /// [`Address::send`]: it never blocks.
    ///
    /// Errors, with the message handed back: [`ErrorCode::LocalityFinished`]
    /// if this locality or the destination's has finished;
    /// [`ErrorCode::InboxFull`] if the destination's inbox is full.
    pub fn send<M: Send + 'static>(
        &mut self,
        to: &Address,
        message: M,
    ) -> Result<(), SendError<M>> {
        if self.is_finished() {
            let error = self.core.shared.finished_error();
            return Err(SendError { message, error });
        }
        if to.locality_id() != self.core.id() {
            // Another locality's inbox: handed back if it has finished.
            return to.locality().post_user(to.key(), Key::NONE, message);
        }
        // What this thread posted with `Address::send` before comes first.
        self.core.drain_all_mail();
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

    /// Asks every root to shut down, with `reason` (`System`'s shutdown flag).
    pub(crate) fn shutdown_roots(&mut self, reason: &Error) {
        let roots: Vec<Address> = self
            .core
            .actors
            .values()
            .filter(|c| c.parent.is_none())
            .filter_map(|c| Core::main_address(&self.core.routes, c).cloned())
            .collect();
        for root in roots {
            if let Ok(actor) = self.local_actor(&root) {
                lifecycle::request_own_shutdown(&mut self.core, actor, reason.clone());
            }
        }
    }

    /// The locality's dead-letter address (made on first call): subscribe
    /// to [`DeadLetter`](crate::DeadLetter) there to receive the user
    /// messages that could not be delivered (see the example there).
    pub fn dead_letters(&mut self) -> Address {
        crate::dead_letter::address(&mut self.core)
    }

    /// Prints the payload of messages of type `M` on inspection lines
    /// (`Ping(3)` instead of `Ping`), through its `Debug`; other types
    /// show their name only.
    pub fn inspect_payload<M: std::fmt::Debug + 'static>(&mut self) {
        fn print<M: std::fmt::Debug + 'static>(message: &dyn std::any::Any) -> String {
            message
                .downcast_ref::<M>()
                .map_or_else(String::new, |m| format!("{m:?}"))
        }
        self.core
            .inspect
            .printers
            .insert(std::any::TypeId::of::<M>(), print::<M>);
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

    /// The registry the actor at `address` uses: for a supervisor made
    /// [`with_registry`](crate::SupervisorConfig::with_registry), the one
    /// it made for its subtree; else the one it inherited or was given.
    /// `None` if it uses none, or is not an actor of this locality.
    pub fn registry_of(&self, address: &Address) -> Option<Address> {
        let actor = self.local_actor(address).ok()?;
        let cell = self.core.actors.get(actor)?;
        let own = cell.supervisor.as_ref().and_then(|s| s.registry.as_deref());
        own.or_else(|| crate::actor::registry_of(&self.core, cell).map(|r| &**r))
            .cloned()
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
            addresses: c.routes.addresses(),
            subscriptions: c.routes.subscriptions(),
            timers: c.timers.len() + c.requests.len(),
            io: c.io.borrow().len(),
            futures: c.futures.len(),
            requests: c.requests.len(),
            queued: c.queue.len(),
            inbox: c.shared.inbox_len(),
            ..c.stats
        }
    }
}

impl Drop for Locality {
    /// A locality dropped before it finished abandons its actors: their
    /// supervisors on other localities get a `ChildDown` with
    /// [`ErrorCode::LocalityLost`] (naming this locality), their linked
    /// servers elsewhere are released, and its supervisors' children and
    /// linked clients elsewhere are asked to go.
    fn drop(&mut self) {
        if !self.core.is_finished() {
            let lost = Error::new(ErrorCode::LocalityLost).with_context(self.name().to_string());
            self.core.abandon(&lost);
        }
        self.core.shared.close();
    }
}

//! [`Context`]: what a handler or hook can do with its locality.

use crate::actor::{Actor, ActorState, with_actor};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::Core;
use crate::locality::fire::TimerAction;
use crate::request::{self, Request, RequestId, RequestMsg};
use crate::subscription;
use crate::timer::TimerId;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

mod delivery;
mod lifecycle_calls;
pub use self::lifecycle_calls::Discovery;

/// Names a subscription, for [`Context::unsubscribe`]; returned by
/// [`Context::subscribe`], [`subscribe_on`](Context::subscribe_on) and
/// [`subscribe_external`](Context::subscribe_external).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SubscriptionId(pub(crate) Key);

impl SubscriptionId {
    /// Names no subscription: what [`Context::subscribe`] returns when it
    /// subscribes nothing (called from `shutdown_finish`).
    /// [`Context::unsubscribe`] refuses it.
    pub const NONE: SubscriptionId = SubscriptionId(Key::NONE);

    /// `true` for [`SubscriptionId::NONE`]: nothing was subscribed.
    pub fn is_none(self) -> bool {
        self.0.is_none()
    }
}

impl TimerId {
    /// Names no timer: what [`Context::start_timer`] returns when it starts
    /// none (called from `shutdown_finish`). Cancelling it returns `false`.
    pub const NONE: TimerId = TimerId(Key::NONE);

    /// `true` for [`TimerId::NONE`]: no timer was started.
    pub fn is_none(self) -> bool {
        self.0.is_none()
    }
}

impl RequestId {
    /// Names no request: what [`Context::request`] returns when it sends
    /// none (called from `shutdown_finish`); no response will come.
    /// Cancelling it returns `false`.
    pub const NONE: RequestId = RequestId {
        locality: u32::MAX,
        key: Key::NONE,
    };

    /// `true` for [`RequestId::NONE`]: no request was sent.
    pub fn is_none(self) -> bool {
        self.key.is_none()
    }
}

/// The actor's view of its locality while one of its handlers or hooks runs.
///
/// Everything a context does is queued or recorded: sends are delivered after
/// the current handler returns, in FIFO order, never re-entrantly. A context
/// cannot leave its thread (`!Send`) and lives only for the call it was
/// given to; keep [`Address`]es, ids and data in the actor, not the context.
///
/// What it offers, by topic:
///
/// - who am I: [`address`](Context::address), [`name`](Context::name),
///   [`state`](Context::state), [`shutdown_reason`](Context::shutdown_reason),
///   [`supervisor`](Context::supervisor),
///   [`now`](Context::now) (the locality's clock);
/// - messages: [`send`](Context::send), [`subscribe`](Context::subscribe),
///   [`subscribe_on`](Context::subscribe_on),
///   [`subscribe_external`](Context::subscribe_external),
///   [`unsubscribe`](Context::unsubscribe),
///   [`create_address`](Context::create_address);
/// - time: [`start_timer`](Context::start_timer),
///   [`cancel_timer`](Context::cancel_timer);
/// - requests: [`request`](Context::request),
///   [`request_via`](Context::request_via), [`reply`](Context::reply),
///   [`reply_error`](Context::reply_error),
///   [`cancel_request`](Context::cancel_request);
/// - children (supervisors only): [`spawn`](Context::spawn),
///   [`spawn_with`](Context::spawn_with), [`spawn_on`](Context::spawn_on);
/// - the lifecycle: [`link`](Context::link),
///   [`link_then`](Context::link_then), [`unlink`](Context::unlink),
///   [`watch`](Context::watch), [`unwatch`](Context::unwatch),
///   [`register_name`](Context::register_name),
///   [`discover`](Context::discover),
///   [`acquire_resource`](Context::acquire_resource),
///   [`release_resource`](Context::release_resource),
///   [`continue_lifecycle`](Context::continue_lifecycle),
///   [`shutdown`](Context::shutdown), [`fail`](Context::fail),
///   [`shutdown_supervisor`](Context::shutdown_supervisor);
/// - I/O: [`register_io`](Context::register_io).
///
/// # In `shutdown_finish`
///
/// [`Actor::shutdown_finish`] is the actor's last call: its subscriptions,
/// timers, pending requests, addresses and I/O are freed right after it.
/// What would start something there is refused, so that nothing leaves an
/// actor that has finished: calls that return a `Result`
/// ([`subscribe_on`](Context::subscribe_on),
/// [`subscribe_external`](Context::subscribe_external),
/// [`create_address`](Context::create_address),
/// [`request_via`](Context::request_via),
/// [`register_io`](Context::register_io), [`link`](Context::link),
/// [`link_then`](Context::link_then), [`watch`](Context::watch), the
/// `spawn` builders) fail with
/// [`ErrorCode::ActorFinished`] (`SupervisorShuttingDown` for a spawn);
/// [`subscribe`](Context::subscribe), [`start_timer`](Context::start_timer)
/// and [`request`](Context::request) do nothing and return their id's
/// `NONE` ([`SubscriptionId::NONE`], [`TimerId::NONE`],
/// [`RequestId::NONE`]); [`discover`](Context::discover) and
/// [`acquire_resource`](Context::acquire_resource) do nothing (each logs a
/// warning). Sending, replying, cancelling and unsubscribing still work.
///
/// # Examples
///
/// A metronome that sends itself a `Tick` every second and stops after
/// three, driven by a manual clock (no sleeping):
///
/// ```
/// use commutator::*;
/// use std::time::Duration;
///
/// struct Tick;
///
/// #[derive(Default)]
/// struct Metronome {
///     ticks: u32,
/// }
/// impl Actor for Metronome {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(Self::on_tick); // handlers are subscribed during init
///     }
///     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.start_timer(Duration::from_secs(1), Self::on_timer);
///     }
/// }
/// impl Metronome {
///     fn on_timer(&mut self, ctx: &mut Context<'_, Self>, _: TimerId) {
///         let me = ctx.address().clone();
///         ctx.send(&me, Tick); // queued: delivered after this call returns
///         ctx.start_timer(Duration::from_secs(1), Self::on_timer); // timers fire once
///     }
///     fn on_tick(&mut self, _: &Tick, ctx: &mut Context<'_, Self>) {
///         self.ticks += 1;
///         if self.ticks == 3 {
///             ctx.shutdown(); // a root: nothing is left, the locality finishes
///         }
///     }
/// }
///
/// let mut locality = Locality::new();
/// let t0 = locality.now();
/// let metronome = locality.spawn_root(Metronome::default()).finish()?;
/// locality.run_until_idle(t0);
/// assert_eq!(locality.state_of(&metronome), Some(ActorState::Operational));
/// for second in 1..=3 {
///     locality.run_until_idle(t0 + Duration::from_secs(second));
/// }
/// assert!(locality.is_finished());
/// # Ok::<(), commutator::Error>(())
/// ```
pub struct Context<'a, A: Actor> {
    pub(crate) core: &'a mut Core,
    pub(crate) me: Key,
    /// In `shutdown_finish`: nothing may be started any more.
    pub(crate) finishing: bool,
    /// Where a handler keeps the route of its last send
    /// (`Core::send_routed`; one word, `Key::to_word`), if this context is
    /// a handler's.
    route: Option<&'a mut u64>,
    _actor: PhantomData<fn(&mut A)>,
}

impl<A: Actor> fmt::Debug for Context<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Context({})", self.address())
    }
}

impl<'a, A: Actor> Context<'a, A> {
    pub(crate) fn new(core: &'a mut Core, me: Key) -> Self {
        Context {
            core,
            me,
            finishing: false,
            route: None,
            _actor: PhantomData,
        }
    }

    /// A handler's context, whose sends keep their route in `route`.
    #[inline(always)]
    pub(crate) fn with_route(core: &'a mut Core, me: Key, route: &'a mut u64) -> Self {
        Context {
            core,
            me,
            finishing: false,
            route: Some(route),
            _actor: PhantomData,
        }
    }

    /// In `shutdown_finish`, the error for `call`, which would start
    /// something that could never run.
    fn finished(&self, call: &str) -> Option<Error> {
        self.finishing.then(|| {
            let why = format!("{}: {call} in shutdown_finish", self.address());
            Error::new(ErrorCode::ActorFinished).with_context(why)
        })
    }

    /// In `shutdown_finish`, `true` (and a warning) for a `call` that then
    /// does nothing.
    #[inline(always)]
    fn ignored(&self, call: &str) -> bool {
        if self.finishing {
            self.warn_ignored(call);
        }
        self.finishing
    }

    #[cold]
    #[inline(never)]
    fn warn_ignored(&self, call: &str) {
        tracing::warn!(actor = %self.address(), call, "ignored: called in shutdown_finish");
    }

    fn cell(&self) -> &crate::actor::ActorCell {
        self.core
            .actors
            .get(self.me)
            .expect("a running actor has its cell")
    }

    /// The actor's main address.
    pub fn address(&self) -> &Address {
        self.core
            .address_of(self.me)
            .expect("a running actor has its main address")
    }

    /// The actor's name (as given to the builder, or its type name).
    pub fn name(&self) -> &str {
        self.address().actor_name()
    }

    /// The actor's lifecycle state.
    pub fn state(&self) -> ActorState {
        self.cell().state
    }

    /// Why the actor is shutting down: `Some` from its `shutdown_start`
    /// on (and in `shutdown_finish`), `None` before.
    pub fn shutdown_reason(&self) -> Option<&Error> {
        self.core.reasons.get(&self.me)
    }

    /// The locality's clock: the latest `now` given to
    /// [`Locality::dispatch`](crate::Locality::dispatch) (it never moves
    /// backwards). Read time here rather than from `Instant::now()`, and
    /// tests can drive the actor with a manual clock.
    pub fn now(&self) -> Instant {
        self.core.now
    }

    /// Sends a message to any address: of this locality, or of another one.
    ///
    /// Messages from one sender to one address arrive in the order sent.
    /// A message nobody is subscribed to when it arrives is dropped (and counted).
    /// It never blocks: a message for another locality whose inbox is full
    /// is dropped and counted in [`Stats::dropped_full`](crate::Stats::dropped_full)
    /// (use [`try_send`](Context::try_send) to keep it).
    #[inline(always)]
    pub fn send<M: Send + 'static>(&mut self, to: &Address, message: M) {
        match self.route.as_deref_mut() {
            Some(route) => self.core.send_routed(to, self.me, message, route),
            None => self.core.send(to, self.me, message),
        }
    }

    /// Subscribes `handler` to messages of type `M` on the actor's main address.
    ///
    /// `handler` is usually a method: `ctx.subscribe(Self::on_ping)`. A
    /// closure needs only its message type spelled out, the rest is
    /// inferred: `ctx.subscribe(|me, ping: &Ping, ctx| ...)`. In
    /// `shutdown_finish` it subscribes nothing and returns
    /// [`SubscriptionId::NONE`].
    pub fn subscribe<M, F>(&mut self, handler: F) -> SubscriptionId
    where
        M: 'static,
        F: Fn(&mut A, &M, &mut Context<'_, A>) + 'static,
    {
        if self.ignored("subscribe") {
            return SubscriptionId::NONE;
        }
        let address = self.cell().main;
        self.subscribe_key(address, handler)
            .expect("an actor's own main address is live while it runs")
    }

    /// Subscribes `handler` to messages of type `M` on any address of this
    /// locality: an identity of this actor, or an address of another actor.
    ///
    /// Several subscribers of one (address, type) all get each message, in
    /// subscription order. Errors: [`ErrorCode::StaleAddress`] if the address
    /// is gone, [`ErrorCode::ForeignAddress`] if another locality serves it,
    /// [`ErrorCode::ActorFinished`] in `shutdown_finish`.
    pub fn subscribe_on<M, F>(&mut self, address: &Address, handler: F) -> Result<SubscriptionId>
    where
        M: 'static,
        F: Fn(&mut A, &M, &mut Context<'_, A>) + 'static,
    {
        if let Some(error) = self.finished("subscribe_on") {
            return Err(error);
        }
        if address.locality_id() != self.core.id() {
            return Err(Error::new(ErrorCode::ForeignAddress).with_context(address.to_string()));
        }
        self.subscribe_key(address.key(), handler)
            .ok_or_else(|| address.stale_error())
    }

    /// Subscribes `handler` to messages of type `M` on an address of any
    /// locality, also one on another thread (an "external subscription"):
    /// that locality forwards a clone of each message here, in order.
    /// Unsubscribing is confirmed by the other locality; the actor's shutdown
    /// waits for it. On an address of this locality it is `subscribe_on`.
    ///
    /// Errors: [`ErrorCode::StaleAddress`] for a gone address of this locality
    /// (a gone address elsewhere simply forwards nothing);
    /// [`ErrorCode::ActorFinished`] in `shutdown_finish`.
    pub fn subscribe_external<M, F>(
        &mut self,
        address: &Address,
        handler: F,
    ) -> Result<SubscriptionId>
    where
        M: Clone + Send + 'static,
        F: Fn(&mut A, &M, &mut Context<'_, A>) + 'static,
    {
        if address.locality_id() == self.core.id() {
            return self.subscribe_on(address, handler);
        }
        let identity = self.create_address("external")?;
        let local = self
            .subscribe_key(identity.key(), handler)
            .ok_or_else(|| identity.stale_error())?;
        crate::plugin::external::subscribe::<M>(self.core, self.me, local.0, identity, address);
        Ok(local)
    }

    fn subscribe_key<M, F>(&mut self, address: Key, handler: F) -> Option<SubscriptionId>
    where
        M: 'static,
        F: Fn(&mut A, &M, &mut Context<'_, A>) + 'static,
    {
        let actor = crate::actor::typed_actor::<A>(self.core, self.me)?;
        let handler = Box::new(crate::actor::ActorHandler::new(actor, self.me, handler));
        subscription::subscribe::<M>(self.core, address, self.me, handler).map(SubscriptionId)
    }

    /// Removes one of this actor's subscriptions. The handler is not called
    /// again, not even for a message whose delivery is under way.
    ///
    /// Errors: [`ErrorCode::UnknownSubscription`] if it is gone or not this actor's.
    pub fn unsubscribe(&mut self, id: SubscriptionId) -> Result<()> {
        match self.core.routes.owner(id.0) {
            Some(owner) if owner == self.me => {
                if !crate::plugin::external::unsubscribe(self.core, self.me, id.0) {
                    subscription::unsubscribe(self.core, id.0);
                }
                Ok(())
            }
            _ => Err(Error::new(ErrorCode::UnknownSubscription)),
        }
    }

    /// Creates another address of this actor (an "identity"), freed when the
    /// actor shuts down. `label` shows in its `Display`: `L0/client#4:replies`.
    ///
    /// Errors: [`ErrorCode::ActorFinished`] in `shutdown_finish` (the
    /// address would be freed at once).
    pub fn create_address(&mut self, label: impl Into<Cow<'static, str>>) -> Result<Address> {
        if let Some(error) = self.finished("create_address") {
            return Err(error);
        }
        Ok(self.core.create_identity(self.me, label.into()))
    }

    /// Removes an identity made with [`create_address`](Context::create_address),
    /// with every subscription on it; messages to it are dropped from then on.
    ///
    /// Errors: [`ErrorCode::InvalidArgument`] if it is not an identity of this
    /// actor (its main address cannot be removed).
    pub fn remove_address(&mut self, address: &Address) -> Result<()> {
        let mine = address.locality_id() == self.core.id()
            && self
                .cell()
                .rare
                .as_deref()
                .is_some_and(|r| r.identities.contains(&address.key()));
        if !mine {
            let why = format!("{address} is not an identity of {}", self.address());
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        self.core.remove_identity(self.me, address);
        Ok(())
    }

    /// Calls `callback` once, `after` from now (the locality's clock).
    ///
    /// Timers fire in deadline order, ties in start order. A method or a
    /// closure that captures nothing costs no allocation. In
    /// `shutdown_finish` it starts nothing (`callback` is dropped uncalled)
    /// and returns [`TimerId::NONE`].
    pub fn start_timer<F>(&mut self, after: Duration, callback: F) -> TimerId
    where
        F: FnOnce(&mut A, &mut Context<'_, A>, TimerId) + 'static,
    {
        if self.ignored("start_timer") {
            return TimerId::NONE;
        }
        let run = move |core: &mut Core, me: Key, id: TimerId| {
            with_actor::<A>(core, me, |a, ctx| callback(a, ctx, id))
        };
        let key = self
            .core
            .start_timer(after, self.me, TimerAction::User(Box::new(run)));
        TimerId(key)
    }

    /// Cancels one of this actor's timers. `true` if it was pending; cancelling
    /// again, or a timer that fired, is a no-op that returns `false`.
    pub fn cancel_timer(&mut self, id: TimerId) -> bool {
        if self.core.timers.owner(id.0) != Some(self.me) {
            return false;
        }
        self.core.cancel_timer(id.0)
    }

    /// Sends a request to `to`; the [`Response<R>`](crate::Response) comes back
    /// to this actor's main address (subscribe to it), exactly once: the reply,
    /// the server's error, or `RequestTimeout` after `timeout` (counted on the
    /// locality's clock from now), or `Cancelled`
    /// ([`cancel_request`](Context::cancel_request)).
    ///
    /// The server sees a [`RequestMsg<R>`](crate::RequestMsg). Whenever the
    /// request ends without a reply, the server is told with a
    /// [`CancelRequest<R>`](crate::CancelRequest) (so it can stop working on
    /// it): at the timeout, on `cancel_request`, and when this actor shuts
    /// down first (its pending requests end with it, and no response is
    /// delivered). A reply that comes after that is dropped. In
    /// `shutdown_finish` nothing is sent, no response will come, and it
    /// returns [`RequestId::NONE`]. See the example on
    /// [`Request`](crate::Request).
    pub fn request<R: Request>(
        &mut self,
        to: &Address,
        payload: R,
        timeout: Duration,
    ) -> RequestId {
        if self.ignored("request") {
            return RequestId::NONE;
        }
        request::send(self.core, self.me, None, to, payload, timeout)
    }

    /// Like [`request`](Context::request), with the response going to
    /// `reply_to`, one of this actor's addresses (e.g. an identity), so that
    /// replies to several requests can be told apart by where they arrive.
    ///
    /// Errors: [`ErrorCode::InvalidArgument`] if `reply_to` is not this
    /// actor's; [`ErrorCode::ActorFinished`] in `shutdown_finish`.
    pub fn request_via<R: Request>(
        &mut self,
        reply_to: &Address,
        to: &Address,
        payload: R,
        timeout: Duration,
    ) -> Result<RequestId> {
        if let Some(error) = self.finished("request_via") {
            return Err(error);
        }
        let mine = reply_to.locality_id() == self.core.id()
            && self
                .core
                .routes
                .address(reply_to.key())
                .is_some_and(|slot| slot.owner == self.me);
        if !mine {
            let context = format!("{reply_to} is not an address of {}", self.address());
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(context));
        }
        Ok(request::send(
            self.core,
            self.me,
            Some(reply_to.key()),
            to,
            payload,
            timeout,
        ))
    }

    /// Replies to a request (now, or later from a kept clone of it).
    /// Only the first reply counts; later ones are dropped.
    #[inline]
    pub fn reply<R: Request>(&mut self, request: &RequestMsg<R>, value: R::Response) {
        request::reply(self.core, self.me, request, Ok(value));
    }

    /// Replies to a request with an error instead of a value.
    pub fn reply_error<R: Request>(&mut self, request: &RequestMsg<R>, error: Error) {
        request::reply(self.core, self.me, request, Err(error));
    }

    /// Cancels a pending request of this actor: its response comes with
    /// `Cancelled`, and the server gets a [`CancelRequest<R>`](crate::CancelRequest).
    /// `false` if the request is not pending (already settled, or not this actor's).
    pub fn cancel_request(&mut self, id: RequestId) -> bool {
        request::cancel(self.core, self.me, id)
    }

    /// When request `id` (of this locality, still pending) times out: for
    /// a bridge that carries the deadline to a server elsewhere.
    #[cfg(feature = "nats")]
    pub(crate) fn request_deadline(&self, id: RequestId) -> Option<Instant> {
        (id.locality == self.core.id())
            .then(|| self.core.requests.deadline(id.key))
            .flatten()
            .map(|t| self.core.instant_of(t))
    }
}

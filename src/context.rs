//! [`Context`]: what a handler or hook can do with its locality.

use crate::actor::{Actor, ActorState, with_actor};
use crate::address::Address;
use crate::arena::Key;
use crate::builder::Builder;
use crate::error::{Error, ErrorCode, Result, SendError};
use crate::lifecycle::{self, SystemMsg};
use crate::locality::Core;
use crate::request::{self, Request, RequestId, RequestMsg};
use crate::subscription;
use crate::timer::{TimerAction, TimerId};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Names a subscription, for [`Context::unsubscribe`]; returned by
/// [`Context::subscribe`], [`subscribe_on`](Context::subscribe_on) and
/// [`subscribe_external`](Context::subscribe_external).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SubscriptionId(pub(crate) Key);

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
///   [`state`](Context::state), [`supervisor`](Context::supervisor),
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
///   [`register_name`](Context::register_name),
///   [`discover`](Context::discover),
///   [`acquire_resource`](Context::acquire_resource),
///   [`release_resource`](Context::release_resource),
///   [`continue_lifecycle`](Context::continue_lifecycle),
///   [`shutdown`](Context::shutdown), [`fail`](Context::fail),
///   [`shutdown_supervisor`](Context::shutdown_supervisor);
/// - I/O: [`register_io`](Context::register_io).
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
            _actor: PhantomData,
        }
    }

    fn cell(&self) -> &crate::actor::ActorCell {
        self.core
            .actors
            .get(self.me)
            .expect("a running actor has its cell")
    }

    /// The actor's main address.
    pub fn address(&self) -> &Address {
        &self.cell().address
    }

    /// The actor's name (as given to the builder, or its type name).
    pub fn name(&self) -> &str {
        self.cell().name()
    }

    /// The actor's lifecycle state.
    pub fn state(&self) -> ActorState {
        self.cell().state
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
    pub fn send<M: Send + 'static>(&mut self, to: &Address, message: M) {
        self.core.send(to, self.me, message);
    }

    /// As [`send`](Context::send), but a message another locality refuses
    /// ([`ErrorCode::InboxFull`], [`ErrorCode::LocalityFinished`]) is handed
    /// back, not counted. A send to this locality always succeeds.
    pub fn try_send<M: Send + 'static>(&mut self, to: &Address, m: M) -> Result<(), SendError<M>> {
        if to.locality_id() == self.core.id() {
            self.core.send(to, self.me, m);
            return Ok(());
        }
        let sent = self.core.post_remote(to, m);
        let outcome = ["to another locality", "handed back"][sent.is_err() as usize];
        crate::inspect::forwarded::<M>(self.core, self.me, to, outcome);
        sent
    }

    /// Subscribes `handler` to messages of type `M` on the actor's main address.
    ///
    /// `handler` is usually a method: `ctx.subscribe(Self::on_ping)`.
    pub fn subscribe<M, F>(&mut self, handler: F) -> SubscriptionId
    where
        M: 'static,
        F: Fn(&mut A, &M, &mut Context<'_, A>) + 'static,
    {
        let address = self.cell().address.key();
        self.subscribe_key(address, handler)
            .expect("an actor's own main address is live while it runs")
    }

    /// Subscribes `handler` to messages of type `M` on any address of this
    /// locality: an identity of this actor, or an address of another actor.
    ///
    /// Several subscribers of one (address, type) all get each message, in
    /// subscription order. Errors: [`ErrorCode::StaleAddress`] if the address
    /// is gone, [`ErrorCode::ForeignAddress`] if another locality serves it.
    pub fn subscribe_on<M, F>(&mut self, address: &Address, handler: F) -> Result<SubscriptionId>
    where
        M: 'static,
        F: Fn(&mut A, &M, &mut Context<'_, A>) + 'static,
    {
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
    /// (a gone address elsewhere simply forwards nothing).
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
        let identity = self.create_address("external");
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
        let f: subscription::HandlerFn<M> =
            Rc::new(move |core: &mut Core, me: Key, message: &M| {
                with_actor::<A>(core, me, |actor, ctx| handler(actor, message, ctx))
            });
        subscription::subscribe(self.core, address, self.me, f).map(SubscriptionId)
    }

    /// Removes one of this actor's subscriptions. The handler is not called
    /// again, not even for a message whose delivery is under way.
    ///
    /// Errors: [`ErrorCode::UnknownSubscription`] if it is gone or not this actor's.
    pub fn unsubscribe(&mut self, id: SubscriptionId) -> Result<()> {
        match self.core.subscriptions.get(id.0) {
            Some(record) if record.actor == self.me => {
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
    pub fn create_address(&mut self, label: impl Into<Cow<'static, str>>) -> Address {
        self.core.create_identity(self.me, label.into())
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
    /// closure that captures nothing costs no allocation.
    pub fn start_timer<F>(&mut self, after: Duration, callback: F) -> TimerId
    where
        F: FnOnce(&mut A, &mut Context<'_, A>, TimerId) + 'static,
    {
        let deadline = self.core.deadline(after);
        let run = move |core: &mut Core, me: Key, id: TimerId| {
            with_actor::<A>(core, me, |a, ctx| callback(a, ctx, id))
        };
        let key = self
            .core
            .timers
            .start(deadline, self.me, TimerAction::User(Box::new(run)));
        if let Some(cell) = self.core.actors.get_mut(self.me) {
            cell.rare().timers.push(key);
        }
        TimerId(key)
    }

    /// Cancels one of this actor's timers. `true` if it was pending; cancelling
    /// again, or a timer that fired, is a no-op that returns `false`.
    pub fn cancel_timer(&mut self, id: TimerId) -> bool {
        if self.core.timers.owner(id.0) != Some(self.me) {
            return false;
        }
        self.core.cancel_user_timer(self.me, id.0)
    }

    /// Sends a request to `to`; the [`Response<R>`](crate::Response) comes back
    /// to this actor's main address (subscribe to it), exactly once: the reply,
    /// the server's error, or `RequestTimeout` after `timeout` (counted on the
    /// locality's clock from now), or `Cancelled`
    /// ([`cancel_request`](Context::cancel_request)).
    ///
    /// The server sees a [`RequestMsg<R>`](crate::RequestMsg). If this actor
    /// shuts down first, its pending requests end with it: the servers get a
    /// [`CancelRequest<R>`](crate::CancelRequest) and no response is
    /// delivered. See the example on [`Request`](crate::Request).
    pub fn request<R: Request>(
        &mut self,
        to: &Address,
        payload: R,
        timeout: Duration,
    ) -> RequestId {
        let reply_to = self.address().clone();
        request::send(self.core, self.me, reply_to, to, payload, timeout)
    }

    /// Like [`request`](Context::request), with the response going to
    /// `reply_to`, one of this actor's addresses (e.g. an identity), so that
    /// replies to several requests can be told apart by where they arrive.
    ///
    /// Errors: [`ErrorCode::InvalidArgument`] if `reply_to` is not this actor's.
    pub fn request_via<R: Request>(
        &mut self,
        reply_to: &Address,
        to: &Address,
        payload: R,
        timeout: Duration,
    ) -> Result<RequestId> {
        let mine = reply_to.locality_id() == self.core.id()
            && self
                .core
                .addresses
                .get(reply_to.key())
                .is_some_and(|slot| slot.owner == self.me);
        if !mine {
            let context = format!("{reply_to} is not an address of {}", self.address());
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(context));
        }
        Ok(request::send(
            self.core,
            self.me,
            reply_to.clone(),
            to,
            payload,
            timeout,
        ))
    }

    /// Replies to a request (now, or later from a kept clone of it).
    /// Only the first reply counts; later ones are dropped.
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

    /// Links this actor (the client) to the actor at `server`, which will then
    /// outlive it: when the server shuts down, it first asks this actor to
    /// unlink (to shut down, with reason `UnlinkRequested`) and waits for it.
    ///
    /// During init, init waits for the server's confirmation; a refused or
    /// failed link fails init (`LinkFailed`). Afterwards, it shuts the actor down.
    pub fn link(&mut self, server: &Address) {
        crate::plugin::link::request(self.core, self.me, server);
    }

    /// Registers this actor's main address under `name` in its registry (see
    /// [`SupervisorConfig::with_registry`](crate::SupervisorConfig::with_registry)).
    /// Init waits for the answer and fails with `AlreadyRegistered` if the
    /// name is taken (after init, the actor shuts down with that reason). The
    /// name is deregistered when the actor shuts down.
    /// [`Builder::register_as`](crate::Builder::register_as) does the same
    /// from the builder.
    pub fn register_name(&mut self, name: impl Into<Cow<'static, str>>) {
        crate::plugin::registry::register(self, name.into());
    }

    /// Starts discovering the address registered under `name`; finish with
    /// [`Discovery::then`]. Init waits for the answer and fails with
    /// `UnknownService` if there is none (unless told to [`wait`](Discovery::wait)).
    ///
    /// Called after init, a discovery does not hold anything, but a failed
    /// one still ends the actor: it shuts down with `UnknownService` as its
    /// reason. The registry is the one the actor was built with (see
    /// [`SupervisorConfig::with_registry`](crate::SupervisorConfig::with_registry)
    /// and [`Builder::registry`](crate::Builder::registry)); with none, the
    /// discovery fails the same way. While the actor has no init timeout, a
    /// discovery that waits may wait for as long as the actor lives. See the
    /// example on [`Registry`](crate::Registry).
    pub fn discover(&mut self, name: impl Into<String>) -> Discovery<'_, 'a, A> {
        Discovery {
            ctx: self,
            name: name.into(),
            wait: false,
            link: false,
        }
    }

    /// Counts one more external resource of `kind` held by this actor: init
    /// does not finish, nor shutdown, while any resource is held.
    pub fn acquire_resource(&mut self, kind: u32) {
        crate::plugin::resources::acquire(self.core, self.me, kind);
    }

    /// Releases one resource of `kind`; the lifecycle continues when none is held.
    ///
    /// Errors: [`ErrorCode::InvalidArgument`] if none of `kind` is held.
    pub fn release_resource(&mut self, kind: u32) -> Result<()> {
        crate::plugin::resources::release(self.core, self.me, kind)
    }

    /// How many resources of `kind` this actor holds.
    pub fn resources_held(&self, kind: u32) -> u32 {
        crate::plugin::resources::held(self.cell().plugins_ref(), kind)
    }

    /// Lets the plugins vote again: call it when something a
    /// [`Plugin`](crate::Plugin) waits for has changed.
    pub fn continue_lifecycle(&mut self) {
        lifecycle::to_self(self.core, self.me, SystemMsg::Poll);
    }

    /// Starts building a child from a factory, so that it can be restarted
    /// (each restart calls `factory` for a new instance); this actor must be
    /// a supervisor.
    pub fn spawn_with<B: Actor>(&mut self, factory: impl FnMut() -> B + 'static) -> Builder<'_, B> {
        Builder::with_factory(self.core, crate::builder::Parent::Local(self.me), factory)
    }

    /// Starts building a child made on another locality (see
    /// [`LocalityHandle`](crate::LocalityHandle)): `factory` is sent there and
    /// called there, so the actor need not be `Send`. This actor must be a
    /// supervisor; the tree then spans localities, and init, start, shutdown,
    /// restarts and escalation compose across them.
    pub fn spawn_on<B: Actor>(
        &mut self,
        locality: &crate::LocalityHandle,
        factory: impl FnMut() -> B + Send + 'static,
    ) -> Builder<'_, B, crate::Elsewhere<B>> {
        Builder::elsewhere(
            self.core,
            crate::builder::Parent::Local(self.me),
            locality,
            factory,
        )
    }

    /// Registers a mio source (a socket, a listener, any `mio::event::Source`)
    /// with the locality's poll; its readiness comes to this actor's main
    /// address as [`Io`](crate::Io) messages (subscribe to `Io`). The guard
    /// owns the source; dropping it deregisters it. To hold init (or
    /// shutdown) until a socket is connected (or closed), pair it with
    /// [`acquire_resource`](Context::acquire_resource).
    ///
    /// Errors: [`ErrorCode::NotRegistered`] if the locality is not on a poll;
    /// [`ErrorCode::Io`] if the operating system refuses.
    pub fn register_io<S: mio::event::Source>(
        &mut self,
        source: S,
        interest: mio::Interest,
    ) -> Result<crate::IoGuard<S>> {
        let address = self.cell().address.key();
        let guard = crate::io::register(&self.core.io, address, source, interest)?;
        if let Some(cell) = self.core.actors.get_mut(self.me) {
            // Forget the sources whose guards were dropped meanwhile.
            let table = self.core.io.borrow();
            let io = &mut cell.plugins().io;
            io.retain(|key| table.contains(*key));
            io.push(guard.id().0);
        }
        Ok(guard)
    }

    /// Starts building a child actor; this actor must be a supervisor (built
    /// with [`Builder::supervisor`]), or `finish` fails with
    /// [`ErrorCode::NotASupervisor`]. Children spawned during `init_start`
    /// hold the supervisor's init until they have initialized.
    pub fn spawn<B: Actor>(&mut self, actor: B) -> Builder<'_, B> {
        Builder::new(self.core, Some(self.me), actor)
    }

    /// Asks this actor's supervisor to shut this actor down, normally (a
    /// root shuts itself down). The supervisor then applies the actor's
    /// restart policy, if any.
    pub fn shutdown(&mut self) {
        lifecycle::request_own_shutdown(self.core, self.me, Error::normal());
    }

    /// Reports a failure: during init, the init fails; afterwards, the actor
    /// is shut down with `error` as its reason, and its supervisor decides
    /// what follows (restart, escalate, ...).
    pub fn fail(&mut self, error: Error) {
        lifecycle::fail(self.core, self.me, error);
    }

    /// Asks this actor's supervisor to shut itself (and so all its children) down.
    /// For a root, which has no supervisor, it shuts the root down. Asking
    /// the root to go is how a program ends: [`System::run`](crate::System::run)
    /// returns once the root has shut down.
    pub fn shutdown_supervisor(&mut self) {
        let parent = self.cell().parent.as_ref().map(|p| p.address.clone());
        match parent {
            Some(parent) => {
                self.core.send_system(
                    &parent,
                    SystemMsg::ShutdownTrigger {
                        child: None,
                        reason: Error::normal(),
                    },
                );
            }
            None => lifecycle::request_own_shutdown(self.core, self.me, Error::normal()),
        }
    }

    /// The supervisor's address, or `None` for a root.
    pub fn supervisor(&self) -> Option<&Address> {
        self.cell().parent.as_ref().map(|p| &p.address)
    }
}

/// A discovery in the making: [`Context::discover`], options, then [`then`](Discovery::then).
#[must_use = "the discovery starts only with `then(...)`"]
pub struct Discovery<'c, 'a, A: Actor> {
    ctx: &'c mut Context<'a, A>,
    name: String,
    wait: bool,
    link: bool,
}

impl<A: Actor> fmt::Debug for Discovery<'_, '_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Discovery")
            .field("name", &self.name)
            .field("wait", &self.wait)
            .field("link", &self.link)
            .finish()
    }
}

impl<A: Actor> Discovery<'_, '_, A> {
    /// Waits until the name is registered instead of failing (a "promise").
    pub fn wait(mut self) -> Self {
        self.wait = true;
        self
    }

    /// Links to the discovered address right away (see [`Context::link`]).
    pub fn link(mut self) -> Self {
        self.link = true;
        self
    }

    /// Sends the discovery; `found` gets the address when it comes. On a
    /// failure `found` is not called: the actor's init fails (or, after
    /// init, the actor shuts down) with the registry's error.
    pub fn then<F>(self, found: F)
    where
        F: FnOnce(&mut A, &Address, &mut Context<'_, A>) + 'static,
    {
        crate::plugin::registry::discover(self.ctx, self.name, self.wait, self.link, found);
    }
}

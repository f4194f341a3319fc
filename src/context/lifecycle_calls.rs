//! What a handler or hook does about its lifecycle and its place in the
//! tree: links, names, resources, children, I/O, shutdown and failure.

use super::Context;
use crate::actor::Actor;
use crate::address::Address;
use crate::builder::Builder;
use crate::error::{Error, Result};
use crate::lifecycle::{self, SystemMsg};
use std::borrow::Cow;
use std::fmt;

impl<'a, A: Actor> Context<'a, A> {
    /// Links this actor (the client) to the actor at `server`, which will then
    /// outlive it: when the server shuts down, it first asks this actor to
    /// unlink, and waits. What the client does then is its
    /// [`Actor::on_unlink`]'s answer: by default it shuts down, with reason
    /// `UnlinkRequested`.
    ///
    /// During init, init waits for the server's confirmation; a refused or
    /// failed link fails init (`LinkFailed`). Afterwards, it shuts the actor
    /// down. To handle a failure instead, use [`link_then`](Context::link_then).
    ///
    /// Errors (at once; nothing is asked): [`ErrorCode::AlreadyLinked`](crate::ErrorCode::AlreadyLinked) if
    /// this actor is linked to `server` or asked already;
    /// [`ErrorCode::ActorFinished`](crate::ErrorCode::ActorFinished) in `shutdown_finish`.
    pub fn link(&mut self, server: &Address) -> Result<()> {
        if let Some(error) = self.finished("link") {
            return Err(error);
        }
        crate::plugin::link::request(self.core, self.me, server, None)
    }

    /// Like [`link`](Context::link), and `done` hears the answer: the
    /// server's address once linked, or the error (`LinkFailed`, with the
    /// cause: a gone server, one shutting down, one this actor may not
    /// link to). A failure is then only `done`'s to handle: the actor is not
    /// failed for it (`done` may call [`fail`](Context::fail)). During init,
    /// init waits until `done` has run.
    pub fn link_then<F>(&mut self, server: &Address, done: F) -> Result<()>
    where
        F: FnOnce(&mut A, Result<&Address, &Error>, &mut Context<'_, A>) + 'static,
    {
        if let Some(error) = self.finished("link_then") {
            return Err(error);
        }
        let done = move |core: &mut crate::locality::Core, me, result: Result<&Address, &Error>| {
            crate::actor::with_actor::<A>(core, me, |a, ctx| done(a, result, ctx))
        };
        crate::plugin::link::request(self.core, self.me, server, Some(Box::new(done)))
    }

    /// Unlinks this actor from `server` without shutting down: the server
    /// no longer waits for it (the answer to a deferred unlink, see
    /// [`UnlinkAction::Defer`](crate::UnlinkAction::Defer)).
    ///
    /// Errors: [`ErrorCode::InvalidArgument`](crate::ErrorCode::InvalidArgument) if this actor is not linked to
    /// `server` (or its link is not confirmed yet).
    pub fn unlink(&mut self, server: &Address) -> Result<()> {
        crate::plugin::link::unlink(self.core, self.me, server)
    }

    /// Watches the actor at `address` (on this locality or any other):
    /// each step of its lifecycle from now on comes to this actor's main
    /// address as a [`Watched`](crate::Watched) message (subscribe to it):
    /// [`Initialized`](crate::LifecycleEvent::Initialized),
    /// [`Started`](crate::LifecycleEvent::Started),
    /// [`ShuttingDown`](crate::LifecycleEvent::ShuttingDown) and
    /// [`ShutDown`](crate::LifecycleEvent::ShutDown) with its reason, the
    /// last. An address that is gone already (or that no actor owns)
    /// answers at once with [`Gone`](crate::LifecycleEvent::Gone). Events
    /// keep their order with the messages the actor sends this one. The
    /// watch ends with its last event, [`unwatch`](Context::unwatch), or
    /// this actor's end.
    ///
    /// Errors: [`ErrorCode::InvalidArgument`](crate::ErrorCode::InvalidArgument)
    /// for an address of this actor;
    /// [`ErrorCode::ActorFinished`](crate::ErrorCode::ActorFinished) in
    /// `shutdown_finish`.
    pub fn watch(&mut self, address: &Address) -> Result<crate::WatchId> {
        if let Some(error) = self.finished("watch") {
            return Err(error);
        }
        crate::plugin::watch::watch(self.core, self.me, address)
    }

    /// Ends a watch: no event of it is delivered from now on, not even one
    /// already on its way. `false` if this actor has no such watch (never
    /// had, or it ended with its last event).
    pub fn unwatch(&mut self, id: crate::WatchId) -> bool {
        crate::plugin::watch::unwatch(self.core, self.me, id)
    }

    /// Registers this actor's main address under `name` in its registry (see
    /// [`SupervisorConfig::with_registry`](crate::SupervisorConfig::with_registry)).
    /// Init waits for the answer and fails with `AlreadyRegistered` if the
    /// name is taken (after init, the actor shuts down with that reason). The
    /// name is deregistered when the actor shuts down; so once shutdown has
    /// started (names are deregistered then) it does nothing.
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
    /// example on [`Registry`](crate::Registry). In `shutdown_finish` it
    /// does nothing (`then` is never called).
    pub fn discover(&mut self, name: impl Into<String>) -> Discovery<'_, 'a, A> {
        Discovery {
            ctx: self,
            name: name.into(),
            wait: false,
            link: false,
            failed: None,
        }
    }

    /// Counts one more external resource of `kind` held by this actor: init
    /// does not finish, nor shutdown, while any resource is held. In
    /// `shutdown_finish`, when nothing can be held any more, it does nothing.
    pub fn acquire_resource(&mut self, kind: u32) {
        if self.ignored("acquire_resource") {
            return;
        }
        crate::plugin::resources::acquire(self.core, self.me, kind);
    }

    /// Releases one resource of `kind`; the lifecycle continues when none is held.
    ///
    /// Errors: [`ErrorCode::InvalidArgument`](crate::ErrorCode::InvalidArgument)
    /// if none of `kind` is held.
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
    /// restarts and escalation compose across them. `finish()` returns the
    /// child's address at once: send to it right away (see
    /// [`Builder::finish`](crate::Builder::finish-1)).
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
    /// Errors: [`ErrorCode::NotRegistered`](crate::ErrorCode::NotRegistered)
    /// if the locality is not on a poll; [`ErrorCode::Io`](crate::ErrorCode::Io)
    /// if the operating system refuses;
    /// [`ErrorCode::ActorFinished`](crate::ErrorCode::ActorFinished) in
    /// `shutdown_finish`.
    pub fn register_io<S: mio::event::Source>(
        &mut self,
        source: S,
        interest: mio::Interest,
    ) -> Result<crate::IoGuard<S>> {
        if let Some(error) = self.finished("register_io") {
            return Err(error);
        }
        let address = self.cell().main;
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
    /// [`ErrorCode::NotASupervisor`](crate::ErrorCode::NotASupervisor).
    /// Children spawned during `init_start` hold the supervisor's init until
    /// they have initialized.
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
        match self.cell().parent.is_some() {
            true => {
                crate::actor::ParentLink::send_of(self.core, self.me, |_| {
                    SystemMsg::ShutdownTrigger {
                        child: None,
                        reason: Error::normal(),
                    }
                });
            }
            false => lifecycle::request_own_shutdown(self.core, self.me, Error::normal()),
        }
    }

    /// The supervisor's address, or `None` for a root.
    pub fn supervisor(&self) -> Option<&Address> {
        match self.cell().parent()? {
            crate::actor::Parent::Local { key, .. } => {
                self.core.routes.address(key).map(|info| &info.address)
            }
            crate::actor::Parent::Remote(address, _) => Some(address),
        }
    }
}

/// A discovery in the making: [`Context::discover`], options, then [`then`](Discovery::then).
#[must_use = "the discovery starts only with `then(...)`"]
pub struct Discovery<'c, 'a, A: Actor> {
    ctx: &'c mut Context<'a, A>,
    name: String,
    wait: bool,
    link: bool,
    failed: Option<crate::plugin::registry::Failed<A>>,
}

impl<A: Actor> fmt::Debug for Discovery<'_, '_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Discovery")
            .field("name", &self.name)
            .field("wait", &self.wait)
            .field("link", &self.link)
            .field("on_error", &self.failed.is_some())
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

    /// Hands a failure to `failed` instead of failing the actor: the
    /// registry's error (`UnknownService`: no such name, no registry, or
    /// the registry shut down while waiting; `RequestTimeout` past the
    /// actor's init timeout), or with [`link`](Discovery::link) the link's
    /// (`AlreadyLinked`, `LinkFailed`). `failed` runs at most once, and
    /// then `then`'s callback does not (or ran before the link failed).
    /// During init, init waits until it has run.
    pub fn on_error<F>(mut self, failed: F) -> Self
    where
        F: FnOnce(&mut A, &Error, &mut Context<'_, A>) + 'static,
    {
        self.failed = Some(Box::new(failed));
        self
    }

    /// Sends the discovery; `found` gets the address when it comes. On a
    /// failure `found` is not called: the actor's init fails (or, after
    /// init, the actor shuts down) with the registry's error, unless
    /// [`on_error`](Discovery::on_error) takes it.
    pub fn then<F>(self, found: F)
    where
        F: FnOnce(&mut A, &Address, &mut Context<'_, A>) + 'static,
    {
        if self.ctx.ignored("discover") {
            return;
        }
        crate::plugin::registry::discover(
            self.ctx,
            self.name,
            self.wait,
            self.link,
            found,
            self.failed,
        );
    }
}

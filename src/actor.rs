//! The [`Actor`] trait, lifecycle states, and the per-actor record a locality keeps.

use crate::address::Address;
use crate::arena::Key;
use crate::context::Context;
use crate::error::Error;
use crate::lifecycle;
use crate::locality::Core;
use crate::plugin::{Plugin, PluginState, Vote};
use crate::supervisor::SupervisorState;
use smallvec::SmallVec;
use std::any::Any;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::time::Duration;

mod handler;
mod hooks;
mod main_address;
mod panics;
mod parent;

pub(crate) use handler::ActorHandler;
pub(crate) use hooks::{NO_EXTRAS, call_hook, call_hook_known, known_hooks, skips};
pub(crate) use panics::{guarded, panic_message, panicked};
pub(crate) use parent::{CellParent, Parent, ParentLink};

/// User code that runs inside a supervisor, one message at a time.
///
/// Every method has a default, so `impl Actor for T {}` is a complete actor.
/// The hooks mark the lifecycle transitions; handlers for messages are
/// subscribed with [`Context::subscribe`] (typically in `init_start`).
///
/// ```
/// use commutator::*;
///
/// struct Greeter;
/// struct Hello(&'static str);
///
/// impl Actor for Greeter {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(Self::on_hello);
///     }
/// }
/// impl Greeter {
///     fn on_hello(&mut self, hello: &Hello, ctx: &mut Context<'_, Self>) {
///         assert_eq!(hello.0, "world");
///         ctx.shutdown_supervisor();
///     }
/// }
///
/// let mut system = System::new()?;
/// let root = system.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
/// let greeter = system.spawn(&root, Greeter).finish()?;
/// system.send(&greeter, Hello("world"))?;
/// system.run()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Actor: Sized + 'static {
    /// NEW → INITIALIZING: subscribe handlers, spawn children, start init work.
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.core.default_hook |= Hook::InitStart.bit(); // not overridden: no need to call it again
    }
    /// INITIALIZING → INITIALIZED: every plugin voted ready.
    fn init_finish(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.core.default_hook |= Hook::InitFinish.bit();
    }
    /// INITIALIZED → OPERATIONAL: the supervisor started the actor.
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.core.default_hook |= Hook::OnStart.bit();
    }
    /// → SHUTTING_DOWN: release what the actor holds.
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.core.default_hook |= Hook::ShutdownStart.bit();
    }
    /// SHUTTING_DOWN → SHUT_DOWN: the last call (its state reads
    /// `SHUT_DOWN`, as in rotor); subscriptions and timers go next.
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.core.default_hook |= Hook::ShutdownFinish.bit();
    }

    /// A supervisor hears of a child's init: `Ok` when it initialized,
    /// `Err` with its reason when it went down before (it failed its init,
    /// or was asked to go). Called before the supervisor starts the child,
    /// or applies its [`InitFailurePolicy`](crate::InitFailurePolicy).
    fn on_child_init(
        &mut self,
        child: &Address,
        result: Result<(), &Error>,
        ctx: &mut Context<'_, Self>,
    ) {
        let _ = (child, result);
        ctx.core.default_hook |= crate::supervisor::HOOK_INIT; // not overridden: no need to call it again
    }

    /// A supervisor hears that a child has shut down, with its reason,
    /// before it decides what follows (restart, escalation, ...).
    fn on_child_shutdown(&mut self, child: &Address, reason: &Error, ctx: &mut Context<'_, Self>) {
        let _ = (child, reason);
        ctx.core.default_hook |= crate::supervisor::HOOK_SHUTDOWN; // not overridden: no need to call it again
    }

    /// A linked server (see [`Context::link`]) asks this client to unlink,
    /// because it is shutting down: the answer says what the client does.
    /// Default: [`UnlinkAction::Shutdown`].
    fn on_unlink(&mut self, server: &Address, ctx: &mut Context<'_, Self>) -> UnlinkAction {
        let _ = (server, ctx);
        UnlinkAction::Shutdown
    }

    /// Asked once, as the actor goes down: should a new instance take its
    /// place? Only a supervisor whose restart policy is
    /// [`RestartPolicy::AskActor`](crate::RestartPolicy::AskActor) heeds the
    /// answer. Default: when it failed.
    fn should_restart(&self, reason: &Error) -> bool {
        !reason.is_normal()
    }
}

/// What a linked client does when its server asks it to unlink
/// ([`Actor::on_unlink`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnlinkAction {
    /// Shut down, with reason `UnlinkRequested` (the default): the server
    /// waits until the client is gone.
    #[default]
    Shutdown,
    /// Unlink at once and carry on: the server no longer waits for it.
    Release,
    /// Unlink later: the server waits until the client calls
    /// [`Context::unlink`] (or shuts down).
    Defer,
}

/// Where an actor is in its lifecycle; see [`Context::state`] and
/// [`Locality::state_of`](crate::Locality::state_of). States only move
/// forward, in declaration order (so they compare with `<`); `Display`
/// prints rotor's names (`OPERATIONAL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ActorState {
    /// Created; receives nothing yet.
    New,
    /// Plugins are initializing.
    Initializing,
    /// Every plugin is ready; waiting for the supervisor's start.
    Initialized,
    /// Serving.
    Operational,
    /// Releasing resources; children are shutting down.
    ShuttingDown,
    /// In its `shutdown_finish`, then gone.
    ShutDown,
}

impl fmt::Display for ActorState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ActorState::New => "NEW",
            ActorState::Initializing => "INITIALIZING",
            ActorState::Initialized => "INITIALIZED",
            ActorState::Operational => "OPERATIONAL",
            ActorState::ShuttingDown => "SHUTTING_DOWN",
            ActorState::ShutDown => "SHUT_DOWN",
        })
    }
}

/// Per-actor settings, set on the builder with `init_timeout` and `shutdown_timeout`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ActorConfig {
    /// How long init may take before it fails with `InitTimeout` (`None`: no limit).
    pub(crate) init_timeout: Option<Duration>,
    /// How long shutdown may take before it is a contract violation (`None`: no limit).
    pub(crate) shutdown_timeout: Option<Duration>,
}

/// A lifecycle hook, for calling through the erased actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hook {
    InitStart,
    InitFinish,
    OnStart,
    ShutdownStart,
    ShutdownFinish,
}

/// Which votes to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Init,
    Shutdown,
}

/// An actor with its user plugins, and the names the builder asked it to
/// register (boxed apart: most actors have neither).
pub(crate) struct ActorBox<A: Actor> {
    pub(crate) actor: A,
    pub(crate) extras: Option<Box<Extras<A>>>,
}

pub(crate) struct Extras<A: Actor> {
    pub(crate) plugins: Vec<Box<dyn Plugin<A>>>,
    /// Init: plugins before it voted ready. Shutdown: plugins from it on voted ready.
    cursor: usize,
    pub(crate) register_as: Vec<Cow<'static, str>>,
}

impl<A: Actor> ActorBox<A> {
    pub(crate) fn new(
        actor: A,
        plugins: Vec<Box<dyn Plugin<A>>>,
        register_as: Vec<Cow<'static, str>>,
    ) -> Self {
        let extras = (!plugins.is_empty() || !register_as.is_empty()).then(|| {
            Box::new(Extras {
                plugins,
                cursor: 0,
                register_as,
            })
        });
        ActorBox { actor, extras }
    }
}

impl<A: Actor> ActorBox<A> {
    fn hook(&mut self, hook: Hook, core: &mut Core, me: Key) {
        let ctx = &mut Context::new(core, me);
        let actor = &mut self.actor;
        match hook {
            Hook::InitStart => {
                if let Some(extras) = self.extras.as_deref_mut() {
                    for name in std::mem::take(&mut extras.register_as) {
                        crate::plugin::registry::register(ctx, name);
                    }
                    for plugin in &mut extras.plugins {
                        plugin.init_start(actor, ctx);
                    }
                }
                actor.init_start(ctx);
            }
            Hook::InitFinish => actor.init_finish(ctx),
            Hook::OnStart => actor.on_start(ctx),
            Hook::ShutdownStart => {
                actor.shutdown_start(ctx);
                if let Some(extras) = self.extras.as_deref_mut() {
                    for plugin in extras.plugins.iter_mut().rev() {
                        plugin.shutdown_start(actor, ctx);
                    }
                    extras.cursor = extras.plugins.len();
                }
            }
            Hook::ShutdownFinish => {
                ctx.finishing = true; // nothing started from here on could run
                actor.shutdown_finish(ctx)
            }
        }
    }

    fn vote(&mut self, phase: Phase, core: &mut Core, me: Key) -> Vote {
        let Some(extras) = self.extras.as_deref_mut() else {
            return Vote::Ready;
        };
        let ctx = &mut Context::new(core, me);
        match phase {
            Phase::Init => {
                while let Some(plugin) = extras.plugins.get_mut(extras.cursor) {
                    match plugin.init_vote(&mut self.actor, ctx) {
                        Vote::Ready => extras.cursor += 1,
                        other => return other,
                    }
                }
            }
            Phase::Shutdown => {
                while extras.cursor > 0 {
                    match extras.plugins[extras.cursor - 1].shutdown_vote(&mut self.actor, ctx) {
                        Vote::Ready => extras.cursor -= 1,
                        other => return other,
                    }
                }
            }
        }
        Vote::Ready
    }
}

/// An actor in its cell, with its type erased: a `RefCell<ActorBox<A>>`
/// shared (`Rc`) by the locality's record and the actor's handlers. The
/// `RefCell` is borrowed for the length of one hook or handler, so a
/// handler never re-enters its actor.
pub(crate) trait ActorObject: Any {
    /// `true` while one of the actor's hooks or handlers runs.
    fn busy(&self) -> bool;
    /// Calls the hook; `false` (nothing called) if the actor is busy.
    fn hook(&self, hook: Hook, core: &mut Core, me: Key) -> bool;
    /// The user plugins' vote.
    fn vote(&self, phase: Phase, core: &mut Core, me: Key) -> Vote;
    /// `false` if the actor has no user plugin to ask for a vote (`true`
    /// while it is busy: [`vote`](ActorObject::vote) then says `Pending`).
    fn has_plugins(&self) -> bool;
    /// `true` if the actor has user plugins or names to register, which
    /// run with its `init_start` and `shutdown_start` (`true` while busy).
    fn has_extras(&self) -> bool;
    /// [`Actor::should_restart`] (`false` if the actor is busy).
    fn should_restart(&self, reason: &Error) -> bool;
    /// Calls the hook a notice is for; `Some` answer for an unlink.
    fn notice(&self, core: &mut Core, me: Key, notice: Notice<'_>) -> Option<UnlinkAction>;
}

/// A hook that tells an actor about another one (erased over its type).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Notice<'n> {
    ChildInit(&'n Address, Result<(), &'n Error>),
    ChildShutdown(&'n Address, &'n Error),
    Unlink(&'n Address),
}

impl<A: Actor> ActorObject for RefCell<ActorBox<A>> {
    fn busy(&self) -> bool {
        self.try_borrow_mut().is_err()
    }
    fn hook(&self, hook: Hook, core: &mut Core, me: Key) -> bool {
        match self.try_borrow_mut() {
            Ok(mut b) => {
                b.hook(hook, core, me);
                true
            }
            Err(_) => false,
        }
    }
    fn vote(&self, phase: Phase, core: &mut Core, me: Key) -> Vote {
        match self.try_borrow_mut() {
            Ok(mut b) => b.vote(phase, core, me),
            Err(_) => Vote::Pending,
        }
    }
    fn has_plugins(&self) -> bool {
        self.try_borrow_mut().map_or(true, |b| {
            b.extras.as_ref().is_some_and(|e| !e.plugins.is_empty())
        })
    }
    fn has_extras(&self) -> bool {
        self.try_borrow().map_or(true, |b| b.extras.is_some())
    }
    fn should_restart(&self, reason: &Error) -> bool {
        self.try_borrow()
            .is_ok_and(|b| b.actor.should_restart(reason))
    }
    fn notice(&self, core: &mut Core, me: Key, notice: Notice<'_>) -> Option<UnlinkAction> {
        let mut b = self.try_borrow_mut().ok()?;
        let ctx = &mut Context::new(core, me);
        match notice {
            Notice::ChildInit(child, result) => b.actor.on_child_init(child, result, ctx),
            Notice::ChildShutdown(child, reason) => b.actor.on_child_shutdown(child, reason, ctx),
            Notice::Unlink(server) => return Some(b.actor.on_unlink(server, ctx)),
        }
        None
    }
}

/// The shared cell of an actor of type `A`.
pub(crate) type ActorRc<A> = Rc<RefCell<ActorBox<A>>>;

/// The typed cell of the actor at `me`, if it is an `A`.
pub(crate) fn typed_actor<A: Actor>(core: &Core, me: Key) -> Option<ActorRc<A>> {
    let erased: Rc<dyn Any> = core.actors.get(me)?.actor.clone();
    erased.downcast::<RefCell<ActorBox<A>>>().ok()
}

/// What a locality keeps for one actor.
pub(crate) struct ActorCell {
    /// The actor (shared with its handlers).
    pub(crate) actor: Rc<dyn ActorObject>,
    /// The key of its main address: the address itself is kept in the
    /// routing table's slot (`AddressInfo`), which lives as long as the
    /// cell (both go in `finish_removal`), so the cell keeps no copy of it.
    pub(crate) main: Key,
    /// Its supervisor (`None` for a root); see [`ActorCell::parent`].
    pub(crate) parent: Option<CellParent>,
    pub(crate) supervisor: Option<Box<SupervisorState>>,
    /// What few actors use, made on first use.
    pub(crate) rare: Option<Box<Rare>>,
    pub(crate) state: ActorState,
    /// The index of its type's record of hooks (`TypeNames::hook_index`:
    /// those known to be the trait's defaults, not called, and those known
    /// to run), with `NO_EXTRAS` if it has no plugins or names to register;
    /// set at the spawn.
    pub(crate) hooks: u16,
}

/// The per-actor state that few actors need: kept out of the cell, so that
/// an idle actor stays small.
#[derive(Default)]
pub(crate) struct Rare {
    pub(crate) config: ActorConfig,
    /// The pending init or shutdown timeout.
    pub(crate) lifecycle_timer: Option<Key>,
    pub(crate) identities: SmallVec<[Key; 1]>,
    /// Subscriptions on addresses that are not the actor's own (those go
    /// with the addresses).
    pub(crate) foreign_subscriptions: SmallVec<[Key; 1]>,
    /// A failure reported while initializing, acted on by the next init vote.
    pub(crate) init_failure: Option<Error>,

    /// State of the built-in plugins.
    pub(crate) plugins: PluginState,
    /// The link to a supervisor on another locality (`CellParent`).
    pub(crate) far_parent: Option<Box<(Address, usize)>>,
    /// The registry this actor uses when it is not the one it would
    /// inherit (`registry_of`): `Some` (of `None` for none) if it was given
    /// on its builder, its supervisor is elsewhere, or it is the registry
    /// child of a supervisor made `with_registry` (what the supervisor
    /// used before it).
    pub(crate) registry: Option<Option<Rc<Address>>>,
}

impl ActorCell {
    /// The rare part, made on first use.
    pub(crate) fn rare(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The built-in plugins' state, made on first use.
    pub(crate) fn plugins(&mut self) -> &mut PluginState {
        &mut self.rare().plugins
    }

    /// The built-in plugins' state, if any was made.
    pub(crate) fn plugins_ref(&self) -> Option<&PluginState> {
        self.rare.as_deref().map(|r| &r.plugins)
    }

    /// The built-in plugins' state, if any was made.
    pub(crate) fn plugins_mut(&mut self) -> Option<&mut PluginState> {
        self.rare.as_deref_mut().map(|r| &mut r.plugins)
    }

    /// The actor's timeouts.
    pub(crate) fn config(&self) -> ActorConfig {
        self.rare.as_deref().map(|r| r.config).unwrap_or_default()
    }

    /// Its main address's id across localities (a cell's main address is
    /// on the cell's locality, `locality`).
    #[inline(always)]
    pub(crate) fn child_id(&self, locality: u32) -> crate::supervisor::ChildId {
        crate::supervisor::ChildId::new(locality, self.main)
    }
}

/// The registry the actor in `cell` uses: the one set for it
/// (`Rare::registry`), else, for a supervisor, the one its descendants
/// inherit (`SupervisorState::registry`: the one it made `with_registry`,
/// else its own), else its supervisor's for its descendants. A cell keeps
/// no copy of what it inherits (8 bytes less per actor, and a cell's arena
/// entry in one cache line): a supervisor's is set when it becomes one,
/// before it has any child (`spawn_from`, `entity::make_supervisor`; its
/// registry child, made before, has its own set), so looking it up when
/// asked says what a copy made at the spawn would, in one step.
pub(crate) fn registry_of<'c>(core: &'c Core, cell: &'c ActorCell) -> Option<&'c Rc<Address>> {
    if let Some(own) = cell.rare.as_deref().and_then(|r| r.registry.as_ref()) {
        return own.as_ref();
    }
    if let Some(sup) = cell.supervisor.as_deref() {
        return sup.registry.as_ref();
    }
    let Some(Parent::Local { key, .. }) = cell.parent() else {
        return None;
    };
    let supervisor = core.actors.get(core.routes.address(key)?.owner)?;
    supervisor.supervisor.as_deref()?.registry.as_ref()
}

/// Calls `run` with the actor of type `A` at `me` and a context for it.
///
/// Does nothing if the actor is gone, is not an `A`, or is already running.
pub(crate) fn with_actor<A: Actor>(
    core: &mut Core,
    me: Key,
    run: impl FnOnce(&mut A, &mut Context<'_, A>),
) {
    let Some(actor) = typed_actor::<A>(core, me) else {
        return;
    };
    let Ok(mut b) = actor.try_borrow_mut() else {
        return;
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        run(&mut b.actor, &mut Context::new(core, me))
    }));
    drop(b);
    if let Err(payload) = result {
        let error = panicked(core, me, payload.as_ref());
        lifecycle::fail(core, me, error);
    }
}

/// Runs `f` with the erased actor at `me`.
///
/// `None` if the actor is gone or busy (a hook or handler never re-enters).
/// `Some(Err(..))` if user code panicked: the panic is caught here, at the
/// edge of user code, and the actor fails with `ErrorCode::Panicked` (its
/// supervisor decides what follows). The locality's own state is never
/// half-changed at this point, so it stays consistent.
pub(crate) fn with_object<R>(
    core: &mut Core,
    me: Key,
    f: impl FnOnce(&dyn ActorObject, &mut Core) -> R,
) -> Option<Result<R, Error>> {
    let object = core.actors.get(me)?.actor.clone();
    if object.busy() {
        return None;
    }
    let result = catch_unwind(AssertUnwindSafe(|| f(&*object, core)));
    Some(result.map_err(|payload| {
        let error = panicked(core, me, payload.as_ref());
        lifecycle::fail(core, me, error.clone());
        error
    }))
}

/// Calls lifecycle hook `hook` of the actor at `me`, as [`with_object`]
/// would (a panic fails the actor), with the busy check in the call: `true`
/// if it ran to its end, `false` if the actor is gone or busy, or panicked.
#[inline]
pub(crate) fn hook_object(core: &mut Core, me: Key, hook: Hook) -> bool {
    let Some(object) = core.actors.get(me).map(|cell| cell.actor.clone()) else {
        return false;
    };
    match catch_unwind(AssertUnwindSafe(|| object.hook(hook, core, me))) {
        Ok(ran) => ran,
        Err(payload) => {
            let error = panicked(core, me, payload.as_ref());
            lifecycle::fail(core, me, error);
            false
        }
    }
}

/// Calls the hook `notice` is for on the actor at `me` (see [`Notice`]);
/// the answer to an unlink, if it gave one.
pub(crate) fn notify(core: &mut Core, me: Key, notice: Notice<'_>) -> Option<UnlinkAction> {
    with_object(core, me, |object, core| object.notice(core, me, notice))?.ok()?
}

/// Calls a supervisor hook (a child's init or shutdown) of the actor at
/// `me`; `false` if it is the trait's default, which says so: the
/// supervisor need not call it again.
pub(crate) fn notify_overridden(core: &mut Core, me: Key, notice: Notice<'_>) -> bool {
    let bit = match notice {
        Notice::ChildInit(..) => crate::supervisor::HOOK_INIT,
        Notice::ChildShutdown(..) => crate::supervisor::HOOK_SHUTDOWN,
        Notice::Unlink(_) => 0,
    };
    core.default_hook &= !bit;
    notify(core, me, notice);
    let default = core.default_hook & bit != 0;
    core.default_hook &= !bit;
    !default
}

/// The default name of an actor type: its type name without the module path.
pub(crate) fn default_name<A: 'static>() -> Cow<'static, str> {
    let full = std::any::type_name::<A>();
    if full.bytes().any(|b| b == b'<') {
        return Cow::Owned(crate::message::short_type_name::<A>());
    }
    // The part after the last `::` (a byte scan: this runs on every spawn).
    let start = full
        .as_bytes()
        .windows(2)
        .rposition(|w| w == b"::")
        .map_or(0, |i| i + 2);
    Cow::Borrowed(&full[start..])
}

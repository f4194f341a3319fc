//! [`Builder`]: spawning an actor in code, here or on another locality.

use crate::actor::{Actor, ActorConfig, ParentLink};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::{Core, LocalityHandle};
use crate::plugin::Plugin;
use crate::spawn::{
    PendingChild, PluginFactory, Settings, SharedFactory, Spec, spawn_elsewhere, spawn_instance,
    spawn_once,
};
use crate::supervisor::SupervisorConfig;
use crate::supervisor::restart::{Respawn, RestartPolicy, SupervisionConfig};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod child;

use child::{add_child, check_parent, child_slot, finish_plain, local_slot, supervised};

/// Where a new actor goes.
pub(crate) enum Parent {
    Root,
    Local(Key),
    Invalid(Error),
}

/// Where the actor value comes from.
enum Source<A> {
    Value(A),
    Factory(Box<dyn FnMut() -> A>),
}

/// Builder target: the actor is made on this locality (the default).
pub struct Here<A> {
    source: Source<A>,
    plugins: Vec<PluginFactory<A>>,
}

/// Builder target: the actor is made on another locality, from a factory
/// called there ([`Context::spawn_on`](crate::Context::spawn_on)).
pub struct Elsewhere<A> {
    handle: LocalityHandle,
    factory: SharedFactory<A>,
}

impl<A> fmt::Debug for Here<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Here")
    }
}

impl<A> fmt::Debug for Elsewhere<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Elsewhere({})", self.handle.name())
    }
}

/// Configures and spawns one actor; `finish` makes it.
///
/// Made by [`Locality::spawn_root`](crate::Locality::spawn_root),
/// [`Locality::spawn`](crate::Locality::spawn), [`Context::spawn`](crate::Context::spawn),
/// their `spawn_with` forms, which take a factory so that the actor can be
/// restarted (see [`restart`](Builder::restart)), and `spawn_on`, which makes
/// the actor on another locality. [`System`](crate::System) has the same
/// methods.
///
/// Nothing exists until [`finish`](Builder::finish): it checks the settings,
/// makes the actor's address and queues its init, which runs in a later
/// dispatch step. Errors (a parent that is not a supervisor or is going
/// away, a restart policy without a factory) come back from `finish`.
///
/// | setting | for |
/// |---|---|
/// | [`name`](Builder::name) | the name in its address (default: the type's name) |
/// | [`supervisor`](Builder::supervisor) | makes it a supervisor, with a [`SupervisorConfig`](crate::SupervisorConfig) |
/// | [`init_timeout`](Builder::init_timeout), [`shutdown_timeout`](Builder::shutdown_timeout) | limits on init and shutdown (default: none) |
/// | [`register_as`](Builder::register_as), [`registry`](Builder::registry) | a name in the registry, and which registry |
/// | [`restart`](Builder::restart), [`restart_delay`](Builder::restart_delay), [`restart_backoff`](Builder::restart_backoff), [`restart_limit`](Builder::restart_limit) | what its supervisor does when it goes down |
/// | [`escalate_failure`](Builder::escalate_failure), [`autoshutdown_supervisor`](Builder::autoshutdown_supervisor) | when its end takes its supervisor down too |
/// | [`plugin`](Builder::plugin) | a [`Plugin`](crate::Plugin) of yours, voting on its lifecycle |
///
/// # Examples
///
/// A root supervisor and a child that fails as soon as it starts: restarted
/// twice, then given up on, which takes the root down with it.
///
/// ```
/// use commutator::*;
/// use std::time::Duration;
///
/// struct Fragile;
/// impl Actor for Fragile {
///     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.fail(Error::failure("disk full"));
///     }
/// }
///
/// let mut system = System::named("app")?;
/// let root = system
///     .spawn_root(Supervisor) // a root: nobody above it
///     .name("root")
///     .supervisor(SupervisorConfig::default()) // it may have children
///     .finish()?;
/// system
///     .spawn_with(&root, || Fragile) // a factory, so that it can be restarted
///     .name("fragile")
///     .restart(RestartPolicy::OnFailure)
///     .restart_limit(2, Duration::from_secs(60))
///     .escalate_failure() // when given up on, its supervisor goes too
///     .finish()?;
/// let reason = system.run().unwrap_err();
/// let codes: Vec<ErrorCode> = reason.chain().map(Error::code).collect();
/// assert_eq!(
///     codes,
///     [ErrorCode::FailureEscalation, ErrorCode::RestartLimit, ErrorCode::Failure]
/// );
/// # Ok::<(), commutator::Error>(())
/// ```
#[must_use = "an actor is spawned only by `finish()`"]
pub struct Builder<'a, A: Actor, T = Here<A>> {
    core: &'a mut Core,
    parent: Parent,
    target: T,
    /// What was set beyond the actor: `None` until a setting is given (a
    /// builder made for a spawn writes one word of it, not every default).
    set: Option<Set>,
    _actor: PhantomData<fn() -> A>,
}

/// The settings of a [`Builder`], once one is given.
#[derive(Default)]
struct Set {
    name: Option<Cow<'static, str>>,
    config: ActorConfig,
    /// Boxed: most actors are no supervisors, and a builder is moved about.
    supervisor: Option<Box<SupervisorConfig>>,
    registry: Option<Address>,
    register_as: Vec<Cow<'static, str>>,
    supervision: SupervisionConfig,
}

impl Set {
    /// `true` if every setting is the default one.
    fn is_default(&self) -> bool {
        self.name.is_none()
            && self.config == ActorConfig::default()
            && self.supervisor.is_none()
            && self.registry.is_none()
            && self.register_as.is_empty()
            && !self.supervision.is_set()
    }
}

impl<A: Actor, T: fmt::Debug> fmt::Debug for Builder<'_, A, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let default;
        let set = match &self.set {
            Some(set) => set,
            None => {
                default = Set::default();
                &default
            }
        };
        f.debug_struct("Builder")
            .field("target", &self.target)
            .field("name", &set.name)
            .field("config", &set.config)
            .field("supervision", &set.supervision)
            .finish_non_exhaustive()
    }
}

impl<'a, A: Actor> Builder<'a, A> {
    pub(crate) fn new(core: &'a mut Core, parent: Option<Key>, actor: A) -> Self {
        let parent = parent.map_or(Parent::Root, Parent::Local);
        Self::with_parent(core, parent, actor)
    }

    pub(crate) fn with_parent(core: &'a mut Core, parent: Parent, actor: A) -> Self {
        Builder::make(
            core,
            parent,
            Here {
                source: Source::Value(actor),
                plugins: Vec::new(),
            },
        )
    }

    pub(crate) fn with_factory(
        core: &'a mut Core,
        parent: Parent,
        factory: impl FnMut() -> A + 'static,
    ) -> Self {
        Builder::make(
            core,
            parent,
            Here {
                source: Source::Factory(Box::new(factory)),
                plugins: Vec::new(),
            },
        )
    }
}

impl<'a, A: Actor> Builder<'a, A, Elsewhere<A>> {
    pub(crate) fn elsewhere(
        core: &'a mut Core,
        parent: Parent,
        handle: &LocalityHandle,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Self {
        let factory: SharedFactory<A> = Arc::new(Mutex::new(factory));
        Builder::make(
            core,
            parent,
            Elsewhere {
                handle: handle.clone(),
                factory,
            },
        )
    }
}

impl<'a, A: Actor, T> Builder<'a, A, T> {
    fn make(core: &'a mut Core, parent: Parent, target: T) -> Self {
        Builder {
            core,
            parent,
            target,
            set: None,
            _actor: PhantomData,
        }
    }

    /// The settings, made (all default) on the first one given.
    fn set(&mut self) -> &mut Set {
        self.set.get_or_insert_with(Set::default)
    }

    /// Names the actor (default: its type name); the name shows in its address.
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.set().name = Some(name.into());
        self
    }

    /// Fails init with `InitTimeout` if it takes longer than `timeout`.
    pub fn init_timeout(mut self, timeout: Duration) -> Self {
        self.set().config.init_timeout = Some(timeout);
        self
    }

    /// Treats a shutdown longer than `timeout` as a contract violation.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.set().config.shutdown_timeout = Some(timeout);
        self
    }

    /// Makes the actor a supervisor: it can spawn children, and its lifecycle
    /// waits for theirs.
    pub fn supervisor(mut self, config: SupervisorConfig) -> Self {
        self.set().supervisor = Some(Box::new(config));
        self
    }

    /// Registers the actor's main address under `name` in its registry while it
    /// initializes; init fails with `AlreadyRegistered` if the name is taken.
    pub fn register_as(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.set().register_as.push(name.into());
        self
    }

    /// Uses the registry at `registry` for [`register_as`](Builder::register_as),
    /// [`Context::register_name`](crate::Context::register_name) and
    /// [`Context::discover`](crate::Context::discover) (default: the one the
    /// supervisor uses, inherited down the tree).
    pub fn registry(mut self, registry: &Address) -> Self {
        self.set().registry = Some(registry.clone());
        self
    }

    /// When the actor goes down, its supervisor restarts it (a new instance
    /// from the factory) as `policy` says, after the restart delay, at most
    /// as often as the restart limit allows (default: 3 restarts in 5 s).
    /// Needs a factory: spawn with `spawn_with` (or `spawn_on`).
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.set().supervision.policy = policy;
        self
    }

    /// Waits `delay` before each restart (default: none).
    pub fn restart_delay(mut self, delay: Duration) -> Self {
        self.set().supervision.delay = delay;
        self
    }

    /// Doubles the restart delay with each restart within the limit's
    /// period (back-off), up to `max`.
    pub fn restart_backoff(mut self, max: Duration) -> Self {
        self.set().supervision.max_delay = Some(max);
        self
    }

    /// Gives up on the child after `restarts` restarts within `period`
    /// (default: 3 in 5 s); the error that then reaches the supervisor's
    /// decision has the code [`ErrorCode::RestartLimit`](crate::ErrorCode::RestartLimit).
    pub fn restart_limit(mut self, restarts: u32, period: Duration) -> Self {
        self.set().supervision.limit = restarts;
        self.set().supervision.period = period;
        self
    }

    /// When the actor fails and is not restarted (no policy, or the limit is
    /// reached), its supervisor shuts down too, with `FailureEscalation` as
    /// its reason, and the supervisor's own supervisor decides in turn.
    pub fn escalate_failure(mut self) -> Self {
        self.set().supervision.escalate = true;
        self
    }

    /// When the actor ends at all and is not restarted, its supervisor shuts
    /// down too (normally if the actor ended normally).
    pub fn autoshutdown_supervisor(mut self) -> Self {
        self.set().supervision.autoshutdown = true;
        self
    }

    /// Checks the parent and the supervision settings; returns the parent
    /// (`None` for a root) and what the builder holds.
    fn prepare(self, has_factory: bool) -> Result<Prepared<'a, T>> {
        let Builder {
            core,
            parent,
            target,
            set,
            ..
        } = self;
        let Set {
            name,
            config,
            supervisor,
            registry,
            register_as,
            supervision,
        } = set.unwrap_or_default();
        let (parent, inherited) = match parent {
            Parent::Invalid(error) => return Err(error),
            Parent::Root => (None, None),
            Parent::Local(key) => {
                let inherited = check_parent(core, key)?;
                (Some(key), inherited)
            }
        };
        if supervision.policy != RestartPolicy::Never && !has_factory {
            let why = "a restarted actor needs a factory: spawn it with `spawn_with`";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        if parent.is_none() && supervision.is_set() {
            let why = "a root has no supervisor to restart it or escalate to";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        if supervisor
            .as_ref()
            .and_then(|c| c.shutdown_flag.as_ref())
            .is_some_and(|f| f.every.is_zero())
        {
            let why = "a shutdown flag needs an interval longer than zero";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        if supervision.policy != RestartPolicy::Never && supervision.period.is_zero() {
            let why = "a restart limit needs a period longer than zero";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        let settings = Settings {
            name,
            config,
            supervisor,
            explicit_registry: registry.is_some(),
            registry: registry.or(inherited),
            register_as,
        };
        Ok(Prepared {
            core,
            parent,
            target,
            settings,
            supervision,
        })
    }
}

/// A checked builder, taken apart.
struct Prepared<'a, T> {
    core: &'a mut Core,
    parent: Option<Key>,
    target: T,
    settings: Settings,
    supervision: SupervisionConfig,
}

impl<'a, A: Actor> Builder<'a, A> {
    /// Adds a user plugin: it votes on init after the built-in plugins, in the
    /// order added, and on shutdown in reverse order. Each instance of the
    /// actor (a restart makes a new one) gets its own clone.
    pub fn plugin<P: Plugin<A> + Clone>(mut self, plugin: P) -> Self {
        self.target
            .plugins
            .push(Rc::new(move || Box::new(plugin.clone())));
        self
    }

    /// Spawns the actor and returns its main address. It initializes in a
    /// later dispatch step.
    ///
    /// Errors: [`ErrorCode::NotASupervisor`] if the parent is not a supervisor,
    /// [`ErrorCode::SupervisorShuttingDown`] if it is shutting down or gone,
    /// [`ErrorCode::ForeignAddress`] if it lives on another locality,
    /// [`ErrorCode::InvalidArgument`] for a restart policy without a factory, or
    /// supervision settings on a root (it has no supervisor).
    pub fn finish(self) -> Result<Address> {
        match self.parent {
            Parent::Local(parent)
                if self.is_plain() && matches!(self.target.source, Source::Value(_)) =>
            {
                self.finish_plain(parent)
            }
            _ => self.finish_set(),
        }
    }

    /// [`finish`](Builder::finish-1) for a plain child (`is_plain`, made from
    /// a value) of the supervisor at `parent`: the builder is taken apart
    /// whole, so that nothing of it is kept for a drop.
    #[inline(always)]
    fn finish_plain(self, parent: Key) -> Result<Address> {
        let Builder {
            core,
            target: Here { source, plugins },
            set,
            ..
        } = self;
        // All empty (`is_plain`: nothing was set, and what is set is
        // never taken back): nothing to drop, so no drop code runs.
        std::mem::forget((plugins, set));
        let Source::Value(actor) = source else {
            unreachable!("checked by finish")
        };
        finish_plain(core, parent, actor)
    }

    /// [`finish`](Builder::finish-1) with settings to check and carry.
    fn finish_set(self) -> Result<Address> {
        let has_factory = matches!(self.target.source, Source::Factory(_));
        let Prepared {
            core,
            parent,
            target: Here { source, plugins },
            settings,
            supervision,
        } = self.prepare(has_factory)?;
        let spec = Spec { settings, plugins };
        let restarts = supervision.policy != RestartPolicy::Never;
        // The spec is shared with the respawner only if there will be restarts.
        let (actor, spec, respawn) = match source {
            Source::Factory(mut factory) if restarts => {
                let actor = factory();
                let spec = Rc::new(spec);
                let kept = spec.clone();
                let respawn = Box::new(move |core: &mut Core, parent: &Address, slot| {
                    let link = ParentLink::new(core, parent, slot);
                    spawn_instance(core, Some(link), &kept, factory()).map(Some)
                }) as Respawn;
                (actor, Held::Shared(spec), Some(respawn))
            }
            Source::Factory(mut factory) => (factory(), Held::Owned(spec), None),
            Source::Value(actor) => (actor, Held::Owned(spec), None),
        };
        let Some(parent) = parent else {
            core.anchor();
            return spec.spawn(core, None, actor);
        };
        let (address, slot) = local_slot(core, parent);
        let link = ParentLink::new(core, address, slot);
        let address = spec.spawn(core, Some(link), actor)?;
        let supervision = supervised(supervision, respawn);
        add_child(core, parent, slot, Some(address.clone()), supervision);
        Ok(address)
    }
}

impl<'a, A: Actor> Builder<'a, A, Elsewhere<A>> {
    /// Asks the other locality to make the actor, as a child of this
    /// supervisor, and returns its address at once: reserved on that
    /// locality, so messages sent to it now are not lost (they reach the
    /// child once it is made, after its `init_start`, as for a child made
    /// here). The supervisor hears the child's init in
    /// [`Actor::on_child_init`]. If that locality cannot make it (it
    /// finishes first, the factory panics), messages to the address are
    /// dead letters ([`StaleAddress`](crate::DeadLetterReason::StaleAddress))
    /// and a watch on it answers `Gone`; to learn that outcome where the
    /// supervisor is not, use [`finish_pending`](Builder::finish_pending).
    ///
    /// Errors: as [`Builder::finish`], and [`ErrorCode::LocalityFinished`] if
    /// the other locality has finished (nothing is reserved or sent).
    pub fn finish(self) -> Result<Address> {
        self.finish_pending()
            .map(|pending| pending.address().clone())
    }

    /// As [`finish`](Builder::finish-1), but returns a [`PendingChild`]: the
    /// address, and the outcome of the spawn once the other locality has
    /// handled it (`result`, or `wait` from another thread).
    pub fn finish_pending(self) -> Result<PendingChild> {
        let Prepared {
            core,
            parent,
            target: Elsewhere { handle, factory },
            settings,
            supervision,
        } = self.prepare(true)?;
        let Some(parent) = parent else {
            let why = "an actor on another locality needs a supervisor here";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        };
        let (address, slot) = child_slot(core, parent);
        let pending = spawn_elsewhere(
            core,
            &handle,
            address,
            slot,
            factory.clone(),
            settings.clone(),
            true,
        )?
        .expect("the first spawn is pending");
        let respawn = (supervision.policy != RestartPolicy::Never).then(|| {
            Box::new(move |core: &mut Core, parent: &Address, slot| {
                spawn_elsewhere(
                    core,
                    &handle,
                    parent.clone(),
                    slot,
                    factory.clone(),
                    settings.clone(),
                    false,
                )
                .map(|_| None)
            }) as Respawn
        });
        let supervision = supervised(supervision, respawn);
        add_child(core, parent, slot, None, supervision);
        Ok(pending)
    }
}

impl<A: Actor> Builder<'_, A> {
    /// `true` if nothing was set but the actor: no name, timeouts,
    /// supervisor config, registry, names, supervision or plugins.
    fn is_plain(&self) -> bool {
        self.set.as_ref().is_none_or(Set::is_default) && self.target.plugins.is_empty()
    }
}

/// A spec owned, or shared with a respawner.
enum Held<A: Actor> {
    Owned(Spec<A>),
    Shared(Rc<Spec<A>>),
}

impl<A: Actor> Held<A> {
    /// Makes the instance: from the settings themselves if owned, from
    /// their clone if shared.
    fn spawn(self, core: &mut Core, parent: Option<ParentLink>, actor: A) -> Result<Address> {
        match self {
            Held::Owned(spec) => spawn_once(core, parent, spec, actor),
            Held::Shared(spec) => spawn_instance(core, parent, &spec, actor),
        }
    }
}

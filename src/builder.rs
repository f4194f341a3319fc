//! [`Builder`]: spawning an actor in code, and the spec that respawns it.

use crate::actor::{Actor, ActorBox, ActorCell, ActorConfig, ActorState, ParentLink, default_name};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::lifecycle;
use crate::locality::Core;
use crate::plugin::Plugin;
use crate::registry::Registry;
use crate::supervisor::restart::{Respawn, RestartPolicy, Supervision, SupervisionConfig};
use crate::supervisor::{ChildRecord, ChildState, SupervisorConfig, SupervisorState};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

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

type PluginFactory<A> = Rc<dyn Fn() -> Box<dyn Plugin<A>>>;

/// Everything needed to make one instance of an actor (again, on a restart).
struct Spec<A: Actor> {
    name: Cow<'static, str>,
    config: ActorConfig,
    supervisor: Option<SupervisorConfig>,
    registry: Option<Address>,
    register_as: Vec<Cow<'static, str>>,
    plugins: Vec<PluginFactory<A>>,
}

/// Configures and spawns one actor; [`finish`](Builder::finish) makes it.
///
/// Made by [`Locality::spawn_root`](crate::Locality::spawn_root),
/// [`Locality::spawn`](crate::Locality::spawn), [`Context::spawn`](crate::Context::spawn)
/// or their `spawn_with` forms, which take a factory so that the actor can be
/// restarted (see [`restart`](Builder::restart)).
#[must_use = "an actor is spawned only by `finish()`"]
pub struct Builder<'a, A: Actor> {
    core: &'a mut Core,
    parent: Parent,
    source: Source<A>,
    name: Option<Cow<'static, str>>,
    config: ActorConfig,
    supervisor: Option<SupervisorConfig>,
    registry: Option<Address>,
    register_as: Vec<Cow<'static, str>>,
    plugins: Vec<PluginFactory<A>>,
    supervision: SupervisionConfig,
}

impl<A: Actor> fmt::Debug for Builder<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("supervision", &self.supervision)
            .finish_non_exhaustive()
    }
}

impl<'a, A: Actor> Builder<'a, A> {
    pub(crate) fn new(core: &'a mut Core, parent: Option<Key>, actor: A) -> Self {
        let parent = parent.map_or(Parent::Root, Parent::Local);
        Self::with_parent(core, parent, actor)
    }

    pub(crate) fn with_parent(core: &'a mut Core, parent: Parent, actor: A) -> Self {
        Self::from_source(core, parent, Source::Value(actor))
    }

    pub(crate) fn with_factory(
        core: &'a mut Core,
        parent: Parent,
        factory: impl FnMut() -> A + 'static,
    ) -> Self {
        Self::from_source(core, parent, Source::Factory(Box::new(factory)))
    }

    fn from_source(core: &'a mut Core, parent: Parent, source: Source<A>) -> Self {
        Builder {
            core,
            parent,
            source,
            name: None,
            config: ActorConfig::default(),
            supervisor: None,
            registry: None,
            register_as: Vec::new(),
            plugins: Vec::new(),
            supervision: SupervisionConfig::default(),
        }
    }

    /// Names the actor (default: its type name); the name shows in its address.
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Fails init with `InitTimeout` if it takes longer than `timeout`.
    pub fn init_timeout(mut self, timeout: Duration) -> Self {
        self.config.init_timeout = Some(timeout);
        self
    }

    /// Treats a shutdown longer than `timeout` as a contract violation.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.config.shutdown_timeout = Some(timeout);
        self
    }

    /// Makes the actor a supervisor: it can spawn children, and its lifecycle
    /// waits for theirs.
    pub fn supervisor(mut self, config: SupervisorConfig) -> Self {
        self.supervisor = Some(config);
        self
    }

    /// Adds a user plugin: it votes on init after the built-in plugins, in the
    /// order added, and on shutdown in reverse order. Each instance of the
    /// actor (a restart makes a new one) gets its own clone.
    pub fn plugin<P: Plugin<A> + Clone>(mut self, plugin: P) -> Self {
        self.plugins.push(Rc::new(move || Box::new(plugin.clone())));
        self
    }

    /// Registers the actor's main address under `name` in its registry while it
    /// initializes; init fails with `AlreadyRegistered` if the name is taken.
    pub fn register_as(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.register_as.push(name.into());
        self
    }

    /// Uses the registry at `registry` (default: the supervisor's).
    pub fn registry(mut self, registry: &Address) -> Self {
        self.registry = Some(registry.clone());
        self
    }

    /// When the actor goes down, its supervisor restarts it (a new instance
    /// from the factory) as `policy` says, after the restart delay, at most
    /// as often as the restart limit allows (default: 3 restarts in 5 s).
    /// Needs a factory: spawn with `spawn_with`.
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.supervision.policy = policy;
        self
    }

    /// Waits `delay` before each restart (default: none).
    pub fn restart_delay(mut self, delay: Duration) -> Self {
        self.supervision.delay = delay;
        self
    }

    /// Doubles the restart delay with each restart within the limit's
    /// period (back-off), up to `max`.
    pub fn restart_backoff(mut self, max: Duration) -> Self {
        self.supervision.max_delay = Some(max);
        self
    }

    /// Gives up on the child after `restarts` restarts within `period`.
    pub fn restart_limit(mut self, restarts: u32, period: Duration) -> Self {
        self.supervision.limit = restarts;
        self.supervision.period = period;
        self
    }

    /// When the actor fails and is not restarted (no policy, or the limit is
    /// reached), its supervisor shuts down too, with `FailureEscalation` as
    /// its reason, and the supervisor's own supervisor decides in turn.
    pub fn escalate_failure(mut self) -> Self {
        self.supervision.escalate = true;
        self
    }

    /// When the actor ends at all and is not restarted, its supervisor shuts
    /// down too (normally if the actor ended normally).
    pub fn autoshutdown_supervisor(mut self) -> Self {
        self.supervision.autoshutdown = true;
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
        let Builder {
            core,
            parent,
            source,
            name,
            config,
            supervisor,
            registry,
            register_as,
            plugins,
            supervision,
        } = self;
        let parent = match parent {
            Parent::Invalid(error) => return Err(error),
            Parent::Root => None,
            Parent::Local(key) => Some(check_parent(core, key)?),
        };
        let restarts = supervision.policy != RestartPolicy::Never;
        if restarts && matches!(source, Source::Value(_)) {
            let why = "a restarted actor needs a factory: spawn it with `spawn_with`";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        if parent.is_none() && supervision.is_set() {
            let why = "a root has no supervisor to restart it or escalate to";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        let inherited = parent
            .and_then(|p| core.actors.get(p))
            .and_then(|p| p.registry.clone());
        let spec = Spec {
            name: name.unwrap_or_else(default_name::<A>),
            config,
            supervisor,
            registry: registry.or(inherited),
            register_as,
            plugins,
        };
        let Some(parent) = parent else {
            let actor = match source {
                Source::Value(actor) => actor,
                Source::Factory(mut factory) => factory(),
            };
            core.root_spawned();
            return spawn_instance(core, None, &spec, actor);
        };
        let parent_cell = core.actors.get_mut(parent).expect("checked above");
        let parent_address = parent_cell.address.clone();
        let slot = parent_cell
            .supervisor
            .as_deref()
            .expect("checked above")
            .children
            .vacant_key();
        let spec = Rc::new(spec);
        let (actor, respawn) = match source {
            Source::Value(actor) => (actor, None),
            Source::Factory(mut factory) => {
                let actor = factory();
                let respawn = restarts.then(|| {
                    let spec = spec.clone();
                    Box::new(move |core: &mut Core, link: ParentLink| {
                        spawn_instance(core, Some(link), &spec, factory()).map(Some)
                    }) as Respawn
                });
                (actor, respawn)
            }
        };
        let link = ParentLink {
            address: parent_address,
            slot,
        };
        let address = spawn_instance(core, Some(link), &spec, actor)?;
        let supervision = supervision
            .is_set()
            .then(|| Box::new(Supervision::new(supervision, respawn)));
        let record = ChildRecord {
            address: Some(address.clone()),
            state: ChildState::Initializing,
            initializing: true,
            supervision,
            restart_timer: None,
        };
        let sup = core
            .actors
            .get_mut(parent)
            .and_then(|c| c.supervisor.as_deref_mut())
            .expect("checked above");
        let inserted = sup.children.insert(record);
        debug_assert_eq!(
            inserted, slot,
            "nothing else was added to the supervisor meanwhile"
        );
        sup.initializing += 1;
        Ok(address)
    }
}

/// Makes one instance of an actor: its cell, its address, its `Init`, and
/// (for a supervisor made `with_registry`) its registry child.
fn spawn_instance<A: Actor>(
    core: &mut Core,
    parent: Option<ParentLink>,
    spec: &Spec<A>,
    actor: A,
) -> Result<Address> {
    let mut boxed = ActorBox::new(actor);
    boxed.plugins = spec.plugins.iter().map(|make| make()).collect();
    boxed.register_as = spec.register_as.clone();
    let seq = core.next_seq();
    let (address_key, address) = core.create_address_slot(spec.name.clone(), seq, None);
    let cell = ActorCell {
        name: spec.name.clone(),
        actor: Some(Box::new(boxed)),
        state: ActorState::New,
        address: address.clone(),
        identities: SmallVec::new(),
        subscriptions: SmallVec::new(),
        timers: SmallVec::new(),
        requests: SmallVec::new(),
        parent,
        config: spec.config,
        supervisor: spec
            .supervisor
            .clone()
            .map(|c| Box::new(SupervisorState::new(c))),
        reason: None,
        init_failure: None,
        lifecycle_timer: None,
        registry: spec.registry.clone(),
        plugins: None,
    };
    let me = core.actors.insert(cell);
    if let Some(slot) = core.addresses.get_mut(address_key) {
        slot.owner = me;
    }
    tracing::debug!(actor = %address, "spawned");
    lifecycle::start_lifecycle(core, &address);
    if spec.supervisor.as_ref().is_some_and(|s| s.registry) {
        let registry = Builder::new(core, Some(me), Registry::default())
            .name("registry")
            .finish()?;
        if let Some(cell) = core.actors.get_mut(me) {
            cell.registry = Some(registry);
        }
    }
    Ok(address)
}

fn check_parent(core: &Core, key: Key) -> Result<Key> {
    let Some(cell) = core.actors.get(key) else {
        return Err(
            Error::new(ErrorCode::SupervisorShuttingDown).with_context("supervisor is gone")
        );
    };
    if cell.supervisor.is_none() {
        return Err(Error::new(ErrorCode::NotASupervisor).with_context(cell.address.to_string()));
    }
    if cell.state >= ActorState::ShuttingDown {
        return Err(
            Error::new(ErrorCode::SupervisorShuttingDown).with_context(cell.address.to_string())
        );
    }
    Ok(key)
}

//! [`Builder`]: spawning an actor in code.

use crate::actor::{Actor, ActorBox, ActorCell, ActorConfig, ActorState, ParentLink, default_name};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::lifecycle;
use crate::locality::Core;
use crate::plugin::Plugin;
use crate::registry::Registry;
use crate::supervisor::{ChildRecord, ChildState, SupervisorConfig, SupervisorState};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// Where a new actor goes.
pub(crate) enum Parent {
    Root,
    Local(Key),
    Invalid(Error),
}

/// Configures and spawns one actor; [`finish`](Builder::finish) makes it.
///
/// Made by [`Locality::spawn_root`](crate::Locality::spawn_root),
/// [`Locality::spawn`](crate::Locality::spawn) or [`Context::spawn`](crate::Context::spawn).
#[must_use = "an actor is spawned only by `finish()`"]
pub struct Builder<'a, A: Actor> {
    core: &'a mut Core,
    parent: Parent,
    actor: ActorBox<A>,
    name: Option<Cow<'static, str>>,
    config: ActorConfig,
    supervisor: Option<SupervisorConfig>,
    registry: Option<Address>,
}

impl<A: Actor> fmt::Debug for Builder<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<'a, A: Actor> Builder<'a, A> {
    pub(crate) fn new(core: &'a mut Core, parent: Option<Key>, actor: A) -> Self {
        let parent = parent.map_or(Parent::Root, Parent::Local);
        Self::with_parent(core, parent, actor)
    }

    pub(crate) fn with_parent(core: &'a mut Core, parent: Parent, actor: A) -> Self {
        Builder {
            core,
            parent,
            actor: ActorBox::new(actor),
            name: None,
            config: ActorConfig::default(),
            supervisor: None,
            registry: None,
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
    /// order added, and on shutdown in reverse order.
    pub fn plugin(mut self, plugin: impl Plugin<A>) -> Self {
        self.actor.plugins.push(Box::new(plugin));
        self
    }

    /// Registers the actor's main address under `name` in its registry while it
    /// initializes; init fails with `AlreadyRegistered` if the name is taken.
    pub fn register_as(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.actor.register_as.push(name.into());
        self
    }

    /// Uses the registry at `registry` (default: the supervisor's).
    pub fn registry(mut self, registry: &Address) -> Self {
        self.registry = Some(registry.clone());
        self
    }

    /// Spawns the actor and returns its main address. Its supervisor starts
    /// its lifecycle: it initializes in a later dispatch step.
    ///
    /// Errors: [`ErrorCode::NotASupervisor`] if the parent is not a supervisor,
    /// [`ErrorCode::SupervisorShuttingDown`] if it is shutting down or gone,
    /// [`ErrorCode::ForeignAddress`] if it lives on another locality.
    pub fn finish(self) -> Result<Address> {
        let Builder {
            core,
            parent,
            actor,
            name,
            config,
            supervisor,
            registry,
        } = self;
        let parent = match parent {
            Parent::Invalid(error) => return Err(error),
            Parent::Root => None,
            Parent::Local(key) => Some(check_parent(core, key)?),
        };
        let name = name.unwrap_or_else(default_name::<A>);
        let registry = registry.or_else(|| {
            parent
                .and_then(|p| core.actors.get(p))
                .and_then(|p| p.registry.clone())
        });
        let with_registry = supervisor.as_ref().is_some_and(|s| s.registry);
        let seq = core.next_seq();
        let (address_key, address) = core.create_address_slot(name.clone(), seq, None);
        let cell = ActorCell {
            name,
            actor: Some(Box::new(actor)),
            state: ActorState::New,
            address: address.clone(),
            identities: SmallVec::new(),
            subscriptions: SmallVec::new(),
            timers: SmallVec::new(),
            requests: SmallVec::new(),
            parent: None,
            config,
            supervisor: supervisor.map(|c| Box::new(SupervisorState::new(c))),
            reason: None,
            init_failure: None,
            lifecycle_timer: None,
            registry,
            plugins: None,
        };
        let me = core.actors.insert(cell);
        if let Some(slot) = core.addresses.get_mut(address_key) {
            slot.owner = me;
        }
        match parent {
            Some(parent_key) => {
                let parent_cell = core.actors.get_mut(parent_key).expect("checked above");
                let parent_address = parent_cell.address.clone();
                let sup = parent_cell
                    .supervisor
                    .as_deref_mut()
                    .expect("checked above");
                let record = ChildRecord {
                    address: address.clone(),
                    state: ChildState::Initializing,
                    initializing: true,
                };
                let slot = sup.children.insert(record);
                sup.initializing += 1;
                if let Some(cell) = core.actors.get_mut(me) {
                    cell.parent = Some(ParentLink {
                        address: parent_address,
                        slot,
                    });
                }
            }
            None => core.root_spawned(),
        }
        tracing::debug!(actor = %address, "spawned");
        lifecycle::start_lifecycle(core, &address);
        if with_registry {
            let registry = Builder::new(core, Some(me), Registry::default())
                .name("registry")
                .finish()?;
            if let Some(cell) = core.actors.get_mut(me) {
                cell.registry = Some(registry);
            }
        }
        Ok(address)
    }
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

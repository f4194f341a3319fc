//! Making actor instances: here, or on another locality by a posted request.

use crate::actor::{
    Actor, ActorBox, ActorCell, ActorConfig, ActorState, ParentLink, Rare, default_name,
};
use crate::address::Address;
use crate::arena::Key;
use crate::builder::Builder;
use crate::error::{Error, ErrorCode, Result};
use crate::lifecycle::{self, SystemMsg};
use crate::locality::Core;
use crate::locality::LocalityHandle;
use crate::locality::shared::Remote;
use crate::plugin::Plugin;
use crate::queue::Envelope;
use crate::registry::Registry;
use crate::subscription::AddressInfo;
use crate::supervisor::{SupervisorConfig, SupervisorState};
use std::any::TypeId;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

pub(crate) type PluginFactory<A> = Rc<dyn Fn() -> Box<dyn Plugin<A>>>;

/// What every instance of an actor is made with (besides the actor value).
#[derive(Clone)]
pub(crate) struct Settings {
    /// `None`: the actor type's name.
    pub(crate) name: Option<Cow<'static, str>>,
    pub(crate) config: ActorConfig,
    pub(crate) supervisor: Option<Box<SupervisorConfig>>,
    pub(crate) registry: Option<Address>,
    /// The registry was given on the builder (not inherited).
    pub(crate) explicit_registry: bool,
    pub(crate) register_as: Vec<Cow<'static, str>>,
}

/// Settings plus the actor's plugin prototypes.
pub(crate) struct Spec<A: Actor> {
    pub(crate) settings: Settings,
    pub(crate) plugins: Vec<PluginFactory<A>>,
}

/// Makes one instance of an actor from a spec kept for more (a restarted
/// child's): its settings are cloned.
pub(crate) fn spawn_instance<A: Actor>(
    core: &mut Core,
    parent: Option<ParentLink>,
    spec: &Spec<A>,
    actor: A,
) -> Result<Address> {
    let plugins = make_plugins(&spec.plugins);
    spawn_from(core, parent, spec.settings.clone(), plugins, actor)
}

/// Makes the one instance of an actor `spec` is for: its settings (the
/// name, the names to register) are moved, not cloned.
pub(crate) fn spawn_once<A: Actor>(
    core: &mut Core,
    parent: Option<ParentLink>,
    spec: Spec<A>,
    actor: A,
) -> Result<Address> {
    let plugins = make_plugins(&spec.plugins);
    spawn_from(core, parent, spec.settings, plugins, actor)
}

/// The registry `registry` as an `Rc`: the one of the local parent at
/// `parent` if it is the same (the usual case, inherited), else a new one.
fn shared_registry(core: &Core, parent: Option<&ParentLink>, registry: Address) -> Rc<Address> {
    let parents = parent
        .filter(|p| p.address.locality_id() == core.id())
        .and_then(|p| core.routes.address(p.address.key()))
        .and_then(|slot| core.actors.get(slot.owner))
        .and_then(|cell| {
            let kept = cell.supervisor.as_ref().and_then(|s| s.registry.as_ref());
            kept.or(cell.registry.as_ref())
        });
    match parents {
        Some(rc) if **rc == registry => rc.clone(),
        _ => Rc::new(registry),
    }
}

fn make_plugins<A: Actor>(prototypes: &[PluginFactory<A>]) -> Vec<Box<dyn Plugin<A>>> {
    match prototypes.is_empty() {
        true => Vec::new(),
        false => prototypes.iter().map(|make| make()).collect(),
    }
}

/// Makes one instance of an actor: its cell, its address, its `Init`, and
/// (for a supervisor made `with_registry`) its registry child.
fn spawn_from<A: Actor>(
    core: &mut Core,
    parent: Option<ParentLink>,
    settings: Settings,
    plugins: Vec<Box<dyn Plugin<A>>>,
    actor: A,
) -> Result<Address> {
    let Settings {
        name,
        config,
        supervisor,
        registry,
        explicit_registry,
        register_as,
    } = settings;
    let boxed = ActorBox::new(actor, plugins, register_as);
    let seq = core.next_seq();
    let rare = (config != ActorConfig::default()).then(|| {
        Box::new(Rare {
            config,
            ..Rare::default()
        })
    });
    let registry = registry.map(|r| shared_registry(core, parent.as_ref(), r));
    let with_registry = supervisor.as_ref().is_some_and(|c| c.registry);
    let flag = supervisor.as_ref().and_then(|c| c.shutdown_flag.clone());
    let supervisor = supervisor.map(|c| Box::new(SupervisorState::new(*c)));
    // The actor's key first, so that its address is made with its owner.
    // A plain actor's name is its type's, interned: its address allocates nothing.
    let name = match name {
        Some(name) => Err(name),
        None => core
            .type_names
            .id(&core.shared.names, TypeId::of::<A>(), default_name::<A>)
            .ok_or_else(default_name::<A>),
    };
    let Core {
        actors,
        routes,
        shared,
        ..
    } = core;
    let mut made = None;
    let me = actors.insert_with(|me| {
        routes.add_address(|key| {
            let address = match name {
                Ok(id) => Address::interned(shared.clone(), key, id, seq),
                Err(name) => Address::new(shared.clone(), key, name, seq, None),
            };
            made = Some(address.clone());
            AddressInfo { owner: me, address }
        });
        ActorCell {
            actor: Rc::new(RefCell::new(boxed)),
            address: made.clone().expect("made by add_address"),
            parent,
            supervisor,
            reason: None,
            registry,
            rare,
            state: ActorState::New,
        }
    });
    let address = made.expect("made by add_address");
    tracing::debug!(actor = %address, "spawned");
    start_lifecycle(core, me, &address);
    if let Some(flag) = flag {
        crate::supervisor::flag::arm(core, me, flag);
    }
    if with_registry {
        let registry = Builder::new(core, Some(me), Registry::default())
            .name("registry")
            .finish()?;
        let registry = Rc::new(registry);
        if let Some(cell) = core.actors.get_mut(me) {
            // The new registry serves the descendants; the supervisor itself
            // uses it too, unless it was given one of its own.
            if !explicit_registry {
                cell.registry = Some(registry.clone());
            }
            if let Some(sup) = cell.supervisor.as_deref_mut() {
                sup.registry = Some(registry);
            }
        }
    }
    Ok(address)
}

/// `Init` for a freshly spawned actor (`actor`, at its main `address`):
/// two keys, a small queue entry per spawn.
struct InitEnvelope {
    actor: Key,
    address: Key,
}

impl Envelope<Core> for InitEnvelope {
    fn deliver(self, core: &mut Core) {
        crate::inspect::step(core, "Init", None, None, self.address);
        lifecycle::on_init(core, self.actor);
    }
}

/// Queues `Init` for the freshly spawned actor `actor` (at `address`).
fn start_lifecycle(core: &mut Core, actor: Key, address: &Address) {
    core.enqueue(InitEnvelope {
        actor,
        address: address.key(),
    });
}

/// A factory that other threads may call: the actor is made where it lives.
pub(crate) type SharedFactory<A> = Arc<Mutex<dyn FnMut() -> A + Send>>;

/// Makes an instance on the locality that runs it.
type MakeThere = Box<dyn FnOnce(&mut Core, ParentLink) -> Result<Address> + Send>;

/// A child being made on another locality: what
/// [`spawn_on(..).finish()`](crate::Builder::finish-1) returns. The address
/// is a slot in that locality's routing table, which only its own thread
/// touches, so it cannot be known before that locality has made the child;
/// this handle resolves to it then (or to the error that kept the child
/// from being made). `Send + Sync + Clone`.
///
/// An actor need not wait for it: its supervisor hears the address in
/// [`Actor::on_child_init`] once the child has initialized. A restarted
/// child is a new instance at a new address; the handle keeps the first.
#[derive(Clone)]
pub struct PendingChild {
    inner: Arc<(Mutex<Option<Result<Address>>>, Condvar)>,
}

impl PendingChild {
    fn new() -> PendingChild {
        PendingChild {
            inner: Arc::new((Mutex::new(None), Condvar::new())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Result<Address>>> {
        self.inner.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves it (once: later calls change nothing).
    fn resolve(&self, result: Result<Address>) {
        let mut slot = self.lock();
        if slot.is_none() {
            *slot = Some(result);
            self.inner.1.notify_all();
        }
    }

    /// The child's address, once the other locality has made it.
    pub fn address(&self) -> Option<Address> {
        self.lock().as_ref()?.as_ref().ok().cloned()
    }

    /// The outcome, once known: the address, or why the child could not
    /// be made (its locality finished, its factory panicked).
    pub fn result(&self) -> Option<Result<Address>> {
        self.lock().clone()
    }

    /// Blocks this thread until the outcome is known, or `timeout` has
    /// passed (`None`). Only from a thread that does not run the other
    /// locality (nor a locality the answer depends on): it would wait for
    /// itself.
    pub fn wait(&self, timeout: Duration) -> Option<Result<Address>> {
        let slot = self.lock();
        let (slot, _) = self
            .inner
            .1
            .wait_timeout_while(slot, timeout, |s| s.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        slot.clone()
    }
}

impl fmt::Debug for PendingChild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.lock() {
            None => f.write_str("PendingChild(pending)"),
            Some(Ok(address)) => write!(f, "PendingChild({address})"),
            Some(Err(error)) => write!(f, "PendingChild({error})"),
        }
    }
}

/// Resolves a [`PendingChild`] on every path: by the spawn, by a refusal,
/// or (the request dropped unserved) with an error.
struct Resolver(Option<PendingChild>);

impl Resolver {
    fn resolve(&mut self, result: &Result<Address>) {
        if let Some(pending) = self.0.take() {
            pending.resolve(result.clone());
        }
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        let why = "the spawn request was dropped unserved";
        self.resolve(&Err(
            Error::new(ErrorCode::LocalityFinished).with_context(why)
        ));
    }
}

/// Asks another locality to make a child of a supervisor here.
struct SpawnRequest {
    parent: Address,
    slot: usize,
    make: MakeThere,
    /// Told the outcome (the first instance's spawn only).
    pending: Resolver,
    /// Keeps the locality from finishing while the request is on its way:
    /// it was asked while a handle existed, and must be served.
    _keep: LocalityHandle,
}

impl Remote for SpawnRequest {
    /// The locality closed before making the child: tell its supervisor.
    fn refuse(mut self: Box<Self>) {
        let result = Err(Error::new(ErrorCode::LocalityFinished)
            .with_context("the child's locality has finished"));
        self.pending.resolve(&result);
        let msg = SystemMsg::ChildSpawned {
            slot: self.slot,
            result,
        };
        self.parent
            .locality()
            .post(Box::new(crate::lifecycle::SysEnvelope {
                dest: self.parent.key(),
                msg,
            }));
    }

    fn localize(self: Box<Self>, core: &mut Core) {
        let SpawnRequest {
            parent,
            slot,
            make,
            mut pending,
            _keep,
        } = *self;
        // A child of a supervisor elsewhere keeps this locality alive (its
        // shutdown unanchors it); one of a supervisor here does not.
        let foreign = parent.locality_id() != core.id();
        if foreign {
            core.anchor();
        }
        let link = ParentLink {
            address: parent.clone(),
            slot,
        };
        // The factory is user code: a panic there is a failed spawn.
        let result = match catch_unwind(AssertUnwindSafe(|| make(core, link))) {
            Ok(result) => result,
            Err(payload) => Err(Error::new(ErrorCode::Panicked).with_context(format!(
                "the factory of a child of {parent}: {}",
                crate::actor::panic_message(payload.as_ref())
            ))),
        };
        if result.is_err() && foreign {
            core.unanchor(None);
        }
        pending.resolve(&result);
        core.send_system(&parent, SystemMsg::ChildSpawned { slot, result });
        drop(_keep);
    }
}

/// Posts a request to make a child (from `factory`, with `settings`) of the
/// supervisor at `parent`, in its `slot`, on the locality of `handle`; the
/// first instance's spawn returns a handle on its outcome.
pub(crate) fn spawn_elsewhere<A: Actor>(
    handle: &LocalityHandle,
    parent: Address,
    slot: usize,
    factory: SharedFactory<A>,
    settings: Settings,
    first: bool,
) -> Result<Option<PendingChild>> {
    let make = move |core: &mut Core, link: ParentLink| {
        let actor = (factory.lock().unwrap_or_else(PoisonError::into_inner))();
        spawn_once(
            core,
            Some(link),
            Spec {
                settings,
                plugins: Vec::new(),
            },
            actor,
        )
    };
    let pending = first.then(PendingChild::new);
    let request = SpawnRequest {
        parent,
        slot,
        make: Box::new(make),
        pending: Resolver(pending.clone()),
        _keep: handle.clone(),
    };
    if handle.shared.post(Box::new(request)) {
        Ok(pending)
    } else {
        Err(handle.shared.finished_error())
    }
}

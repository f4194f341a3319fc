//! Making actor instances: here, or on another locality by a posted request.

use crate::actor::{
    Actor, ActorBox, ActorCell, ActorConfig, ActorState, ParentLink, Rare, default_name,
    known_hooks,
};
use crate::address::Address;
use crate::arena::Key;
use crate::builder::Builder;
use crate::error::{Error, ErrorCode, Result};
use crate::lifecycle;
use crate::locality::Core;
use crate::plugin::Plugin;
use crate::queue::Envelope;
use crate::registry::Registry;
use crate::subscription::AddressInfo;
use crate::supervisor::{SupervisorConfig, SupervisorState};
use std::any::TypeId;
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

mod elsewhere;
pub use elsewhere::PendingChild;
pub(crate) use elsewhere::{SharedFactory, spawn_elsewhere};

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
    spawn_from(core, parent, spec.settings.clone(), plugins, actor, None)
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
    spawn_from(core, parent, spec.settings, plugins, actor, None)
}

/// The registry `registry` as an `Rc`: the one of the local parent at
/// `parent` if it is the same (the usual case, inherited), else a new one.
fn shared_registry(core: &Core, parent: Option<&ParentLink>, registry: Address) -> Rc<Address> {
    let parents = parent
        .and_then(|p| match *p {
            ParentLink::Local { key, .. } => Some(key),
            ParentLink::Remote(_) => None,
        })
        .and_then(|key| core.routes.address(key))
        .and_then(|slot| core.actors.get(slot.owner))
        .and_then(|cell| {
            let kept = cell.supervisor.as_ref().and_then(|s| s.registry.as_ref());
            kept.or_else(|| crate::actor::registry_of(core, cell))
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

/// Makes one instance of an actor: its cell, its address (at `reserved`,
/// a far key another thread reserved for it, or a new one), its `Init`,
/// and (for a supervisor made `with_registry`) its registry child.
fn spawn_from<A: Actor>(
    core: &mut Core,
    parent: Option<ParentLink>,
    settings: Settings,
    plugins: Vec<Box<dyn Plugin<A>>>,
    actor: A,
    reserved: Option<Address>,
) -> Result<Address> {
    let Settings {
        name,
        config,
        supervisor,
        registry,
        explicit_registry,
        register_as,
    } = settings;
    if let Some(at) = reserved
        .as_ref()
        .filter(|at| !core.routes.far_vacant(at.key()))
    {
        let why = format!("{at}: the address reserved for it is taken");
        return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
    }
    let extras = !plugins.is_empty() || !register_as.is_empty();
    let boxed = ActorBox::new(actor, plugins, register_as);
    let seq = match &reserved {
        Some(_) => 0, // the reserved address has its number
        None => core.next_seq(),
    };
    // Kept by the cell only if it is not what the actor inherits from a
    // supervisor here (`registry_of` finds that when asked); a supervisor
    // keeps the one it uses for its children to inherit.
    let local_parent = matches!(parent, Some(ParentLink::Local { .. }));
    let registry = registry
        .filter(|_| explicit_registry || !local_parent || supervisor.is_some())
        .map(|r| shared_registry(core, parent.as_ref(), r));
    let (registry, descendants) = match supervisor.is_some() {
        true => (
            registry
                .clone()
                .filter(|_| explicit_registry || !local_parent),
            registry,
        ),
        false => (registry, None),
    };
    let (parent, far_parent) = ActorCell::split_parent(parent);
    let rare = (config != ActorConfig::default() || far_parent.is_some() || registry.is_some())
        .then(|| {
            Box::new(Rare {
                config,
                far_parent,
                registry: registry.map(Some),
                ..Rare::default()
            })
        });
    let with_registry = supervisor.as_ref().is_some_and(|c| c.registry);
    let flag = supervisor.as_ref().and_then(|c| c.shutdown_flag.clone());
    let supervisor = supervisor.map(|c| {
        let mut state = SupervisorState::new(*c);
        state.registry = descendants;
        Box::new(state)
    });
    // The actor's key first, so that its address is made with its owner.
    // A plain actor's name is its type's, interned: its address allocates nothing.
    let name = match name {
        Some(name) => Err(name),
        None => core
            .type_names
            .id(&core.shared.names, TypeId::of::<A>(), default_name::<A>)
            .ok_or_else(default_name::<A>),
    };
    // What its type's hooks are known to be, so that a known default is
    // skipped from the first hook on without asking the type.
    let hooks = known_hooks(core.type_names.hook_index(TypeId::of::<A>()), extras);
    let (me, address) = insert_cell(core, reserved, name, seq, |main| ActorCell {
        actor: Rc::new(RefCell::new(boxed)),
        main,
        parent,
        supervisor,
        rare,
        state: ActorState::New,
        hooks,
    });
    start_lifecycle(core, me, &address);
    if let Some(flag) = flag {
        crate::supervisor::flag::arm(core, me, flag);
    }
    if with_registry {
        let registry = Builder::new(core, Some(me), Registry::default())
            .name("registry")
            .finish()?;
        // The registry child keeps what it inherited, the supervisor's
        // registry until now (its children inherit the new one from here on).
        let inherited = core
            .actors
            .get(me)
            .and_then(|cell| crate::actor::registry_of(core, cell).cloned());
        if let Some(child) = core.routes.address(registry.key()).map(|slot| slot.owner)
            && let Some(cell) = core.actors.get_mut(child)
        {
            cell.rare().registry = Some(inherited);
        }
        // The new registry serves the descendants; the supervisor itself
        // uses it too (`registry_of`), unless it was given one of its own
        // (kept in its rare part).
        if let Some(sup) = crate::supervisor::sup_mut(core, me) {
            sup.registry = Some(Rc::new(registry));
        }
    }
    Ok(address)
}

/// Adds a cell (made by `cell` with its main address's key) and its main
/// address (at `reserved`, or a new one with `name` and number `seq`); its
/// key and address (the routing slot keeps the address, the cell its key).
#[inline]
fn insert_cell(
    core: &mut Core,
    reserved: Option<Address>,
    name: std::result::Result<crate::names::NameId, Cow<'static, str>>,
    seq: u64,
    cell: impl FnOnce(Key) -> ActorCell,
) -> (Key, Address) {
    let Core {
        actors,
        routes,
        shared,
        labels,
        ..
    } = core;
    // The cell's key first (nothing else is stored meanwhile), so that
    // the cell is made with its main address's key, not in a closure.
    let me = actors.next_key();
    let mut made = None;
    let main = match reserved {
        Some(address) => {
            let key = address.key();
            made = Some(address.clone());
            let added = routes.add_far_address(key, AddressInfo { owner: me, address });
            debug_assert!(added, "checked above");
            key
        }
        None => routes.add_address(|key| {
            let address = match name {
                Ok(id) => Address::interned(shared.clone(), key, id, seq),
                Err(Cow::Owned(name)) => Address::owned_name(labels, shared, key, name, seq),
                Err(name) => Address::new(shared.clone(), key, name, seq, None),
            };
            made = Some(address.clone());
            AddressInfo { owner: me, address }
        }),
    };
    let inserted = actors.insert(cell(main));
    debug_assert!(inserted == me, "the key read before");
    (me, made.expect("made by add_address"))
}

/// [`spawn_once`] for a plain child (`Builder::is_plain`: nothing set but
/// the actor) of a local supervisor: no settings to take apart, no
/// plugins; `registry` is the one it inherits, as its supervisor keeps it
/// (kept only if the link to the supervisor is not a local one: else it
/// is found when asked, `registry_of`).
pub(crate) fn spawn_plain<A: Actor>(
    core: &mut Core,
    parent: ParentLink,
    registry: Option<Rc<Address>>,
    actor: A,
) -> Address {
    let seq = core.next_seq();
    let (parent, far_parent) = ActorCell::split_parent(Some(parent));
    // A supervisor here is asked for its registry when it is needed
    // (`registry_of`); one elsewhere is not.
    let rare = far_parent.map(|far_parent| {
        Box::new(Rare {
            far_parent: Some(far_parent),
            registry: Some(registry),
            ..Rare::default()
        })
    });
    let (name, index) =
        core.type_names
            .of(&core.shared.names, TypeId::of::<A>(), default_name::<A>);
    let name = name.ok_or_else(default_name::<A>);
    let hooks = known_hooks(index, false);
    let boxed = ActorBox {
        actor,
        extras: None,
    };
    let (me, address) = insert_cell(core, None, name, seq, |main| ActorCell {
        actor: Rc::new(RefCell::new(boxed)),
        main,
        parent,
        supervisor: None,
        rare,
        state: ActorState::New,
        hooks,
    });
    start_lifecycle(core, me, &address);
    address
}

/// The debug line of a spawn (out of line: it is seldom enabled).
#[cold]
#[inline(never)]
fn log_spawned(address: &Address) {
    tracing::debug!(actor = %address, "spawned");
}

/// `Init` for a freshly spawned actor `actor`: a queue entry of two words
/// (a spawn in a burst queues thousands of them). The actor is found by
/// its key; its main address's key, which the inspection line names, is
/// read from its cell when the line is made.
struct InitEnvelope {
    actor: Key,
}

impl Envelope<Core> for InitEnvelope {
    fn deliver(self, core: &mut Core) {
        if core.inspect.level >= 2 {
            crate::inspect::init_line(core, self.actor);
        }
        lifecycle::on_init(core, self.actor);
    }
}

/// The debug line of a spawn (if enabled), then `Init` queued for the
/// freshly spawned actor `actor` at `address`.
#[inline(always)]
fn start_lifecycle(core: &mut Core, actor: Key, address: &Address) {
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        log_spawned(address);
    }
    if core.inspect.level >= 2 {
        crate::inspect::enqueue_inspected_init(core, actor, address.key());
    } else {
        core.enqueue(InitEnvelope { actor });
    }
}

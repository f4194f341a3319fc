//! Supervisors: actors that own children, compose their lifecycles, and decide
//! what happens when a child goes down (`restart.rs`).

pub(crate) mod flag;
pub(crate) mod local;
pub(crate) mod restart;
mod stop;

use crate::actor::{Actor, ActorCell, ActorState, Notice, notify_overridden};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode};
use crate::lifecycle::{self, SystemMsg};
use crate::locality::Core;
use slab::Slab;
use std::collections::{BTreeMap, BTreeSet};
pub(crate) use stop::shutdown_children;

/// A supervisor with no behaviour of its own: it only owns children.
///
/// Any actor becomes a supervisor when built with
/// [`Builder::supervisor`](crate::Builder::supervisor); this one is for trees
/// whose inner nodes need no code.
#[derive(Debug, Default, Clone, Copy)]
pub struct Supervisor;

impl Actor for Supervisor {}

/// What a supervisor does when a child fails to initialize while the
/// supervisor itself is initializing (rotor's rule). Once the supervisor
/// has initialized, a child that fails its init (spawned later, or
/// restarted) goes alone, and its restart policy applies; the supervisor
/// hears of it in [`Actor::on_child_init`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitFailurePolicy {
    /// Shut the whole supervisor down (rotor's default): the tree does not
    /// become operational with a missing part.
    #[default]
    ShutdownSupervisor,
    /// Let only the failed child go; the supervisor carries on.
    ShutdownChild,
}

/// Settings of a supervisor, given to [`Builder::supervisor`](crate::Builder::supervisor).
///
/// The default: a child that fails its init while the supervisor
/// initializes takes the supervisor down, no
/// registry, children start as soon as they are initialized, and the
/// supervisor carries on when it has let its last child go. The struct is
/// `#[non_exhaustive]`: start from `SupervisorConfig::default()` and use the
/// methods, e.g. `SupervisorConfig::default().with_registry()`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SupervisorConfig {
    /// What to do when a child fails to initialize (while the supervisor does).
    pub init_failure: InitFailurePolicy,
    /// Spawn a [`Registry`](crate::Registry) as the first child; descendants use it.
    pub registry: bool,
    /// Start children only when none is initializing (a synchronized start).
    pub synchronize_start: bool,
    /// Shut down once the last child is let go for good.
    pub shutdown_when_childless: bool,
    /// Shut down when this flag is set (read at an interval); behind an
    /// `Arc`, so that the config stays small for every spawn.
    pub(crate) shutdown_flag: Option<std::sync::Arc<flag::ShutdownFlag>>,
}

impl SupervisorConfig {
    /// Spawns a [`Registry`](crate::Registry) as the supervisor's first child,
    /// used by the supervisor's descendants (unless they are given another).
    pub fn with_registry(mut self) -> Self {
        self.registry = true;
        self
    }

    /// Holds initialized children until every child has initialized, then
    /// starts them together (at first start this is always so; the setting
    /// matters for children spawned later).
    pub fn synchronize_start(mut self, synchronize: bool) -> Self {
        self.synchronize_start = synchronize;
        self
    }

    /// Sets the policy for a child that fails to initialize.
    pub fn init_failure(mut self, policy: InitFailurePolicy) -> Self {
        self.init_failure = policy;
        self
    }

    /// Shuts the supervisor down (normally, with the context `shutdown flag
    /// set`) once `flag` is set, reading it every `every` from its spawn on
    /// (rotor's `shutdown_flag`). The flag may be set from any thread, or
    /// from a signal handler (see `examples/ctrl_c.rs`); on a root, the
    /// program then ends cleanly. The locality's loop wakes at least that
    /// often while the supervisor lives. A zero interval is refused by
    /// [`Builder::finish`](crate::Builder::finish) (`InvalidArgument`).
    ///
    /// ```
    /// use commutator::*;
    /// use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
    /// use std::time::Duration;
    ///
    /// let stop = Arc::new(AtomicBool::new(false));
    /// let mut locality = Locality::new();
    /// let t0 = locality.now();
    /// let config = SupervisorConfig::default().shutdown_flag(stop.clone(), Duration::from_millis(100));
    /// locality.spawn_root(Supervisor).supervisor(config).finish()?;
    /// locality.run_until_idle(t0);
    /// stop.store(true, Ordering::Release); // a signal handler, another thread...
    /// locality.run_until_idle(t0 + Duration::from_millis(100));
    /// assert!(locality.is_finished());
    /// assert!(locality.exit_reason().unwrap().is_normal());
    /// # Ok::<(), commutator::Error>(())
    /// ```
    pub fn shutdown_flag(
        mut self,
        flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
        every: std::time::Duration,
    ) -> Self {
        self.shutdown_flag = Some(std::sync::Arc::new(flag::ShutdownFlag { flag, every }));
        self
    }

    /// Shuts the supervisor down when it lets its last child go for good
    /// (the child is not restarted; its own registry does not count): with
    /// `ChildDown <- the child's reason` if the child failed, normally if it
    /// ended normally. Its own supervisor then decides in turn.
    ///
    /// Off by default (rotor's way): a supervisor carries on without
    /// children, and a failed child it gives up on is only logged (`WARN`),
    /// shown by inspection and counted in
    /// [`Stats::children_given_up`](crate::Stats::children_given_up). On, a
    /// root made of [`Supervisor`] ends the program with the failure that
    /// emptied it ([`System::run`](crate::System::run) returns it).
    pub fn shutdown_when_childless(mut self, shutdown: bool) -> Self {
        self.shutdown_when_childless = shutdown;
        self
    }
}

/// Where a child is, as its supervisor sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChildState {
    Initializing,
    Initialized,
    Started,
    ShuttingDown,
    /// Down, and waiting for its restart delay; a new instance comes next.
    Restarting,
}

/// Names a child across localities: its locality and its address key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChildId {
    locality: u32,
    key: Key,
}

impl ChildId {
    /// The child's address key, if it lives on the locality `locality`.
    pub(crate) fn local_key(self, locality: u32) -> Option<Key> {
        (self.locality == locality).then_some(self.key)
    }

    /// The child at address key `key` of locality `locality`.
    #[inline(always)]
    pub(crate) fn new(locality: u32, key: Key) -> ChildId {
        ChildId { locality, key }
    }

    pub(crate) fn of(address: &Address) -> ChildId {
        ChildId {
            locality: address.locality_id(),
            key: address.key(),
        }
    }
}

pub(crate) struct ChildRecord {
    /// The child's address; `None` until a child spawned on another
    /// locality reports in (`ChildSpawned`).
    pub(crate) address: Option<Address>,
    pub(crate) state: ChildState,
    /// `true` while the child has not confirmed its init.
    pub(crate) initializing: bool,
    /// `true` from the supervisor's shutdown marking the child
    /// `ShuttingDown` until it asks the child to stop
    /// ([`shutdown_children`]): the records are the list of children to
    /// stop, so that no list is made beside them.
    pub(crate) stop_pending: bool,
}

impl ChildRecord {
    #[inline]
    pub(crate) fn is(&self, child: ChildId) -> bool {
        self.address
            .as_ref()
            .is_some_and(|a| ChildId::of(a) == child)
    }
}

/// The child manager of one supervisor.
pub(crate) struct SupervisorState {
    pub(crate) config: SupervisorConfig,
    pub(crate) children: Slab<ChildRecord>,
    /// Restart policy, factory, history and pending restart of the
    /// children that have any (by slot; none for a child that is never
    /// restarted and escalates nothing): kept apart, so that a child's
    /// record is 32 bytes. Removed with the record.
    pub(crate) supervised: BTreeMap<usize, restart::Supervision>,
    pub(crate) initializing: usize,
    /// The slots of the children that are `Initialized`: held until the
    /// supervisor starts (or a synchronized start goes on). Kept apart so
    /// that starting them never scans every child: each child's exit, init
    /// and start costs O(log n), not O(n).
    pub(crate) held: BTreeSet<usize>,
    /// The registry its descendants inherit: the one it made
    /// (`with_registry`), else the one it uses itself (set when it became
    /// a supervisor: `actor::registry_of` reads it for its children).
    pub(crate) registry: Option<std::rc::Rc<Address>>,
    /// Its hooks that are the trait's defaults, found on their first call
    /// (`HOOK_INIT`, `HOOK_SHUTDOWN`): not called again.
    pub(crate) default_hooks: u8,
    /// The locality's entity version (`entity::Local::version`) moves when
    /// one of its children here leaves OPERATIONAL (an entity set,
    /// `entity::watch::leaving`); `false` for most.
    pub(crate) counts_leaving: bool,
}

/// `Actor::on_child_init`, in [`SupervisorState::default_hooks`].
pub(crate) const HOOK_INIT: u8 = 1;
/// `Actor::on_child_shutdown`, in [`SupervisorState::default_hooks`].
pub(crate) const HOOK_SHUTDOWN: u8 = 2;

impl SupervisorState {
    /// Forgets the child record at `slot` and its supervision state.
    #[inline(always)]
    pub(crate) fn forget_child(&mut self, slot: usize) {
        self.children.remove(slot);
        if !self.supervised.is_empty() {
            self.supervised.remove(&slot);
        }
    }

    pub(crate) fn new(config: SupervisorConfig) -> Self {
        SupervisorState {
            config,
            children: Slab::new(),
            supervised: BTreeMap::new(),
            initializing: 0,
            held: BTreeSet::new(),
            registry: None,
            default_hooks: 0,
            counts_leaving: false,
        }
    }

    /// `true` unless the hook (`HOOK_INIT`, `HOOK_SHUTDOWN`) is known to be
    /// the default one.
    pub(crate) fn hears(&self, hook: u8) -> bool {
        self.default_hooks & hook == 0
    }

    #[inline]
    pub(crate) fn child_mut(&mut self, slot: usize, child: ChildId) -> Option<&mut ChildRecord> {
        self.children.get_mut(slot).filter(|c| c.is(child))
    }

    /// `true` if no child is left but the supervisor's own registry (its
    /// first child, in slot 0, when it was made `with_registry`).
    pub(crate) fn is_childless(&self) -> bool {
        match self.children.len() {
            0 => true,
            1 => {
                self.registry.is_some()
                    && self
                        .children
                        .get(0)
                        .is_some_and(|r| r.address.as_ref() == self.registry.as_deref())
            }
            _ => false,
        }
    }
}

/// Calls supervisor `me`'s `hook` (`HOOK_INIT`, `HOOK_SHUTDOWN`) with
/// `notice`; a default one is not called again.
pub(crate) fn hear(core: &mut Core, me: Key, hook: u8, notice: Notice<'_>) {
    if !notify_overridden(core, me, notice)
        && let Some(sup) = sup_mut(core, me)
    {
        sup.default_hooks |= hook;
    }
}

/// The child manager's init vote: every child has confirmed its init.
pub(crate) fn init_ready(cell: &ActorCell) -> bool {
    cell.supervisor.as_ref().is_none_or(|s| s.initializing == 0)
}

/// The child manager's shutdown vote: every child is gone.
pub(crate) fn shutdown_ready(cell: &ActorCell) -> bool {
    cell.supervisor
        .as_ref()
        .is_none_or(|s| s.children.is_empty())
}

/// The child manager of supervisor `me`, if it is one and still here.
pub(crate) fn sup_mut(core: &mut Core, me: Key) -> Option<&mut SupervisorState> {
    core.actors.get_mut(me)?.supervisor.as_deref_mut()
}

pub(crate) fn on_child_initialized(core: &mut Core, me: Key, slot: usize, child: ChildId) {
    let address = sup_mut(core, me)
        .filter(|s| s.hears(HOOK_INIT))
        .and_then(|s| s.child_mut(slot, child))
        .filter(|r| r.state == ChildState::Initializing)
        .and_then(|r| r.address.clone());
    if let Some(address) = address {
        hear(core, me, HOOK_INIT, Notice::ChildInit(&address, Ok(())));
    }
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let my_state = cell.state;
    let Some(sup) = cell.supervisor.as_deref_mut() else {
        return;
    };
    let synchronized = sup.config.synchronize_start;
    let Some(record) = sup.children.get_mut(slot).filter(|r| r.is(child)) else {
        return;
    };
    if record.state != ChildState::Initializing {
        return;
    }
    record.state = ChildState::Initialized;
    record.initializing = false;
    sup.initializing -= 1;
    match my_state {
        // Start just this child (a rescan of all children here would make
        // spawning n children O(n^2)); a synchronized start waits for the last.
        ActorState::Operational if !synchronized => {
            record.state = ChildState::Started;
            if let Some(address) = record.address.clone() {
                core.send_system(&address, SystemMsg::Start);
                crate::entity::watch::started(core, me, slot, &address);
            }
        }
        _ => {
            sup.held.insert(slot);
            match my_state {
                ActorState::Operational if sup.initializing == 0 => start_children(core, me),
                ActorState::Initializing => lifecycle::try_init(core, me),
                _ => {}
            }
        }
    }
}

/// Starts every child that is initialized (the supervisor is operational),
/// unless a synchronized start waits for others still initializing. Only
/// the held children are visited, not every child.
pub(crate) fn start_children(core: &mut Core, me: Key) {
    let Some(sup) = sup_mut(core, me) else { return };
    if sup.held.is_empty() || (sup.config.synchronize_start && sup.initializing > 0) {
        return;
    }
    let mut to_start = Vec::with_capacity(sup.held.len());
    for slot in std::mem::take(&mut sup.held) {
        if let Some(record) = sup.children.get_mut(slot)
            && record.state == ChildState::Initialized
            && let Some(address) = &record.address
        {
            record.state = ChildState::Started;
            to_start.push((slot, address.clone()));
        }
    }
    for (slot, address) in to_start {
        core.send_system(&address, SystemMsg::Start);
        crate::entity::watch::started(core, me, slot, &address);
    }
}

/// The address in the record of supervisor `me`'s child in `slot`.
fn child_address(core: &mut Core, me: Key, slot: usize) -> Option<&Address> {
    sup_mut(core, me)?.children.get(slot)?.address.as_ref()
}

/// Asks the child in `slot` to shut down: by a direct call
/// if `direct` allows and it is a leaf here (`local::stop_leaf`), else by
/// a message. If its locality is gone, so is the child: the supervisor
/// sends itself the child's `ChildDown` (`LocalityLost`, naming the
/// locality) through its own inbox, behind whatever the child sent before
/// its locality closed, so a real `ChildDown` comes first and the stand-in
/// is then ignored.
fn stop_child(core: &mut Core, me: Key, slot: usize, reason: Error, direct: bool) {
    let Some(child) = child_address(core, me, slot).map(ChildId::of) else {
        return;
    };
    stop_known_child(core, me, slot, child, reason, direct);
}

/// [`stop_child`] for the `child` its record in `slot` named when the
/// caller read it (a stale one finds nothing: its record is looked up
/// again before a message goes).
fn stop_known_child(
    core: &mut Core,
    me: Key,
    slot: usize,
    child: ChildId,
    reason: Error,
    direct: bool,
) {
    let reason = match direct {
        true => match local::stop_leaf(core, child, reason, me) {
            Ok(()) => return,
            Err(reason) => reason,
        },
        false => reason,
    };
    // The record is looked up again after a direct call: the child is gone
    // at once (and its record), and the supervisor once its last child is.
    let Some(address) = child_address(core, me, slot).cloned() else {
        return;
    };
    if core.send_system(&address, SystemMsg::ShutdownRequest { reason }) {
        return;
    }
    let Some(dest) = core.actors.get(me).map(|cell| cell.main) else {
        return;
    };
    let lost = Error::new(ErrorCode::LocalityLost).with_context(address.locality().name.clone());
    tracing::warn!(child = %address, reason = %lost, "a child's locality is gone");
    let msg = SystemMsg::ChildDown {
        slot,
        child,
        reason: lost,
        restart: false,
    };
    core.shared
        .post(Box::new(lifecycle::SysEnvelope { dest, msg }));
}

/// A child (or someone on its behalf) asks for the child to be shut down.
pub(crate) fn on_child_shutdown_trigger(
    core: &mut Core,
    me: Key,
    slot: usize,
    child: ChildId,
    reason: Error,
) {
    let Some(sup) = sup_mut(core, me) else { return };
    let Some(record) = sup.child_mut(slot, child) else {
        return;
    };
    if matches!(
        record.state,
        ChildState::ShuttingDown | ChildState::Restarting
    ) {
        return;
    }
    record.state = ChildState::ShuttingDown;
    sup.held.remove(&slot);
    stop_child(core, me, slot, reason, true);
}

/// A child spawned on another locality reports its address (or its failure
/// to be spawned there).
pub(crate) fn on_child_spawned(
    core: &mut Core,
    me: Key,
    slot: usize,
    result: Result<Address, Error>,
    reserved: Option<Box<Address>>,
) {
    let Some(sup) = sup_mut(core, me) else { return };
    let Some(record) = sup.children.get_mut(slot).filter(|r| r.address.is_none()) else {
        return;
    };
    match result {
        Ok(address) => {
            record.address = Some(address.clone());
            if record.state == ChildState::ShuttingDown {
                let reason = Error::new(ErrorCode::SupervisorShutdown);
                stop_child(core, me, slot, reason, false);
            }
        }
        // Made nowhere, but its address was handed out: the hooks hear of
        // it by that address, as of a child that failed its init.
        Err(reason) if reserved.is_some() => {
            record.address = reserved.map(|a| *a);
            record.initializing = true;
            restart::child_gone(core, me, slot, reason, false);
        }
        Err(reason) => restart::on_child_lost(core, me, slot, reason),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Actor, ActorState, ErrorCode, Locality, Supervisor, SupervisorConfig};

    struct Idle;
    impl Actor for Idle {}

    /// A child whose locality closed without a word (no `abandon`): the
    /// shutdown request cannot be posted, and the supervisor counts the
    /// child as gone instead of waiting for it forever.
    #[test]
    fn a_child_whose_locality_closed_is_gone_when_it_cannot_be_asked_to_go() {
        let mut l0 = Locality::named("L0");
        let mut l1 = Locality::named("L1");
        let root = l0
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let handle = l1.handle();
        l0.spawn_on(&handle, &root, || Idle)
            .escalate_failure()
            .finish()
            .unwrap();
        for _ in 0..10 {
            let (t0, t1) = (l0.now(), l1.now());
            l0.run_until_idle(t0);
            l1.run_until_idle(t1);
        }
        assert_eq!(l0.state_of(&root), Some(ActorState::Operational));
        handle.shared.close();
        drop(handle);
        l0.shutdown(&root).unwrap();
        let t0 = l0.now();
        l0.run_until_idle(t0);
        assert!(
            l0.is_finished(),
            "the root waits for a child it cannot reach"
        );
        // Shutting down, the root is past caring about the child's reason.
        assert_eq!(l0.exit_reason().map(|e| e.code()), Some(ErrorCode::Normal));
        drop(l1);
    }
}

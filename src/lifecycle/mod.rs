//! The actor lifecycle, driven by framework messages through the queue:
//! NEW → INITIALIZING → INITIALIZED → OPERATIONAL → SHUTTING_DOWN → SHUT_DOWN.
//!
//! Spawning queues `Init` for the new actor; it initializes when every
//! vote is ready and confirms to its supervisor; the supervisor confirms its own
//! init only when all its children have, then `Start`s them. Shutdown runs the
//! other way: a supervisor asks its children to shut down and finishes when the
//! last `ChildDown` arrives. Every step is a message to an address, so the same
//! protocol works between localities; between a leaf and its supervisor on
//! one locality, four of them are direct calls (`supervisor::local`).

use crate::actor::{
    ActorCell, ActorState, Hook, NO_EXTRAS, ParentLink, call_hook, call_hook_known, skips,
};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode};
use crate::locality::Core;
use crate::locality::fire::TimerAction;
use crate::locality::shared::Remote;
use crate::plugin::watch::{self, LifecycleEvent};
use crate::plugin::{self, Vote, external, link};
use crate::queue::Envelope;
use crate::supervisor::{self, ChildId};

mod shutdown;

pub(crate) use shutdown::{
    fail, on_shutdown_request, request_own_shutdown, stop_idle_leaf, try_shutdown,
};

/// Framework traffic between actors and their supervisors.
#[derive(Debug)]
pub(crate) enum SystemMsg {
    /// Child → supervisor: initialized.
    InitConfirm { slot: usize, child: ChildId },
    /// Supervisor → child: become operational.
    Start,
    /// Anyone → supervisor: please shut down this child (`None`: yourself).
    ShutdownTrigger {
        child: Option<(usize, ChildId)>,
        reason: Error,
    },
    /// Supervisor → child (or a root to itself): shut down.
    ShutdownRequest { reason: Error },
    /// Child → supervisor: shut down, with its reason, and whether the
    /// actor itself would be restarted (`Actor::should_restart`).
    ChildDown {
        slot: usize,
        child: ChildId,
        reason: Error,
        restart: bool,
    },
    /// An actor to itself: something changed, count the votes again.
    Poll,
    /// Subscriber → an address of another locality: forward me `M`s.
    ExternalSubscribe {
        installer: external::Installer,
        subscriber: Address,
    },
    /// Owner → subscriber: forwarding (`remote`: the forwarder's subscription,
    /// `None` if the target was gone).
    ExternalSubscribed {
        subscriber: Box<Address>,
        remote: Option<Key>,
        target: Option<Box<Address>>,
    },
    /// Subscriber → owner: stop forwarding.
    ExternalUnsubscribe { remote: Key, subscriber: Address },
    /// Owner → subscriber: stopped.
    ExternalUnsubscribed { subscriber: Address },
    /// Another locality → supervisor: the child for `slot` was made there
    /// (or could not be).
    ChildSpawned {
        slot: usize,
        result: Result<Address, Error>,
        /// On a failure, the address reserved for the child (the first
        /// instance's): the supervisor's hooks hear of the child by it
        /// (boxed: framework messages stay small).
        reserved: Option<Box<Address>>,
    },
    /// Client → server: link me.
    /// (Addresses boxed here and below: the rare messages with two
    /// addresses would make every `SystemMsg` bigger.)
    LinkRequest {
        client: Box<Address>,
        server: Box<Address>,
    },
    /// Server → client: the link is made, or refused.
    LinkResponse {
        server: Box<Address>,
        client: Box<Address>,
        result: Result<(), Error>,
    },
    /// Server → client: I am shutting down, unlink.
    UnlinkRequest {
        server: Box<Address>,
        client: Box<Address>,
    },
    /// Client → server: I have unlinked (shut down, or let go).
    UnlinkNotify { client: Address },
    /// Watches: asked for, removed, and their events.
    Watch(Box<watch::WatchMsg>),
}

impl SystemMsg {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            SystemMsg::InitConfirm { .. } => "InitConfirm",
            SystemMsg::Start => "Start",
            SystemMsg::ShutdownTrigger { .. } => "ShutdownTrigger",
            SystemMsg::ShutdownRequest { .. } => "ShutdownRequest",
            SystemMsg::ChildDown { .. } => "ChildDown",
            SystemMsg::Poll => "Poll",
            SystemMsg::ChildSpawned { .. } => "ChildSpawned",
            SystemMsg::ExternalSubscribe { .. } => "ExternalSubscribe",
            SystemMsg::ExternalSubscribed { .. } => "ExternalSubscribed",
            SystemMsg::ExternalUnsubscribe { .. } => "ExternalUnsubscribe",
            SystemMsg::ExternalUnsubscribed { .. } => "ExternalUnsubscribed",
            SystemMsg::LinkRequest { .. } => "LinkRequest",
            SystemMsg::LinkResponse { .. } => "LinkResponse",
            SystemMsg::UnlinkRequest { .. } => "UnlinkRequest",
            SystemMsg::UnlinkNotify { .. } => "UnlinkNotify",
            SystemMsg::Watch(msg) => msg.name(),
        }
    }
}

/// A framework message on its way to an address.
pub(crate) struct SysEnvelope {
    pub(crate) dest: Key,
    pub(crate) msg: SystemMsg,
}

impl Envelope<Core> for SysEnvelope {
    fn deliver(self, core: &mut Core) {
        crate::inspect::system(core, self.dest, &self.msg);
        // Messages about an address rather than its owner.
        let msg = match self.msg {
            SystemMsg::ExternalSubscribe {
                installer,
                subscriber,
            } => {
                return external::on_subscribe(core, self.dest, installer, subscriber);
            }
            SystemMsg::ExternalUnsubscribe { remote, subscriber } => {
                return external::on_unsubscribe(core, remote, subscriber);
            }
            SystemMsg::Watch(msg) => return watch::deliver(core, self.dest, *msg),
            other => other,
        };
        let Some(me) = core.routes.address(self.dest).map(|slot| slot.owner) else {
            return undeliverable(core, msg);
        };
        match msg {
            SystemMsg::InitConfirm { slot, child } => {
                supervisor::on_child_initialized(core, me, slot, child)
            }
            SystemMsg::Start => on_start(core, me),
            SystemMsg::ShutdownTrigger {
                child: None,
                reason,
            } => request_own_shutdown(core, me, reason),
            SystemMsg::ShutdownTrigger {
                child: Some((slot, child)),
                reason,
            } => supervisor::on_child_shutdown_trigger(core, me, slot, child, reason),
            SystemMsg::ShutdownRequest { reason } => on_shutdown_request(core, me, reason),
            SystemMsg::ChildDown {
                slot,
                child,
                reason,
                restart,
            } => supervisor::restart::on_child_down(core, me, slot, child, reason, restart),
            SystemMsg::Poll => poll(core, me),
            SystemMsg::ChildSpawned {
                slot,
                result,
                reserved,
            } => supervisor::on_child_spawned(core, me, slot, result, reserved),
            SystemMsg::ExternalSubscribed {
                subscriber, remote, ..
            } => external::on_subscribed(core, me, &subscriber, remote),
            SystemMsg::ExternalUnsubscribed { subscriber } => {
                external::on_unsubscribed(core, me, &subscriber)
            }
            SystemMsg::ExternalSubscribe { .. }
            | SystemMsg::ExternalUnsubscribe { .. }
            | SystemMsg::Watch(_) => {}
            SystemMsg::LinkRequest { client, server } => {
                link::on_request(core, me, *client, *server)
            }
            SystemMsg::LinkResponse { server, result, .. } => {
                link::on_response(core, me, *server, result)
            }
            SystemMsg::UnlinkRequest { server, .. } => link::on_unlink_request(core, me, *server),
            SystemMsg::UnlinkNotify { client } => link::on_unlinked(core, me, &client),
        }
    }
}

impl Remote for SysEnvelope {
    fn localize(self: Box<Self>, core: &mut Core) {
        core.enqueue(*self);
    }

    /// Framework traffic to a closed locality: answer what someone waits for.
    fn refuse(self: Box<Self>) {
        let gone = || Error::new(ErrorCode::LocalityFinished);
        match self.msg {
            SystemMsg::LinkRequest { client, server } => {
                let result = Err(gone().with_context(format!("{server}'s locality has finished")));
                post(
                    &client.clone(),
                    SystemMsg::LinkResponse {
                        server,
                        client,
                        result,
                    },
                );
            }
            SystemMsg::UnlinkRequest { server, client } => {
                post(&server, SystemMsg::UnlinkNotify { client: *client })
            }
            SystemMsg::ExternalSubscribe { subscriber, .. } => post(
                &subscriber.clone(),
                SystemMsg::ExternalSubscribed {
                    subscriber: Box::new(subscriber),
                    remote: None,
                    target: None,
                },
            ),
            SystemMsg::ExternalUnsubscribe { subscriber, .. } => post(
                &subscriber.clone(),
                SystemMsg::ExternalUnsubscribed { subscriber },
            ),
            SystemMsg::ChildSpawned {
                result: Ok(child), ..
            } => {
                let reason =
                    Error::new(ErrorCode::SupervisorShutdown).with_context("supervisor is gone");
                post(&child, SystemMsg::ShutdownRequest { reason });
            }
            SystemMsg::Watch(msg) => {
                if let Some((watcher, answer)) = watch::refuse(*msg) {
                    post(&watcher, answer);
                }
            }
            _ => {}
        }
    }
}

/// Posts framework traffic from outside any locality (a closing one).
fn post(to: &Address, msg: SystemMsg) {
    to.locality().post(Box::new(SysEnvelope {
        dest: to.key(),
        msg,
    }));
}

fn state(core: &Core, me: Key) -> Option<ActorState> {
    core.actors.get(me).map(|c| c.state)
}

#[inline]
fn set_cell_state(routes: &Routes, cell: &mut ActorCell, state: ActorState) {
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        log_state(routes, cell, state);
    }
    cell.state = state;
}

/// The routing table, where a cell's main address is (`set_cell_state`'s
/// debug line names it).
type Routes =
    crate::routing::Routes<crate::subscription::AddressInfo, crate::subscription::BoxedHandler>;

/// The debug line of a state change (out of line: it is seldom enabled).
#[cold]
#[inline(never)]
fn log_state(routes: &Routes, cell: &ActorCell, state: ActorState) {
    if let Some(actor) = Core::main_address(routes, cell) {
        tracing::debug!(actor = %actor, from = %cell.state, to = %state, "lifecycle");
    }
}

/// Sends a framework message to the actor's own main address.
pub(crate) fn to_self(core: &mut Core, me: Key, msg: SystemMsg) {
    if let Some(address) = core.actors.get(me).map(|c| c.main) {
        core.enqueue(SysEnvelope { dest: address, msg });
    }
}

/// Moves actor `me` (its `cell`) to state `to`, cancels its pending
/// lifecycle timer and arms `timer` if given; `true` if anyone watches it.
#[inline]
fn enter(
    core: &mut Core,
    me: Key,
    to: ActorState,
    timer: Option<(std::time::Duration, TimerAction)>,
) -> bool {
    let Some(cell) = core.actors.get_mut(me) else {
        return false;
    };
    set_cell_state(&core.routes, cell, to);
    let watched = watch::watched(cell);
    if cell.rare.is_some() || timer.is_some() {
        lifecycle_timer(core, me, timer);
    }
    watched
}

/// Cancels actor `me`'s pending lifecycle timer, and arms `timer` if given.
#[inline(never)]
fn lifecycle_timer(core: &mut Core, me: Key, timer: Option<(std::time::Duration, TimerAction)>) {
    if let Some(key) = core
        .actors
        .get_mut(me)
        .and_then(|cell| cell.rare.as_deref_mut())
        .and_then(|r| r.lifecycle_timer.take())
    {
        core.cancel_timer(key);
    }
    if let Some((after, action)) = timer {
        let key = core.start_timer(after, me, action);
        if let Some(cell) = core.actors.get_mut(me) {
            cell.rare().lifecycle_timer = Some(key);
        }
    }
}

#[inline(always)]
pub(crate) fn on_init(core: &mut Core, me: Key) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    if cell.state != ActorState::New {
        return;
    }
    let hooks = cell.hooks;
    match cell.rare.as_deref() {
        // No timeout, no watchers: only the state changes.
        None => {
            set_cell_state(&core.routes, cell, ActorState::Initializing);
            // A plain leaf whose `init_start` is a known default: nothing
            // runs between the two states, its votes are all ready.
            if cell.supervisor.is_none() && skips(&core.type_names, Hook::InitStart, hooks) {
                set_cell_state(&core.routes, cell, ActorState::Initialized);
                let local = cell.parent.is_some();
                let leaf = supervisor::local::Leaf::at_init(cell);
                return init_finish_plain(core, me, hooks, local, leaf);
            }
        }
        Some(rare) => {
            let timer = rare
                .config
                .init_timeout
                .map(|after| (after, TimerAction::InitTimeout));
            enter(core, me, ActorState::Initializing, timer);
        }
    }
    call_hook_known(core, me, Hook::InitStart, hooks);
    if !init_plain(core, me) {
        try_init(core, me);
    }
}

/// [`try_init`] for a plain leaf (no plugin state, no children, no user
/// plugins), whose votes are all ready: the same steps, with one look at
/// the cell. `false`: not plain, nothing was done.
#[inline]
fn init_plain(core: &mut Core, me: Key) -> bool {
    let Some(cell) = core.actors.get_mut(me) else {
        return false;
    };
    if cell.state != ActorState::Initializing
        || cell.rare.is_some()
        || cell.supervisor.is_some()
        || cell.hooks & NO_EXTRAS == 0 && cell.actor.has_plugins()
    {
        return false;
    }
    set_cell_state(&core.routes, cell, ActorState::Initialized);
    let (hooks, local) = (cell.hooks, cell.parent.is_some());
    let leaf = supervisor::local::Leaf::at_init(cell);
    init_finish_plain(core, me, hooks, local, leaf);
    true
}

/// The end of a plain leaf's init (it is INITIALIZED, `hooks` as its cell
/// keeps them, `leaf` as `Leaf::of` read it): `init_finish`, then its
/// start by its supervisor here (`local`), or the message that asks for it.
#[inline(always)]
fn init_finish_plain(
    core: &mut Core,
    me: Key,
    hooks: u16,
    local: bool,
    leaf: Option<supervisor::local::Leaf>,
) {
    // Skipped as a known default, the hook leaves the cell as `leaf` read it.
    let ran = call_hook_known(core, me, Hook::InitFinish, hooks);
    if !local {
        return to_self(core, me, SystemMsg::Start);
    }
    let confirmed = match (ran, leaf) {
        (false, Some(leaf)) => supervisor::local::confirm_leaf_init(core, me, leaf),
        (false, None) => false,
        (true, _) => supervisor::local::confirm_init(core, me),
    };
    if !confirmed {
        let Some(child) = core.actors.get(me).map(|cell| cell.child_id(core.id())) else {
            return;
        };
        ParentLink::send_of(core, me, |slot| SystemMsg::InitConfirm { slot, child });
    }
}

/// Counts the init votes; finishes init when all are ready.
pub(crate) fn try_init(core: &mut Core, me: Key) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    if cell.state != ActorState::Initializing {
        return;
    }
    if let Some(error) = cell.rare.as_deref_mut().and_then(|r| r.init_failure.take()) {
        return init_failed(core, me, error);
    }
    match plugin::init_vote(core, me) {
        Vote::Ready => {}
        Vote::Pending => return,
        Vote::Failed(error) => return init_failed(core, me, error),
    }
    if enter(core, me, ActorState::Initialized, None) {
        watch::notify(core, me, LifecycleEvent::Initialized);
    }
    call_hook(core, me, Hook::InitFinish);
    let Some(cell) = core.actors.get(me) else {
        return;
    };
    if cell.parent.is_none() {
        return to_self(core, me, SystemMsg::Start);
    }
    if supervisor::local::confirm_init(core, me) {
        return;
    }
    let Some(child) = core.actors.get(me).map(|cell| cell.child_id(core.id())) else {
        return;
    };
    ParentLink::send_of(core, me, |slot| SystemMsg::InitConfirm { slot, child });
}

/// Init failed: the actor shuts down with the failure as its reason, and its
/// supervisor learns of it from the `ChildDown` that follows.
fn init_failed(core: &mut Core, me: Key, error: Error) {
    let Some(cell) = core.actors.get(me) else {
        return;
    };
    let Some(address) = Core::main_address(&core.routes, cell) else {
        return;
    };
    let reason = match error.code() {
        ErrorCode::InitFailed | ErrorCode::InitTimeout => error,
        _ => Error::new(ErrorCode::InitFailed)
            .with_context(address.to_string())
            .caused_by(error),
    };
    tracing::warn!(actor = %address, reason = reason.as_dyn_error(), "init failed");
    on_shutdown_request(core, me, reason);
}

/// A lifecycle timer fired while the actor is still `during` (initializing or
/// shutting down): an init not done in time fails; a shutdown not done in
/// time is a contract violation.
pub(crate) fn on_lifecycle_timeout(core: &mut Core, me: Key, during: ActorState) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    if let Some(rare) = cell.rare.as_deref_mut() {
        rare.lifecycle_timer = None;
    }
    if cell.state != during {
        return;
    }
    let Some(address) = Core::main_address(&core.routes, cell).map(Address::to_string) else {
        return;
    };
    if during == ActorState::Initializing {
        init_failed(
            core,
            me,
            Error::new(ErrorCode::InitTimeout).with_context(address),
        );
    } else {
        core.contract_violation(Error::new(ErrorCode::ShutdownTimeout).with_context(address));
    }
}

#[inline(always)]
pub(crate) fn on_start(core: &mut Core, me: Key) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    if cell.state != ActorState::Initialized {
        return;
    }
    set_cell_state(&core.routes, cell, ActorState::Operational);
    let (supervisor, hooks) = (cell.supervisor.is_some(), cell.hooks);
    if watch::watched(cell) {
        watch::notify(core, me, LifecycleEvent::Started);
    }
    call_hook_known(core, me, Hook::OnStart, hooks);
    if supervisor {
        supervisor::start_children(core, me);
    }
}

/// Something changed for the actor: vote again.
pub(crate) fn poll(core: &mut Core, me: Key) {
    match state(core, me) {
        Some(ActorState::Initializing) => try_init(core, me),
        Some(ActorState::ShuttingDown) => try_shutdown(core, me),
        _ => {}
    }
}

/// A framework message whose address is gone: answer for the missing actor.
fn undeliverable(core: &mut Core, msg: SystemMsg) {
    match msg {
        // The supervisor went away while its child was being made elsewhere.
        SystemMsg::ChildSpawned {
            result: Ok(child), ..
        } => {
            let reason =
                Error::new(ErrorCode::SupervisorShutdown).with_context("supervisor is gone");
            core.send_system(&child, SystemMsg::ShutdownRequest { reason });
        }
        // The subscriber went away before the answer: undo the forwarder.
        SystemMsg::ExternalSubscribed {
            subscriber,
            remote: Some(remote),
            target: Some(target),
        } => {
            core.send_system(
                &target,
                SystemMsg::ExternalUnsubscribe {
                    remote,
                    subscriber: *subscriber,
                },
            );
        }
        other => link::undeliverable(core, other),
    }
}

//! What a supervisor does when a child goes down: restart it (a new instance
//! from its factory, after a delay, within a limit), give up, escalate the
//! failure, or shut itself down with it.

use crate::actor::{ActorState, NO_EXTRAS, Notice};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::lifecycle;
use crate::locality::Core;
use crate::locality::fire::TimerAction;
use crate::supervisor::{
    ChildId, ChildState, HOOK_INIT, HOOK_SHUTDOWN, InitFailurePolicy, hear, sup_mut,
};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// When a supervisor restarts a child that went down (set with
/// [`Builder::restart`](crate::Builder::restart)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartPolicy {
    /// Never restart (Erlang's *temporary*); the default.
    #[default]
    Never,
    /// Restart whatever the reason (Erlang's *permanent*).
    Always,
    /// Restart when it failed, not when it ended normally (Erlang's *transient*).
    OnFailure,
    /// Restart when it ended normally, not when it failed.
    OnNormalExit,
    /// Ask the actor: [`Actor::should_restart`](crate::Actor::should_restart),
    /// called as it goes down.
    AskActor,
}

/// Makes a new instance of a child in its supervisor's slot: its address, or
/// `None` when it is made on another locality (the address comes later, in a
/// `ChildSpawned`).
/// It is given the supervisor's address and the slot.
pub(crate) type Respawn = Box<dyn FnMut(&mut Core, &Address, usize) -> Result<Option<Address>>>;

/// A child's supervision settings, from its builder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SupervisionConfig {
    pub(crate) policy: RestartPolicy,
    pub(crate) delay: Duration,
    pub(crate) max_delay: Option<Duration>,
    pub(crate) limit: u32,
    pub(crate) period: Duration,
    pub(crate) escalate: bool,
    pub(crate) autoshutdown: bool,
}

impl Default for SupervisionConfig {
    fn default() -> Self {
        SupervisionConfig {
            policy: RestartPolicy::Never,
            delay: Duration::ZERO,
            max_delay: None,
            limit: 3,
            period: Duration::from_secs(5),
            escalate: false,
            autoshutdown: false,
        }
    }
}

impl SupervisionConfig {
    /// `true` if any setting differs from the default ("never restart,
    /// nothing to escalate").
    pub(crate) fn is_set(&self) -> bool {
        *self != SupervisionConfig::default()
    }
}

/// A supervised child's settings, factory and restart history.
pub(crate) struct Supervision {
    config: SupervisionConfig,
    respawn: Option<Respawn>,
    /// When the recent restarts happened (within the period).
    history: VecDeque<Instant>,
    /// The pending restart, while the child is `Restarting`.
    pub(crate) timer: Option<Key>,
}

/// The supervisor's decision about a child that went down.
enum Decision {
    Restart(Duration),
    /// Let it go; with the error that says why, if the limit was reached.
    GiveUp(Option<Error>),
}

impl Supervision {
    pub(crate) fn new(config: SupervisionConfig, respawn: Option<Respawn>) -> Supervision {
        Supervision {
            config,
            respawn,
            history: VecDeque::new(),
            timer: None,
        }
    }

    fn decide(
        &mut self,
        reason: &Error,
        actor_says: bool,
        now: Instant,
        child: &ChildLabel,
    ) -> Decision {
        let c = &self.config;
        let wants = match c.policy {
            RestartPolicy::Never => false,
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => !reason.is_normal(),
            RestartPolicy::OnNormalExit => reason.is_normal(),
            RestartPolicy::AskActor => actor_says,
        };
        if !wants || self.respawn.is_none() {
            return Decision::GiveUp(None);
        }
        while self
            .history
            .front()
            .is_some_and(|&t| now.saturating_duration_since(t) >= c.period)
        {
            self.history.pop_front();
        }
        if self.history.len() >= c.limit as usize {
            let why = format!("{child}: {} restarts in {:?}", c.limit, c.period);
            return Decision::GiveUp(Some(Error::new(ErrorCode::RestartLimit).with_context(why)));
        }
        let exponent = self.history.len().min(31) as u32;
        let delay = match c.max_delay {
            Some(max) => c.delay.saturating_mul(1 << exponent).min(max),
            None => c.delay,
        };
        self.history.push_back(now);
        Decision::Restart(delay)
    }
}

/// A child's address for messages, formatted only when one is written.
struct ChildLabel<A = Address>(Option<A>);

impl<A: std::fmt::Display> std::fmt::Display for ChildLabel<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(address) => write!(f, "{address}"),
            None => f.write_str("?"),
        }
    }
}

/// A child has shut down: forget it or restart it, then apply the policies.
pub(crate) fn on_child_down(
    core: &mut Core,
    me: Key,
    slot: usize,
    child: ChildId,
    reason: Error,
    actor_says: bool,
) {
    let is_child = sup_mut(core, me)
        .and_then(|s| s.child_mut(slot, child))
        .is_some();
    if is_child {
        child_gone(core, me, slot, reason, actor_says);
    }
}

/// A child could not be spawned (on its locality, or by its factory): as
/// if it went down, but no instance of it ever was, so no hook hears of it.
pub(crate) fn on_child_lost(core: &mut Core, me: Key, slot: usize, reason: Error) {
    decide(core, me, slot, reason, false, false);
}

/// The child in `slot` has shut down: the supervisor's hooks hear of it
/// (`on_child_init` if it had not initialized, `on_child_shutdown`), then
/// it decides.
pub(crate) fn child_gone(core: &mut Core, me: Key, slot: usize, reason: Error, actor_says: bool) {
    decide(core, me, slot, reason, actor_says, true);
}

/// [`child_gone`] by a direct call from leaf `child` here, which has shut
/// down (`local::report_down`): only if the supervisor's code does not run
/// now and `slot` still holds that child; shown by inspection as the
/// `ChildDown` it stands for (to the supervisor's `sup_address`). The
/// checks and the decision take one look at the supervisor's cell. `Err`
/// gives the reason back: send `ChildDown`.
///
/// The usual case inline: a supervisor shutting down, whose hooks about
/// its children are known defaults, forgets the child, and finishes once
/// it was the last (as [`decide`] does then).
#[inline(always)]
pub(crate) fn child_down_here(
    core: &mut Core,
    me: Key,
    slot: usize,
    down: DownHere,
    reason: Error,
    actor_says: bool,
) -> Result<(), Error> {
    if core.inspect.level < 2
        && let Some(cell) = core.actors.get_mut(me)
        && cell.state == ActorState::ShuttingDown
        && let Some(sup) = cell.supervisor.as_deref_mut()
        && !sup.hears(HOOK_SHUTDOWN)
        && let hears_init = sup.hears(HOOK_INIT)
        && let Some(record) = sup.child_mut(slot, down.child)
        && !(record.initializing && hears_init)
        && !cell.actor.busy()
    {
        if tracing::level_enabled!(tracing::Level::DEBUG)
            && let Some(info) = core.routes.address(cell.main)
        {
            log_child_down(&info.address, &ChildLabel(record.address.as_ref()), &reason);
        }
        let failed_init = record.initializing;
        if failed_init {
            sup.initializing -= 1;
        }
        if !sup.held.is_empty() {
            sup.held.remove(&slot);
        }
        sup.forget_child(slot);
        let plugins = cell.hooks & NO_EXTRAS == 0 && cell.actor.has_plugins();
        if sup.children.is_empty() || plugins {
            lifecycle::try_shutdown(core, me);
        }
        return Ok(());
    }
    child_down_slow(core, me, slot, down, reason, actor_says)
}

/// [`child_down_here`] in the other cases.
#[inline(never)]
fn child_down_slow(
    core: &mut Core,
    me: Key,
    slot: usize,
    down: DownHere,
    reason: Error,
    actor_says: bool,
) -> Result<(), Error> {
    decide_or_refuse(core, me, slot, reason, actor_says, true, Some(down))
}

/// Who reports itself down by a direct call ([`child_down_here`]).
#[derive(Clone, Copy)]
pub(crate) struct DownHere {
    pub(crate) child: ChildId,
    pub(crate) sup_address: Key,
}

/// The supervisor's hooks hear of the child at `child` that went down.
#[inline(never)]
fn hear_down(core: &mut Core, me: Key, child: Address, init: bool, reason: &Error) {
    if init {
        hear(core, me, HOOK_INIT, Notice::ChildInit(&child, Err(reason)));
    }
    if sup_mut(core, me).is_some_and(|s| s.hears(HOOK_SHUTDOWN)) {
        hear(
            core,
            me,
            HOOK_SHUTDOWN,
            Notice::ChildShutdown(&child, reason),
        );
    }
}

/// What follows a child's end (after the hooks, if `hooks`): its
/// init-failure policy while the supervisor initializes, then its restart
/// policy, escalation or autoshutdown.
fn decide(core: &mut Core, me: Key, slot: usize, reason: Error, actor_says: bool, hooks: bool) {
    let _ = decide_or_refuse(core, me, slot, reason, actor_says, hooks, None);
}

/// [`decide`], after the checks of a direct report (`down`,
/// [`child_down_here`]): `Err` (nothing done) if they fail.
#[inline(always)]
fn decide_or_refuse(
    core: &mut Core,
    me: Key,
    slot: usize,
    reason: Error,
    actor_says: bool,
    hooks: bool,
    down: Option<DownHere>,
) -> Result<(), Error> {
    let now = core.now;
    let Some(cell) = core.actors.get_mut(me) else {
        return match down {
            Some(_) => Err(reason),
            None => Ok(()),
        };
    };
    if let Some(down) = down {
        let is_child =
            |s: &mut crate::supervisor::SupervisorState| s.child_mut(slot, down.child).is_some();
        if cell.actor.busy() || !cell.supervisor.as_deref_mut().is_some_and(is_child) {
            return Err(reason);
        }
        if core.inspect.level >= 2 {
            let code = reason.code();
            let (child, dest) = (down.child.local_key(core.id()), down.sup_address);
            crate::inspect::step(core, "ChildDown", Some(code), child, dest);
            decide(core, me, slot, reason, actor_says, hooks);
            return Ok(());
        }
    }
    let my_state = cell.state;
    let Some(my_address) = core.routes.address(cell.main).map(|info| &info.address) else {
        return Ok(());
    };
    let Some(sup) = cell.supervisor.as_deref_mut() else {
        return Ok(());
    };
    let init_policy = sup.config.init_failure;
    let (hears_init, hears_down) = (sup.hears(HOOK_INIT), sup.hears(HOOK_SHUTDOWN));
    let Some(record) = sup.children.get_mut(slot) else {
        return Ok(());
    };
    if hooks {
        // The hooks first (they queue what they do), then a fresh look.
        let init = record.initializing && hears_init;
        if (init || hears_down)
            && let Some(child) = record.address.clone()
        {
            hear_down(core, me, child, init, &reason);
            decide(core, me, slot, reason, actor_says, false);
            return Ok(());
        }
    }
    if !sup.held.is_empty() {
        sup.held.remove(&slot);
    }
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        log_child_down(my_address, &ChildLabel(record.address.as_ref()), &reason);
    }
    let failed_init = record.initializing;
    if failed_init {
        record.initializing = false;
        sup.initializing -= 1;
    }
    if my_state == ActorState::ShuttingDown {
        sup.forget_child(slot);
        // With children left, the votes would say `Pending` (the child
        // manager's), unless a user plugin is to be asked again first.
        let plugins = cell.hooks & NO_EXTRAS == 0 && cell.actor.has_plugins();
        if sup.children.is_empty() || plugins {
            lifecycle::try_shutdown(core, me);
        }
        return Ok(());
    }
    let (my_address, child) = (my_address.clone(), ChildLabel(record.address.clone()));
    // The init-failure policy holds while the supervisor initializes (as
    // rotor's): later, a child that fails its init goes alone.
    if failed_init
        && !reason.is_normal()
        && my_state == ActorState::Initializing
        && init_policy == InitFailurePolicy::ShutdownSupervisor
    {
        sup.forget_child(slot);
        // Still counted as initializing: the shutdown asked for below comes
        // back as a message, and meanwhile this supervisor must not finish
        // its own init with the child missing (its shutdown recounts).
        sup.initializing += 1;
        let why = Error::new(ErrorCode::ChildInitFailed)
            .with_context(my_address.to_string())
            .caused_by(reason);
        lifecycle::request_own_shutdown(core, me, why);
        return Ok(());
    }
    let decision = match sup.supervised.get_mut(&slot) {
        Some(supervision) => supervision.decide(&reason, actor_says, now, &child),
        None => Decision::GiveUp(None),
    };
    match decision {
        Decision::Restart(delay) => {
            tracing::info!(supervisor = %my_address, %child, reason = reason.as_dyn_error(), ?delay, "restarting child");
            record.state = ChildState::Restarting;
            // A restarting child counts as initializing: the supervisor's init waits for it.
            record.initializing = true;
            sup.initializing += 1;
            let timer = core.start_timer(delay, me, TimerAction::Restart { slot });
            if let Some(supervision) = sup_mut(core, me).and_then(|s| s.supervised.get_mut(&slot)) {
                supervision.timer = Some(timer);
            }
            crate::entity::watch::down(core, me, slot, child.0, &reason, true);
        }
        Decision::GiveUp(limit) => {
            sup.children.remove(slot);
            let supervision = match sup.supervised.is_empty() {
                true => None,
                false => sup.supervised.remove(&slot),
            };
            let childless = sup.config.shutdown_when_childless && sup.is_childless();
            let escalate = supervision.as_ref().is_some_and(|s| s.config.escalate);
            let autoshutdown = supervision.as_ref().is_some_and(|s| s.config.autoshutdown);
            let cause = match limit {
                Some(limit) => limit.caused_by(reason),
                None => reason,
            };
            let failed = !cause.is_normal();
            crate::entity::watch::down(core, me, slot, child.0.clone(), &cause, false);
            if failed {
                let then = if escalate {
                    "escalating"
                } else if autoshutdown || childless {
                    "shutting down"
                } else {
                    "carrying on"
                };
                gave_up(core, me, &my_address, &child, &cause, then);
            }
            if escalate && failed {
                let why = Error::new(ErrorCode::FailureEscalation)
                    .with_context(my_address.to_string())
                    .caused_by(cause);
                lifecycle::request_own_shutdown(core, me, why);
            } else if autoshutdown {
                let why = if cause.is_normal() {
                    Error::normal().with_context(format!("{child} ended"))
                } else {
                    Error::new(ErrorCode::ChildDown)
                        .with_context(my_address.to_string())
                        .caused_by(cause)
                };
                lifecycle::request_own_shutdown(core, me, why);
            } else if childless {
                let why = if failed {
                    Error::new(ErrorCode::ChildDown)
                        .with_context(format!("{my_address}: no child left"))
                        .caused_by(cause)
                } else {
                    Error::normal().with_context(format!("{child} ended: no child left"))
                };
                lifecycle::request_own_shutdown(core, me, why);
            } else if my_state == ActorState::Initializing {
                lifecycle::try_init(core, me);
            } else if my_state == ActorState::Operational {
                // One child fewer to wait for: a synchronized start may go on.
                crate::supervisor::start_children(core, me);
            }
        }
    }
    Ok(())
}

/// The debug line of a child down (out of line: it is seldom enabled).
#[cold]
#[inline(never)]
fn log_child_down(supervisor: &Address, child: &ChildLabel<&Address>, reason: &Error) {
    tracing::debug!(%supervisor, %child, reason = reason.as_dyn_error(), "child down");
}

/// A supervisor lets a failed child go for good: said at `WARN`, shown by
/// inspection (level 1) and counted, whatever it does next (`then`), so
/// that a supervisor that carries on does not do so silently.
fn gave_up(
    core: &mut Core,
    me: Key,
    supervisor: &Address,
    child: &ChildLabel,
    reason: &Error,
    then: &str,
) {
    tracing::warn!(%supervisor, %child, %reason, then, "gave up on child");
    core.stats.children_given_up += 1;
    crate::inspect::gave_up(core, me, child, reason, then);
}

/// The restart delay of the child in `slot` is over: make a new instance.
pub(crate) fn restart_child(core: &mut Core, me: Key, slot: usize) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let Some(parent) = core
        .routes
        .address(cell.main)
        .map(|info| info.address.clone())
    else {
        return;
    };
    let Some(sup) = cell.supervisor.as_deref_mut() else {
        return;
    };
    let Some(record) = sup.children.get_mut(slot) else {
        return;
    };
    if record.state != ChildState::Restarting {
        return;
    }
    let Some(supervision) = sup.supervised.get_mut(&slot) else {
        return;
    };
    supervision.timer = None;
    let Some(mut respawn) = supervision.respawn.take() else {
        return;
    };
    // The factory is user code: a panic there is a failed restart.
    let result = match catch_unwind(AssertUnwindSafe(|| respawn(core, &parent, slot))) {
        Ok(result) => result,
        Err(payload) => Err(crate::actor::panicked(core, me, payload.as_ref())),
    };
    let Some(sup) = sup_mut(core, me) else {
        return;
    };
    let Some(record) = sup.children.get_mut(slot) else {
        return;
    };
    if let Some(supervision) = sup.supervised.get_mut(&slot) {
        supervision.respawn = Some(respawn);
    }
    match result {
        Ok(address) => {
            tracing::info!(supervisor = %parent, child = %ChildLabel(address.clone()), "restarted child");
            record.address = address;
            record.state = ChildState::Initializing;
        }
        Err(error) => on_child_lost(core, me, slot, error),
    }
}

//! Plugins: the votes that decide when an actor has finished initializing or
//! shutting down.
//!
//! Init asks, in this order, and stops at the first vote that is not
//! [`Vote::Ready`] (it holds the actor in its state, or fails it): registry
//! (`registry.rs`: names registered, discoveries answered), link client
//! (`link.rs`: every link confirmed), resources (`resources.rs`: none held),
//! child manager (`supervisor`: every child initialized), user plugins in the
//! order added.
//!
//! Shutdown asks, in this order: user plugins (last added first), child
//! manager (every child shut down), resources (none held), external
//! subscriptions (`external.rs`: every one confirmed gone), link server
//! (`link.rs`: every linked client has unlinked). The registry and link client
//! hold nothing at shutdown: names are deregistered when it starts, servers
//! are told of the unlink when the actor is gone.
//!
//! Built-in votes are checks of the actor's plugin state (absent until an
//! actor uses a plugin), so an actor that uses none pays nothing. User plugins
//! implement [`Plugin`] and are added with [`Builder::plugin`](crate::Builder::plugin);
//! they are polled with a cursor: once one says ready, the next one is polled.

pub(crate) mod external;
pub(crate) mod link;
pub(crate) mod registry;
pub(crate) mod resources;
pub(crate) mod watch;

use crate::actor::{Actor, Phase, with_object};
use crate::address::Address;
use crate::arena::Key;
use crate::context::Context;
use crate::error::Error;
use crate::locality::Core;
use smallvec::SmallVec;

/// A plugin's answer to "are you done?", from [`Plugin::init_vote`] and
/// [`Plugin::shutdown_vote`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vote {
    /// Done: poll the next plugin.
    Ready,
    /// Not yet: hold the actor in its state until
    /// [`Context::continue_lifecycle`] asks again.
    Pending,
    /// Failed: during init, the actor shuts down with this error as its
    /// reason. (Failing a shutdown is a contract violation.)
    Failed(Error),
}

/// A user plugin of actor type `A`, added with
/// [`Builder::plugin`](crate::Builder::plugin). The value given there is a
/// prototype: every instance of the actor (a restart makes a new one) gets a
/// clone of its own.
///
/// ```
/// use commutator::*;
///
/// /// Holds init until the actor has seen a `Ready` message.
/// #[derive(Clone)]
/// struct WaitForReady;
/// struct Ready;
///
/// #[derive(Default)]
/// struct Worker { ready: bool }
/// impl Actor for Worker {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(|me: &mut Self, _: &Ready, ctx: &mut Context<'_, Self>| {
///             me.ready = true;
///             ctx.continue_lifecycle(); // let the plugins vote again
///         });
///     }
/// }
/// impl Plugin<Worker> for WaitForReady {
///     fn name(&self) -> &'static str { "wait-for-ready" }
///     fn init_vote(&mut self, worker: &mut Worker, _: &mut Context<'_, Worker>) -> Vote {
///         if worker.ready { Vote::Ready } else { Vote::Pending }
///     }
/// }
///
/// let mut locality = Locality::new();
/// let worker = locality.spawn_root(Worker::default()).plugin(WaitForReady).finish()?;
/// let now = locality.now();
/// locality.run_until_idle(now);
/// assert_eq!(locality.state_of(&worker), Some(ActorState::Initializing));
/// locality.send(&worker, Ready).unwrap();
/// locality.run_until_idle(now);
/// assert_eq!(locality.state_of(&worker), Some(ActorState::Operational));
/// # Ok::<(), commutator::Error>(())
/// ```
pub trait Plugin<A: Actor>: 'static {
    /// A short name, for traces.
    fn name(&self) -> &'static str;

    /// Called once when the actor starts initializing, before its `init_start`.
    fn init_start(&mut self, actor: &mut A, ctx: &mut Context<'_, A>) {
        let _ = (actor, ctx);
    }

    /// Is init done, as far as this plugin is concerned?
    fn init_vote(&mut self, actor: &mut A, ctx: &mut Context<'_, A>) -> Vote {
        let _ = (actor, ctx);
        Vote::Ready
    }

    /// Called once when the actor starts shutting down, after its `shutdown_start`.
    fn shutdown_start(&mut self, actor: &mut A, ctx: &mut Context<'_, A>) {
        let _ = (actor, ctx);
    }

    /// Is shutdown done, as far as this plugin is concerned?
    fn shutdown_vote(&mut self, actor: &mut A, ctx: &mut Context<'_, A>) -> Vote {
        let _ = (actor, ctx);
        Vote::Ready
    }
}

/// The built-in plugins' state of one actor; boxed, and made on first use.
#[derive(Default)]
pub(crate) struct PluginState {
    /// Registry client: requests to the registry not yet answered.
    pub(crate) registry_pending: u32,
    /// Registry client: names this actor registered.
    pub(crate) names: SmallVec<[String; 1]>,
    /// Link client: links requested and not yet answered.
    pub(crate) links_pending: SmallVec<[link::Pending; 1]>,
    /// Link client: servers that confirmed a link.
    pub(crate) servers: SmallVec<[Address; 1]>,
    /// Link server: clients linked to this actor.
    pub(crate) clients: Vec<Address>,
    /// External subscriptions (on addresses of other localities).
    pub(crate) externals: Vec<external::External>,
    /// I/O sources this actor registered (their events stop when it is gone).
    pub(crate) io: SmallVec<[Key; 1]>,
    /// Watches this actor made: their ids and the addresses watched.
    pub(crate) watching: Vec<(u64, Address)>,
    /// Who watches this actor.
    pub(crate) watchers: Vec<watch::Watcher>,
    /// Resources: held counts by kind.
    pub(crate) resources: SmallVec<[(u32, u32); 2]>,
}

/// Counts the init votes of actor `me`, in plugin order.
pub(crate) fn init_vote(core: &mut Core, me: Key) -> Vote {
    let Some(cell) = core.actors.get(me) else {
        return Vote::Pending;
    };
    if let Some(plugins) = cell.plugins_ref() {
        for vote in [
            registry::init_vote(plugins),
            link::init_vote(plugins),
            resources::vote(plugins),
        ] {
            if vote != Vote::Ready {
                return vote;
            }
        }
    }
    if !crate::supervisor::init_ready(cell) {
        return Vote::Pending;
    }
    if !cell.actor.has_plugins() {
        return Vote::Ready;
    }
    match user_vote(core, me, Phase::Init) {
        Some(Ok(vote)) => vote,
        Some(Err(panic)) => Vote::Failed(panic),
        None => Vote::Pending,
    }
}

/// The user plugins' vote (out of line: most actors have none, and their
/// votes need no panic guard).
#[inline(never)]
fn user_vote(core: &mut Core, me: Key, phase: Phase) -> Option<Result<Vote, crate::Error>> {
    with_object(core, me, |object, core| object.vote(phase, core, me))
}

/// Counts the shutdown votes of actor `me`, in reverse plugin order.
pub(crate) fn shutdown_vote(core: &mut Core, me: Key) -> Vote {
    if core.actors.get(me).is_some_and(|c| c.actor.has_plugins()) {
        match user_vote(core, me, Phase::Shutdown) {
            // A plugin that panics during shutdown is logged and passed over.
            Some(Ok(Vote::Ready)) | Some(Err(_)) => {}
            Some(Ok(other)) => return other,
            None => return Vote::Pending,
        }
    }
    let Some(cell) = core.actors.get(me) else {
        return Vote::Pending;
    };
    if !crate::supervisor::shutdown_ready(cell) {
        return Vote::Pending;
    }
    match cell.plugins_ref() {
        Some(plugins) => [
            resources::vote(plugins),
            external::shutdown_vote(plugins),
            link::shutdown_vote(plugins),
        ]
        .into_iter()
        .find(|vote| *vote != Vote::Ready)
        .unwrap_or(Vote::Ready),
        None => Vote::Ready,
    }
}

//! [`Pool`]: N identical workers behind one address, on this locality or
//! spread over several, fed round-robin or to the least loaded. Its
//! workers and their lives are here; routing is in `pool/routing.rs`.

mod routing;

use self::routing::{Flight, Job, Worker};
use super::settings::{ChildSettings, child_settings_methods};
use super::watch::ChildEvent;
use super::{StatsHandle, make_supervisor};
use crate::actor::Actor;
use crate::address::Address;
use crate::arena::IdMap;
use crate::context::Context;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::LocalityHandle;
use crate::request::{CancelRequest, Request, RequestId, RequestMsg};
use crate::supervisor::restart::RestartPolicy;
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

/// How a [`Pool`] picks the worker for the next message or request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PoolStrategy {
    /// Each worker in turn (the default).
    #[default]
    RoundRobin,
    /// The worker with the fewest requests in flight (forwarded, not yet
    /// answered, cancelled or timed out); ties go round-robin. Plain
    /// messages count no load: nothing tells when one is done.
    LeastLoaded,
}

/// What a [`Pool`] counts; read it through [`Pool::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Workers serving now.
    pub workers: usize,
    /// Workers initializing or waiting for a restart.
    pub starting: usize,
    /// Messages and requests passed to a worker.
    pub routed: u64,
    /// Requests forwarded and not answered yet.
    pub in_flight: usize,
    /// Workers replaced after going down.
    pub replaced: u64,
    /// Requests the pool answered with an error because their worker went
    /// down (or the pool did) before replying.
    pub failed: u64,
    /// Messages and requests refused (pool shutting down, no worker left,
    /// buffer full); a refused request is answered with the error.
    pub refused: u64,
}

type Route<W> = Box<dyn Fn(&mut Context<'_, Pool<W>>)>;

/// Where a pool's workers come from.
enum Factory<W> {
    /// Callable on any thread: workers may live elsewhere.
    Shared(Arc<dyn Fn() -> W + Send + Sync>),
    /// This locality only.
    Local(Rc<dyn Fn() -> W>),
}

/// N identical workers behind one address: a supervisor that makes them
/// from one factory, here ([`size`](Pool::size)) and on other localities
/// ([`on`](Pool::on)), and passes each message or request sent to its
/// address to one of them, round-robin or to the least loaded
/// ([`PoolStrategy`]).
///
/// A worker on this locality gets its message in the same dispatch step (one
/// queue trip, as for a direct send); one on another locality through that
/// locality's inbox. A request is forwarded as it came: the worker replies
/// to the requester directly, and the pool hears of the reply to count the
/// worker's load. A worker that goes down is replaced as its restart policy
/// says (default [`RestartPolicy::Always`]); its requests still unanswered
/// are answered with [`ErrorCode::ChildDown`], and the pool serves on with
/// the others. When the pool shuts down, its workers first get everything
/// it forwarded to them (it reaches them before their shutdown request);
/// what is still unanswered when they are gone is answered with
/// [`ErrorCode::Unavailable`], as is anything sent to the pool from then on.
///
/// Like an [`EntitySet`](crate::EntitySet), a pool is always a supervisor
/// whose workers' failed inits are their own. `docs/entities.md` has the
/// design.
///
/// # Examples
///
/// Three workers that square numbers, asked six times:
///
/// ```
/// use commutator::*;
/// use std::{cell::RefCell, rc::Rc, time::Duration};
///
/// struct Square(u64);
/// impl Request for Square {
///     type Response = u64;
/// }
///
/// struct Squarer;
/// impl Actor for Squarer {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(|_: &mut Self, q: &RequestMsg<Square>, ctx: &mut Context<'_, Self>| {
///             ctx.reply(q, q.payload().0 * q.payload().0)
///         });
///     }
/// }
///
/// struct Asker {
///     pool: Address,
///     got: Rc<RefCell<Vec<u64>>>,
/// }
/// impl Actor for Asker {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(|me: &mut Self, r: &Response<Square>, _: &mut Context<'_, Self>| {
///             me.got.borrow_mut().push(*r.result().unwrap());
///         });
///     }
///     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
///         for n in 1..=6 {
///             ctx.request(&self.pool, Square(n), Duration::from_secs(1));
///         }
///     }
/// }
///
/// let pool = Pool::local(|| Squarer).size(3).route_request::<Square>();
/// let stats = pool.stats();
/// let got = Rc::new(RefCell::new(Vec::new()));
/// let mut locality = Locality::new();
/// let root = locality.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
/// let pool = locality.spawn(&root, pool).name("squarers").finish()?;
/// locality.spawn(&root, Asker { pool, got: got.clone() }).finish()?;
/// locality.run_until_idle(locality.now());
/// assert_eq!(*got.borrow(), [1, 4, 9, 16, 25, 36]);
/// assert_eq!((stats.get().workers, stats.get().routed), (3, 6));
/// # Ok::<(), commutator::Error>(())
/// ```
pub struct Pool<W: Actor> {
    factory: Factory<W>,
    size: usize,
    elsewhere: Vec<(LocalityHandle, usize)>,
    strategy: PoolStrategy,
    children: ChildSettings,
    routes: Vec<Route<W>>,
    max_buffered: usize,
    name: String,
    workers: Vec<Worker>,
    /// Where round-robin goes next.
    next: usize,
    /// Workers expected: initializing, or waiting for a restart.
    starting: usize,
    in_flight: IdMap<RequestId, Flight>,
    pending: VecDeque<Box<dyn Job<W>>>,
    closing: bool,
    stats: StatsHandle<PoolStats>,
}

impl<W: Actor> fmt::Debug for Pool<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("name", &self.name)
            .field("strategy", &self.strategy)
            .field("stats", &self.stats.get())
            .finish_non_exhaustive()
    }
}

impl<W: Actor> Pool<W> {
    /// A pool of workers made by `factory` (called where each worker lives,
    /// and again for each replacement), here or on other localities
    /// ([`on`](Pool::on)). Default: one worker here.
    pub fn new(factory: impl Fn() -> W + Send + Sync + 'static) -> Self {
        Pool::with(Factory::Shared(Arc::new(factory)))
    }

    /// A pool whose workers all live on its own locality, so `factory`
    /// need not be `Send` ([`on`](Pool::on) then fails the pool's init).
    pub fn local(factory: impl Fn() -> W + 'static) -> Self {
        Pool::with(Factory::Local(Rc::new(factory)))
    }

    fn with(factory: Factory<W>) -> Self {
        Pool {
            factory,
            size: 1,
            elsewhere: Vec::new(),
            strategy: PoolStrategy::default(),
            children: ChildSettings::new(RestartPolicy::Always),
            routes: Vec::new(),
            max_buffered: 1 << 20,
            name: String::new(),
            workers: Vec::new(),
            next: 0,
            starting: 0,
            in_flight: IdMap::default(),
            pending: VecDeque::new(),
            closing: false,
            stats: StatsHandle::default(),
        }
    }

    /// `n` workers on the pool's own locality (default 1; 0 with [`on`](Pool::on)
    /// puts every worker elsewhere).
    pub fn size(mut self, n: usize) -> Self {
        self.size = n;
        self
    }

    /// `n` more workers on the locality of `handle` (another thread's, say),
    /// made there by the factory. Call it once per locality.
    pub fn on(mut self, handle: &LocalityHandle, n: usize) -> Self {
        self.elsewhere.push((handle.clone(), n));
        self
    }

    /// How workers are picked (default [`PoolStrategy::RoundRobin`]).
    pub fn strategy(mut self, strategy: PoolStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Passes messages `M` sent to the pool to a worker (which subscribes
    /// to `M`). A worker here gets the pool's copy; one elsewhere, or a
    /// message held until a worker is up, a clone.
    pub fn route<M: Clone + Send + 'static>(mut self) -> Self {
        self.routes.push(Box::new(|ctx| {
            ctx.subscribe(|pool: &mut Self, m: &M, ctx| pool.on_message(m, ctx));
        }));
        self
    }

    /// Passes requests `R` sent to the pool to a worker (which subscribes to
    /// `RequestMsg<R>` and replies as usual); a `CancelRequest<R>` goes to
    /// the worker that has the request.
    pub fn route_request<R: Request>(mut self) -> Self {
        self.routes.push(Box::new(|ctx| {
            ctx.subscribe(|pool: &mut Self, r: &RequestMsg<R>, ctx| pool.on_request(r, ctx));
            ctx.subscribe(|pool: &mut Self, c: &CancelRequest<R>, ctx| pool.on_cancel(c, ctx));
        }));
        self
    }

    /// At most `max` messages held while no worker can take them (more are
    /// refused with [`ErrorCode::Unavailable`]). Default: 1,048,576.
    pub fn max_buffered(mut self, max: usize) -> Self {
        self.max_buffered = max;
        self
    }

    /// Replaces a worker that went down as `policy` says (default
    /// [`RestartPolicy::Always`]).
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.children.restart = policy;
        self
    }

    child_settings_methods!("a worker");

    /// A live view of the pool's counters.
    pub fn stats(&self) -> StatsHandle<PoolStats> {
        self.stats.clone()
    }

    fn check(&self) -> Result<()> {
        let total = self.size + self.elsewhere.iter().map(|(_, n)| n).sum::<usize>();
        if total == 0 {
            let why = format!("pool {}: no worker", self.name);
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        if matches!(self.factory, Factory::Local(_)) && !self.elsewhere.is_empty() {
            let why = format!(
                "pool {}: workers on other localities need a factory that is Send (Pool::new)",
                self.name
            );
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        if self.max_buffered == 0 {
            let why = format!(
                "pool {}: the buffer must hold one message at least",
                self.name
            );
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        self.children.check(&format!("pool {}", self.name))
    }

    fn spawn_workers(&mut self, ctx: &mut Context<'_, Self>) -> Result<()> {
        let mut n = 0;
        for _ in 0..self.size {
            let name = format!("{}/{n}", self.name);
            let builder = match &self.factory {
                Factory::Shared(f) => {
                    let f = f.clone();
                    ctx.spawn_with(move || f()).name(name)
                }
                Factory::Local(f) => {
                    let f = f.clone();
                    ctx.spawn_with(move || f()).name(name)
                }
            };
            self.children.apply(builder).finish()?;
            n += 1;
        }
        let shared = match &self.factory {
            Factory::Shared(f) => Some(f.clone()),
            Factory::Local(_) => None,
        };
        for (handle, count) in std::mem::take(&mut self.elsewhere) {
            for _ in 0..count {
                let Some(factory) = shared.clone() else {
                    break; // refused by `check`
                };
                let builder = ctx
                    .spawn_on(&handle, move || factory())
                    .name(format!("{}/{n}", self.name));
                self.children.apply(builder).finish()?;
                n += 1;
            }
        }
        self.starting = n;
        Ok(())
    }

    // ---------------- workers ----------------

    /// `true` for one of the pool's workers (named `<pool>/<n>`), not
    /// another child (its registry, say). A child whose spawn elsewhere
    /// failed has no address: only workers are spawned elsewhere.
    fn is_worker(&self, address: Option<&Address>) -> bool {
        address.is_none_or(|a| {
            a.actor_name()
                .strip_prefix(self.name.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    fn on_child_event(&mut self, event: &ChildEvent, ctx: &mut Context<'_, Self>) {
        match event {
            ChildEvent::Started { address, .. }
            | ChildEvent::Down {
                address: Some(address),
                ..
            } if !self.is_worker(Some(address)) => {}
            ChildEvent::Started { slot, address } => {
                let local = (address.locality_id() == ctx.core.id())
                    .then(|| ctx.core.routes.address(address.key()).map(|a| a.owner))
                    .flatten();
                self.workers.push(Worker {
                    slot: *slot,
                    address: address.clone(),
                    local,
                    load: 0,
                });
                self.starting = self.starting.saturating_sub(1);
                // What waited goes out now, in order (held again if it must).
                for job in std::mem::take(&mut self.pending) {
                    job.run(self, ctx);
                }
            }
            ChildEvent::Down {
                slot,
                address,
                reason,
                restarting,
            } => {
                let serving = self.workers.iter().position(|w| w.slot == *slot);
                if let Some(at) = serving {
                    self.workers.remove(at);
                    let who = address.as_ref().map_or("?".to_string(), Address::to_string);
                    let error = Error::new(ErrorCode::ChildDown)
                        .with_context(format!("{who} went down before replying"))
                        .caused_by(reason.clone());
                    self.fail_flights(Some(*slot), &error, ctx);
                }
                match (serving.is_some(), *restarting) {
                    (true, true) => self.starting += 1,
                    (false, false) => self.starting = self.starting.saturating_sub(1),
                    _ => {}
                }
                if *restarting {
                    self.stats.update(|s| s.replaced += 1);
                }
                if self.starting == 0 && self.workers.is_empty() {
                    for job in std::mem::take(&mut self.pending) {
                        self.refuse(job, "has no worker left", ctx);
                    }
                }
            }
        }
        let (workers, starting) = (self.workers.len(), self.starting);
        self.stats.update(|s| {
            s.workers = workers;
            s.starting = starting;
        });
    }
}

impl<W: Actor> Actor for Pool<W> {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.name = ctx.name().to_string();
        if let Err(error) = self.check() {
            return ctx.fail(error);
        }
        make_supervisor(ctx.core, ctx.me);
        super::watch::watching(ctx.core);
        ctx.subscribe(Self::on_child_event);
        ctx.subscribe(Self::on_answered);
        for route in std::mem::take(&mut self.routes) {
            route(ctx);
        }
        if let Err(error) = self.spawn_workers(ctx) {
            ctx.fail(error);
        }
        let starting = self.starting;
        self.stats.update(|s| s.starting = starting);
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.closing = true;
        for job in std::mem::take(&mut self.pending) {
            self.refuse(job, "is shutting down", ctx);
        }
    }

    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        let why = format!("pool {}: its worker was gone before replying", self.name);
        let error = Error::new(ErrorCode::Unavailable).with_context(why);
        self.fail_flights(None, &error, ctx);
        self.workers.clear();
        let stats = &self.stats;
        stats.update(|s| {
            s.workers = 0;
            s.starting = 0;
        });
    }
}

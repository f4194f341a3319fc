//! The generic test actor: a [`Node`] plays one node of a [`Scenario`],
//! instance by instance, and logs everything the invariants need. What an
//! instance does (its scripted actions, the messages it handles) is in
//! [`actions`], its lifecycle hooks in [`hooks`].

mod actions;
mod hooks;

use super::{NodeSpec, Reply, Scenario};
use commutator::{
    Address, Builder, Context, Error, LocalityHandle, Request, RequestId, SupervisorConfig,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The resource an instance holds while its init is delayed.
pub const INIT_RESOURCE: u32 = 1;
/// The resource an instance holds while its shutdown is delayed.
pub const SHUTDOWN_RESOURCE: u32 = 2;

/// What every node of one run shares: the scenario, the log, where each
/// node's instances live.
pub struct Env {
    pub scenario: Scenario,
    /// One scenario millisecond.
    pub scale: Duration,
    /// `true` on the manual clock: time-based checks apply.
    pub manual: bool,
    pub t0: Instant,
    log: Mutex<Vec<Event>>,
    /// Every address each node's instances had, oldest first.
    directory: Mutex<Vec<Vec<Address>>>,
    made: Mutex<Vec<usize>>,
    next_uid: AtomicUsize,
    /// Handles on the localities (by index) for spawning there, until the
    /// root releases them.
    handles: Mutex<Vec<Option<LocalityHandle>>>,
}

/// One logged event; `at` is the locality's clock when an actor logged it.
#[derive(Clone, Debug)]
pub struct Event {
    pub at: Option<Instant>,
    pub ev: Ev,
}

/// What the actors log. `uid` numbers actor instances across the run.
#[derive(Clone, Debug)]
pub enum Ev {
    Made {
        uid: usize,
        node: usize,
        index: usize,
        parent: Option<usize>,
    },
    InitStart {
        uid: usize,
        addr: String,
    },
    InitFinish {
        uid: usize,
    },
    Start {
        uid: usize,
    },
    ShutdownStart {
        uid: usize,
    },
    ShutdownFinish {
        uid: usize,
        addr: String,
    },
    /// The reason the framework gave `should_restart` (every actor, once).
    Reason {
        uid: usize,
        reason: Error,
    },
    Dropped {
        uid: usize,
    },
    /// An injected failure, as given to `ctx.fail`.
    Failed {
        uid: usize,
        error: Error,
    },
    /// Asked the server at `server` for a link (directly, or found by discovery).
    Linking {
        uid: usize,
        server: String,
    },
    /// Subscribed (externally) to the numbered messages sent to `target`.
    Listening {
        uid: usize,
        target: String,
    },
    /// Linked to the server at `server` (logged at `init_finish`).
    Linked {
        uid: usize,
        server: String,
    },
    Sent {
        uid: usize,
        req: u32,
        reply: Reply,
        timeout: u64,
    },
    Answered {
        uid: usize,
        req: u32,
        result: Result<u64, Error>,
    },
    Cancel {
        uid: usize,
        req: u32,
        /// `cancel_request` said it was pending.
        cancelled: bool,
        /// No response had come yet.
        unanswered: bool,
    },
    /// Still waiting for its response when the requester finished.
    Unanswered {
        uid: usize,
        req: u32,
    },
    /// Something an actor saw that breaks an invariant.
    Broken {
        uid: usize,
        what: String,
    },
    /// A contract violation reported to the locality's handler.
    Contract {
        error: Error,
    },
}

impl Env {
    pub fn new(scenario: Scenario, scale: Duration, manual: bool, t0: Instant) -> Arc<Env> {
        let n = scenario.nodes.len();
        Arc::new(Env {
            scenario,
            scale,
            manual,
            t0,
            log: Mutex::new(Vec::new()),
            directory: Mutex::new(vec![Vec::new(); n]),
            made: Mutex::new(vec![0; n]),
            next_uid: AtomicUsize::new(0),
            handles: Mutex::new(Vec::new()),
        })
    }

    pub fn ms(&self, ms: u64) -> Duration {
        self.scale * ms as u32
    }

    pub fn log(&self, at: Option<Instant>, ev: Ev) {
        lock(&self.log).push(Event { at, ev });
    }

    pub fn events(&self) -> Vec<Event> {
        lock(&self.log).clone()
    }

    /// The address of the node's latest instance (which may be gone).
    pub fn current(&self, node: usize) -> Option<Address> {
        lock(&self.directory)[node].last().cloned()
    }

    /// The address of the node's first instance (likely gone).
    pub fn first(&self, node: usize) -> Option<Address> {
        lock(&self.directory)[node].first().cloned()
    }

    /// Keeps these handles for spawning on other localities.
    pub fn set_handles(&self, handles: Vec<Option<LocalityHandle>>) {
        *lock(&self.handles) = handles;
    }

    /// A handle on locality `i`, until they are released.
    pub fn handle(&self, i: usize) -> Option<LocalityHandle> {
        lock(&self.handles).get(i).cloned().flatten()
    }

    /// Drops the handles: a locality finishes once its actors are gone.
    pub fn release_handles(&self) {
        let handles = std::mem::take(&mut *lock(&self.handles));
        drop(handles);
    }

    /// Scenario milliseconds since the start, for traces.
    pub fn since(&self, at: Instant) -> u128 {
        at.saturating_duration_since(self.t0).as_nanos() / self.scale.as_nanos().max(1)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A numbered message, for per-sender FIFO.
#[derive(Clone)]
pub struct Seq {
    from: usize,
    seq: u64,
}

/// A request; the requester says how the server should answer.
pub struct Ask {
    from: usize,
    req: u32,
    reply: Reply,
}

impl Request for Ask {
    type Response = u64;
}

impl Ask {
    /// The value a reply carries.
    pub fn value(&self) -> u64 {
        Ask::value_of(self.from, self.req)
    }

    /// The value a reply to request `req` of instance `uid` carries.
    pub fn value_of(uid: usize, req: u32) -> u64 {
        ((uid as u64) << 32) | req as u64
    }
}

/// Asks a node to shut down.
pub struct Stop;

/// One instance of one node of the scenario.
pub struct Node {
    env: Arc<Env>,
    uid: usize,
    node: usize,
    index: usize,
    /// The next number per destination address.
    out: BTreeMap<String, u64>,
    /// The next number expected per sender.
    heard: BTreeMap<usize, u64>,
    /// The next number expected per (external subscription, sender).
    overheard: BTreeMap<(usize, usize), u64>,
    listens: usize,
    /// An identity that receives the responses to requests made `via` it.
    replies: Option<Address>,
    /// Requests waiting for their response.
    pending: BTreeMap<u32, RequestId>,
    next_req: u32,
    links: Vec<String>,
}

impl Node {
    /// A new instance of `node`, child of instance `parent`.
    pub fn new(env: Arc<Env>, node: usize, parent: Option<usize>) -> Node {
        let uid = env.next_uid.fetch_add(1, Ordering::Relaxed);
        let index = {
            let mut made = lock(&env.made);
            made[node] += 1;
            made[node] - 1
        };
        env.log(
            None,
            Ev::Made {
                uid,
                node,
                index,
                parent,
            },
        );
        Node {
            env,
            uid,
            node,
            index,
            out: BTreeMap::new(),
            heard: BTreeMap::new(),
            overheard: BTreeMap::new(),
            listens: 0,
            replies: None,
            pending: BTreeMap::new(),
            next_req: 0,
            links: Vec::new(),
        }
    }

    /// Makes instances of `node` for the supervisor instance `parent`.
    pub fn factory(
        env: Arc<Env>,
        node: usize,
        parent: usize,
    ) -> impl FnMut() -> Node + Send + 'static {
        move || Node::new(env.clone(), node, Some(parent))
    }

    fn spec(&self) -> &NodeSpec {
        &self.env.scenario.nodes[self.node]
    }

    fn script(&self) -> &super::Script {
        self.env.scenario.script(self.node, self.index)
    }

    fn log(&self, ctx: &Context<'_, Self>, ev: Ev) {
        self.env.log(Some(ctx.now()), ev);
    }

    fn broken(&self, ctx: &Context<'_, Self>, what: String) {
        self.log(
            ctx,
            Ev::Broken {
                uid: self.uid,
                what,
            },
        );
    }

    fn fail(&self, ctx: &mut Context<'_, Self>, what: &str) {
        let error = Error::failure(format!("u{} {what}", self.uid));
        self.log(
            ctx,
            Ev::Failed {
                uid: self.uid,
                error: error.clone(),
            },
        );
        ctx.fail(error);
    }

    fn spawn_child(&mut self, ctx: &mut Context<'_, Self>, child: usize) {
        let env = self.env.clone();
        let spec = &env.scenario.nodes[child];
        let factory = Node::factory(env.clone(), child, self.uid);
        let result = if spec.locality == self.spec().locality {
            configure(ctx.spawn_with(factory), spec, &env)
                .finish()
                .map(drop)
        } else {
            // Once the root released the handles, children elsewhere are not made.
            let Some(handle) = env.handle(spec.locality) else {
                return;
            };
            configure(ctx.spawn_on(&handle, factory), spec, &env)
                .finish()
                .map(drop)
        };
        if let Err(e) = result {
            self.broken(ctx, format!("spawning n{child} failed: {e:#}"));
        }
    }

    fn linking(&mut self, ctx: &Context<'_, Self>, server: &Address) {
        let server = server.to_string();
        self.links.push(server.clone());
        self.log(
            ctx,
            Ev::Linking {
                uid: self.uid,
                server,
            },
        );
    }
}

/// Applies a node's settings to its builder (here or elsewhere alike).
pub fn configure<'a, T>(b: Builder<'a, Node, T>, s: &NodeSpec, env: &Env) -> Builder<'a, Node, T> {
    let mut b = b.name(format!("n{}", s.id));
    if let Some(ms) = s.init_timeout {
        b = b.init_timeout(env.ms(ms));
    }
    if let Some(ms) = s.shutdown_timeout {
        b = b.shutdown_timeout(env.ms(ms));
    }
    if let Some(sup) = s.supervisor {
        let mut config = SupervisorConfig::default()
            .init_failure(sup.init_failure)
            .synchronize_start(sup.synchronize);
        if s.parent.is_none() && env.scenario.registry {
            config = config.with_registry();
        }
        b = b.supervisor(config);
    }
    if let Some(name) = s.register_as {
        b = b.register_as(format!("svc{name}"));
    }
    if s.parent.is_some() {
        b = b.restart(s.restart).restart_delay(env.ms(s.restart_delay));
        if let Some(max) = s.backoff {
            b = b.restart_backoff(env.ms(max));
        }
        if let Some((n, period)) = s.limit {
            b = b.restart_limit(n, env.ms(period));
        }
        if s.escalate {
            b = b.escalate_failure();
        }
        if s.autoshutdown {
            b = b.autoshutdown_supervisor();
        }
    }
    b
}

//! The generic test actor: a [`Node`] plays one node of a [`Scenario`],
//! instance by instance, and logs everything the invariants need.

use super::{Action, Init, NodeSpec, Reply, Scenario};
use commutator::{
    Actor, Address, Builder, CancelRequest, Context, Error, ErrorCode, LocalityHandle, Request,
    RequestId, RequestMsg, Response, SupervisorConfig,
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

    fn act(&mut self, ctx: &mut Context<'_, Self>, action: Action) {
        match action {
            Action::Crash => self.fail(ctx, "crash"),
            Action::Panic => {
                // Logged as the failure the framework will make of it.
                let what = format!("u{} panic", self.uid);
                let error = Error::new(ErrorCode::Panicked)
                    .with_context(format!("{}: {what}", ctx.address()));
                self.log(
                    ctx,
                    Ev::Failed {
                        uid: self.uid,
                        error,
                    },
                );
                panic!("{what}");
            }
            Action::Quit => ctx.shutdown(),
            Action::StopSupervisor => ctx.shutdown_supervisor(),
            Action::Send { to, count } => {
                if let Some(to) = self.env.current(to) {
                    self.send_seq(ctx, &to, count);
                }
            }
            Action::SendStale { to, count } => {
                if let Some(to) = self.env.first(to) {
                    self.send_seq(ctx, &to, count);
                }
            }
            Action::Listen { to } => {
                let Some(target) = self.env.current(to) else {
                    return;
                };
                let k = self.listens;
                self.listens += 1;
                let heard = move |me: &mut Self, s: &Seq, ctx: &mut Context<'_, Self>| {
                    me.on_overheard(k, s, ctx)
                };
                match ctx.subscribe_external(&target, heard) {
                    Ok(_) => {
                        let target = target.to_string();
                        self.log(
                            ctx,
                            Ev::Listening {
                                uid: self.uid,
                                target,
                            },
                        );
                    }
                    Err(e) if e.code() == ErrorCode::StaleAddress => {}
                    Err(e) => self.broken(ctx, format!("subscribe_external({target}): {e:#}")),
                }
            }
            Action::Request {
                to,
                reply,
                timeout,
                cancel_after,
                via,
            } => {
                let Some(to) = self.env.current(to) else {
                    return;
                };
                let req = self.next_req;
                let ask = Ask {
                    from: self.uid,
                    req,
                    reply,
                };
                let timeout_d = self.env.ms(timeout);
                let id = match (via, self.replies.clone()) {
                    (true, Some(replies)) => match ctx.request_via(&replies, &to, ask, timeout_d) {
                        Ok(id) => id,
                        Err(e) => return self.broken(ctx, format!("request_via: {e:#}")),
                    },
                    _ => ctx.request(&to, ask, timeout_d),
                };
                self.next_req += 1;
                self.pending.insert(req, id);
                let uid = self.uid;
                self.log(
                    ctx,
                    Ev::Sent {
                        uid,
                        req,
                        reply,
                        timeout,
                    },
                );
                if let Some(after) = cancel_after {
                    ctx.start_timer(self.env.ms(after), move |me: &mut Self, ctx, _| {
                        let unanswered = me.pending.contains_key(&req);
                        let cancelled = ctx.cancel_request(id);
                        me.log(
                            ctx,
                            Ev::Cancel {
                                uid,
                                req,
                                cancelled,
                                unanswered,
                            },
                        );
                    });
                }
            }
        }
    }

    fn send_seq(&mut self, ctx: &mut Context<'_, Self>, to: &Address, count: u32) {
        let next = self.out.entry(to.to_string()).or_insert(0);
        for _ in 0..count {
            let seq = *next;
            *next += 1;
            ctx.send(
                to,
                Seq {
                    from: self.uid,
                    seq,
                },
            );
        }
    }

    fn on_seq(&mut self, s: &Seq, ctx: &mut Context<'_, Self>) {
        let next = self.heard.entry(s.from).or_insert(0);
        let expected = *next;
        *next = s.seq + 1;
        if s.seq != expected {
            let what = format!(
                "FIFO: #{} from u{} came when #{expected} was due",
                s.seq, s.from
            );
            self.broken(ctx, what);
        }
    }

    fn on_overheard(&mut self, k: usize, s: &Seq, ctx: &mut Context<'_, Self>) {
        let expected = self.overheard.insert((k, s.from), s.seq + 1);
        if let Some(expected) = expected
            && s.seq != expected
        {
            let what = format!(
                "external FIFO: #{} from u{} came when #{expected} was due",
                s.seq, s.from
            );
            self.broken(ctx, what);
        }
    }

    fn on_ask(&mut self, q: &RequestMsg<Ask>, ctx: &mut Context<'_, Self>) {
        let value = q.payload().value();
        match q.payload().reply {
            Reply::Now => ctx.reply(q, value),
            Reply::Error => ctx.reply_error(q, Error::failure("refused")),
            Reply::Never => {}
            Reply::Late(after) => {
                let q = q.clone();
                ctx.start_timer(self.env.ms(after), move |_: &mut Self, ctx, _| {
                    ctx.reply(&q, value)
                });
            }
            Reply::Twice => {
                ctx.reply(q, value);
                ctx.reply(q, value + 1);
            }
        }
    }

    fn on_response(&mut self, r: &Response<Ask>, ctx: &mut Context<'_, Self>) {
        let ask = r.request();
        if ask.from != self.uid {
            let what = format!("got the response to u{}'s request {}", ask.from, ask.req);
            return self.broken(ctx, what);
        }
        match self.pending.remove(&ask.req) {
            Some(id) if id == r.id() => {}
            Some(id) => {
                let what = format!(
                    "request {} answered with id {} (sent as {id})",
                    ask.req,
                    r.id()
                );
                return self.broken(ctx, what);
            }
            None => {
                let what = format!("a second response to request {}", ask.req);
                return self.broken(ctx, what);
            }
        }
        let result = r.result().copied().map_err(Error::clone);
        let (uid, req) = (self.uid, ask.req);
        self.log(ctx, Ev::Answered { uid, req, result });
    }

    fn on_cancel(&mut self, _: &CancelRequest<Ask>, _: &mut Context<'_, Self>) {}

    fn on_stop(&mut self, _: &Stop, ctx: &mut Context<'_, Self>) {
        ctx.shutdown();
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

impl Actor for Node {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.address().clone();
        self.log(
            ctx,
            Ev::InitStart {
                uid: self.uid,
                addr: me.to_string(),
            },
        );
        ctx.subscribe(Self::on_seq);
        ctx.subscribe(Self::on_ask);
        ctx.subscribe(Self::on_response);
        ctx.subscribe(Self::on_cancel);
        ctx.subscribe(Self::on_stop);
        let replies = ctx.create_address("replies").unwrap();
        if let Err(e) = ctx.subscribe_on(&replies, Self::on_response) {
            self.broken(ctx, format!("subscribe_on(replies): {e:#}"));
        }
        self.replies = Some(replies);
        lock(&self.env.directory)[self.node].push(me);
        let env = self.env.clone();
        let spec = &env.scenario.nodes[self.node];
        for &child in &spec.children {
            self.spawn_child(ctx, child);
        }
        for link in &spec.links {
            if link.discover {
                let discovery = ctx.discover(format!("svc{}", link.server));
                let discovery = if link.wait {
                    discovery.wait()
                } else {
                    discovery
                };
                discovery
                    .link()
                    .then(|me: &mut Self, server, ctx| me.linking(ctx, server));
            } else if let Some(server) = env.current(link.server) {
                ctx.link(&server).expect("linked once");
                self.linking(ctx, &server);
            }
        }
        match self.script().init {
            Init::Ready => {}
            Init::Fail => self.fail(ctx, "fails its init"),
            Init::Delay(ms) => {
                ctx.acquire_resource(INIT_RESOURCE);
                ctx.start_timer(env.ms(ms), |me: &mut Self, ctx, _| {
                    if let Err(e) = ctx.release_resource(INIT_RESOURCE) {
                        me.broken(ctx, format!("releasing the init resource: {e:#}"));
                    }
                });
            }
            Init::FailAfter(ms) => {
                ctx.acquire_resource(INIT_RESOURCE);
                ctx.start_timer(env.ms(ms), |me: &mut Self, ctx, _| {
                    me.fail(ctx, "fails its init late");
                    if let Err(e) = ctx.release_resource(INIT_RESOURCE) {
                        me.broken(ctx, format!("releasing the init resource: {e:#}"));
                    }
                });
            }
        }
        if self.node == 0 {
            ctx.start_timer(env.ms(env.scenario.end_ms), |_, ctx, _| ctx.shutdown());
            if let Some(at) = env.scenario.release_handles_at {
                ctx.start_timer(env.ms(at), |me: &mut Self, _, _| me.env.release_handles());
            }
            for &(at, node) in &env.scenario.stops {
                ctx.start_timer(env.ms(at), move |me: &mut Self, ctx, _| {
                    if let Some(to) = me.env.current(node) {
                        ctx.send(&to, Stop);
                    }
                });
            }
        }
    }

    fn init_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.log(ctx, Ev::InitFinish { uid: self.uid });
        for server in std::mem::take(&mut self.links) {
            self.log(
                ctx,
                Ev::Linked {
                    uid: self.uid,
                    server,
                },
            );
        }
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log(ctx, Ev::Start { uid: self.uid });
        let env = self.env.clone();
        for &(at, action) in &env.scenario.script(self.node, self.index).actions {
            ctx.start_timer(env.ms(at), move |me: &mut Self, ctx, _| me.act(ctx, action));
        }
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log(ctx, Ev::ShutdownStart { uid: self.uid });
        if let Some(ms) = self.script().shutdown_delay {
            ctx.acquire_resource(SHUTDOWN_RESOURCE);
            ctx.start_timer(self.env.ms(ms), |me: &mut Self, ctx, _| {
                if let Err(e) = ctx.release_resource(SHUTDOWN_RESOURCE) {
                    me.broken(ctx, format!("releasing the shutdown resource: {e:#}"));
                }
            });
        }
    }

    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        let addr = ctx.address().to_string();
        self.log(
            ctx,
            Ev::ShutdownFinish {
                uid: self.uid,
                addr,
            },
        );
        for req in std::mem::take(&mut self.pending).into_keys() {
            self.log(ctx, Ev::Unanswered { uid: self.uid, req });
        }
        if self.node == 0 {
            self.env.release_handles();
        }
    }

    fn should_restart(&self, reason: &Error) -> bool {
        let reason = reason.clone();
        self.env.log(
            None,
            Ev::Reason {
                uid: self.uid,
                reason,
            },
        );
        self.script().ask_restart
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.env.log(None, Ev::Dropped { uid: self.uid });
    }
}

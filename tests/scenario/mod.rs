//! Generated scenarios for the property tests.
//!
//! A [`Scenario`] is plain data made from a seed: a supervisor tree (depth,
//! width, policies, timeouts, links, registry names, resources held through
//! init and shutdown delays) and the faults each actor instance injects (init
//! failures, delays past timeouts, crashes, requests that time out or are
//! cancelled, stops in the middle of init, messages to dead addresses). One
//! generic actor ([`node::Node`]) interprets it; the drivers in [`run`] run it
//! to the end (on a manual clock, or on threads); [`check`] checks the
//! invariants on what the actors logged. A failing seed prints the scenario
//! (its `Display`) so it can be read, and replays it.

#![allow(dead_code, unreachable_pub)]

pub mod check;
pub mod node;
pub mod run;

use commutator::{InitFailurePolicy, RestartPolicy};
use std::fmt;

/// A small seeded generator: splitmix64 to spread the seed, xorshift64* after.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// `true` with the given percentage.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// What happens to the locality on a contract violation (a shutdown timeout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnViolation {
    Stop,
    Continue,
}

/// A whole generated scenario. All times are scenario milliseconds (one
/// millisecond of the manual clock; scaled down on threads).
#[derive(Clone, Debug)]
pub struct Scenario {
    pub seed: u64,
    /// Localities (L0 holds the root).
    pub localities: usize,
    /// `nodes[0]` is the root; a node's children come after it.
    pub nodes: Vec<NodeSpec>,
    /// The root shuts itself down then.
    pub end_ms: u64,
    /// The root asks the current instance of a node to shut down then.
    pub stops: Vec<(u64, usize)>,
    pub on_violation: OnViolation,
    /// The root is made `with_registry()`.
    pub registry: bool,
    /// The root drops the handles on the other localities then (else when
    /// it is gone); children elsewhere are not made after that.
    pub release_handles_at: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub id: usize,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub locality: usize,
    /// `Some` for a supervisor (which spawns its children in `init_start`).
    pub supervisor: Option<SupSpec>,
    pub init_timeout: Option<u64>,
    pub shutdown_timeout: Option<u64>,
    pub restart: RestartPolicy,
    pub restart_delay: u64,
    pub backoff: Option<u64>,
    pub limit: Option<(u32, u64)>,
    pub escalate: bool,
    pub autoshutdown: bool,
    /// Registers `svc<n>`: its own number, or another node's (a name clash).
    pub register_as: Option<usize>,
    pub links: Vec<Link>,
    /// The script of instance `i` is `scripts[min(i, len - 1)]`.
    pub scripts: Vec<Script>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SupSpec {
    pub init_failure: InitFailurePolicy,
    pub synchronize: bool,
}

/// The node links to `server` during init: found through the registry (a
/// waiting discovery with `.link()`), or at the address the server has then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub server: usize,
    pub discover: bool,
    /// With a discovery: wait for the name (else fail init if it is not there).
    pub wait: bool,
}

/// What one instance does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    pub init: Init,
    /// Holds a resource this long after `shutdown_start`.
    pub shutdown_delay: Option<u64>,
    /// Its answer to `should_restart` (for `RestartPolicy::AskActor`).
    pub ask_restart: bool,
    /// Actions, each this long after `on_start`.
    pub actions: Vec<(u64, Action)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    Ready,
    /// `ctx.fail` in `init_start`.
    Fail,
    /// Holds a resource this long after `init_start`.
    Delay(u64),
    /// Holds a resource this long after `init_start`, then fails (a failed
    /// init, or a crash if a shutdown came first).
    FailAfter(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// `ctx.fail` with a tagged failure.
    Crash,
    /// A panic in the handler (the framework turns it into a failure).
    Panic,
    /// `ctx.shutdown()`.
    Quit,
    /// `ctx.shutdown_supervisor()`.
    StopSupervisor,
    /// `count` numbered messages to the node's current address.
    Send { to: usize, count: u32 },
    /// Numbered messages to the node's first address ever (likely dead).
    SendStale { to: usize, count: u32 },
    /// An external subscription to the numbered messages sent to the
    /// node's current address (`subscribe_external`).
    Listen { to: usize },
    /// A request to the node's current address (its response to an
    /// identity of the requester if `via`).
    Request {
        to: usize,
        reply: Reply,
        timeout: u64,
        cancel_after: Option<u64>,
        via: bool,
    },
}

/// How the server answers a request (the requester chooses, in the payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    Now,
    Error,
    Never,
    Late(u64),
    Twice,
}

impl Scenario {
    /// The scenario of `seed`, with at most `max_localities` localities.
    pub fn generate(seed: u64, max_localities: usize) -> Scenario {
        let mut rng = Rng::new(seed);
        let localities = 1 + rng.below(max_localities as u64) as usize;
        Scenario::generate_with(&mut rng, seed, localities)
    }

    /// The scenario of `seed` with exactly `localities` localities.
    pub fn generate_on(seed: u64, localities: usize) -> Scenario {
        let mut rng = Rng::new(seed);
        Scenario::generate_with(&mut rng, seed, localities)
    }

    fn generate_with(rng: &mut Rng, seed: u64, localities: usize) -> Scenario {
        let depth = rng.range(1, 4) as usize;
        let max_nodes = rng.range(2, 14) as usize;
        let mut nodes = vec![NodeSpec::new(0, None, 0, Some(sup_spec(rng)))];
        // Breadth first, so that the nodes of one depth are numbered together.
        let mut frontier = vec![(0usize, 0usize)];
        while let Some((parent, d)) = (!frontier.is_empty()).then(|| frontier.remove(0)) {
            if d >= depth {
                continue;
            }
            let width = rng.range(1, 3);
            for _ in 0..width {
                if nodes.len() >= max_nodes {
                    break;
                }
                let id = nodes.len();
                let inner = d + 1 < depth && rng.chance(45);
                let locality = if localities > 1 && rng.chance(40) {
                    rng.below(localities as u64) as usize
                } else {
                    nodes[parent].locality
                };
                let sup = inner.then(|| sup_spec(rng));
                nodes.push(NodeSpec::new(id, Some(parent), locality, sup));
                nodes[parent].children.push(id);
                if inner {
                    frontier.push((id, d + 1));
                }
            }
        }
        let n = nodes.len();
        for node in nodes.iter_mut() {
            node.fill(rng, n);
        }
        let registry = rng.chance(50);
        if registry {
            for node in nodes.iter_mut() {
                if rng.chance(30) {
                    node.register_as = Some(node.id);
                }
            }
            let named: Vec<usize> = nodes.iter().filter_map(|n| n.register_as).collect();
            if !named.is_empty() {
                for node in nodes.iter_mut() {
                    if node.register_as.is_none() && rng.chance(4) {
                        node.register_as = Some(rng.pick(&named)); // a clash
                    }
                }
            }
        }
        let mut scenario = Scenario {
            seed,
            localities,
            nodes,
            end_ms: rng.range(20, 300),
            stops: Vec::new(),
            on_violation: if localities == 1 && rng.chance(50) {
                OnViolation::Stop
            } else {
                OnViolation::Continue
            },
            registry,
            release_handles_at: None,
        };
        // Links that keep "finishes before" acyclic (child before parent,
        // client before server): otherwise a shutdown would wait for itself.
        for client in 0..n {
            if n > 1 && rng.chance(25) {
                let server = rng.below(n as u64) as usize;
                let discover = registry && scenario.nodes[server].register_as == Some(server);
                let discover = discover && rng.chance(70);
                let wait = !discover || rng.chance(85);
                let link = Link {
                    server,
                    discover,
                    wait,
                };
                let acyclic = scenario
                    .link_targets(link)
                    .iter()
                    .all(|&s| s != client && !scenario.finishes_before(s, client));
                if acyclic {
                    scenario.nodes[client].links.push(link);
                }
            }
        }
        for _ in 0..rng.below(3) {
            if n > 1 {
                let node = rng.range(1, n as u64 - 1) as usize;
                scenario.stops.push((rng.range(0, 150), node));
            }
        }
        scenario.stops.sort();
        if localities > 1 && rng.chance(30) {
            scenario.release_handles_at = Some(rng.range(0, 60));
        }
        scenario
    }

    /// `true` if `a` must finish before `b`: `b` is reachable from `a` by
    /// child → parent and client → server steps.
    pub fn finishes_before(&self, a: usize, b: usize) -> bool {
        let mut seen = vec![false; self.nodes.len()];
        let mut todo = vec![a];
        while let Some(x) = todo.pop() {
            if x == b {
                return true;
            }
            if std::mem::replace(&mut seen[x], true) {
                continue;
            }
            todo.extend(self.nodes[x].parent);
            for &link in &self.nodes[x].links {
                todo.extend(self.link_targets(link));
            }
        }
        false
    }

    /// The nodes a link may reach: its server, or with a discovery every
    /// node that registers the server's name (a clash may answer first).
    pub fn link_targets(&self, link: Link) -> Vec<usize> {
        if !link.discover {
            return vec![link.server];
        }
        let name = Some(link.server);
        self.nodes
            .iter()
            .filter(|n| n.register_as == name)
            .map(|n| n.id)
            .collect()
    }

    /// `true` if no fault is injected: nothing fails, no timeout, no link,
    /// no name clash. Such a scenario must end normally everywhere.
    pub fn is_faultless(&self) -> bool {
        self.nodes.iter().all(|n| {
            n.init_timeout.is_none()
                && n.shutdown_timeout.is_none()
                && n.links.is_empty()
                && n.register_as.is_none_or(|r| r == n.id)
                && n.scripts.iter().all(|s| {
                    matches!(s.init, Init::Ready | Init::Delay(_))
                        && s.actions
                            .iter()
                            .all(|(_, a)| !matches!(a, Action::Crash | Action::Panic))
                })
        })
    }

    /// The same scenario with every fault taken out: no failure, no crash,
    /// no timeout, no link, no name clash (delays, restarts, stops, traffic
    /// and requests stay).
    pub fn without_faults(mut self) -> Scenario {
        for n in &mut self.nodes {
            n.init_timeout = None;
            n.shutdown_timeout = None;
            n.links.clear();
            if n.register_as.is_some_and(|r| r != n.id) {
                n.register_as = None;
            }
            for s in &mut n.scripts {
                if matches!(s.init, Init::Fail | Init::FailAfter(_)) {
                    s.init = Init::Ready;
                }
                s.actions
                    .retain(|(_, a)| !matches!(a, Action::Crash | Action::Panic));
            }
        }
        self
    }

    /// A path: the root, then `localities.len() - 2` supervisors, then a
    /// worker whose one instance runs `leaf`; node `i` lives on
    /// `localities[i]` (the root on L0). Every node below the root escalates
    /// its failures if `escalate`.
    pub fn path(localities: &[usize], leaf: Script, escalate: bool, end_ms: u64) -> Scenario {
        let depth = localities.len() - 1;
        let mut nodes = Vec::new();
        for (i, &locality) in localities.iter().enumerate() {
            let sup = (i < depth).then_some(SupSpec {
                init_failure: InitFailurePolicy::ShutdownSupervisor,
                synchronize: false,
            });
            let locality = if i == 0 { 0 } else { locality };
            let mut node = NodeSpec::new(i, i.checked_sub(1), locality, sup);
            if i < depth {
                node.children.push(i + 1);
            }
            node.escalate = escalate && i > 0;
            node.scripts.push(if i == depth {
                leaf.clone()
            } else {
                Script::quiet()
            });
            nodes.push(node);
        }
        Scenario {
            seed: 0,
            localities: localities.iter().max().map_or(1, |m| m + 1),
            nodes,
            end_ms,
            stops: Vec::new(),
            on_violation: OnViolation::Continue,
            registry: false,
            release_handles_at: None,
        }
    }

    /// The scripts of `node`'s instance `index`.
    pub fn script(&self, node: usize, index: usize) -> &Script {
        let scripts = &self.nodes[node].scripts;
        &scripts[index.min(scripts.len() - 1)]
    }

    /// The localities the nodes live on, for the handles a tree needs.
    pub fn uses_locality(&self, locality: usize) -> bool {
        self.nodes.iter().any(|n| n.locality == locality)
    }
}

fn sup_spec(rng: &mut Rng) -> SupSpec {
    SupSpec {
        init_failure: if rng.chance(55) {
            InitFailurePolicy::ShutdownChild
        } else {
            InitFailurePolicy::ShutdownSupervisor
        },
        synchronize: rng.chance(25),
    }
}

impl NodeSpec {
    fn new(id: usize, parent: Option<usize>, locality: usize, supervisor: Option<SupSpec>) -> Self {
        NodeSpec {
            id,
            parent,
            children: Vec::new(),
            locality,
            supervisor,
            init_timeout: None,
            shutdown_timeout: None,
            restart: RestartPolicy::Never,
            restart_delay: 0,
            backoff: None,
            limit: None,
            escalate: false,
            autoshutdown: false,
            register_as: None,
            links: Vec::new(),
            scripts: Vec::new(),
        }
    }

    fn fill(&mut self, rng: &mut Rng, nodes: usize) {
        if rng.chance(25) {
            self.init_timeout = Some(rng.range(5, 60));
        }
        if rng.chance(20) {
            self.shutdown_timeout = Some(rng.range(5, 80));
        }
        if self.parent.is_some() {
            use RestartPolicy::*;
            self.restart = rng.pick(&[
                Never,
                Never,
                Always,
                OnFailure,
                OnFailure,
                OnNormalExit,
                AskActor,
            ]);
            if rng.chance(60) {
                self.restart_delay = rng.range(0, 20);
            }
            if rng.chance(20) {
                self.backoff = Some(rng.range(1, 40));
            }
            if rng.chance(60) {
                self.limit = Some((rng.range(0, 3) as u32, rng.range(10, 200)));
            }
            self.escalate = rng.chance(35);
            self.autoshutdown = rng.chance(15);
        }
        let instances = rng.range(1, 3);
        for _ in 0..instances {
            let script = Script::generate(rng, nodes);
            self.scripts.push(script);
        }
    }
}

impl Script {
    /// Init ok, nothing else.
    pub fn quiet() -> Script {
        Script {
            init: Init::Ready,
            shutdown_delay: None,
            ask_restart: false,
            actions: Vec::new(),
        }
    }

    fn generate(rng: &mut Rng, nodes: usize) -> Script {
        let init = match rng.below(100) {
            0..78 => Init::Ready,
            78..84 => Init::Fail,
            84..94 => Init::Delay(rng.range(1, 80)),
            _ => Init::FailAfter(rng.range(1, 40)),
        };
        let shutdown_delay = rng.chance(15).then(|| rng.range(1, 60));
        let mut actions = Vec::new();
        for _ in 0..rng.below(5) {
            let at = rng.range(0, 100);
            let to = rng.below(nodes as u64) as usize;
            let action = match rng.below(100) {
                0..10 => Action::Crash,
                10..14 => Action::Panic,
                14..22 => Action::Quit,
                22..26 => Action::StopSupervisor,
                26..52 => Action::Send {
                    to,
                    count: rng.range(1, 5) as u32,
                },
                52..58 => Action::SendStale {
                    to,
                    count: rng.range(1, 3) as u32,
                },
                58..66 => Action::Listen { to },
                _ => Action::Request {
                    to,
                    reply: match rng.below(5) {
                        0 => Reply::Now,
                        1 => Reply::Error,
                        2 => Reply::Never,
                        3 => Reply::Late(rng.range(1, 60)),
                        _ => Reply::Twice,
                    },
                    timeout: rng.range(1, 50),
                    cancel_after: rng.chance(40).then(|| rng.range(0, 40)),
                    via: rng.chance(30),
                },
            };
            actions.push((at, action));
        }
        actions.sort_by_key(|(at, _)| *at);
        Script {
            init,
            shutdown_delay,
            ask_restart: rng.chance(50),
            actions,
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scenario {:#018x}: {} localit{}, root ends at {}ms, contract violations: {:?}{}",
            self.seed,
            self.localities,
            if self.localities == 1 { "y" } else { "ies" },
            self.end_ms,
            self.on_violation,
            if self.registry {
                ", root has a registry"
            } else {
                ""
            },
        )?;
        self.fmt_node(f, 0, "", "")?;
        if let Some(at) = self.release_handles_at {
            writeln!(
                f,
                "at {at}ms the root releases its handles on the localities"
            )?;
        }
        for (at, node) in &self.stops {
            writeln!(f, "at {at}ms the root stops n{node}")?;
        }
        Ok(())
    }
}

impl Scenario {
    fn fmt_node(
        &self,
        f: &mut fmt::Formatter<'_>,
        id: usize,
        lead: &str,
        rest: &str,
    ) -> fmt::Result {
        let n = &self.nodes[id];
        write!(f, "{lead}n{id} [L{}]", n.locality)?;
        match &n.supervisor {
            Some(s) => {
                write!(f, " supervisor(init failure: {:?}", s.init_failure)?;
                if s.synchronize {
                    write!(f, ", synchronized start")?;
                }
                write!(f, ")")?;
            }
            None => write!(f, " worker")?,
        }
        if let Some(t) = n.init_timeout {
            write!(f, " init_timeout={t}ms")?;
        }
        if let Some(t) = n.shutdown_timeout {
            write!(f, " shutdown_timeout={t}ms")?;
        }
        if n.restart != RestartPolicy::Never {
            write!(f, " restart={:?} delay={}ms", n.restart, n.restart_delay)?;
            if let Some(max) = n.backoff {
                write!(f, " backoff<={max}ms")?;
            }
            match n.limit {
                Some((k, p)) => write!(f, " limit={k}/{p}ms")?,
                None => write!(f, " limit=3/5000ms")?,
            }
        }
        if n.escalate {
            write!(f, " escalate")?;
        }
        if n.autoshutdown {
            write!(f, " autoshutdown")?;
        }
        if let Some(name) = n.register_as {
            write!(f, " register \"svc{name}\"")?;
            if name != id {
                write!(f, " (clash)")?;
            }
        }
        for l in &n.links {
            let how = match (l.discover, l.wait) {
                (false, _) => "link",
                (true, true) => "discover+link",
                (true, false) => "discover(no wait)+link",
            };
            write!(f, " {how}->n{}", l.server)?;
        }
        writeln!(f)?;
        for (i, s) in n.scripts.iter().enumerate() {
            // The last script is also that of every later instance.
            let plus = if i + 1 == n.scripts.len() { "+" } else { " " };
            writeln!(f, "{rest}   #{i}{plus} {s}")?;
        }
        for (k, &c) in n.children.iter().enumerate() {
            let last = k + 1 == n.children.len();
            let (l, r) = if last {
                ("└─ ", "   ")
            } else {
                ("├─ ", "│  ")
            };
            self.fmt_node(f, c, &format!("{rest}{l}"), &format!("{rest}{r}"))?;
        }
        Ok(())
    }
}

impl fmt::Display for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.init {
            Init::Ready => write!(f, "init ok")?,
            Init::Fail => write!(f, "init fails")?,
            Init::Delay(d) => write!(f, "init holds a resource {d}ms")?,
            Init::FailAfter(d) => write!(f, "init fails after {d}ms")?,
        }
        if let Some(d) = self.shutdown_delay {
            write!(f, "; shutdown holds a resource {d}ms")?;
        }
        if self.ask_restart {
            write!(f, "; wants a restart")?;
        }
        for (at, a) in &self.actions {
            write!(f, "; +{at}ms ")?;
            match a {
                Action::Crash => write!(f, "crash")?,
                Action::Panic => write!(f, "panic")?,
                Action::Quit => write!(f, "quit")?,
                Action::StopSupervisor => write!(f, "stop its supervisor")?,
                Action::Send { to, count } => write!(f, "send {count} to n{to}")?,
                Action::SendStale { to, count } => {
                    write!(f, "send {count} to n{to}'s first address")?
                }
                Action::Listen { to } => write!(f, "listen to n{to}")?,
                Action::Request {
                    to,
                    reply,
                    timeout,
                    cancel_after,
                    via,
                } => {
                    write!(f, "ask n{to} ({reply:?}, timeout {timeout}ms")?;
                    if let Some(c) = cancel_after {
                        write!(f, ", cancel at +{c}ms")?;
                    }
                    if *via {
                        write!(f, ", reply to an identity")?;
                    }
                    write!(f, ")")?;
                }
            }
        }
        Ok(())
    }
}

/// Silences the panics the scenarios inject (`u<n> panic`); any other panic
/// still prints. Installed once per test binary.
pub fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let injected = info
                .payload()
                .downcast_ref::<String>()
                .is_some_and(|m| m.ends_with(" panic"));
            if !injected {
                default(info);
            }
        }));
    });
}

//! Generated scenarios for the property tests.
//!
//! A [`Scenario`] is plain data made from a seed ([`generate`]): a supervisor
//! tree (depth, width, policies, timeouts, links, registry names, resources
//! held through init and shutdown delays) and the faults each actor instance
//! injects (init failures, delays past timeouts, crashes, requests that time
//! out or are cancelled, stops in the middle of init, messages to dead
//! addresses). One generic actor ([`node::Node`]) interprets it; the drivers
//! in [`run`] run it to the end (on a manual clock, or on threads); [`check`]
//! checks the invariants on what the actors logged. A failing seed prints the
//! scenario (its `Display`, in [`display`]) so it can be read, and replays it.

#![allow(dead_code, unreachable_pub)]

pub mod check;
mod display;
mod generate;
pub mod node;
pub mod run;

use commutator::{InitFailurePolicy, RestartPolicy};

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

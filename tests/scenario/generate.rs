//! Making a [`Scenario`] from a seed: a small seeded generator, and the
//! random tree, policies, links, stops and scripts it draws.

use super::{Action, Init, Link, NodeSpec, OnViolation, Reply, Scenario, Script, SupSpec};
use commutator::{InitFailurePolicy, RestartPolicy};

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

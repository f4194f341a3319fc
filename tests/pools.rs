//! Worker pools: round-robin and least loaded, replacement, draining
//! shutdown, cancellation, and a pool across two threads.

mod common;

use common::{Clock, Log, root_on_l0, within};
use commutator::{
    Actor, Address, Context, ErrorCode, Locality, Pool, PoolStats, PoolStrategy, Request,
    RequestMsg, Response, RestartPolicy, StatsHandle, Supervisor, SupervisorConfig, System,
};
use std::sync::mpsc;
use std::time::Duration;

/// A plain job.
#[derive(Clone)]
struct Job(u32);
/// Makes a worker panic.
#[derive(Clone)]
struct Boom;

/// Work `n`, answered after `delay_ms` (0: at once) with the worker's address.
struct Work {
    n: u32,
    delay_ms: u64,
}
impl Request for Work {
    type Response = String;
}

struct Worker {
    log: Log,
}

impl Actor for Worker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, job: &Job, ctx: &mut Context<'_, Self>| {
            me.log.push(format!("{} job {}", ctx.name(), job.0));
        });
        ctx.subscribe(|_: &mut Self, _: &Boom, _: &mut Context<'_, Self>| panic!("boom"));
        ctx.subscribe(
            |me: &mut Self, q: &RequestMsg<Work>, ctx: &mut Context<'_, Self>| {
                let Work { n, delay_ms } = *q.payload();
                me.log.push(format!("{} work {n}", ctx.name()));
                let me_at = ctx.address().to_string();
                if delay_ms == 0 {
                    ctx.reply(q, me_at);
                } else {
                    let q = q.clone();
                    ctx.start_timer(
                        Duration::from_millis(delay_ms),
                        move |_: &mut Self, ctx, _| {
                            ctx.reply(&q, me_at);
                        },
                    );
                }
            },
        );
        ctx.subscribe(
            |me: &mut Self, c: &commutator::CancelRequest<Work>, ctx: &mut Context<'_, Self>| {
                me.log.push(format!("{} cancelled {}", ctx.name(), c.id()));
            },
        );
    }
}

/// Asks the pool for work on `Ask` and logs the responses.
struct Client {
    pool: Address,
    log: Log,
    timeout: Duration,
}
struct Ask(u32, u64);

impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, a: &Ask, ctx: &mut Context<'_, Self>| {
            let work = Work {
                n: a.0,
                delay_ms: a.1,
            };
            ctx.request(&me.pool, work, me.timeout);
        });
        ctx.subscribe(
            |me: &mut Self, r: &Response<Work>, _: &mut Context<'_, Self>| {
                let line = match r.result() {
                    Ok(at) => format!("{}: {}", r.request().n, at.trim_start_matches("L0/")),
                    Err(e) => format!("{}: {:?}", r.request().n, e.code()),
                };
                me.log.push(format!("client {line}"));
            },
        );
    }
}

struct Fixture {
    l: Locality,
    clock: Clock,
    pool: Address,
    client: Address,
    stats: StatsHandle<PoolStats>,
    log: Log,
}

impl Fixture {
    fn new(make: impl FnOnce(Pool<Worker>) -> Pool<Worker>) -> Self {
        let (mut l, root) = root_on_l0();
        let clock = Clock { t0: l.now() };
        let log = Log::new();
        let worker_log = log.clone();
        let pool = make(
            Pool::local(move || Worker {
                log: worker_log.clone(),
            })
            .route::<Job>()
            .route::<Boom>()
            .route_request::<Work>(),
        );
        let stats = pool.stats();
        let pool = l.spawn(&root, pool).name("pool").finish().unwrap();
        let client = Client {
            pool: pool.clone(),
            log: log.clone(),
            timeout: Duration::from_secs(1),
        };
        let client = l.spawn(&root, client).name("client").finish().unwrap();
        l.run_until_idle(clock.t0);
        Fixture {
            l,
            clock,
            pool,
            client,
            stats,
            log,
        }
    }

    fn ask(&mut self, n: u32, delay_ms: u64) {
        self.l.send(&self.client, Ask(n, delay_ms)).unwrap();
    }

    fn at(&mut self, ms: u64) -> Vec<String> {
        self.l.run_until_idle(self.clock.at(ms));
        self.log.take()
    }
}

#[test]
fn messages_and_requests_go_to_the_workers_round_robin() {
    let mut f = Fixture::new(|p| p.size(3));
    for n in 0..4 {
        f.l.send(&f.pool, Job(n)).unwrap();
    }
    for n in 4..6 {
        f.ask(n, 0);
    }
    assert_eq!(
        f.at(0),
        [
            "pool/0 job 0",
            "pool/1 job 1",
            "pool/2 job 2",
            "pool/0 job 3",
            "pool/1 work 4",
            "pool/2 work 5",
            "client 4: pool/1#5",
            "client 5: pool/2#6",
        ]
    );
    let s = f.stats.get();
    assert_eq!((s.workers, s.routed, s.in_flight), (3, 6, 0));
}

#[test]
fn least_loaded_sends_requests_to_the_worker_with_the_fewest_in_flight() {
    let order = |strategy| {
        let mut f = Fixture::new(|p| p.size(2).strategy(strategy));
        f.ask(0, 100); // pool/0 holds it until 100
        f.at(0);
        let mut lines = Vec::new();
        for n in 1..4 {
            f.ask(n, 0);
            lines.extend(f.at(1));
        }
        f.at(100);
        lines.retain(|l| l.contains("work"));
        lines
    };
    assert_eq!(
        order(PoolStrategy::RoundRobin),
        ["pool/1 work 1", "pool/0 work 2", "pool/1 work 3"]
    );
    assert_eq!(
        order(PoolStrategy::LeastLoaded),
        ["pool/1 work 1", "pool/1 work 2", "pool/1 work 3"]
    );
}

#[test]
fn a_worker_that_goes_down_is_replaced_and_its_unanswered_requests_get_an_error() {
    let mut f = Fixture::new(|p| p.size(2));
    f.ask(0, 100); // pool/0
    f.ask(1, 100); // pool/1
    f.at(0);
    f.l.send(&f.pool, Boom).unwrap(); // pool/0 panics
    let lines = f.at(1);
    assert!(
        lines.contains(&"client 0: ChildDown".to_string()),
        "{lines:?}"
    );
    let s = f.stats.get();
    assert_eq!((s.workers, s.replaced, s.failed, s.in_flight), (2, 1, 1, 1));
    for n in 2..4 {
        f.ask(n, 0);
    }
    let lines = f.at(2);
    assert_eq!(
        lines,
        [
            "pool/0 work 2",
            "pool/1 work 3",
            "client 2: pool/0#6",
            "client 3: pool/1#5"
        ],
        "the pool keeps serving, with a new pool/0"
    );
    assert_eq!(f.at(100), ["client 1: pool/1#5"]);
}

#[test]
fn a_pool_shutting_down_lets_its_workers_finish_and_answers_the_rest_with_an_error() {
    let mut f = Fixture::new(|p| p.size(1));
    f.ask(0, 0); // answered before the worker goes
    f.ask(1, 50); // still unanswered when it goes
    f.l.shutdown(&f.pool).unwrap();
    let lines = f.at(0);
    assert_eq!(
        lines,
        [
            "pool/0 work 0",
            "pool/0 work 1",
            "client 0: pool/0#4",
            "client 1: Unavailable"
        ]
    );
    f.ask(2, 0); // the pool is gone: nobody answers
    assert_eq!(f.at(1), Vec::<String>::new());
    assert_eq!(f.at(1001), ["client 2: RequestTimeout"]);
    assert_eq!(f.stats.get().failed, 1);
    assert_eq!(f.l.stats().actors, 2, "the root and the client");
}

#[test]
fn a_request_that_times_out_is_cancelled_at_the_worker_that_has_it() {
    let mut f = Fixture::new(|p| p.size(2));
    f.ask(0, 5000);
    let lines = f.at(0);
    assert_eq!(lines, ["pool/0 work 0"]);
    let lines = f.at(1000);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("pool/0 cancelled request#"),
        "{lines:?}"
    );
    assert_eq!(lines[1], "client 0: RequestTimeout");
    assert_eq!(f.stats.get().in_flight, 0);
}

#[test]
fn with_no_worker_left_the_pool_refuses_with_unavailable() {
    let mut f = Fixture::new(|p| p.size(1).restart(RestartPolicy::Never));
    f.l.send(&f.pool, Boom).unwrap();
    f.at(0);
    f.ask(0, 0);
    assert_eq!(f.at(1), ["client 0: Unavailable"]);
    let s = f.stats.get();
    assert_eq!((s.workers, s.starting, s.refused), (0, 0, 1));
}

#[test]
fn a_pool_built_with_a_registry_routes_only_to_its_workers() {
    let (mut l, root) = root_on_l0();
    let log = Log::new();
    let worker_log = log.clone();
    let pool = Pool::local(move || Worker {
        log: worker_log.clone(),
    })
    .size(2)
    .route::<Job>();
    let stats = pool.stats();
    let pool = l
        .spawn(&root, pool)
        .name("pool")
        .supervisor(SupervisorConfig::default().with_registry())
        .finish()
        .unwrap();
    l.run_until_idle(l.now());
    for n in 0..4 {
        l.send(&pool, Job(n)).unwrap();
    }
    l.run_until_idle(l.now());
    assert_eq!(
        log.take(),
        [
            "pool/0 job 0",
            "pool/1 job 1",
            "pool/0 job 2",
            "pool/1 job 3"
        ]
    );
    assert_eq!((stats.get().workers, stats.get().starting), (2, 0));
    assert_eq!(l.stats().dropped_unsubscribed, 0);
}

#[test]
fn a_pool_without_workers_fails_its_init() {
    let mut l = Locality::new();
    l.spawn_root(Pool::local(|| Worker { log: Log::new() }).size(0))
        .finish()
        .unwrap();
    l.run_until_idle(l.now());
    let reason = l.exit_reason().expect("a failed init");
    assert!(
        reason
            .chain()
            .any(|e| e.code() == ErrorCode::InvalidArgument),
        "{reason:#}"
    );
}

/// Asks `n` requests of the pool at once, then ends the program.
struct Burst {
    pool: Address,
    left: u32,
    served: std::collections::BTreeMap<String, u32>,
    out: mpsc::Sender<std::collections::BTreeMap<String, u32>>,
}

impl Actor for Burst {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, r: &Response<Work>, ctx: &mut Context<'_, Self>| {
                let at = r
                    .result()
                    .cloned()
                    .unwrap_or_else(|e| format!("{:?}", e.code()));
                let locality = at.split('/').next().unwrap_or("?").to_string();
                *me.served.entry(locality).or_default() += 1;
                me.left -= 1;
                if me.left == 0 {
                    let _ = me.out.send(std::mem::take(&mut me.served));
                    ctx.shutdown_supervisor();
                }
            },
        );
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        for n in 0..self.left {
            ctx.request(&self.pool, Work { n, delay_ms: 0 }, Duration::from_secs(30));
        }
    }
}

#[test]
fn a_pool_spread_over_two_threads_serves_from_both() {
    within(Duration::from_secs(30), || {
        let (tx, rx) = mpsc::channel();
        let l1 = std::thread::spawn(move || {
            let mut system = System::named("L1").expect("L1");
            tx.send(system.handle()).expect("handle");
            system.run()
        });
        let handle = rx.recv().expect("L1 starts");
        let mut system = System::named("L0").expect("L0");
        let root = system
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let pool = Pool::new(|| Worker { log: Log::new() })
            .size(1)
            .on(&handle, 1)
            .route_request::<Work>();
        drop(handle); // the pool keeps its own
        let pool = system.spawn(&root, pool).name("pool").finish().unwrap();
        let (out, served) = mpsc::channel();
        let burst = Burst {
            pool,
            left: 40,
            served: Default::default(),
            out,
        };
        system.spawn(&root, burst).finish().unwrap();
        system.run().expect("L0 runs");
        l1.join().expect("L1 joins").expect("L1 ends normally");
        let served = served.recv().expect("the burst ends");
        assert_eq!(
            served.into_iter().collect::<Vec<_>>(),
            [("L0".to_string(), 20), ("L1".to_string(), 20)],
            "round-robin over a worker here and one on the other thread"
        );
    });
}

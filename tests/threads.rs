//! Several loops on several threads: trees that span threads, cross-thread
//! delivery and FIFO, requests, links, registry and subscriptions across threads.
//!
//! Every test is bounded: threads are joined with a deadline, and no test
//! asserts on timing.

use commutator::*;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A `System` on a thread of its own, serving through its handle.
struct Served {
    handle: Option<LocalityHandle>,
    thread: thread::JoinHandle<Result<(), Error>>,
}

fn serve(name: &'static str) -> Served {
    let (tx, rx) = mpsc::channel();
    let thread = thread::spawn(move || {
        let mut system = System::named(name)?;
        tx.send(system.handle())
            .expect("the test waits for the handle");
        system.run()
    });
    let handle = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the thread starts");
    Served {
        handle: Some(handle),
        thread,
    }
}

impl Served {
    fn handle(&self) -> &LocalityHandle {
        self.handle.as_ref().expect("not yet dropped")
    }

    /// Drops the handle and waits (boundedly) for the thread's `run` to end.
    fn finish(mut self) -> Result<(), Error> {
        self.handle = None;
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.thread.is_finished() {
            assert!(
                Instant::now() < deadline,
                "the serving thread did not finish"
            );
            thread::yield_now();
        }
        self.thread.join().expect("no panic")
    }
}

/// Tells `to` (on the main thread) when it starts and when it goes.
struct Reporter {
    to: Address,
    label: &'static str,
}

#[derive(Debug, PartialEq)]
struct Note(String);

impl Actor for Reporter {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let here = ctx.address().to_string();
        ctx.send(&self.to, Note(format!("{} started at {here}", self.label)));
    }
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send(&self.to, Note(format!("{} down", self.label)));
    }
}

/// Collects notes; shuts the root down after `stop_after` of them.
struct Collector {
    notes: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    stop_after: usize,
}

impl Actor for Collector {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, n: &Note, ctx: &mut Context<'_, Self>| {
            me.notes.borrow_mut().push(n.0.clone());
            if me.notes.borrow().len() == me.stop_after {
                ctx.shutdown_supervisor();
            }
        });
    }
}

/// A supervisor (on the other thread) that makes a reporter child.
struct Team {
    to: Address,
}

impl Actor for Team {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let to = self.to.clone();
        if let Err(e) = ctx
            .spawn(Reporter {
                to,
                label: "member",
            })
            .name("member")
            .finish()
        {
            ctx.fail(e);
        }
    }
}

#[test]
fn a_tree_across_threads_becomes_operational_and_shuts_down() {
    let l1 = serve("L1");
    let mut l0 = System::named("L0").unwrap();
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let notes = std::rc::Rc::default();
    let collector = Collector {
        notes: std::rc::Rc::clone(&notes),
        stop_after: 2,
    };
    let collector = l0
        .spawn(&root, collector)
        .name("collector")
        .finish()
        .unwrap();
    let to = collector.clone();
    l0.spawn_on(l1.handle(), &root, move || Team { to: to.clone() })
        .name("team")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let to = collector.clone();
    l0.spawn_on(l1.handle(), &root, move || Reporter {
        to: to.clone(),
        label: "solo",
    })
    .name("solo")
    .finish()
    .unwrap();
    l0.run().unwrap();
    // Actor numbers on L1 depend on how its inbox batches arrive: drop them.
    let mut seen: Vec<String> = notes
        .borrow()
        .iter()
        .map(|n| n.split('#').next().unwrap().to_string())
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        ["member started at L1/member", "solo started at L1/solo"]
    );
    assert_eq!(l1.finish(), Ok(()));
}

/// A log that threads share.
#[derive(Clone, Default)]
struct SharedLog(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl SharedLog {
    fn push(&self, line: impl Into<String>) {
        self.0.lock().unwrap().push(line.into());
    }
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Fails as soon as it starts; logs each instance.
struct Crasher {
    log: SharedLog,
}

impl Actor for Crasher {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log.push(format!(
            "crasher started on {}",
            ctx.address().to_string().split('/').next().unwrap()
        ));
        ctx.fail(Error::failure("crash"));
    }
}

/// A supervisor on the other thread whose crasher escalates.
struct CrashTeam {
    log: SharedLog,
}

impl Actor for CrashTeam {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let crasher = Crasher {
            log: self.log.clone(),
        };
        if let Err(e) = ctx
            .spawn(crasher)
            .name("crasher")
            .escalate_failure()
            .finish()
        {
            ctx.fail(e);
        }
    }
}

/// Ends the tree with an error if a test has not finished in a minute.
struct Watchdog;

impl Actor for Watchdog {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::from_secs(60), |_, ctx, _| {
            ctx.fail(Error::failure("watchdog: test stuck"))
        });
    }
}

fn l0_root() -> (System, Address) {
    let mut l0 = System::named("L0").unwrap();
    let config = SupervisorConfig::default().with_registry();
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(config)
        .finish()
        .unwrap();
    l0.spawn(&root, Watchdog)
        .name("watchdog")
        .escalate_failure()
        .finish()
        .unwrap();
    (l0, root)
}

#[test]
fn a_failure_escalates_across_threads_to_the_root() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    let team_log = log.clone();
    l0.spawn_on(l1.handle(), &root, move || CrashTeam {
        log: team_log.clone(),
    })
    .name("team")
    .supervisor(SupervisorConfig::default())
    .escalate_failure()
    .finish()
    .unwrap();
    let reason = l0.run().unwrap_err();
    assert_eq!(
        format!("{reason:#}"),
        "failure escalation (L0/root#1)\n  <- failure escalation (L1/team#1)\n  <- actor failure (crash)"
    );
    assert_eq!(log.lines(), ["crasher started on L1"]);
    assert_eq!(l1.finish(), Ok(()));
}

#[test]
fn a_child_on_another_thread_is_restarted_there() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    let crasher_log = log.clone();
    // Two restarts allowed; then the supervisor gives up and, escalating, ends the tree.
    l0.spawn_on(l1.handle(), &root, move || Crasher {
        log: crasher_log.clone(),
    })
    .name("crasher")
    .restart(RestartPolicy::Always)
    .restart_limit(2, Duration::from_secs(60))
    .escalate_failure()
    .finish()
    .unwrap();
    let reason = l0.run().unwrap_err();
    assert_eq!(log.lines(), ["crasher started on L1"; 3]);
    assert_eq!(reason.code(), ErrorCode::FailureEscalation);
    assert!(
        format!("{reason:#}").contains("restart limit reached (L1/crasher#3: 2 restarts in 60s)"),
        "{reason:#}"
    );
    assert_eq!(l1.finish(), Ok(()));
}

struct Add(u64);
impl Request for Add {
    type Response = u64;
}

/// Answers `Add(n)` with `n + 1`, except `Add(0)`, which it never answers.
struct Adder;

impl Actor for Adder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Add>, ctx: &mut Context<'_, Self>| {
                if q.payload().0 > 0 {
                    ctx.reply(q, q.payload().0 + 1);
                }
            },
        );
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        LINK_LOG.with(|log| {
            log.borrow()
                .as_ref()
                .map(|l: &SharedLog| l.push("server down"))
        });
    }
}

thread_local! {
    static LINK_LOG: std::cell::RefCell<Option<SharedLog>> = const { std::cell::RefCell::new(None) };
}

/// Finds "adder" (waiting for it), links to it, asks two questions.
struct Asker {
    log: SharedLog,
    adder: Option<Address>,
    answers: usize,
}

impl Actor for Asker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_sum);
        ctx.discover("adder")
            .wait()
            .link()
            .then(|me: &mut Self, adder, _| me.adder = Some(adder.clone()));
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let adder = self.adder.clone().expect("discovered during init");
        self.log.push(format!("found {adder}"));
        ctx.request(&adder, Add(41), Duration::from_secs(30));
        ctx.request(&adder, Add(0), Duration::from_millis(20));
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.log.push("client down");
    }
}

impl Asker {
    fn on_sum(&mut self, r: &Response<Add>, ctx: &mut Context<'_, Self>) {
        self.log.push(format!(
            "{} -> {:?}",
            r.request().0,
            r.result().map_err(Error::code)
        ));
        self.answers += 1;
        if self.answers == 2 {
            ctx.shutdown_supervisor();
        }
    }
}

#[test]
fn registry_requests_timeouts_and_links_work_across_threads() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    let server_log = log.clone();
    // The server lives on L1, registers in L0's registry, and logs its end there.
    l0.spawn_on(l1.handle(), &root, move || {
        let log = server_log.clone();
        LINK_LOG.with(|l| *l.borrow_mut() = Some(log));
        Adder
    })
    .name("adder")
    .register_as("adder")
    .finish()
    .unwrap();
    l0.spawn(
        &root,
        Asker {
            log: log.clone(),
            adder: None,
            answers: 0,
        },
    )
    .name("asker")
    .finish()
    .unwrap();
    l0.run().unwrap();
    assert_eq!(l1.finish(), Ok(()));
    let lines = log.lines();
    assert_eq!(lines[0], "found L1/adder#1");
    assert_eq!(lines[1..3], ["41 -> Ok(42)", "0 -> Err(RequestTimeout)"]);
    assert_eq!(
        lines[3..],
        ["client down", "server down"],
        "the linked server outlives its client"
    );
}

/// Publishes `k` ticks on its own address for a `Burst(k)` request, and
/// answers only after they were delivered (and so forwarded).
struct Publisher {
    next: u64,
}

#[derive(Clone)]
struct Tick(u64);
struct Burst(u64);
impl Request for Burst {
    type Response = ();
}
struct Ack(RequestMsg<Burst>);

impl Actor for Publisher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, q: &RequestMsg<Burst>, ctx: &mut Context<'_, Self>| {
                let here = ctx.address().clone();
                for _ in 0..q.payload().0 {
                    ctx.send(&here, Tick(me.next));
                    me.next += 1;
                }
                ctx.send(&here, Ack(q.clone())); // queued behind the ticks
            },
        );
        ctx.subscribe(|_: &mut Self, a: &Ack, ctx: &mut Context<'_, Self>| ctx.reply(&a.0, ()));
    }
}

/// Hears the publisher's ticks from the other thread; after a burst of ten it
/// unsubscribes, asks for five more, which must not arrive, then ends the tree.
#[derive(Default)]
struct Listener {
    log: SharedLog,
    publisher: Option<Address>,
    ticks: Vec<u64>,
    sub: Option<SubscriptionId>,
    bursts: u32,
}

impl Actor for Listener {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_burst);
        ctx.discover("publisher")
            .wait()
            .then(|me: &mut Self, publisher, _| me.publisher = Some(publisher.clone()));
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let publisher = self.publisher.clone().expect("discovered");
        self.sub = Some(ctx.subscribe_external(&publisher, Self::on_tick).unwrap());
        ctx.request(&publisher, Burst(10), Duration::from_secs(30)); // after the subscription
    }
}

impl Listener {
    fn on_tick(&mut self, tick: &Tick, _: &mut Context<'_, Self>) {
        self.ticks.push(tick.0);
    }
    fn on_burst(&mut self, r: &Response<Burst>, ctx: &mut Context<'_, Self>) {
        assert!(r.result().is_ok());
        self.bursts += 1;
        self.log
            .push(format!("after burst {}: {:?}", self.bursts, self.ticks));
        if self.bursts == 1 {
            ctx.unsubscribe(self.sub.take().unwrap()).unwrap();
            let publisher = self.publisher.clone().unwrap();
            ctx.request(&publisher, Burst(5), Duration::from_secs(30));
        } else {
            ctx.shutdown_supervisor();
        }
    }
}

#[test]
fn an_external_subscription_forwards_in_order_until_unsubscribed() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    l0.spawn_on(l1.handle(), &root, || Publisher { next: 0 })
        .name("publisher")
        .register_as("publisher")
        .finish()
        .unwrap();
    l0.spawn(
        &root,
        Listener {
            log: log.clone(),
            ..Listener::default()
        },
    )
    .name("listener")
    .finish()
    .unwrap();
    l0.run().unwrap();
    assert_eq!(l1.finish(), Ok(()));
    let all: Vec<u64> = (0..10).collect();
    assert_eq!(
        log.lines(),
        [
            format!("after burst 1: {all:?}"),
            format!("after burst 2: {all:?}")
        ]
    );
}

/// One numbered message from one sender.
struct Seq {
    sender: usize,
    n: u64,
}

/// Checks per-sender order; ends the tree when every message has come.
struct Counter {
    next: Vec<u64>,
    expected: u64,
    got: u64,
    log: SharedLog,
}

impl Actor for Counter {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, s: &Seq, ctx: &mut Context<'_, Self>| {
            if me.next[s.sender] != s.n {
                me.log.push(format!(
                    "sender {} sent {} after {}",
                    s.sender, s.n, me.next[s.sender]
                ));
            }
            me.next[s.sender] = s.n + 1;
            me.got += 1;
            if me.got == me.expected {
                ctx.shutdown_supervisor();
            }
        });
    }
}

/// An actor that sends `count` numbered messages to `to`, in bursts.
struct Sender {
    id: usize,
    to: Address,
    count: u64,
    sent: u64,
}

struct More;

impl Actor for Sender {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, _: &More, ctx: &mut Context<'_, Self>| me.burst(ctx));
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.burst(ctx);
    }
}

impl Sender {
    /// Sends the next thousand; when the receiver's inbox is full, keeps
    /// the message and tries again a little later (backpressure).
    fn burst(&mut self, ctx: &mut Context<'_, Self>) {
        let end = (self.sent + 1000).min(self.count);
        while self.sent < end {
            let seq = Seq {
                sender: self.id,
                n: self.sent,
            };
            match ctx.try_send(&self.to, seq) {
                Ok(()) => self.sent += 1,
                Err(e) => {
                    assert_eq!(e.error.code(), ErrorCode::InboxFull);
                    let retry = |me: &mut Self, ctx: &mut Context<'_, Self>, _| me.burst(ctx);
                    ctx.start_timer(Duration::from_millis(1), retry);
                    return;
                }
            }
        }
        if self.sent < self.count {
            let me = ctx.address().clone();
            ctx.send(&me, More);
        }
    }
}

#[test]
fn many_senders_on_many_threads_keep_their_order_and_lose_nothing() {
    // 100,000 messages in all: more than an inbox holds (65,536).
    const PER_SENDER: u64 = 20_000;
    const THREADS: usize = 3;
    const ACTORS: usize = 2;
    let (l1, l2) = (serve("L1"), serve("L2"));
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    let total = PER_SENDER * (THREADS + ACTORS) as u64;
    let counter = Counter {
        next: vec![0; THREADS + ACTORS],
        expected: total,
        got: 0,
        log: log.clone(),
    };
    let counter = l0.spawn(&root, counter).name("counter").finish().unwrap();
    for (i, l) in [&l1, &l2].into_iter().enumerate() {
        let to = counter.clone();
        let id = THREADS + i;
        l0.spawn_on(l.handle(), &root, move || Sender {
            id,
            to: to.clone(),
            count: PER_SENDER,
            sent: 0,
        })
        .finish()
        .unwrap();
    }
    let plain: Vec<_> = (0..THREADS)
        .map(|sender| {
            let to = counter.clone();
            thread::spawn(move || {
                // More than the inbox holds: wait for room when it is full.
                for n in 0..PER_SENDER {
                    to.send_blocking(Seq { sender, n })
                        .map_err(|e| e.error)
                        .unwrap();
                }
            })
        })
        .collect();
    l0.run().unwrap();
    for t in plain {
        t.join().unwrap();
    }
    assert_eq!(log.lines(), Vec::<String>::new(), "no message out of order");
    assert_eq!((l1.finish(), l2.finish()), (Ok(()), Ok(())));
}

/// Holds a handle on its own locality until it is dropped.
struct HoldsItsLocality {
    _handle: LocalityHandle,
}

impl Actor for HoldsItsLocality {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.shutdown();
    }
}

#[test]
fn a_locality_finishes_when_its_last_handle_is_dropped_during_a_dispatch() {
    // The root holds the locality's only handle: it is dropped with the root,
    // inside the dispatch that shuts the root down.
    let mut l0 = Locality::named("L0");
    let handle = l0.handle();
    l0.spawn_root(HoldsItsLocality { _handle: handle })
        .finish()
        .unwrap();
    let now = l0.now();
    l0.run_until_idle(now);
    assert_eq!(l0.stats().actors, 0);
    assert!(l0.is_finished(), "nothing is left that could use it");
    assert!(!l0.has_pending());
}

#[test]
fn a_child_spawned_on_another_locality_is_made_even_if_the_handle_is_dropped_at_once() {
    // The spawn request is in L1's inbox when the last handle on L1 goes.
    let mut l0 = Locality::named("L0");
    let mut l1 = Locality::named("L1");
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let handle = l1.handle();
    l0.spawn_on(&handle, &root, || HoldsNothing)
        .name("remote")
        .finish()
        .unwrap();
    drop(handle);
    let now = l0.now();
    for _ in 0..4 {
        l0.run_until_idle(now);
        l1.run_until_idle(now);
    }
    assert_eq!(l1.stats().actors, 1, "the child was made on L1");
    assert_eq!(l0.state_of(&root), Some(ActorState::Operational));
    l0.shutdown(&root).unwrap();
    for _ in 0..4 {
        l0.run_until_idle(now);
        l1.run_until_idle(now);
    }
    assert!(l0.is_finished() && l1.is_finished());
}

struct HoldsNothing;

impl Actor for HoldsNothing {}

/// Publishes its address for the test.
struct Target {
    me: std::sync::Arc<std::sync::Mutex<Option<Address>>>,
}

impl Actor for Target {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        *self.me.lock().unwrap() = Some(ctx.address().clone());
    }
}

#[derive(Clone)]
struct Heard;

/// Subscribes to `Heard` on an address of another locality.
struct Subscriber {
    to: Address,
}

impl Actor for Subscriber {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let to = self.to.clone();
        ctx.subscribe_external(&to, |_: &mut Self, _: &Heard, _| {})
            .unwrap();
    }
}

#[test]
fn a_locality_does_not_finish_while_messages_to_it_wait_in_its_inbox() {
    // L1's last actor is gone and its last handle goes while a subscriber's
    // unsubscription waits in L1's inbox: L1 must answer it before it
    // finishes, or the subscriber's shutdown waits forever.
    let mut l0 = Locality::named("L0");
    let mut l1 = Locality::named("L1");
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let handle = l1.handle();
    let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
    let me = slot.clone();
    l0.spawn_on(&handle, &root, move || Target { me: me.clone() })
        .name("target")
        .finish()
        .unwrap();
    let now = l0.now();
    let settle = |l0: &mut Locality, l1: &mut Locality| {
        for _ in 0..4 {
            l0.run_until_idle(now);
            l1.run_until_idle(now);
        }
    };
    settle(&mut l0, &mut l1);
    let target = slot.lock().unwrap().clone().expect("made on L1");
    let subscriber = l0
        .spawn(&root, Subscriber { to: target.clone() })
        .name("subscriber")
        .finish()
        .unwrap();
    settle(&mut l0, &mut l1);
    assert_eq!(l1.stats().subscriptions, 1, "the forwarder is installed");

    l1.shutdown(&target).unwrap();
    settle(&mut l0, &mut l1);
    assert_eq!(l1.stats().actors, 0);
    assert!(!l1.is_finished(), "a handle is left");
    l0.shutdown(&subscriber).unwrap();
    l0.run_until_idle(now); // the unsubscription is posted to L1
    drop(handle);
    settle(&mut l0, &mut l1);

    assert_eq!(l0.state_of(&subscriber), None, "its shutdown ended");
    assert!(l1.is_finished());
}

/// Holds its shutdown with a resource it never releases.
struct Stuck;

impl Actor for Stuck {
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.acquire_resource(0);
    }
}

#[test]
fn a_locality_stopped_by_a_contract_violation_releases_its_foreign_supervisor() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    l0.spawn_on(l1.handle(), &root, || Stuck)
        .name("stuck")
        .shutdown_timeout(Duration::from_millis(20))
        .finish()
        .unwrap();
    // The root starts only once every child (the one on L1 too) has initialized.
    l0.spawn(&root, Quitter).finish().unwrap();
    l0.run()
        .expect("L0 ends: its child on L1 was abandoned, not waited for forever");
    let reason = l1.finish().unwrap_err();
    assert_eq!(reason.code(), ErrorCode::ShutdownTimeout);
}

/// Shuts the tree down as soon as it is operational.
struct Quitter;

impl Actor for Quitter {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.shutdown_supervisor();
    }
}

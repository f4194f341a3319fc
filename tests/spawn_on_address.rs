//! `spawn_on(..).finish()` returns the child's address at once (issue 15,
//! item 10): reserved on the other locality, so messages sent to it right
//! away, by the spawner or by anyone it hands the address to, reach the
//! child once it is made, in order; if the child is not made, they are
//! dead letters and a watch on it answers "gone"; a finished locality is a
//! clear error.

mod common;

use common::{Clock, Log, root_on, short, within};
use commutator::prelude::*;
use commutator::{DeadLetter, DeadLetterReason};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// `n` from sender `from` (0: the spawner, 1: a third party).
#[derive(Debug)]
struct Num(usize, u32);

/// Logs every `Num` it hears (into a log shared across threads).
struct Counter(Arc<Mutex<Vec<String>>>);
impl Actor for Counter {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, n: &Num, _: &mut Context<'_, Self>| {
            me.0.lock().unwrap().push(format!("{}:{}", n.0, n.1));
        });
    }
}

struct Idle;
impl Actor for Idle {}

/// Steps every locality until none has work left.
fn settle(clock: &Clock, localities: &mut [&mut Locality]) {
    for _ in 0..20 {
        for l in localities.iter_mut() {
            l.run_until_idle(clock.at(0));
        }
    }
}

#[test]
fn messages_sent_at_once_to_the_address_reach_the_child_in_order() {
    let clock = Clock::new();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let (mut l0, root) = root_on("L0");
    let mut l1 = Locality::named("L1");
    let handle = l1.handle();
    let log = heard.clone();
    let far = l0
        .spawn_on(&handle, &root, move || Counter(log.clone()))
        .name("far")
        .finish()
        .unwrap();
    drop(handle);
    assert_eq!(far.to_string(), "L1/far#1");
    assert_eq!(l1.state_of(&far), None, "not made yet");
    // From the spawner's loop and from another thread, before L1 ran.
    l0.send(&far, Num(0, 0)).unwrap();
    let to = far.clone();
    std::thread::spawn(move || to.send(Num(1, 0)).unwrap())
        .join()
        .unwrap();
    l0.send(&far, Num(0, 1)).unwrap();
    far.send(Num(1, 1)).unwrap();
    settle(&clock, &mut [&mut l0, &mut l1]);
    assert_eq!(l1.state_of(&far), Some(ActorState::Operational));
    assert_eq!(*heard.lock().unwrap(), ["0:0", "1:0", "0:1", "1:1"]);
    assert_eq!(l1.stats().dropped_stale, 0);
}

/// Spawns a `Counter` elsewhere from a handler, sends to it at once, and
/// hands the address to another actor, which sends too.
struct Spawner {
    there: LocalityHandle,
    friend: Address,
    log: Arc<Mutex<Vec<String>>>,
}

/// The address of a child to send to.
struct SendTo(Address);

impl Actor for Spawner {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let log = self.log.clone();
        let child = ctx
            .spawn_on(&self.there, move || Counter(log.clone()))
            .name("child")
            .finish()
            .unwrap();
        ctx.send(&self.friend, SendTo(child.clone()));
        for n in 0..3 {
            ctx.send(&child, Num(0, n));
        }
    }
}

/// Sends three `Num`s from "the third party" to each address it is given.
struct Friend;
impl Actor for Friend {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, to: &SendTo, ctx: &mut Context<'_, Self>| {
            for n in 0..3 {
                ctx.send(&to.0, Num(1, n));
            }
        });
    }
}

#[test]
fn an_actor_sends_to_the_address_at_once_and_so_does_one_it_handed_it_to() {
    let clock = Clock::new();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let (mut l0, root0) = root_on("L0");
    let (mut l2, root2) = root_on("L2");
    let mut l1 = Locality::named("L1");
    let friend = l2.spawn(&root2, Friend).finish().unwrap();
    let spawner = Spawner {
        there: l1.handle(),
        friend,
        log: heard.clone(),
    };
    l0.spawn(&root0, spawner)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    settle(&clock, &mut [&mut l0, &mut l2, &mut l1]);
    let mut heard = heard.lock().unwrap().clone();
    // Per sender in order; nothing lost.
    let from = |s: &str| heard.iter().filter(|h| h.starts_with(s)).count();
    assert_eq!((from("0:"), from("1:")), (3, 3), "{heard:?}");
    heard.sort(); // the two senders interleave as they may
    assert_eq!(heard, ["0:0", "0:1", "0:2", "1:0", "1:1", "1:2"]);
}

/// Logs `Watched` events and dead letters on its own locality.
struct Observer {
    watch: Option<Address>,
    log: Log,
}

impl Actor for Observer {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let dead = ctx.dead_letters();
        ctx.subscribe_on(
            &dead,
            |me: &mut Self, d: &DeadLetter, _: &mut Context<'_, Self>| {
                let n = d.message::<Num>().map(|n| n.1);
                let to = d.destination().to_string();
                me.log.push(format!("dead {n:?} to {to}: {}", d.reason()));
                assert_eq!(d.reason(), DeadLetterReason::StaleAddress);
            },
        )
        .unwrap();
        ctx.subscribe(|me: &mut Self, w: &Watched, _: &mut Context<'_, Self>| {
            me.log.push(format!("{} {}", short(&w.address), w.event));
        });
        if let Some(target) = self.watch.take() {
            ctx.watch(&target).unwrap();
        }
    }
}

#[test]
fn a_refused_spawn_makes_its_address_dead_letters_and_a_watch_answers_gone() {
    let clock = Clock::new();
    let (mut l0, root0) = root_on("L0");
    let (mut l1, root1) = root_on("L1");
    let log = Log::new();
    l1.spawn(
        &root1,
        Observer {
            watch: None,
            log: log.clone(),
        },
    )
    .finish()
    .unwrap();
    settle(&clock, &mut [&mut l0, &mut l1]);
    let handle = l1.handle();
    let far = l0
        .spawn_on(&handle, &root0, || -> Idle { panic!("no memory") })
        .name("far")
        .finish()
        .unwrap();
    drop(handle);
    l0.send(&far, Num(0, 7)).unwrap();
    far.send(Num(1, 8)).unwrap();
    // A watch asked at once, from the spawner's locality.
    l0.spawn(
        &root0,
        Observer {
            watch: Some(far.clone()),
            log: log.clone(),
        },
    )
    .finish()
    .unwrap();
    settle(&clock, &mut [&mut l0, &mut l1]);
    assert_eq!(l1.state_of(&far), None);
    let mut lines = log.lines();
    lines.sort();
    assert_eq!(
        lines,
        [
            "dead Some(7) to L1/far#3: stale address",
            "dead Some(8) to L1/far#3: stale address",
            "far#3 gone",
        ]
    );
    assert_eq!(l1.stats().dropped_stale, 2);
    // The root on L0 is unharmed: the failed spawn went alone.
    assert_eq!(l0.state_of(&root0), Some(ActorState::Operational));
}

/// Fails its init.
struct Failing;
impl Actor for Failing {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.fail(Error::new(ErrorCode::Failure).with_context("cannot start"));
    }
}

#[test]
fn a_child_that_fails_its_init_leaves_an_address_whose_messages_are_dead_letters() {
    let clock = Clock::new();
    let (mut l0, root0) = root_on("L0");
    let (mut l1, root1) = root_on("L1");
    let log = Log::new();
    l1.spawn(
        &root1,
        Observer {
            watch: None,
            log: log.clone(),
        },
    )
    .finish()
    .unwrap();
    settle(&clock, &mut [&mut l0, &mut l1]);
    let handle = l1.handle();
    let far = l0
        .spawn_on(&handle, &root0, || Failing)
        .name("far")
        .finish()
        .unwrap();
    drop(handle);
    settle(&clock, &mut [&mut l0, &mut l1]);
    assert_eq!(l1.state_of(&far), None, "gone after its failed init");
    l0.send(&far, Num(0, 1)).unwrap();
    settle(&clock, &mut [&mut l0, &mut l1]);
    assert_eq!(log.lines(), ["dead Some(1) to L1/far#3: stale address"]);
}

#[test]
fn spawn_on_a_finished_locality_is_an_error_and_reserves_nothing() {
    let clock = Clock::new();
    let (mut l0, root) = root_on("L0");
    let mut l1 = Locality::named("L1");
    drop(l1.handle()); // served, and no handle left: it finishes
    l1.run_until_idle(clock.at(0));
    assert!(l1.is_finished());
    let h1 = l1.handle();
    for _ in 0..10_000 {
        let error = l0.spawn_on(&h1, &root, || Idle).finish().unwrap_err();
        assert_eq!(error.code(), ErrorCode::LocalityFinished);
    }
    // Nothing was recorded under the supervisor: it finishes at once.
    l0.shutdown(&root).unwrap();
    l0.run_until_idle(clock.at(0));
    assert!(l0.is_finished());
}

#[test]
fn a_spawn_on_this_very_locality_is_made_at_once() {
    let clock = Clock::new();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let (mut l0, root) = root_on("L0");
    let handle = l0.handle();
    let log = heard.clone();
    let child = l0
        .spawn_on(&handle, &root, move || Counter(log.clone()))
        .name("here")
        .finish()
        .unwrap();
    drop(handle);
    assert_eq!(l0.state_of(&child), Some(ActorState::New));
    l0.send(&child, Num(0, 1)).unwrap();
    l0.run_until_idle(clock.at(0));
    assert_eq!(*heard.lock().unwrap(), ["0:1"]);
    assert_eq!(l0.state_of(&child), Some(ActorState::Operational));
}

// ---------------- threads ----------------

/// Spawns `left` children on another thread's locality, one per timer
/// tick; sends `PER` numbers to each at once, and hands each address to a
/// third thread, which sends `PER` numbers too. Each child reports in
/// when it heard all of them, in order.
struct Boss {
    there: LocalityHandle,
    third: mpsc::Sender<Address>,
    left: usize,
    waiting: usize,
    problems: Arc<Mutex<Vec<String>>>,
}

const PER: u32 = 20;

/// A child heard everything from both senders (or what went wrong).
struct Report(Result<(), String>);

/// Checks each sender's order; reports once it heard `PER` from both.
struct Checked {
    boss: Address,
    next: [u32; 2],
}

impl Actor for Checked {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, n: &Num, ctx: &mut Context<'_, Self>| {
            if me.next[n.0] != n.1 {
                let what = format!("from {}: #{} when #{} was due", n.0, n.1, me.next[n.0]);
                ctx.send(&me.boss, Report(Err(what)));
            }
            me.next[n.0] = n.1 + 1;
            if me.next == [PER, PER] {
                ctx.send(&me.boss, Report(Ok(())));
            }
        });
    }
}

impl Boss {
    fn spawn_one(&mut self, ctx: &mut Context<'_, Self>) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let boss = ctx.address().clone();
        let child = ctx
            .spawn_on(&self.there, move || Checked {
                boss: boss.clone(),
                next: [0, 0],
            })
            .finish()
            .unwrap();
        self.third.send(child.clone()).unwrap();
        for n in 0..PER {
            ctx.send(&child, Num(0, n));
        }
        ctx.start_timer(Duration::from_micros(50), |me: &mut Self, ctx, _| {
            me.spawn_one(ctx)
        });
    }
}

impl Actor for Boss {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, r: &Report, ctx: &mut Context<'_, Self>| {
            if let Err(problem) = &r.0 {
                me.problems.lock().unwrap().push(problem.clone());
            }
            me.waiting -= 1;
            if me.waiting == 0 {
                ctx.shutdown();
            }
        });
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.spawn_one(ctx);
    }
}

#[test]
fn children_made_on_another_thread_hear_the_spawner_and_a_third_thread_at_once() {
    within(Duration::from_secs(60), || {
        const CHILDREN: usize = 200;
        let (handle_tx, handle_rx) = mpsc::channel();
        let serving = std::thread::spawn(move || {
            let mut system = System::named("T1").unwrap();
            handle_tx.send(system.handle()).unwrap();
            system.run()
        });
        let there = handle_rx.recv().unwrap();
        let (third, addresses) = mpsc::channel::<Address>();
        let sender = std::thread::spawn(move || {
            for child in addresses {
                for n in 0..PER {
                    child.send_blocking(Num(1, n)).unwrap();
                }
            }
        });
        let problems = Arc::new(Mutex::new(Vec::new()));
        let mut system = System::named("T0").unwrap();
        system
            .spawn_root(Boss {
                there: there.clone(),
                third,
                left: CHILDREN,
                waiting: CHILDREN,
                problems: problems.clone(),
            })
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        system.run().unwrap();
        drop(there);
        serving.join().unwrap().unwrap();
        sender.join().unwrap();
        assert_eq!(*problems.lock().unwrap(), Vec::<String>::new());
    });
}

/// Counts the `Num`s it hears.
struct Tally(Arc<std::sync::atomic::AtomicUsize>);
impl Actor for Tally {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, _: &Num, _: &mut Context<'_, Self>| {
            me.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
    }
}

/// The spawn request and a message to the child go on two lanes of the
/// other locality's inbox, nanoseconds apart, while that locality drains
/// it on its own thread: the message is never taken before the request
/// (the drain takes the framework lane again after the user lane).
#[test]
fn a_message_posted_right_after_the_spawn_request_never_overtakes_it() {
    within(Duration::from_secs(60), || {
        use std::sync::atomic::{AtomicUsize, Ordering};
        const CHILDREN: usize = 3000;
        let (handle_tx, handle_rx) = mpsc::channel();
        let serving = std::thread::spawn(move || {
            let mut system = System::named("T1").unwrap();
            handle_tx.send(system.handle()).unwrap();
            system.run()
        });
        let there = handle_rx.recv().unwrap();
        let heard = Arc::new(AtomicUsize::new(0));
        let (mut l0, root) = root_on("L0");
        let now = l0.now();
        l0.run_until_idle(now);
        for _ in 0..CHILDREN {
            let tally = heard.clone();
            let child = l0
                .spawn_on(&there, &root, move || Tally(tally.clone()))
                .finish()
                .unwrap();
            child.send(Num(0, 0)).unwrap();
        }
        while heard.load(Ordering::SeqCst) < CHILDREN {
            let now = std::time::Instant::now();
            l0.run_until_idle(now);
            std::thread::sleep(Duration::from_millis(1));
        }
        l0.shutdown(&root).unwrap();
        while !l0.is_finished() {
            let now = std::time::Instant::now();
            l0.run_until_idle(now);
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(there);
        serving.join().unwrap().unwrap();
    });
}

#[test]
fn a_refused_spawn_is_heard_by_the_supervisors_hooks_at_the_address_it_returned() {
    let clock = Clock::new();
    let log = Log::new();
    let mut l0 = Locality::named("L0");
    let boss = l0
        .spawn_root(common::Boss::new("boss", &log))
        .name("boss")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let mut l1 = Locality::named("L1");
    let handle = l1.handle();
    settle(&clock, &mut [&mut l0, &mut l1]);
    let far = l0
        .spawn_on(&handle, &boss, || -> Idle { panic!("no memory") })
        .name("far")
        .finish()
        .unwrap();
    drop(handle);
    settle(&clock, &mut [&mut l0, &mut l1]);
    let far = short(&far);
    let lines = log.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("boss child init {far}: ")) && l.contains("no memory")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("boss child down {far}: "))),
        "{lines:#?}"
    );
}

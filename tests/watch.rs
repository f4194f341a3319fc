//! Watching another actor's lifecycle (issue 15, item 1): every step, on
//! this locality, on another one, on another thread; "gone" at once for an
//! address that is gone; order kept with the actor's own messages; unwatch.

mod common;

use common::{Clock, Log, Scripted, root_on, root_on_l0, short};
use commutator::prelude::*;
use std::sync::mpsc;
use std::time::Duration;

/// Watches its targets in `init_start` and logs every event it hears, and
/// every `Note` (a message from a watched actor).
struct Watcher {
    targets: Vec<Address>,
    log: Log,
    ids: Vec<WatchId>,
}

struct Note(&'static str);
/// Asks the watcher to unwatch everything.
struct Unwatch;

fn event(e: &LifecycleEvent) -> String {
    match e {
        LifecycleEvent::Initialized => "initialized".into(),
        LifecycleEvent::Started => "started".into(),
        LifecycleEvent::ShuttingDown(r) => format!("shutting down ({r})"),
        LifecycleEvent::ShutDown(r) => format!("shut down ({r:#})"),
        LifecycleEvent::Gone => "gone".into(),
        _ => format!("{e:?}"),
    }
}

impl Watcher {
    fn new(targets: &[&Address], log: &Log) -> Watcher {
        Watcher {
            targets: targets.iter().map(|&a| a.clone()).collect(),
            log: log.clone(),
            ids: Vec::new(),
        }
    }
}

impl Actor for Watcher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, w: &Watched, _: &mut Context<'_, Self>| {
            assert!(me.ids.contains(&w.id), "an event of a watch of mine");
            me.log
                .push(format!("{} {}", short(&w.address), event(&w.event)));
        });
        ctx.subscribe(|me: &mut Self, n: &Note, _: &mut Context<'_, Self>| {
            me.log.push(format!("note {}", n.0));
        });
        ctx.subscribe(|me: &mut Self, _: &Unwatch, ctx: &mut Context<'_, Self>| {
            for id in std::mem::take(&mut me.ids) {
                let was = ctx.unwatch(id);
                me.log.push(format!("unwatch {was}"));
            }
        });
        for target in &self.targets {
            self.ids.push(ctx.watch(target).unwrap());
        }
    }
}

/// A supervisor that spawns a child in its `init_start` and watches it:
/// it hears every step from NEW on.
struct Parent(Log);
impl Actor for Parent {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, w: &Watched, _: &mut Context<'_, Self>| {
            me.0.push(format!("{} {}", short(&w.address), event(&w.event)));
        });
        let child = Scripted::new("c", &Log::new()).on_start(|_, ctx| ctx.shutdown());
        let child = ctx.spawn(child).name("child").finish().unwrap();
        ctx.watch(&child).unwrap();
    }
}

#[test]
fn a_watcher_hears_every_step_of_an_actor_on_its_locality() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    l.spawn(&root, Parent(log.clone()))
        .name("parent")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(
        log.lines(),
        [
            "child#3 initialized",
            "child#3 started",
            "child#3 shutting down (normal shutdown)",
            "child#3 shut down (normal shutdown)",
        ]
    );
}

#[test]
fn a_watch_starts_from_where_the_actor_is() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let worker = l
        .spawn(&root, Scripted::new("w", &Log::new()))
        .name("worker")
        .finish()
        .unwrap();
    l.spawn(&root, Watcher::new(&[&worker], &log))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    // The worker had initialized when the watcher's init began.
    assert_eq!(log.lines(), ["worker#2 started"]);
    l.shutdown(&worker).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        log.take()[1..],
        [
            "worker#2 shutting down (normal shutdown)",
            "worker#2 shut down (normal shutdown)"
        ]
    );
    assert_eq!(l.stats().dropped_stale, 0);
}

#[test]
fn a_watch_on_an_address_that_is_gone_answers_at_once_with_gone() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l0, root0) = root_on("L0");
    let (mut l1, root1) = root_on("L1");
    let here = l0
        .spawn(&root0, Scripted::new("a", &Log::new()))
        .name("here")
        .finish()
        .unwrap();
    let there = l1
        .spawn(&root1, Scripted::new("b", &Log::new()))
        .name("there")
        .finish()
        .unwrap();
    l0.run_until_idle(clock.at(0));
    l1.run_until_idle(clock.at(0));
    l0.shutdown(&here).unwrap();
    l1.shutdown(&there).unwrap();
    l0.run_until_idle(clock.at(1));
    l1.run_until_idle(clock.at(1));
    let dead = l0.dead_letters(); // owned by no actor: nothing to watch either
    l0.spawn(&root0, Watcher::new(&[&here, &there, &dead], &log))
        .finish()
        .unwrap();
    l0.run_until_idle(clock.at(2));
    assert_eq!(
        log.lines(),
        ["here#2 gone", "dead-letters#0 gone"],
        "at once here"
    );
    l1.run_until_idle(clock.at(2));
    l0.run_until_idle(clock.at(2));
    assert_eq!(
        log.lines()[2..],
        ["there#2 gone"],
        "asked and answered there"
    );
}

#[test]
fn a_watcher_hears_an_actor_on_another_locality_with_its_failure() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l0, root0) = root_on("L0");
    let (mut l1, root1) = root_on("L1");
    let worker =
        Scripted::new("w", &Log::new()).on_start(|_, ctx| ctx.fail(Error::failure("disk full")));
    let worker = l1.spawn(&root1, worker).name("worker").finish().unwrap();
    l0.spawn(&root0, Watcher::new(&[&worker], &log))
        .finish()
        .unwrap();
    for _ in 0..4 {
        l0.run_until_idle(clock.at(0));
        l1.run_until_idle(clock.at(0));
    }
    assert_eq!(
        log.lines(),
        [
            "worker#2 started",
            "worker#2 shutting down (actor failure (disk full))",
            "worker#2 shut down (actor failure (disk full))",
        ]
    );
}

#[test]
fn events_keep_their_order_with_the_messages_the_actor_sends() {
    let clock = Clock::new();
    let log = Log::new();
    for far in [false, true] {
        log.take();
        let (mut l0, root0) = root_on("L0");
        let (mut l1, root1) = root_on("L1");
        // The watcher first, so the worker can talk to it.
        let watcher_slot = common::Slot::<Address>::new();
        let slot = watcher_slot.clone();
        let worker = Scripted::new("w", &Log::new())
            .on_start(move |me, ctx| {
                me.peer = slot.try_get();
                let to = me.peer.clone().unwrap();
                ctx.send(&to, Note("started"));
            })
            .on_shutdown(|me, ctx| {
                let to = me.peer.clone().unwrap();
                ctx.send(&to, Note("leaving"));
            });
        let (l, root) = if far {
            (&mut l1, &root1)
        } else {
            (&mut l0, &root0)
        };
        let worker = l.spawn(root, worker).name("worker").finish().unwrap();
        let watcher = l0
            .spawn(&root0, Watcher::new(&[&worker], &log))
            .finish()
            .unwrap();
        watcher_slot.set(watcher);
        for ms in 0..2 {
            if ms == 1 {
                let l = if far { &mut l1 } else { &mut l0 };
                l.shutdown(&worker).unwrap();
            }
            for _ in 0..4 {
                l0.run_until_idle(clock.at(ms));
                l1.run_until_idle(clock.at(ms));
            }
        }
        assert_eq!(
            log.lines(),
            [
                "worker#2 started",
                "note started",
                "worker#2 shutting down (normal shutdown)",
                "note leaving",
                "worker#2 shut down (normal shutdown)",
            ],
            "far: {far}"
        );
    }
}

#[test]
fn after_unwatch_no_event_is_heard_not_even_one_on_its_way() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let worker = l
        .spawn(&root, Scripted::new("w", &Log::new()))
        .name("worker")
        .finish()
        .unwrap();
    let watcher = l
        .spawn(&root, Watcher::new(&[&worker], &log))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    log.take();
    // The shutdown's first event is queued before the watcher unwatches.
    l.shutdown(&worker).unwrap();
    l.send(&watcher, Unwatch).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(log.lines(), ["unwatch true"]);
    assert_eq!(l.state_of(&worker), None);
    // Unwatching again, or a watch that ended, is `false`.
    l.send(&watcher, Unwatch).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(log.lines(), ["unwatch true"], "no id left to unwatch");
}

#[test]
fn a_watcher_that_shuts_down_is_forgotten_by_the_actor_it_watched() {
    let clock = Clock::new();
    let log = Log::new();
    for far in [false, true] {
        let (mut l0, root0) = root_on("L0");
        let (mut l1, root1) = root_on("L1");
        let (l, root) = if far {
            (&mut l1, &root1)
        } else {
            (&mut l0, &root0)
        };
        let worker = l
            .spawn(root, Scripted::new("w", &Log::new()))
            .name("worker")
            .finish()
            .unwrap();
        let watcher = l0
            .spawn(&root0, Watcher::new(&[&worker], &log))
            .finish()
            .unwrap();
        for _ in 0..3 {
            l0.run_until_idle(clock.at(0));
            l1.run_until_idle(clock.at(0));
        }
        l0.shutdown(&watcher).unwrap();
        for _ in 0..3 {
            l0.run_until_idle(clock.at(1));
            l1.run_until_idle(clock.at(1));
        }
        let l = if far { &mut l1 } else { &mut l0 };
        l.shutdown(&worker).unwrap();
        for _ in 0..3 {
            l0.run_until_idle(clock.at(2));
            l1.run_until_idle(clock.at(2));
        }
        let drops: u64 = [&l0, &l1].iter().map(|l| l.stats().dropped_stale).sum();
        assert_eq!(drops, 0, "no event went to the gone watcher (far: {far})");
    }
}

#[test]
fn an_actor_cannot_watch_itself_nor_start_a_watch_in_shutdown_finish() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    struct Narcissus(Log);
    impl Actor for Narcissus {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            let me = ctx.address().clone();
            let result = ctx.watch(&me).map_err(|e| e.code());
            self.0.push(format!("watch me: {result:?}"));
        }
        fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
            let other = ctx.supervisor().cloned().unwrap();
            let result = ctx.watch(&other).map_err(|e| e.code());
            self.0.push(format!("watch in shutdown_finish: {result:?}"));
        }
    }
    let n = l.spawn(&root, Narcissus(log.clone())).finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&n).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        log.lines(),
        [
            "watch me: Err(InvalidArgument)",
            "watch in shutdown_finish: Err(ActorFinished)"
        ]
    );
}

#[test]
fn watchers_elsewhere_hear_an_actor_whose_locality_is_dropped_or_closed() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l0, root0) = root_on("L0");
    let (mut l1, root1) = root_on("L1");
    let (l2, root2) = root_on("L2"); // never dispatched
    let worker = l1
        .spawn(&root1, Scripted::new("w", &Log::new()))
        .name("worker")
        .finish()
        .unwrap();
    // The watch of L2's root waits in L2's inbox when L2 is dropped: it
    // is answered `gone`.
    l0.spawn(&root0, Watcher::new(&[&worker, &root2], &log))
        .finish()
        .unwrap();
    for _ in 0..3 {
        l0.run_until_idle(clock.at(0));
        l1.run_until_idle(clock.at(0));
    }
    drop(l2);
    drop(l1);
    l0.run_until_idle(clock.at(1));
    assert_eq!(
        log.lines(),
        [
            "worker#2 started",
            "root#1 gone",
            "worker#2 shut down (locality lost (L1))",
        ]
    );
    // A watch asked of a finished locality is answered at once.
    let late = Log::new();
    l0.spawn(&root0, Watcher::new(&[&worker], &late))
        .finish()
        .unwrap();
    l0.run_until_idle(clock.at(2));
    assert_eq!(late.lines(), ["worker#2 gone"]);
}

/// Ends its locality's tree when it hears a `Note`.
struct Quitter;
impl Actor for Quitter {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Note, ctx: &mut Context<'_, Self>| {
            ctx.shutdown_supervisor()
        });
    }
}

/// Watches the worker, tells it to quit, and ends once it is gone.
struct Ender(Address, Log);
impl Actor for Ender {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, w: &Watched, ctx: &mut Context<'_, Self>| {
            me.1.push(event(&w.event));
            if w.event.is_last() {
                ctx.shutdown();
            }
        });
        let worker = self.0.clone();
        ctx.watch(&worker).unwrap();
        // After the watch, from the same sender: it is there when this comes.
        ctx.send(&worker, Note("quit"));
    }
}

#[test]
fn a_watch_works_across_threads() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (addr_tx, addr_rx) = mpsc::channel();
        let w1 = std::thread::spawn(move || {
            let mut l1 = System::named("W1").unwrap();
            let root = l1
                .spawn_root(Supervisor)
                .name("root")
                .supervisor(SupervisorConfig::default())
                .finish()
                .unwrap();
            let worker = l1.spawn(&root, Quitter).name("worker").finish().unwrap();
            addr_tx.send(worker).unwrap();
            l1.run()
        });
        let worker = addr_rx.recv().unwrap();
        let log = Log::new();
        let mut l0 = System::named("W0").unwrap();
        l0.spawn_root(Ender(worker, log.clone())).finish().unwrap();
        l0.run().unwrap();
        w1.join().unwrap().unwrap();
        tx.send(log.lines()).unwrap();
    });
    let lines = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("both systems end within 20 s");
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "shutting down (supervisor shutdown)",
            "shut down (supervisor shutdown)"
        ],
        "{lines:#?}"
    );
}

#[test]
fn lifecycle_events_print_what_happened() {
    let reason = Error::new(ErrorCode::ChildDown)
        .with_context("sup")
        .caused_by(Error::failure("disk full"));
    let down = LifecycleEvent::ShutDown(reason);
    assert_eq!(down.to_string(), "shut down: child down (sup)");
    assert_eq!(
        format!("{down:#}"),
        "shut down: child down (sup)\n  <- actor failure (disk full)"
    );
    assert_eq!(LifecycleEvent::Started.to_string(), "started");
    assert_eq!(LifecycleEvent::Gone.to_string(), "gone");
    assert!(down.is_last() && LifecycleEvent::Gone.is_last());
    assert!(!LifecycleEvent::Initialized.is_last());
}

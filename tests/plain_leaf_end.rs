//! The end of a plain leaf (issue 13, w4): an actor with nothing but its
//! main address (no subscriptions, timers, watchers, identities) loses
//! its address with its routing slot at once, known by its key alone;
//! one that got any of those late (in `init_start`, in `on_start`, in a
//! handler) ends the general way. Both leave nothing behind: the stores
//! are as before, a message to the old address is a stale dead letter,
//! the supervisor hears of the child by its address. And the actors'
//! `#n` stay one sequence whether or not a `LocalityHandle` exists (a
//! spawn takes its number without a locked instruction while none does).

mod common;

use common::{Clock, Log, root_on, short};
use commutator::prelude::*;
use commutator::{DeadLetter, DeadLetterReason, Watched};
use std::time::Duration;

/// Where a `Late` leaf gets what makes it more than plain.
#[derive(Clone, Copy, Debug)]
enum When {
    Never,
    InitStart,
    OnStart,
    Handler,
}

/// What a `Late` leaf gets.
#[derive(Clone, Copy, Debug)]
enum What {
    Subscription,
    Timer,
    Identity,
    /// A watch on itself by its supervisor (see `Watcher`).
    Watcher,
}

/// Asks a `Late` leaf to get its extra in a handler.
struct Get;

/// Heard by a `Late` leaf's subscription.
#[derive(Debug)]
struct Ping;

struct Late {
    when: When,
    what: What,
}

impl Late {
    fn get(&self, ctx: &mut Context<'_, Self>) {
        match self.what {
            What::Subscription => {
                ctx.subscribe(|_: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {});
            }
            What::Timer => {
                ctx.start_timer(Duration::from_secs(3600), |_, _, _| {});
            }
            What::Identity => {
                ctx.create_address("extra").unwrap();
            }
            What::Watcher => {
                let me = ctx.address().clone();
                let supervisor = ctx.supervisor().cloned().expect("a child");
                ctx.send(&supervisor, WatchMe(me));
            }
        }
    }
}

impl Actor for Late {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        // `Get` is heard in any case: a leaf with a subscription of its own
        // (the `Handler` case) is not plain from its init on, so the plain
        // ones below are `When::Never` and `When::OnStart` without it.
        if let When::Handler = self.when {
            ctx.subscribe(|me: &mut Self, _: &Get, ctx: &mut Context<'_, Self>| me.get(ctx));
        }
        if let When::InitStart = self.when {
            self.get(ctx);
        }
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        if let When::OnStart = self.when {
            self.get(ctx);
        }
    }
}

/// Asks the supervisor to watch the sender.
struct WatchMe(Address);

/// A supervisor that logs its children's ends (by their addresses), the
/// watch events it hears, and watches whoever asks.
struct Watcher(Log);

impl Actor for Watcher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, m: &WatchMe, ctx: &mut Context<'_, Self>| {
            ctx.watch(&m.0).unwrap();
        });
        ctx.subscribe(|me: &mut Self, w: &Watched, _: &mut Context<'_, Self>| {
            if let LifecycleEvent::ShutDown(reason) = &w.event {
                me.0.push(format!(
                    "watched {} down: {:?}",
                    short(&w.address),
                    reason.code()
                ));
            }
        });
    }
    fn on_child_shutdown(&mut self, child: &Address, reason: &Error, _: &mut Context<'_, Self>) {
        self.0
            .push(format!("child {} down: {:?}", short(child), reason.code()));
    }
}

/// A locality with a `Watcher` root `root#1`.
fn watcher_root(log: &Log) -> (Locality, Address) {
    let mut l = Locality::named("L0");
    let root = l
        .spawn_root(Watcher(log.clone()))
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    (l, root)
}

/// The stores a leaf may hold something in (actors, addresses,
/// subscriptions, timers).
fn stores(l: &Locality) -> [usize; 4] {
    let s = l.stats();
    [s.actors, s.addresses, s.subscriptions, s.timers]
}

/// Spawns a `Late` leaf, gives it its extra (by `Get` for `When::Handler`),
/// stops it with `Locality::shutdown`, and checks what is left: the
/// stores as before it, its supervisor told, a message to it a stale dead
/// letter. Returns the supervisor's log.
fn leaf_ends_cleanly(when: When, what: What) -> Vec<String> {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = watcher_root(&log);
    l.run_until_idle(clock.at(0));
    let before = stores(&l);
    let leaf = l.spawn(&root, Late { when, what }).finish().unwrap();
    l.run_until_idle(clock.at(0));
    if let When::Handler = when {
        l.send(&leaf, Get).unwrap();
        l.run_until_idle(clock.at(0));
    }
    assert_eq!(l.state_of(&leaf), Some(ActorState::Operational));
    l.shutdown(&leaf).unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&leaf), None, "{when:?} {what:?}: gone");
    assert_eq!(stores(&l), before, "{when:?} {what:?}: nothing left");
    // Dead letters on only now: the leaf went the quiet way, if it could.
    let dead = l.dead_letters();
    let heard = Log::new();
    let reader = l
        .spawn(&root, DeadLetterReader(heard.clone(), dead))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.send(&leaf, Ping).unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(
        heard.take(),
        vec!["L0 StaleAddress"],
        "{when:?} {what:?}: a message to it is a stale dead letter"
    );
    l.shutdown(&reader).unwrap();
    l.run_until_idle(clock.at(0));
    log.take()
        .into_iter()
        .filter(|line| !line.contains(&short(&reader)))
        .collect()
}

/// Logs the dead letters it hears: `destination reason`.
struct DeadLetterReader(Log, Address);

impl Actor for DeadLetterReader {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let dead = self.1.clone();
        ctx.subscribe_on(
            &dead,
            |me: &mut Self, d: &DeadLetter, _: &mut Context<'_, Self>| {
                let reason = match d.reason() {
                    DeadLetterReason::StaleAddress => "StaleAddress",
                    _ => "other",
                };
                me.0.push(format!(
                    "{} {reason}",
                    d.destination().split('/').next().unwrap_or("")
                ));
            },
        )
        .unwrap();
    }
}

#[test]
fn a_plain_leaf_ends_without_a_trace() {
    // No extra: the quiet way (its address dropped with its slot).
    let log = leaf_ends_cleanly(When::Never, What::Subscription);
    assert_eq!(log, vec!["child Late#2 down: Normal"]);
}

#[test]
fn a_leaf_that_gets_a_subscription_timer_or_identity_late_ends_without_a_trace() {
    for when in [When::InitStart, When::OnStart, When::Handler] {
        for what in [What::Subscription, What::Timer, What::Identity] {
            let log = leaf_ends_cleanly(when, what);
            assert_eq!(log, vec!["child Late#2 down: Normal"], "{when:?} {what:?}");
        }
    }
}

#[test]
fn a_leaf_that_gets_a_watcher_late_is_seen_going() {
    for when in [When::InitStart, When::OnStart, When::Handler] {
        let log = leaf_ends_cleanly(when, What::Watcher);
        assert!(
            log.contains(&"watched Late#2 down: Normal".to_string()),
            "{when:?}: {log:?}"
        );
        assert!(
            log.contains(&"child Late#2 down: Normal".to_string()),
            "{when:?}: {log:?}"
        );
    }
}

#[test]
fn plain_leaves_stopped_with_their_supervisor_leave_nothing() {
    let clock = Clock::new();
    let (mut l, root) = root_on("L0");
    l.run_until_idle(clock.at(0));
    let leaves: Vec<Address> = (0..100)
        .map(|_| l.spawn(&root, common::Idle).finish().unwrap())
        .collect();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.stats().actors, 101);
    assert_eq!(l.stats().addresses, 101);
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(0));
    assert!(l.is_finished());
    assert!(leaves.iter().all(|leaf| l.state_of(leaf).is_none()));
    assert_eq!(stores(&l), [0, 0, 0, 0]);
}

#[test]
fn actor_numbers_are_one_sequence_with_and_without_handles() {
    let clock = Clock::new();
    let (mut l0, root0) = root_on("L0");
    let (mut l1, root1) = root_on("L1");
    let local = |l: &mut Locality| short(&l.spawn(&root0, common::Idle).finish().unwrap());
    assert_eq!(local(&mut l0), "Idle#2", "no handle: the plain step");
    let handle = l0.handle();
    // Numbers taken on L0 from L1's side (a child reserved there) and here.
    let far = l1
        .spawn_on(&handle, &root1, || common::Idle)
        .finish()
        .unwrap();
    assert_eq!(short(&far), "Idle#3");
    assert_eq!(local(&mut l0), "Idle#4", "a handle: the locked step");
    let far2 = l1
        .spawn_on(&handle, &root1, || common::Idle)
        .finish()
        .unwrap();
    assert_eq!(short(&far2), "Idle#5");
    drop(handle);
    // The requests keep handles until L0 serves them.
    for _ in 0..5 {
        l1.run_until_idle(clock.at(0));
        l0.run_until_idle(clock.at(0));
    }
    assert_eq!(l0.state_of(&far), Some(ActorState::Operational));
    assert_eq!(local(&mut l0), "Idle#6", "no handle again: after the last");
    // From another thread, while a handle lives there.
    let handle = l0.handle();
    let other = std::thread::spawn(move || {
        let (mut l2, root2) = root_on("L2");
        let a = l2
            .spawn_on(&handle, &root2, || common::Idle)
            .finish()
            .unwrap();
        drop(handle);
        short(&a)
    });
    let theirs = other.join().unwrap();
    assert_eq!(theirs, "Idle#7");
    assert_eq!(local(&mut l0), "Idle#8");
}

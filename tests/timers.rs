//! Timers on a manual clock: order, cancelling, cleanup, deadlines.

mod common;

use common::{Clock, Log, root_on_l0};
use commutator::{Actor, Context, Locality, TimerId};
use std::collections::HashMap;
use std::time::Duration;

/// Starts the timers of its plan when it starts; logs `label@ms` when one fires.
struct Timed {
    clock: Clock,
    log: Log,
    plan: Vec<(u64, &'static str)>,
    ids: HashMap<&'static str, TimerId>,
}

impl Timed {
    fn new(clock: Clock, log: &Log, plan: &[(u64, &'static str)]) -> Timed {
        Timed {
            clock,
            log: log.clone(),
            plan: plan.to_vec(),
            ids: HashMap::new(),
        }
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>, after: u64, label: &'static str) {
        let id = ctx.start_timer(
            Duration::from_millis(after),
            move |a: &mut Timed, ctx, _| {
                a.log.push(format!("{label}@{}", a.clock.ms(ctx.now())));
            },
        );
        self.ids.insert(label, id);
    }
}

/// Asks a `Timed` to cancel one of its timers (twice, to show idempotence).
struct Cancel(&'static str);

/// Asks a `Timed` to start one more timer.
struct Start(u64, &'static str);

impl Actor for Timed {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_cancel);
        ctx.subscribe(Self::on_start_timer);
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        for (after, label) in std::mem::take(&mut self.plan) {
            self.start(ctx, after, label);
        }
    }
}

impl Timed {
    fn on_cancel(&mut self, cancel: &Cancel, ctx: &mut Context<'_, Self>) {
        let id = self.ids[cancel.0];
        let first = ctx.cancel_timer(id);
        let second = ctx.cancel_timer(id);
        self.log
            .push(format!("cancel {}: {first} then {second}", cancel.0));
    }

    fn on_start_timer(&mut self, start: &Start, ctx: &mut Context<'_, Self>) {
        self.start(ctx, start.0, start.1);
    }
}

/// Runs the locality at every millisecond from `from` to `to`, inclusive.
fn tick(locality: &mut Locality, clock: Clock, from: u64, to: u64) {
    for ms in from..=to {
        locality.run_until_idle(clock.at(ms));
    }
}

#[test]
fn timers_fire_in_deadline_order_with_ties_in_start_order() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let plan = [
        (30, "a"),
        (10, "b"),
        (20, "c"),
        (10, "d"),
        (5, "e"),
        (10, "f"),
    ];
    locality
        .spawn(&root, Timed::new(clock, &log, &plan))
        .finish()
        .unwrap();

    tick(&mut locality, clock, 0, 40);

    assert_eq!(log.lines(), ["e@5", "b@10", "d@10", "f@10", "c@20", "a@30"]);
    assert_eq!(locality.stats().timers, 0);
}

#[test]
fn timers_due_at_once_fire_in_deadline_order_with_ties_in_start_order() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let plan = [
        (30, "a"),
        (10, "b"),
        (20, "c"),
        (10, "d"),
        (5, "e"),
        (10, "f"),
    ];
    locality
        .spawn(&root, Timed::new(clock, &log, &plan))
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    // One jump of the clock past every deadline: they all fire at 100.
    locality.run_until_idle(clock.at(100));

    assert_eq!(
        log.lines(),
        ["e@100", "b@100", "d@100", "f@100", "c@100", "a@100"]
    );
}

#[test]
fn cancel_is_idempotent_and_a_cancelled_timer_never_fires() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let timed = Timed::new(clock, &log, &[(10, "a"), (20, "b"), (30, "c")]);
    let timed = locality.spawn(&root, timed).finish().unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.stats().timers, 3);

    locality.send(&timed, Cancel("b")).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(
        locality.stats().timers,
        2,
        "a cancelled timer is freed at once"
    );
    tick(&mut locality, clock, 1, 15);
    // Cancelling a timer that already fired is a no-op too.
    locality.send(&timed, Cancel("a")).unwrap();
    tick(&mut locality, clock, 16, 100);

    assert_eq!(
        log.lines(),
        [
            "cancel b: true then false",
            "a@10",
            "cancel a: false then false",
            "c@30"
        ]
    );
    assert_eq!(locality.stats().timers, 0);
}

/// Tries to cancel a timer of another actor.
struct Meddler {
    log: Log,
}

struct Meddle(TimerId);

impl Actor for Meddler {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_meddle);
    }
}

impl Meddler {
    fn on_meddle(&mut self, meddle: &Meddle, ctx: &mut Context<'_, Self>) {
        let cancelled = ctx.cancel_timer(meddle.0);
        self.log.push(format!("meddler cancel: {cancelled}"));
    }
}

/// Hands out the id of its one timer.
struct Owner {
    clock: Clock,
    log: Log,
    id: common::Slot<TimerId>,
}

impl Actor for Owner {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let id = ctx.start_timer(Duration::from_millis(10), |a: &mut Owner, ctx, _| {
            a.log.push(format!("owner@{}", a.clock.ms(ctx.now())));
        });
        self.id.set(id);
    }
}

#[test]
fn an_actor_cannot_cancel_another_actors_timer() {
    let clock = Clock::new();
    let log = Log::new();
    let id = common::Slot::new();
    let (mut locality, root) = root_on_l0();
    locality
        .spawn(
            &root,
            Owner {
                clock,
                log: log.clone(),
                id: id.clone(),
            },
        )
        .finish()
        .unwrap();
    let meddler = locality
        .spawn(&root, Meddler { log: log.clone() })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.send(&meddler, Meddle(id.get())).unwrap();
    tick(&mut locality, clock, 0, 20);

    assert_eq!(log.lines(), ["meddler cancel: false", "owner@10"]);
}

/// Starts timers in every phase, including while shutting down.
struct Leaver {
    log: Log,
}

impl Actor for Leaver {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        for ms in [10, 20, 30] {
            ctx.start_timer(Duration::from_millis(ms), move |a: &mut Leaver, _, _| {
                a.log.push(format!("fired {ms}"))
            });
        }
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::from_millis(5), |a: &mut Leaver, _, _| {
            a.log.push("fired in shutdown_start")
        });
    }

    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::ZERO, |a: &mut Leaver, _, _| {
            a.log.push("fired in shutdown_finish")
        });
    }
}

#[test]
fn timers_of_an_actor_that_shuts_down_are_freed_and_never_fire() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let leaver = locality
        .spawn(&root, Leaver { log: log.clone() })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.stats().timers, 3);

    locality.shutdown(&leaver).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.stats().actors, 1, "only the root is left");
    assert_eq!(locality.stats().timers, 0);
    assert_eq!(locality.next_deadline(), None);

    tick(&mut locality, clock, 1, 100);
    assert!(log.is_empty(), "{:?}", log.lines());
}

#[test]
fn nothing_fires_before_its_deadline_on_the_manual_clock() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    locality
        .spawn(&root, Timed::new(clock, &log, &[(50, "a")]))
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.run_until_idle(clock.at(49));
    locality.run_until_idle(clock.at(50) - Duration::from_nanos(1));
    assert!(log.is_empty());
    assert!(!locality.has_pending());
    assert_eq!(
        locality.poll_timeout(clock.at(49)),
        Some(Duration::from_millis(1))
    );

    locality.run_until_idle(clock.at(50));
    assert_eq!(log.lines(), ["a@50"]);
}

#[test]
fn the_clock_never_moves_backwards() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    locality
        .spawn(&root, Timed::new(clock, &log, &[(50, "a")]))
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    locality.run_until_idle(clock.at(30));

    locality.run_until_idle(clock.at(10));
    assert_eq!(locality.now(), clock.at(30));
    locality.run_until_idle(clock.at(50));
    assert_eq!(log.lines(), ["a@50"]);
}

#[test]
fn next_deadline_reports_the_earliest_pending_timer() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    assert_eq!(locality.next_deadline(), None);
    let timed = Timed::new(clock, &log, &[(30, "a"), (10, "b"), (20, "c")]);
    let timed = locality.spawn(&root, timed).finish().unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.next_deadline(), Some(clock.at(10)));

    locality.send(&timed, Cancel("b")).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.next_deadline(), Some(clock.at(20)));

    locality.send(&timed, Start(5, "d")).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.next_deadline(), Some(clock.at(5)));

    locality.run_until_idle(clock.at(20));
    assert_eq!(locality.next_deadline(), Some(clock.at(30)));
    locality.run_until_idle(clock.at(30));
    assert_eq!(locality.next_deadline(), None);
    assert_eq!(
        log.lines(),
        ["cancel b: true then false", "d@20", "c@20", "a@30"]
    );
}

#[test]
fn a_manual_clock_that_starts_before_the_locality_was_created_is_honoured() {
    // The documented pattern: take `t0`, then create the locality.
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    locality
        .spawn(&root, Timed::new(clock, &log, &[(10, "a")]))
        .finish()
        .unwrap();

    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.now(), clock.at(0));
    assert_eq!(locality.next_deadline(), Some(clock.at(10)));
    locality.run_until_idle(clock.at(10));
    assert_eq!(log.lines(), ["a@10"]);
}

/// Restarts a timer from its own callback, `left` times.
struct Repeater {
    log: Log,
    every: Duration,
    left: u32,
}

impl Actor for Repeater {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(self.every, Self::fire);
    }
}

impl Repeater {
    fn fire(&mut self, ctx: &mut Context<'_, Self>, _: TimerId) {
        self.log.push(format!("tick {}", self.left));
        self.left -= 1;
        if self.left > 0 {
            ctx.start_timer(self.every, Self::fire);
        }
    }
}

#[test]
fn a_timer_restarted_from_its_callback_fires_once_per_period() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let repeater = Repeater {
        log: log.clone(),
        every: Duration::from_millis(10),
        left: 3,
    };
    locality.spawn(&root, repeater).finish().unwrap();
    locality.run_until_idle(clock.at(0));

    locality.run_until_idle(clock.at(10));
    assert_eq!(log.take(), ["tick 3"]);
    // A late clock fires the one due timer; its successor is due 10 ms after *now*.
    locality.run_until_idle(clock.at(25));
    assert_eq!(log.take(), ["tick 2"]);
    assert_eq!(locality.next_deadline(), Some(clock.at(35)));
    locality.run_until_idle(clock.at(35));
    assert_eq!(log.take(), ["tick 1"]);
    assert_eq!(locality.next_deadline(), None);
}

#[test]
fn a_zero_delay_timer_restarted_from_its_callback_does_not_hold_dispatch() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let repeater = Repeater {
        log: log.clone(),
        every: Duration::ZERO,
        left: 1000,
    };
    locality.spawn(&root, repeater).finish().unwrap();
    locality.set_budget(10);

    // Each timer is due as soon as it is started; every dispatch still returns
    // after its budget, so a loop embedding the locality gets to poll.
    let mut dispatches = 0;
    loop {
        let handled = locality.dispatch(clock.at(0));
        assert!(
            handled <= 10,
            "dispatch handled {handled} items with a budget of 10"
        );
        dispatches += 1;
        if !locality.has_pending() {
            break;
        }
    }
    assert_eq!(log.len(), 1000);
    assert!(
        dispatches >= 100,
        "{dispatches} dispatches for 1000 timers and a few lifecycle messages"
    );
    assert_eq!(locality.stats().timers, 0);
}

#[test]
fn cancelling_a_fired_timer_never_cancels_a_newer_timer_in_its_slot() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let timed = Timed::new(clock, &log, &[(10, "a")]);
    let timed = locality.spawn(&root, timed).finish().unwrap();
    locality.run_until_idle(clock.at(0));
    locality.run_until_idle(clock.at(10));
    assert_eq!(log.take(), ["a@10"]);

    // "b" takes the freed slot of "a"; the old id of "a" must not reach it.
    locality.send(&timed, Start(10, "b")).unwrap();
    locality.run_until_idle(clock.at(10));
    locality.send(&timed, Cancel("a")).unwrap();
    locality.run_until_idle(clock.at(10));
    assert_eq!(locality.stats().timers, 1);
    locality.run_until_idle(clock.at(20));

    assert_eq!(log.lines(), ["cancel a: false then false", "b@20"]);
}

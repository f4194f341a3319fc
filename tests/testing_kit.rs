//! The test kit for users' tests (issue 16, case 5): a manual clock,
//! stepping, advancing to the next deadline, running until idle, and probes
//! that collect what an address received.

use commutator::prelude::*;
use commutator::testing::Harness;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
struct Beat(u32, Duration);

/// Sends `Beat(n, elapsed)` to `to` every `every`, `times` times, then shuts down.
struct Heart {
    to: Address,
    every: Duration,
    times: u32,
    beats: u32,
    start: Option<std::time::Instant>,
}

impl Heart {
    fn new(to: &Address, every_ms: u64, times: u32) -> Heart {
        Heart {
            to: to.clone(),
            every: Duration::from_millis(every_ms),
            times,
            beats: 0,
            start: None,
        }
    }

    fn beat(&mut self, ctx: &mut Context<'_, Self>, _: TimerId) {
        self.beats += 1;
        let at = ctx.now() - self.start.unwrap_or(ctx.now());
        ctx.send(&self.to, Beat(self.beats, at));
        if self.beats < self.times {
            ctx.start_timer(self.every, Heart::beat);
        } else {
            ctx.shutdown();
        }
    }
}

impl Actor for Heart {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.start = Some(ctx.now());
        ctx.start_timer(self.every, Heart::beat);
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn advance_fires_every_timer_on_the_way_at_its_own_deadline() {
    let mut t = Harness::named("kit");
    let beats = t.probe::<Beat>();
    t.spawn_root(Heart::new(beats.address(), 100, 5))
        .finish()
        .unwrap();
    t.run_until_idle();
    assert!(beats.is_empty());
    t.advance(ms(350)); // three beats, each at its own time
    assert_eq!(
        beats.take(),
        [Beat(1, ms(100)), Beat(2, ms(200)), Beat(3, ms(300))]
    );
    assert_eq!(t.elapsed(), ms(350));
    assert_eq!(t.now(), t.start() + ms(350));
}

#[test]
fn advance_to_next_deadline_jumps_to_it_and_runs_what_it_causes() {
    let mut t = Harness::named("kit");
    let beats = t.probe::<Beat>();
    t.spawn_root(Heart::new(beats.address(), 1000, 2))
        .finish()
        .unwrap();
    let first = t.advance_to_next_deadline();
    assert_eq!(first, Some(t.start() + ms(1000)));
    assert_eq!(beats.take(), [Beat(1, ms(1000))]);
    assert_eq!(t.advance_to_next_deadline(), Some(t.start() + ms(2000)));
    assert_eq!(beats.take(), [Beat(2, ms(2000))]);
    assert!(t.is_finished());
    assert_eq!(t.advance_to_next_deadline(), None, "nothing pending");
    assert_eq!(t.elapsed(), ms(2000), "the clock did not move");
}

#[test]
fn run_until_finished_fast_forwards_within_its_limit() {
    let mut t = Harness::named("kit");
    let beats = t.probe::<Beat>();
    t.spawn_root(Heart::new(beats.address(), 60_000, 10))
        .finish()
        .unwrap();
    assert!(
        !t.run_until_finished(ms(300_000)),
        "five minutes: half the beats"
    );
    assert_eq!(beats.len(), 5);
    assert!(t.run_until_finished(ms(3_600_000)));
    assert_eq!(beats.len(), 10);
    assert_eq!(beats.last(), Some(Beat(10, ms(600_000))));
    assert_eq!(t.elapsed(), ms(600_000));
}

#[test]
fn step_handles_one_item_at_a_time() {
    struct Echo;
    impl Actor for Echo {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|_: &mut Self, n: &u32, ctx: &mut Context<'_, Self>| {
                if *n > 0 {
                    let me = ctx.address().clone();
                    ctx.send(&me, *n - 1);
                }
            });
        }
    }
    let mut t = Harness::named("kit");
    let echo = t.spawn_root(Echo).finish().unwrap();
    let seen = t.watch::<u32>(&echo).unwrap();
    t.run_until_idle();
    t.send(&echo, 3u32).unwrap();
    assert_eq!(t.step(), 1);
    assert_eq!(seen.received(), [3]);
    assert_eq!(t.step(), 1);
    assert_eq!(seen.received(), [3, 2]);
    assert_eq!(t.run_until_idle(), 2);
    assert_eq!(seen.take(), [3, 2, 1, 0]);
    assert_eq!(t.step(), 0, "nothing left");
}

#[test]
fn a_probe_collects_messages_from_other_threads_and_never_keeps_the_locality_alive() {
    let mut t = Harness::named("kit");
    let numbers = t.probe::<u64>();
    assert!(numbers.address().to_string().starts_with("kit/probe#"));
    let address = numbers.address().clone();
    std::thread::spawn(move || {
        for n in 0..3u64 {
            address.send(n).unwrap();
        }
    })
    .join()
    .unwrap();
    t.run_until_idle();
    assert_eq!(numbers.take(), [0, 1, 2]);
    // A tree that ends: the probe does not hold the locality.
    let beats = t.probe::<Beat>();
    t.spawn_root(Heart::new(beats.address(), 1, 1))
        .finish()
        .unwrap();
    assert!(t.run_until_finished(ms(10)));
}

#[test]
fn watch_refuses_an_address_of_another_locality_or_a_gone_one() {
    let mut t = Harness::named("kit");
    let mut other = Harness::named("other");
    let there = other.probe::<u32>();
    let err = t.watch::<u32>(there.address()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ForeignAddress);

    let root = t
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let leaf = t.spawn(&root, Heart::new(&root, 1, 1)).finish().unwrap();
    t.run_until_finished(ms(100));
    let err = t.watch::<u32>(&leaf).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleAddress);
}

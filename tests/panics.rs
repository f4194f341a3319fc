//! The panic policy: a panic in user code is caught where commutator called
//! it and becomes a failure of that actor (`ErrorCode::Panicked`); its
//! supervisor decides what follows, and the locality stays consistent.

mod common;

use common::{Clock, Log, Scripted, root_on_l0};
use commutator::*;
use std::time::Duration;

struct Boom;

fn panicky(log: &Log) -> Scripted {
    Scripted::new("panicky", log).on_init(|_, ctx| {
        ctx.subscribe(
            |_: &mut Scripted, _: &Boom, _: &mut Context<'_, Scripted>| panic!("bad input"),
        );
    })
}

/// Everything is gone at the end: no leak after panics.
fn assert_clean(l: &Locality) {
    let s = l.stats();
    assert!(l.is_finished());
    assert_eq!(
        (s.actors, s.addresses, s.subscriptions, s.timers, s.requests),
        (0, 0, 0, 0, 0)
    );
}

#[test]
fn a_panic_in_a_handler_fails_only_that_actor() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let bad = l
        .spawn(&root, panicky(&log))
        .name("panicky")
        .finish()
        .unwrap();
    let good = l
        .spawn(&root, Scripted::new("good", &log))
        .name("good")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.send(&bad, Boom).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(l.state_of(&bad), None, "the panicking actor was shut down");
    assert_eq!(l.state_of(&good), Some(ActorState::Operational));
    assert!(
        log.lines().contains(&"panicky shutdown_finish".to_string()),
        "its shutdown hooks ran"
    );
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(2));
    assert_clean(&l);
}

#[test]
fn the_panic_reaches_the_supervisor_as_a_failure_with_its_message() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let bad = l
        .spawn(&root, panicky(&log))
        .name("panicky")
        .escalate_failure()
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.send(&bad, Boom).unwrap();
    l.run_until_idle(clock.at(1));
    let reason = l.exit_reason().unwrap();
    assert_eq!(
        format!("{reason:#}"),
        "failure escalation (L0/root#1)\n  <- panicked (L0/panicky#2: bad input)"
    );
    assert_clean(&l);
}

#[test]
fn a_panicking_actor_can_be_restarted() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let made = Log::new();
    let (log2, made2) = (log.clone(), made.clone());
    let factory = move || {
        made2.push("made");
        panicky(&log2)
    };
    let bad = l
        .spawn_with(&root, factory)
        .name("panicky")
        .restart(RestartPolicy::OnFailure)
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.send(&bad, Boom).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(made.len(), 2, "a new instance replaced it");
}

#[test]
fn a_panic_in_init_fails_the_init() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let config = SupervisorConfig::default().init_failure(InitFailurePolicy::ShutdownChild);
    let sup = l
        .spawn(&root, Supervisor)
        .name("sup")
        .supervisor(config)
        .finish()
        .unwrap();
    let bad = Scripted::new("bad", &log).on_init(|_, _| panic!("no config"));
    let bad = l.spawn(&sup, bad).name("bad").finish().unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&bad), None);
    assert_eq!(l.state_of(&sup), Some(ActorState::Operational));
}

#[test]
fn a_panic_in_a_timer_callback_fails_that_actor() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let ticking = Scripted::new("ticking", &log).on_start(|_, ctx| {
        ctx.start_timer(Duration::from_millis(5), |_, _, _| panic!("tick"));
    });
    let ticking = l.spawn(&root, ticking).name("ticking").finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.run_until_idle(clock.at(5));
    assert_eq!(l.state_of(&ticking), None);
    assert_eq!(l.state_of(&root), Some(ActorState::Operational));
}

#[test]
fn a_panic_during_shutdown_does_not_stop_the_shutdown() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let bad = Scripted::new("bad", &log).on_shutdown(|_, _| panic!("cleanup failed"));
    l.spawn(&root, bad).name("bad").finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(1));
    assert!(log.lines().contains(&"bad shutdown_finish".to_string()));
    assert_clean(&l);
}

/// Its `Drop` panics.
struct BadDrop;
impl Actor for BadDrop {}
impl Drop for BadDrop {
    fn drop(&mut self) {
        panic!("drop");
    }
}

#[test]
fn a_panic_in_an_actors_drop_is_contained() {
    let clock = Clock::new();
    let (mut l, root) = root_on_l0();
    l.spawn(&root, BadDrop).finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(1));
    assert_clean(&l);
}

#[test]
fn a_panicking_restart_factory_is_a_failed_restart() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let mut made = 0;
    let log2 = log.clone();
    let factory = move || {
        made += 1;
        assert!(made < 2, "the factory cannot make a second one");
        panicky(&log2)
    };
    let bad = l
        .spawn_with(&root, factory)
        .name("panicky")
        .restart(RestartPolicy::OnFailure);
    let bad = bad.escalate_failure().finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.send(&bad, Boom).unwrap();
    l.run_until_idle(clock.at(1));
    assert!(l.is_finished(), "the failed restart escalated");
    let chain = format!("{:#}", l.exit_reason().unwrap());
    assert!(
        chain.contains("panicked (L0/root#1: the factory cannot make a second one)"),
        "{chain}"
    );
    assert_clean(&l);
}

/// Fails as it starts; its `should_restart` panics; its `Drop` counts,
/// then panics too (so an unguarded `Drop` would be seen).
struct BadAnswer(std::rc::Rc<std::cell::Cell<u32>>);
impl Actor for BadAnswer {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.fail(Error::failure("broken"));
    }
    fn should_restart(&self, _: &Error) -> bool {
        panic!("no answer");
    }
}
impl Drop for BadAnswer {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
        panic!("drop");
    }
}

#[test]
fn a_panic_in_should_restart_is_no_restart_and_the_actor_is_still_dropped() {
    let clock = Clock::new();
    let (mut l, root) = root_on_l0();
    let (made, drops) = (
        std::rc::Rc::new(std::cell::Cell::new(0)),
        std::rc::Rc::default(),
    );
    let (made2, drops2) = (made.clone(), std::rc::Rc::clone(&drops));
    let factory = move || {
        made2.set(made2.get() + 1);
        BadAnswer(std::rc::Rc::clone(&drops2))
    };
    let bad = l
        .spawn_with(&root, factory)
        .restart(RestartPolicy::AskActor);
    let bad = bad.finish().unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&bad), None);
    assert_eq!(
        (made.get(), drops.get()),
        (1, 1),
        "no restart; dropped once"
    );
    assert_eq!(l.state_of(&root), Some(ActorState::Operational));
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(1));
    assert_clean(&l);
}

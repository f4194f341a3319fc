//! Resources: init and shutdown wait while an actor holds external resources.

mod common;

use common::{Clock, Log, Scripted, pos, root_on_l0};
use commutator::*;
use std::time::Duration;

/// Releases one resource of the given kind.
struct Release(u32);

fn releasing(s: Scripted) -> Scripted {
    s.on_init(|_, ctx| {
        ctx.subscribe(
            |me: &mut Scripted, r: &Release, ctx: &mut Context<'_, Scripted>| {
                me.say(&format!(
                    "release {}: {:?}",
                    r.0,
                    ctx.release_resource(r.0).map_err(|e| e.code())
                ));
            },
        );
    })
}

#[test]
fn init_waits_until_resources_acquired_during_init_are_released() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let opener = Scripted::new("opener", &log).on_init(|me, ctx| {
        ctx.subscribe(
            |me: &mut Scripted, r: &Release, ctx: &mut Context<'_, Scripted>| {
                me.say(&format!("held {}", ctx.resources_held(r.0)));
                ctx.release_resource(r.0).unwrap();
            },
        );
        ctx.acquire_resource(7); // e.g. a socket being connected
        ctx.acquire_resource(7);
        me.say("connecting");
    });
    let opener = l.spawn(&root, opener).name("opener").finish().unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&opener), Some(ActorState::Initializing));
    l.send(&opener, Release(7)).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        l.state_of(&opener),
        Some(ActorState::Initializing),
        "one of two still held"
    );
    l.send(&opener, Release(7)).unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(l.state_of(&opener), Some(ActorState::Operational));
    assert_eq!(
        log.lines()[..3],
        ["opener init_start", "opener connecting", "opener held 2"]
    );
}

#[test]
fn shutdown_waits_until_every_resource_is_released() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let closer =
        releasing(Scripted::new("closer", &log)).on_start(|_, ctx| ctx.acquire_resource(1));
    let closer = l.spawn(&root, closer).name("closer").finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        l.state_of(&closer),
        Some(ActorState::ShuttingDown),
        "a socket is still closing"
    );
    assert_eq!(
        l.state_of(&root),
        Some(ActorState::ShuttingDown),
        "and so the tree waits"
    );
    l.send(&closer, Release(1)).unwrap();
    l.run_until_idle(clock.at(2));
    assert!(l.is_finished());
    let trace = log.lines();
    assert!(pos(&trace, "closer release 1: Ok(())") < pos(&trace, "closer shutdown_finish"));
}

#[test]
fn releasing_what_is_not_held_is_an_error_and_changes_nothing() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let a = releasing(Scripted::new("a", &log)).on_start(|_, ctx| ctx.acquire_resource(1));
    let a = l.spawn(&root, a).name("a").finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.send(&a, Release(2)).unwrap();
    l.send(&a, Release(1)).unwrap();
    l.send(&a, Release(1)).unwrap();
    l.run_until_idle(clock.at(1));
    let trace = log.lines();
    assert_eq!(
        trace[trace.len() - 3..],
        [
            "a release 2: Err(InvalidArgument)",
            "a release 1: Ok(())",
            "a release 1: Err(InvalidArgument)"
        ]
    );
    assert_eq!(l.state_of(&a), Some(ActorState::Operational));
}

#[test]
fn a_resource_held_past_the_shutdown_timeout_is_a_contract_violation() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let stuck = Scripted::new("stuck", &log).on_shutdown(|_, ctx| ctx.acquire_resource(0));
    l.spawn(&root, stuck)
        .name("stuck")
        .shutdown_timeout(Duration::from_millis(50))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(0));
    l.run_until_idle(clock.at(49));
    assert!(!l.is_finished());
    l.run_until_idle(clock.at(50));
    assert!(l.is_finished());
    assert_eq!(
        l.exit_reason().unwrap().to_string(),
        "shutdown timeout (L0/stuck#2)"
    );
}

#[test]
fn a_violation_handler_may_let_the_locality_carry_on() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let seen = Log::new();
    let s = seen.clone();
    l.on_contract_violation(move |e| {
        s.push(e.to_string());
        ViolationAction::Continue
    });
    let stuck = Scripted::new("stuck", &log).on_shutdown(|_, ctx| ctx.acquire_resource(0));
    let stuck = l
        .spawn(&root, stuck)
        .name("stuck")
        .shutdown_timeout(Duration::from_millis(5))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&stuck).unwrap();
    l.run_until_idle(clock.at(0));
    l.run_until_idle(clock.at(5));
    assert_eq!(seen.lines(), ["shutdown timeout (L0/stuck#2)"]);
    assert!(!l.is_finished());
    assert_eq!(l.state_of(&stuck), Some(ActorState::ShuttingDown));
}

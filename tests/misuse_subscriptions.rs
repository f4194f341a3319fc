//! Misuse of the API, subscriptions: every refused subscribe or unsubscribe
//! returns its documented `ErrorCode` and changes nothing.

mod common;

use common::misuse::{Tester, code, probe, stores, with_tester};
use common::{Clock, Idle, Log, Slot, root_on, root_on_l0};
use commutator::{Actor, Address, Context};

/// Tries `subscribe_on` an address it is given, and logs the outcome.
struct Prober {
    log: Log,
}

struct TryOn(Address);

impl Actor for Prober {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_try);
    }
}

impl Prober {
    fn on_try(&mut self, target: &TryOn, ctx: &mut Context<'_, Self>) {
        let result = ctx
            .subscribe_on(&target.0, |_: &mut Prober, _: &u8, _| {})
            .map(|_| ())
            .map_err(|e| e.code());
        self.log
            .push(format!("subscribe_on {}: {result:?}", target.0));
    }
}

#[test]
fn subscribe_on_a_stale_address_fails_with_stale_address() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let prober = locality
        .spawn(&root, Prober { log: log.clone() })
        .finish()
        .unwrap();
    let gone = locality.spawn(&root, Idle).name("gone").finish().unwrap();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&gone).unwrap();
    locality.run_until_idle(clock.at(0));
    let subscriptions = locality.stats().subscriptions;

    locality.send(&prober, TryOn(gone)).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(log.lines(), ["subscribe_on L0/gone#3: Err(StaleAddress)"]);
    assert_eq!(locality.stats().subscriptions, subscriptions);
}

#[test]
fn subscribe_on_an_address_of_another_locality_fails_with_foreign_address() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let (_there, their_root) = root_on("L1");
    let prober = locality
        .spawn(&root, Prober { log: log.clone() })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    let subscriptions = locality.stats().subscriptions;

    locality.send(&prober, TryOn(their_root)).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(log.lines(), ["subscribe_on L1/root#1: Err(ForeignAddress)"]);
    assert_eq!(locality.stats().subscriptions, subscriptions);
}

/// Unsubscribes a subscription it is given (its own or another actor's), twice.
struct Unsubscriber {
    log: Log,
    mine: Slot<commutator::SubscriptionId>,
}

struct Drop(commutator::SubscriptionId);

impl Actor for Unsubscriber {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let id = ctx.subscribe(Self::on_drop);
        self.mine.set(id);
    }
}

impl Unsubscriber {
    fn on_drop(&mut self, drop: &Drop, ctx: &mut Context<'_, Self>) {
        let first = ctx.unsubscribe(drop.0).map_err(|e| e.code());
        let second = ctx.unsubscribe(drop.0).map_err(|e| e.code());
        self.log.push(format!(
            "{}: {first:?} then {second:?}",
            common::short(ctx.address())
        ));
    }
}

#[test]
fn unsubscribing_twice_fails_with_unknown_subscription() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let mine = Slot::new();
    let actor = Unsubscriber {
        log: log.clone(),
        mine: mine.clone(),
    };
    let addr = locality.spawn(&root, actor).name("u").finish().unwrap();
    locality.run_until_idle(clock.at(0));
    let subscriptions = locality.stats().subscriptions;

    locality.send(&addr, Drop(mine.get())).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(log.lines(), ["u#2: Ok(()) then Err(UnknownSubscription)"]);
    assert_eq!(locality.stats().subscriptions, subscriptions - 1);
}

#[test]
fn unsubscribing_another_actors_subscription_fails_with_unknown_subscription() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let (a_id, b_id) = (Slot::new(), Slot::new());
    let a = locality
        .spawn(
            &root,
            Unsubscriber {
                log: log.clone(),
                mine: a_id.clone(),
            },
        )
        .name("a")
        .finish()
        .unwrap();
    let b = locality
        .spawn(
            &root,
            Unsubscriber {
                log: log.clone(),
                mine: b_id.clone(),
            },
        )
        .name("b")
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    let subscriptions = locality.stats().subscriptions;

    locality.send(&a, Drop(b_id.get())).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(
        log.take(),
        ["a#2: Err(UnknownSubscription) then Err(UnknownSubscription)"]
    );
    assert_eq!(locality.stats().subscriptions, subscriptions);

    // b's handler still works.
    locality.send(&b, Drop(a_id.get())).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(
        log.take(),
        ["b#3: Err(UnknownSubscription) then Err(UnknownSubscription)"]
    );
}

/// Unsubscribes, subscribes again (which may reuse the freed slot), then
/// unsubscribes the first id again.
struct Resubscriber {
    log: Log,
    first: Option<commutator::SubscriptionId>,
}

struct Again;

impl Actor for Resubscriber {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_again);
        self.first =
            Some(ctx.subscribe(|a: &mut Resubscriber, _: &u8, _| a.log.push("first heard")));
    }
}

impl Resubscriber {
    fn on_again(&mut self, _: &Again, ctx: &mut Context<'_, Self>) {
        let first = self.first.unwrap();
        ctx.unsubscribe(first).unwrap();
        ctx.subscribe(|a: &mut Resubscriber, _: &u8, _| a.log.push("second heard"));
        let again = ctx.unsubscribe(first).map_err(|e| e.code());
        self.log
            .push(format!("unsubscribe the first again: {again:?}"));
    }
}

#[test]
fn a_stale_subscription_id_never_removes_a_newer_subscription() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let actor = locality
        .spawn(
            &root,
            Resubscriber {
                log: log.clone(),
                first: None,
            },
        )
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.send(&actor, Again).unwrap();
    locality.send(&actor, 1u8).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(
        log.lines(),
        [
            "unsubscribe the first again: Err(UnknownSubscription)",
            "second heard"
        ]
    );
}

#[derive(Clone)]
struct Note;

#[test]
fn subscribe_external_on_a_stale_local_address_fails_with_stale_address() {
    let log = Log::new();
    let (mut l, root, tester) = with_tester(&log);
    let gone = l.spawn(&root, Idle).name("gone").finish().unwrap();
    l.run_until_idle(Clock::new().at(0));
    l.shutdown(&gone).unwrap();
    l.run_until_idle(Clock::new().at(0));
    let before = stores(&l);

    let said = probe(
        &mut l,
        &tester,
        move |ctx| code(ctx.subscribe_external(&gone, |_: &mut Tester, _: &Note, _| {})),
        &log,
    );

    assert_eq!(said, "Err(StaleAddress)");
    assert_eq!(
        stores(&l),
        before,
        "no identity or subscription is left behind"
    );
}

#[test]
fn unsubscribing_an_external_subscription_twice_fails_with_unknown_subscription() {
    let log = Log::new();
    let (mut l, _, tester) = with_tester(&log);
    let (mut there, their_root) = root_on("L1");
    there.run_until_idle(Clock::new().at(0));

    let said = probe(
        &mut l,
        &tester,
        move |ctx| {
            let id = ctx
                .subscribe_external(&their_root, |_: &mut Tester, _: &Note, _| {})
                .unwrap();
            format!(
                "{} then {}",
                code(ctx.unsubscribe(id)),
                code(ctx.unsubscribe(id))
            )
        },
        &log,
    );

    assert_eq!(said, "Ok(()) then Err(UnknownSubscription)");
}

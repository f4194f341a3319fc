//! Misuse of the API: every refused call returns its documented `ErrorCode`
//! and changes nothing.

mod common;

use common::{Clock, Log, Slot, root_on, root_on_l0};
use commutator::mio::{Poll, Token};
use commutator::{
    Actor, Address, Context, ErrorCode, Locality, RESERVED_TOKENS, Supervisor, SupervisorConfig,
    System,
};

/// An actor that does nothing.
struct Idle;

impl Actor for Idle {}

/// A locality whose only root has shut down.
fn finished_locality() -> (Locality, Address) {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&root).unwrap();
    locality.run_until_idle(clock.at(0));
    assert!(locality.is_finished());
    (locality, root)
}

#[test]
fn spawning_under_an_actor_that_is_not_a_supervisor_fails_with_not_a_supervisor() {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    let leaf = locality.spawn(&root, Idle).name("leaf").finish().unwrap();
    locality.run_until_idle(clock.at(0));
    let before = locality.stats();

    let err = locality.spawn(&leaf, Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::NotASupervisor);
    assert_eq!(err.context(), Some("L0/leaf#2"));
    assert_eq!(locality.stats(), before);
    // Not even an actor number was used up.
    let next = locality.spawn(&root, Idle).name("next").finish().unwrap();
    assert_eq!(next.to_string(), "L0/next#3");
}

#[test]
fn spawning_under_a_supervisor_that_is_shutting_down_fails() {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    locality.spawn(&root, Idle).finish().unwrap();
    locality.run_until_idle(clock.at(0));
    // Stop between two dispatch steps, while the root waits for its child.
    locality.shutdown(&root).unwrap();
    locality.set_budget(1);
    locality.dispatch(clock.at(0));
    assert!(!locality.is_finished());
    let before = locality.stats();

    let err = locality.spawn(&root, Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::SupervisorShuttingDown);
    assert_eq!(locality.stats(), before);
    locality.set_budget(commutator::DEFAULT_BUDGET);
    locality.run_until_idle(clock.at(0));
    assert!(locality.is_finished());
}

/// A supervisor that tries to spawn a child while it shuts down.
struct LateSpawner {
    log: Log,
}

impl Actor for LateSpawner {
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        let result = ctx.spawn(Idle).finish().map(|_| ()).map_err(|e| e.code());
        self.log
            .push(format!("spawn in shutdown_start: {result:?}"));
    }
}

#[test]
fn a_supervisor_cannot_spawn_a_child_while_it_shuts_down() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let late = locality
        .spawn(&root, LateSpawner { log: log.clone() })
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    let actors = locality.stats().actors;

    locality.shutdown(&late).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(
        log.lines(),
        ["spawn in shutdown_start: Err(SupervisorShuttingDown)"]
    );
    assert_eq!(locality.stats().actors, actors - 1);
}

#[test]
fn spawning_under_a_supervisor_that_is_gone_fails_with_supervisor_shutting_down() {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    let sup = locality
        .spawn(&root, Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&sup).unwrap();
    locality.run_until_idle(clock.at(0));
    let before = locality.stats();

    let err = locality.spawn(&sup, Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::SupervisorShuttingDown);
    assert_eq!(locality.stats(), before);
}

#[test]
fn spawning_under_an_address_of_another_locality_fails_with_foreign_address() {
    let clock = Clock::new();
    let (mut here, _) = root_on_l0();
    let (mut there, their_root) = root_on("L1");
    here.run_until_idle(clock.at(0));
    there.run_until_idle(clock.at(0));
    let (before_here, before_there) = (here.stats(), there.stats());

    let err = here.spawn(&their_root, Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::ForeignAddress);
    assert_eq!(err.context(), Some("L1/root#1"));
    assert_eq!(here.stats(), before_here);
    assert_eq!(there.stats(), before_there);
}

#[test]
fn spawn_root_on_a_finished_locality_fails_with_locality_finished() {
    let (mut locality, _) = finished_locality();
    let before = locality.stats();

    let err = locality
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap_err();

    assert_eq!(err.code(), ErrorCode::LocalityFinished);
    assert_eq!(locality.stats(), before);
    assert!(locality.is_finished());
}

#[test]
fn locality_send_after_finish_hands_the_message_back() {
    let (mut locality, root) = finished_locality();
    let before = locality.stats();

    let err = locality.send(&root, String::from("too late")).unwrap_err();

    assert_eq!(err.error.code(), ErrorCode::LocalityFinished);
    assert_eq!(err.message, "too late");
    assert_eq!(locality.stats(), before);
}

#[test]
fn address_send_to_a_finished_locality_hands_the_message_back() {
    let (locality, root) = finished_locality();
    assert!(root.is_closed());

    let err = root.send(String::from("too late")).unwrap_err();
    assert_eq!(err.error.code(), ErrorCode::LocalityFinished);
    assert_eq!(err.message, "too late");

    // The same once the locality itself is dropped.
    let (mut other, other_root) = root_on("L1");
    other.run_until_idle(Clock::new().at(0));
    assert!(!other_root.is_closed());
    drop(other);
    assert!(other_root.is_closed());
    let err = other_root.send(7u32).unwrap_err();
    assert_eq!(
        (err.error.code(), err.message),
        (ErrorCode::LocalityFinished, 7)
    );
    drop(locality);
}

/// Sends a `u32` to another locality's address when told.
struct Forwarder {
    to: Address,
}

struct Forward;

impl Actor for Forwarder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_forward);
    }
}

impl Forwarder {
    fn on_forward(&mut self, _: &Forward, ctx: &mut Context<'_, Self>) {
        ctx.send(&self.to, 7u32);
    }
}

#[test]
fn a_send_from_an_actor_to_a_finished_locality_is_dropped_and_counted() {
    let clock = Clock::new();
    let (_gone, gone_root) = finished_locality();
    let (mut locality, root) = root_on("L1");
    let forwarder = locality
        .spawn(&root, Forwarder { to: gone_root })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.send(&forwarder, Forward).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(locality.stats().dropped_closed, 1);
}

#[test]
fn registering_with_a_reserved_token_fails_with_token_clash() {
    let poll = Poll::new().unwrap();
    let (mut locality, _) = root_on_l0();
    let before = locality.stats();

    for token in [RESERVED_TOKENS, RESERVED_TOKENS + 1, usize::MAX] {
        let err = locality
            .register(poll.registry(), Token(token))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::TokenClash);
        assert!(!locality.handles(Token(token)));
    }

    assert_eq!(locality.stats(), before);
    // Nothing was registered: a valid token still works.
    locality
        .register(poll.registry(), Token(RESERVED_TOKENS - 1))
        .unwrap();
    assert!(locality.handles(Token(RESERVED_TOKENS - 1)));
}

#[test]
fn registering_twice_fails_with_already_registered_on_poll() {
    let poll = Poll::new().unwrap();
    let other_poll = Poll::new().unwrap();
    let (mut locality, _) = root_on_l0();
    locality.register(poll.registry(), Token(3)).unwrap();
    let before = locality.stats();

    let err = locality.register(poll.registry(), Token(4)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
    let err = locality
        .register(other_poll.registry(), Token(3))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);

    assert_eq!(locality.stats(), before);
    assert!(locality.handles(Token(3)));
    assert!(!locality.handles(Token(4)));
}

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

#[test]
fn shutting_down_a_stale_address_fails_with_stale_address() {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    let leaf = locality.spawn(&root, Idle).name("leaf").finish().unwrap();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&leaf).unwrap();
    locality.run_until_idle(clock.at(0));
    let before = locality.stats();

    let err = locality.shutdown(&leaf).unwrap_err();

    assert_eq!(err.code(), ErrorCode::StaleAddress);
    assert_eq!(err.context(), Some("L0/leaf#2"));
    assert_eq!(locality.stats(), before);
}

#[test]
fn shutting_down_an_address_of_another_locality_fails_with_foreign_address() {
    let (mut locality, _) = root_on_l0();
    let (there, their_root) = root_on("L1");
    let (before_here, before_there) = (locality.stats(), there.stats());

    let err = locality.shutdown(&their_root).unwrap_err();

    assert_eq!(err.code(), ErrorCode::ForeignAddress);
    assert_eq!(locality.stats(), before_here);
    assert_eq!(there.stats(), before_there);
}

#[test]
fn running_a_system_with_no_actor_fails_with_invalid_argument() {
    let mut system = System::named("S").unwrap();
    let before = system.stats();

    let err = system.run().unwrap_err();

    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(system.stats(), before);
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

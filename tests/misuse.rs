//! Misuse of the API: every refused call returns its documented `ErrorCode`
//! and changes nothing.

mod common;

use common::{Clock, Log, Slot, root_on, root_on_l0};
use commutator::mio::net::TcpListener;
use commutator::mio::{Interest, Poll, Token};
use commutator::{
    Actor, ActorState, Address, Context, ErrorCode, Locality, RESERVED_TOKENS, Request, RequestId,
    RestartPolicy, Supervisor, SupervisorConfig, System,
};
use std::time::Duration;

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
    // A supervisor: it is asked to shut down by a message, in a later
    // dispatch step (a leaf here would be asked by a direct call, at once).
    locality
        .spawn(&root, Idle)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
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

/// Runs a probe the test sends it, inside its handler, and logs what the
/// probe returns: how the newer `Context` calls are refused.
struct Tester {
    log: Log,
}

type Probe = Box<dyn FnOnce(&mut Context<'_, Tester>) -> String + Send>;

/// A probe for a `Tester`.
struct Run(std::sync::Mutex<Option<Probe>>);

fn run(probe: impl FnOnce(&mut Context<'_, Tester>) -> String + Send + 'static) -> Run {
    Run(std::sync::Mutex::new(Some(Box::new(probe))))
}

impl Actor for Tester {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, r: &Run, ctx: &mut Context<'_, Self>| {
            let probe = r.0.lock().unwrap().take();
            if let Some(probe) = probe {
                me.log.push(probe(ctx));
            }
        });
    }
}

fn code<T>(r: commutator::Result<T>) -> String {
    format!("{:?}", r.map(drop).map_err(|e| e.code()))
}

/// A locality `L0` with a root and an operational `Tester` named `tester`.
fn with_tester(log: &Log) -> (Locality, Address, Address) {
    let (mut l, root) = root_on_l0();
    let tester = l
        .spawn(&root, Tester { log: log.clone() })
        .name("tester")
        .finish()
        .unwrap();
    l.run_until_idle(Clock::new().at(0));
    (l, root, tester)
}

/// Sends a probe to the tester and runs it; returns what it logged.
fn probe(
    l: &mut Locality,
    tester: &Address,
    f: impl FnOnce(&mut Context<'_, Tester>) -> String + Send + 'static,
    log: &Log,
) -> String {
    l.send(tester, run(f)).unwrap();
    l.run_until_idle(Clock::new().at(0));
    log.take().join("\n")
}

struct Ping;

impl Request for Ping {
    type Response = ();
}

/// Stats without the delivery counters (a probe is a delivered message).
fn stores(l: &Locality) -> [usize; 7] {
    let s = l.stats();
    [
        s.actors,
        s.addresses,
        s.subscriptions,
        s.timers,
        s.requests,
        s.io,
        s.queued,
    ]
}

#[test]
fn request_via_a_reply_address_of_another_locality_fails_with_invalid_argument() {
    let log = Log::new();
    let (mut l, root, tester) = with_tester(&log);
    let (there, their_root) = root_on("L1");
    let before = (stores(&l), there.stats());

    let target = root.clone();
    let said = probe(
        &mut l,
        &tester,
        move |ctx| {
            let e = ctx
                .request_via(&their_root, &target, Ping, Duration::from_millis(10))
                .unwrap_err();
            format!("{:?}: {}", e.code(), e.context().unwrap_or(""))
        },
        &log,
    );

    assert_eq!(
        said,
        "InvalidArgument: L1/root#1 is not an address of L0/tester#2"
    );
    assert_eq!((stores(&l), there.stats()), before, "no request, no timer");
}

#[test]
fn releasing_a_resource_never_acquired_fails_with_invalid_argument() {
    let log = Log::new();
    let (mut l, _, tester) = with_tester(&log);
    let before = stores(&l);

    let said = probe(
        &mut l,
        &tester,
        |ctx| {
            let first = code(ctx.release_resource(3));
            format!("{first}, held {}", ctx.resources_held(3))
        },
        &log,
    );

    assert_eq!(said, "Err(InvalidArgument), held 0");
    assert_eq!(stores(&l), before);
    assert_eq!(l.state_of(&tester), Some(ActorState::Operational));
}

#[test]
fn register_io_on_a_locality_without_a_poll_fails_with_not_registered() {
    let log = Log::new();
    let (mut l, _, tester) = with_tester(&log);
    let before = stores(&l);

    let said = probe(
        &mut l,
        &tester,
        |ctx| {
            let socket = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            code(ctx.register_io(socket, Interest::READABLE))
        },
        &log,
    );

    assert_eq!(said, "Err(NotRegistered)");
    assert_eq!(stores(&l), before, "no I/O slot is left behind");
    assert_eq!(l.state_of(&tester), Some(ActorState::Operational));
}

#[test]
fn spawn_on_a_finished_locality_fails_with_locality_finished_and_changes_nothing() {
    let clock = Clock::new();
    let (mut l, root) = root_on_l0();
    l.run_until_idle(clock.at(0));
    let gone = Locality::named("L1");
    let handle = gone.handle();
    drop(gone); // as when the other thread's System has ended
    assert!(handle.is_closed());
    let before = stores(&l);

    let err = l.spawn_on(&handle, &root, || Idle).finish().unwrap_err();

    assert_eq!(err.code(), ErrorCode::LocalityFinished);
    assert_eq!(err.context(), Some("L1"));
    assert_eq!(stores(&l), before);
    // No child record was left behind: numbering goes on, and the root's
    // shutdown does not wait for a child that will never report.
    let next = l.spawn(&root, Idle).name("next").finish().unwrap();
    assert_eq!(next.to_string(), "L0/next#2");
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(0));
    assert!(l.is_finished());
}

#[test]
fn spawn_on_under_a_foreign_or_non_supervisor_address_is_refused() {
    let clock = Clock::new();
    let (mut l, root) = root_on_l0();
    let leaf = l.spawn(&root, Idle).name("leaf").finish().unwrap();
    l.run_until_idle(clock.at(0));
    let (mut there, their_root) = root_on("L1");
    there.run_until_idle(clock.at(0));
    let handle = there.handle();
    let before = (stores(&l), there.stats());

    let foreign = l.spawn_on(&handle, &their_root, || Idle).finish();
    let leafy = l.spawn_on(&handle, &leaf, || Idle).finish();

    assert_eq!(foreign.unwrap_err().code(), ErrorCode::ForeignAddress);
    assert_eq!(leafy.unwrap_err().code(), ErrorCode::NotASupervisor);
    assert_eq!((stores(&l), there.stats()), before);
    assert!(!there.has_pending(), "nothing was posted to L1");
}

#[test]
fn supervision_settings_on_a_root_fail_with_invalid_argument() {
    let mut l = Locality::named("L0");
    let before = stores(&l);
    let attempts = [
        l.spawn_root(Supervisor)
            .restart(RestartPolicy::Always)
            .finish(),
        l.spawn_root(Supervisor).escalate_failure().finish(),
        l.spawn_root(Supervisor).autoshutdown_supervisor().finish(),
    ];
    for attempt in attempts {
        assert_eq!(attempt.unwrap_err().code(), ErrorCode::InvalidArgument);
    }
    assert_eq!(stores(&l), before);
    assert!(!l.is_finished(), "no root was anchored, so none went");
    let root = l.spawn_root(Supervisor).name("root").finish().unwrap();
    assert_eq!(root.to_string(), "L0/root#1", "no actor number was used up");
}

#[test]
fn a_restart_policy_without_a_factory_is_refused_from_a_context_too() {
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let spawner = l
        .spawn(&root, Tester { log: log.clone() })
        .name("spawner")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.run_until_idle(Clock::new().at(0));
    let before = stores(&l);

    let said = probe(
        &mut l,
        &spawner,
        |ctx| {
            let e = ctx
                .spawn(Idle)
                .restart(RestartPolicy::OnFailure)
                .finish()
                .unwrap_err();
            format!("{:?}", e.code())
        },
        &log,
    );

    assert_eq!(said, "InvalidArgument");
    assert_eq!(stores(&l), before);
    l.shutdown(&spawner).unwrap();
    l.run_until_idle(Clock::new().at(0));
    assert_eq!(l.state_of(&spawner), None, "no child record holds it");
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

/// Requests `Ping` from an address nobody serves, and hands out the id.
struct Asker {
    to: Address,
    id: Slot<RequestId>,
}

impl Actor for Asker {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let id = ctx.request(&self.to, Ping, Duration::from_secs(60));
        self.id.set(id);
    }
}

#[test]
fn cancelling_another_actors_request_returns_false_and_changes_nothing() {
    let log = Log::new();
    let (mut l, root, tester) = with_tester(&log);
    let id = Slot::new();
    l.spawn(
        &root,
        Asker {
            to: root.clone(),
            id: id.clone(),
        },
    )
    .finish()
    .unwrap();
    l.run_until_idle(Clock::new().at(0));
    let before = stores(&l);
    assert_eq!(l.stats().requests, 1);

    let theirs = id.get();
    let said = probe(
        &mut l,
        &tester,
        move |ctx| format!("{}", ctx.cancel_request(theirs)),
        &log,
    );

    assert_eq!(said, "false");
    assert_eq!(stores(&l), before, "the request is still pending");
}

#[test]
fn a_second_locality_on_one_poll_is_refused_and_changes_nothing() {
    let poll = Poll::new().unwrap();
    let (mut a, _) = root_on("A");
    let (mut b, _) = root_on("B");
    a.register(poll.registry(), Token(1)).unwrap();
    let before = b.stats();

    let err = b.register(poll.registry(), Token(2)).unwrap_err();

    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
    assert_eq!(b.stats(), before);
    assert!(!b.handles(Token(2)));
    assert!(a.handles(Token(1)), "the first one keeps its waker");
    let other = Poll::new().unwrap();
    b.register(other.registry(), Token(2)).unwrap();
    assert!(b.handles(Token(2)));
}

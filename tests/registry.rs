//! Registry: register under a name, discover by name (now, or waiting for the
//! name), link on discovery, names deregistered on shutdown.

mod common;

use common::{Clock, Log, Scripted, pos};
use commutator::*;

fn with_registry(policy: InitFailurePolicy) -> (Locality, Address) {
    let mut l = Locality::named("L0");
    let config = SupervisorConfig::default()
        .with_registry()
        .init_failure(policy);
    let root = l
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(config)
        .finish()
        .unwrap();
    (l, root)
}

fn discovering(
    name: &'static str,
    service: &'static str,
    wait: bool,
    link: bool,
    log: &Log,
) -> Scripted {
    Scripted::new(name, log).on_init(move |_, ctx| {
        let mut discovery = ctx.discover(service);
        if wait {
            discovery = discovery.wait();
        }
        if link {
            discovery = discovery.link();
        }
        discovery.then(|me: &mut Scripted, address, _| {
            me.say(&format!("found {address}"));
            me.peer = Some(address.clone());
        });
    })
}

#[test]
fn a_registered_name_is_discovered() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry(InitFailurePolicy::ShutdownSupervisor);
    l.spawn(&root, Scripted::new("bank", &log))
        .name("bank")
        .register_as("bank")
        .finish()
        .unwrap();
    l.spawn(&root, discovering("client", "bank", false, false, &log))
        .name("client")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    let trace = log.lines();
    assert!(
        trace.contains(&"client found L0/bank#3".to_string()),
        "{trace:#?}"
    );
    assert!(pos(&trace, "client found L0/bank#3") < pos(&trace, "client init_finish"));
    assert_eq!(l.state_of(&root), Some(ActorState::Operational));
    let s = l.stats();
    assert_eq!(s.requests, 0, "registry requests are settled");
}

#[test]
fn a_duplicate_name_fails_init_with_already_registered() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry(InitFailurePolicy::ShutdownSupervisor);
    l.spawn(&root, Scripted::new("one", &log))
        .name("one")
        .register_as("bank")
        .finish()
        .unwrap();
    l.spawn(&root, Scripted::new("two", &log))
        .name("two")
        .register_as("bank")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert!(l.is_finished());
    let reason = l.exit_reason().unwrap();
    assert_eq!(reason.root_cause().code(), ErrorCode::AlreadyRegistered);
    insta::assert_snapshot!(format!("{reason:#}"), @"
    child init failed (L0/root#1)
      <- init failed (L0/two#4)
      <- already registered (bank -> L0/one#3)
    ");
}

#[test]
fn discovering_an_unknown_name_fails_init_with_unknown_service() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry(InitFailurePolicy::ShutdownChild);
    let client = l
        .spawn(&root, discovering("client", "nobody", false, false, &log))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&client), None);
    assert_eq!(l.state_of(&root), Some(ActorState::Operational));
    assert!(!log.lines().iter().any(|line| line.contains("found")));
}

#[test]
fn a_waiting_discovery_holds_init_until_the_name_is_registered() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry(InitFailurePolicy::ShutdownSupervisor);
    let client = l
        .spawn(&root, discovering("client", "bank", true, false, &log))
        .name("client")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&client), Some(ActorState::Initializing));
    assert_eq!(
        l.state_of(&root),
        Some(ActorState::Initializing),
        "the tree waits for the client"
    );
    l.spawn(&root, Scripted::new("bank", &log))
        .name("bank")
        .register_as("bank")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(l.state_of(&client), Some(ActorState::Operational));
    assert!(log.lines().contains(&"client found L0/bank#4".to_string()));
}

#[test]
fn discovery_can_link_right_away() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry(InitFailurePolicy::ShutdownSupervisor);
    let bank = l
        .spawn(&root, Scripted::new("bank", &log))
        .name("bank")
        .register_as("bank")
        .finish()
        .unwrap();
    let client = l
        .spawn(&root, discovering("client", "bank", false, true, &log))
        .name("client")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&client), Some(ActorState::Operational));
    l.shutdown(&bank).unwrap();
    l.run_until_idle(clock.at(1));
    let trace = log.lines();
    assert_eq!(
        l.state_of(&client),
        None,
        "the linked client was asked to unlink"
    );
    assert!(pos(&trace, "client shutdown_finish") < pos(&trace, "bank shutdown_finish"));
}

#[test]
fn names_are_deregistered_when_their_actor_shuts_down() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry(InitFailurePolicy::ShutdownChild);
    let bank = l
        .spawn(&root, Scripted::new("bank", &log))
        .name("bank")
        .register_as("bank")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&bank).unwrap();
    l.run_until_idle(clock.at(1));
    let late = l
        .spawn(&root, discovering("late", "bank", false, false, &log))
        .name("late")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(
        l.state_of(&late),
        None,
        "the name is gone: discovery failed"
    );
    // ... and the name can be taken again.
    let again = l
        .spawn(&root, Scripted::new("again", &log))
        .register_as("bank")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(3));
    assert_eq!(l.state_of(&again), Some(ActorState::Operational));
}

#[test]
fn without_a_registry_registry_calls_fail_init_with_unknown_service() {
    let clock = Clock::new();
    let log = Log::new();
    let mut l = Locality::named("L0");
    let client = l
        .spawn_root(discovering("client", "bank", false, false, &log))
        .name("client")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&client), None);
    let reason = l.exit_reason().unwrap();
    assert_eq!(reason.root_cause().code(), ErrorCode::UnknownService);
    assert!(format!("{reason:#}").contains("no registry"), "{reason:#}");
}

#[test]
fn a_registry_that_shuts_down_answers_waiting_discoveries_with_unknown_service() {
    let clock = Clock::new();
    let log = Log::new();
    let mut l = Locality::named("L0");
    let registry = l
        .spawn_root(Registry::default())
        .name("registry")
        .finish()
        .unwrap();
    let config = SupervisorConfig::default().init_failure(InitFailurePolicy::ShutdownChild);
    let sup = l
        .spawn_root(Supervisor)
        .name("sup")
        .supervisor(config)
        .finish()
        .unwrap();
    let client = discovering("client", "bank", true, false, &log);
    let client = l
        .spawn(&sup, client)
        .name("client")
        .registry(&registry)
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&client), Some(ActorState::Initializing));
    l.shutdown(&registry).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(l.state_of(&client), None, "its discovery failed");
    assert_eq!(l.state_of(&sup), Some(ActorState::Operational));
}

#[test]
fn a_client_that_gives_up_waiting_cancels_its_discovery() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry(InitFailurePolicy::ShutdownChild);
    let client = l
        .spawn(&root, discovering("client", "bank", true, false, &log))
        .name("client");
    let client = client
        .init_timeout(std::time::Duration::from_millis(10))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.stats().requests, 1);
    l.run_until_idle(clock.at(10));
    assert_eq!(l.state_of(&client), None, "init timed out");
    assert_eq!(l.stats().requests, 0, "its discovery was cancelled");
    // A later registration answers nobody and breaks nothing.
    let bank = l
        .spawn(&root, Scripted::new("bank", &log))
        .register_as("bank")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(11));
    assert_eq!(l.state_of(&bank), Some(ActorState::Operational));
    assert_eq!(
        l.stats().dropped_late_replies,
        0,
        "the registry dropped the cancelled promise"
    );
}

#[test]
fn the_registry_a_supervisor_made_can_be_reached_and_spoken_to_directly() {
    use std::cell::RefCell;
    use std::rc::Rc;
    struct Named;
    impl Actor for Named {}
    /// Asks the registry it uses, directly, for "named".
    struct Asker(Rc<RefCell<Vec<String>>>);
    impl Actor for Asker {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me, r: &Response<Discover>, _| {
                let found = r.result().map(|a| a.actor_name().to_string());
                me.0.borrow_mut().push(format!("{found:?}"));
            });
        }
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            let registry = ctx.registry().cloned().expect("inherited");
            let ask = Discover {
                name: "named".into(),
                wait: true,
            };
            ctx.request(&registry, ask, std::time::Duration::from_secs(1));
        }
    }
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut l = Locality::new();
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default().with_registry())
        .finish()
        .unwrap();
    let registry = l.registry_of(&root).expect("made with_registry");
    assert_eq!(registry.actor_name(), "registry");
    l.spawn(&root, Named)
        .name("named")
        .register_as("named")
        .finish()
        .unwrap();
    l.spawn(&root, Asker(log.clone())).finish().unwrap();
    let now = l.now();
    l.run_until_idle(now);
    assert_eq!(*log.borrow(), ["Ok(\"named\")"]);
    let other = l.spawn_root(Named).finish().unwrap();
    assert_eq!(l.registry_of(&other), None);
}

//! Link: a client links to a server during init and waits for the answer; the
//! server outlives its clients; failed or refused links fail the client's init.

mod common;

use common::{Boss, Clock, Log, Scripted, pos, root_on, root_on_l0};
use commutator::*;

fn linking_to(server: &Address, name: &'static str, log: &Log) -> Scripted {
    let server = server.clone();
    Scripted::new(name, log).on_init(move |_, ctx| ctx.link(&server).unwrap())
}

#[test]
fn a_client_waits_in_initializing_until_the_server_confirms() {
    // Client and server on two localities of one thread: each step is visible.
    let clock = Clock::new();
    let log = Log::new();
    let (mut here, root_here) = root_on("A");
    let (mut there, root_there) = root_on("B");
    let server = there
        .spawn(&root_there, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    let client = here
        .spawn(&root_here, linking_to(&server, "client", &log))
        .name("client")
        .finish()
        .unwrap();
    there.run_until_idle(clock.at(0));
    here.run_until_idle(clock.at(0));
    assert_eq!(
        here.state_of(&client),
        Some(ActorState::Initializing),
        "the link request is on its way"
    );
    there.run_until_idle(clock.at(0)); // the server confirms
    assert_eq!(here.state_of(&client), Some(ActorState::Initializing));
    here.run_until_idle(clock.at(0));
    assert_eq!(here.state_of(&client), Some(ActorState::Operational));
}

#[test]
fn the_server_outlives_its_client_and_asks_it_to_unlink() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let server = l
        .spawn(&root, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    // The client lives under another supervisor: links work across supervisors.
    let other = l
        .spawn(&root, Supervisor)
        .name("other")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let client = l
        .spawn(&other, linking_to(&server, "client", &log))
        .name("client")
        .finish()
        .unwrap();
    let inspected = Log::new();
    let lines = inspected.clone();
    l.inspect_with(2, move |line| lines.push(line));
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&client), Some(ActorState::Operational));

    l.shutdown(&server).unwrap();
    l.run_until_idle(clock.at(1));
    let trace = log.lines();
    assert!(
        pos(&trace, "client shutdown_finish") < pos(&trace, "server shutdown_finish"),
        "{trace:#?}"
    );
    assert!(
        pos(&trace, "server shutdown_start") < pos(&trace, "client shutdown_start"),
        "{trace:#?}"
    );
    let traffic = inspected.lines();
    assert!(
        traffic
            .iter()
            .any(|l| l.contains("[UnlinkRequest] -> L0/client#4")),
        "{traffic:#?}"
    );
    assert_eq!(l.state_of(&client), None);
    assert_eq!(
        l.state_of(&other),
        Some(ActorState::Operational),
        "only the client went"
    );
}

#[test]
fn an_unlink_request_shuts_the_client_down_with_unlink_requested() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let server = l
        .spawn(&root, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    let sup = l
        .spawn(&root, Supervisor)
        .name("sup")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.spawn(&sup, linking_to(&server, "client", &log))
        .name("client")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    let inspected = Log::new();
    let lines = inspected.clone();
    l.inspect_with(2, move |line| lines.push(line));
    l.shutdown(&server).unwrap();
    l.run_until_idle(clock.at(1));
    let traffic = inspected.lines();
    assert!(
        traffic
            .iter()
            .any(|l| l == "L0: [ChildDown(unlink requested)] L0/client#4 -> L0/sup#3"),
        "{traffic:#?}"
    );
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(2));
    assert!(l.is_finished());
    let trace = log.lines();
    assert!(
        pos(&trace, "client shutdown_finish") < pos(&trace, "server shutdown_finish"),
        "{trace:#?}"
    );
}

#[test]
fn a_client_that_shuts_down_first_releases_its_server() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let server = l
        .spawn(&root, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    let client = l
        .spawn(&root, linking_to(&server, "client", &log))
        .name("client")
        .finish()
        .unwrap();
    let inspected = Log::new();
    let lines = inspected.clone();
    l.inspect_with(2, move |line| lines.push(line));
    l.run_until_idle(clock.at(0));
    l.shutdown(&client).unwrap();
    l.run_until_idle(clock.at(1));
    assert!(
        inspected
            .lines()
            .iter()
            .any(|l| l.contains("[UnlinkNotify] -> L0/server#2"))
    );
    inspected.take();
    l.shutdown(&server).unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(l.state_of(&server), None, "no client holds it");
    assert!(
        !inspected
            .lines()
            .iter()
            .any(|l| l.contains("UnlinkRequest")),
        "nobody to unlink"
    );
}

#[test]
fn a_link_to_a_gone_server_fails_the_clients_init() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let server = l
        .spawn(&root, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    let boss = l
        .spawn(&root, Boss::new("boss", &log))
        .name("boss")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&server).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(l.state_of(&server), None);
    l.spawn(&boss, linking_to(&server, "client", &log))
        .name("client")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(2));
    let trace = log.lines();
    assert!(
        trace.contains(
            &"boss child init client#4: init failed (L0/client#4)\n  <- link failed (L0/server#2)\
              \n  <- stale address (L0/server#2 is gone)"
                .to_string()
        ),
        "{trace:#?}"
    );
    // The supervisor was operational: the client went alone (issue 15, item 5).
    assert_eq!(l.state_of(&boss), Some(ActorState::Operational));
}

#[test]
fn a_link_to_a_server_that_is_shutting_down_is_refused() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    // A server that holds its shutdown with a resource, so it stays SHUTTING_DOWN.
    let server = Scripted::new("server", &log).on_shutdown(|_, ctx| ctx.acquire_resource(0));
    let server = l.spawn(&root, server).name("server").finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&server).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(l.state_of(&server), Some(ActorState::ShuttingDown));
    let config = SupervisorConfig::default().init_failure(InitFailurePolicy::ShutdownChild);
    let sup = l
        .spawn(&root, Supervisor)
        .name("sup")
        .supervisor(config)
        .finish()
        .unwrap();
    let client = l
        .spawn(&sup, linking_to(&server, "client", &log))
        .name("client")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(l.state_of(&client), None, "the client's init failed");
    assert_eq!(
        l.state_of(&sup),
        Some(ActorState::Operational),
        "and only the client went"
    );
    assert!(log.lines().contains(&"client shutdown_finish".to_string()));
}

#[test]
fn a_link_made_after_init_also_makes_the_server_outlive_the_client() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let server = l
        .spawn(&root, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    let s = server.clone();
    let client = Scripted::new("client", &log).on_start(move |_, ctx| ctx.link(&s).unwrap());
    let client = l.spawn(&root, client).name("client").finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&server).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        l.state_of(&client),
        None,
        "the server asked its late-linked client to unlink"
    );
    let trace = log.lines();
    assert!(pos(&trace, "client shutdown_finish") < pos(&trace, "server shutdown_finish"));
}

#[test]
fn an_actor_cannot_link_to_itself() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let narcissus = Scripted::new("narcissus", &log).on_init(|_, ctx| {
        let me = ctx.address().clone();
        ctx.link(&me).unwrap(); // refused later, as a link the server refuses
    });
    l.spawn(&root, narcissus)
        .name("narcissus")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert!(
        l.is_finished(),
        "its init failed, and with it the supervisor (default policy)"
    );
    let reason = format!("{:#}", l.exit_reason().unwrap());
    assert!(
        reason.ends_with(
            "<- link failed (L0/narcissus#2)\n  <- invalid argument (an actor cannot link to itself)"
        ),
        "{reason}"
    );
}

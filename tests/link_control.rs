//! The client side of a link decides (issue 15, items 3 and 4): what an
//! unlink does (shut down, release, defer), unlinking without shutting
//! down, "already linked"; and failures of a link or a discovery handed to
//! a callback instead of failing the actor.

mod common;

use common::{Clock, Log, Scripted, pos, root_on, root_on_l0};
use commutator::*;
use std::time::Duration;

/// A client whose `on_unlink` answers `action`, and which unlinks from
/// its server when it gets `Unlink` (a deferred unlink, answered later).
struct Client {
    server: Address,
    action: UnlinkAction,
    log: Log,
}

struct Unlink;

impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.link(&self.server).unwrap();
        ctx.subscribe(|me: &mut Self, _: &Unlink, ctx: &mut Context<'_, Self>| {
            let result = ctx.unlink(&me.server.clone()).map_err(|e| e.code());
            me.log.push(format!("client unlink {result:?}"));
        });
    }
    fn on_unlink(&mut self, server: &Address, _: &mut Context<'_, Self>) -> UnlinkAction {
        self.log
            .push(format!("client asked to unlink by {}", server.actor_name()));
        self.action
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.log.push("client shutdown_finish");
    }
}

/// A server and its client on one locality (or two: `far`), operational.
fn linked(action: UnlinkAction, far: bool) -> (Vec<Locality>, Address, Address, Log) {
    let log = Log::new();
    let (mut l0, root0) = root_on("L0");
    let server = l0
        .spawn(&root0, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    let mut ls = vec![l0];
    let root = if far {
        let (l1, root1) = root_on("L1");
        ls.push(l1);
        root1
    } else {
        root0
    };
    let client = Client {
        server: server.clone(),
        action,
        log: log.clone(),
    };
    let client = ls
        .last_mut()
        .unwrap()
        .spawn(&root, client)
        .name("client")
        .finish()
        .unwrap();
    run(&mut ls, 0);
    (ls, server, client, log)
}

fn run(ls: &mut [Locality], ms: u64) {
    let clock = Clock::new();
    for _ in 0..6 {
        for l in ls.iter_mut() {
            let now = l.now().max(clock.at(ms));
            l.run_until_idle(now);
        }
    }
}

fn state(ls: &[Locality], address: &Address) -> Option<ActorState> {
    ls.iter().find_map(|l| l.state_of(address))
}

#[test]
fn by_default_a_client_asked_to_unlink_shuts_down_before_its_server() {
    let (mut ls, server, client, log) = linked(UnlinkAction::Shutdown, false);
    ls[0].shutdown(&server).unwrap();
    run(&mut ls, 1);
    assert_eq!(state(&ls, &client), None);
    let trace = log.lines();
    assert!(pos(&trace, "client shutdown_finish") < pos(&trace, "server shutdown_finish"));
}

#[test]
fn a_client_that_releases_on_unlink_carries_on_and_its_server_goes() {
    for far in [false, true] {
        let (mut ls, server, client, log) = linked(UnlinkAction::Release, far);
        ls[0].shutdown(&server).unwrap();
        run(&mut ls, 1);
        assert_eq!(state(&ls, &server), None, "far: {far}");
        assert_eq!(state(&ls, &client), Some(ActorState::Operational));
        let trace = log.lines();
        assert!(
            pos(&trace, "client asked to unlink by server") < pos(&trace, "server shutdown_finish")
        );
        // Unlinked: a second unlink is an error.
        ls.last_mut().unwrap().send(&client, Unlink).unwrap();
        run(&mut ls, 2);
        assert!(
            log.lines()
                .contains(&"client unlink Err(InvalidArgument)".to_string())
        );
    }
}

#[test]
fn a_client_that_defers_holds_its_server_until_it_unlinks() {
    for far in [false, true] {
        let (mut ls, server, client, log) = linked(UnlinkAction::Defer, far);
        ls[0].shutdown(&server).unwrap();
        run(&mut ls, 1);
        assert_eq!(
            state(&ls, &server),
            Some(ActorState::ShuttingDown),
            "the server waits for the deferred unlink (far: {far})"
        );
        ls.last_mut().unwrap().send(&client, Unlink).unwrap();
        run(&mut ls, 2);
        assert_eq!(state(&ls, &server), None);
        assert_eq!(state(&ls, &client), Some(ActorState::Operational));
        assert!(log.lines().contains(&"client unlink Ok(())".to_string()));
    }
}

#[test]
fn a_client_unlinks_without_shutting_down_and_its_server_no_longer_waits() {
    let (mut ls, server, client, log) = linked(UnlinkAction::Shutdown, false);
    ls[0].send(&client, Unlink).unwrap();
    run(&mut ls, 1);
    assert_eq!(state(&ls, &client), Some(ActorState::Operational));
    ls[0].shutdown(&server).unwrap();
    run(&mut ls, 2);
    assert_eq!(state(&ls, &server), None);
    assert_eq!(state(&ls, &client), Some(ActorState::Operational));
    let trace = log.lines();
    assert!(trace.contains(&"client unlink Ok(())".to_string()));
    assert!(
        !trace.iter().any(|l| l.contains("asked to unlink")),
        "the server had nobody to ask: {trace:#?}"
    );
}

#[test]
fn linking_twice_to_the_same_server_is_already_linked() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let server = l
        .spawn(&root, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    let s = server.clone();
    let client = Scripted::new("client", &log)
        .on_init(move |me, ctx| {
            ctx.link(&s).unwrap();
            // Asked already, not yet answered: the same.
            let again = ctx.link(&s).map_err(|e| e.to_string());
            me.say(&format!("while asking: {again:?}"));
            me.peer = Some(s.clone());
        })
        .on_start(|me, ctx| {
            let server = me.peer.clone().unwrap();
            let again = ctx.link_then(&server, |_, _, _| {}).map_err(|e| e.code());
            me.say(&format!("once linked: {again:?}"));
        });
    l.spawn(&root, client).name("client").finish().unwrap();
    l.run_until_idle(clock.at(0));
    let trace = log.lines();
    assert!(
        trace.contains(
            &"client while asking: Err(\"already linked (L0/client#3 to L0/server#2)\")"
                .to_string()
        ),
        "{trace:#?}"
    );
    assert!(trace.contains(&"client once linked: Err(AlreadyLinked)".to_string()));
}

#[test]
fn a_failed_link_goes_to_its_callback_and_the_actor_carries_on() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let server = l
        .spawn(&root, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&server).unwrap();
    l.run_until_idle(clock.at(1));
    let s = server.clone();
    let client = Scripted::new("client", &log).on_init(move |_, ctx| {
        ctx.link_then(&s, |me: &mut Scripted, result, _| match result {
            Ok(server) => me.say(&format!("linked to {server}")),
            Err(e) => me.say(&format!("not linked: {e:#}")),
        })
        .unwrap();
    });
    let client = l.spawn(&root, client).name("client").finish().unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(l.state_of(&client), Some(ActorState::Operational));
    assert!(
        log.lines().contains(
            &"client not linked: link failed (L0/server#2)\n  <- stale address (L0/server#2 is gone)"
                .to_string()
        ),
        "{:#?}",
        log.lines()
    );
}

#[test]
fn a_link_callback_hears_the_server_and_init_waits_for_it() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut here, root_here) = root_on("A");
    let (mut there, root_there) = root_on("B");
    let server = there
        .spawn(&root_there, Scripted::new("server", &log))
        .name("server")
        .finish()
        .unwrap();
    let s = server.clone();
    let client = Scripted::new("client", &log).on_init(move |_, ctx| {
        ctx.link_then(&s, |me: &mut Scripted, result, _| {
            me.say(&format!("linked {:?}", result.map(|a| a.to_string())));
        })
        .unwrap();
    });
    let client = here
        .spawn(&root_here, client)
        .name("client")
        .finish()
        .unwrap();
    here.run_until_idle(clock.at(0));
    assert_eq!(here.state_of(&client), Some(ActorState::Initializing));
    there.run_until_idle(clock.at(0));
    here.run_until_idle(clock.at(0));
    assert_eq!(here.state_of(&client), Some(ActorState::Operational));
    let trace = log.lines();
    assert!(pos(&trace, "client linked Ok(\"B/server#2\")") < pos(&trace, "client init_finish"));
}

fn with_registry() -> (Locality, Address) {
    let mut l = Locality::named("L0");
    let root = l
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default().with_registry())
        .finish()
        .unwrap();
    (l, root)
}

/// Discovers `service` (waiting, linking if asked) and logs what it hears.
fn discovering(service: &'static str, wait: bool, link: bool, log: &Log) -> Scripted {
    Scripted::new("client", log).on_init(move |_, ctx| {
        let mut discovery = ctx.discover(service).on_error(|me: &mut Scripted, e, _| {
            me.say(&format!("failed: {e:#}"));
        });
        if wait {
            discovery = discovery.wait();
        }
        if link {
            discovery = discovery.link();
        }
        discovery.then(|me: &mut Scripted, address, _| me.say(&format!("found {address}")));
    })
}

#[test]
fn an_unknown_service_goes_to_on_error_and_init_goes_on() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry();
    let client = l
        .spawn(&root, discovering("nobody", false, false, &log))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&client), Some(ActorState::Operational));
    let trace = log.lines();
    assert!(
        pos(
            &trace,
            "client failed: unknown service (nobody: not registered)"
        ) < pos(&trace, "client init_finish")
    );
}

#[test]
fn a_discovery_without_a_registry_goes_to_on_error() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = root_on_l0();
    let client = l
        .spawn(&root, discovering("bank", false, false, &log))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&client), Some(ActorState::Operational));
    let trace = log.lines();
    assert!(
        pos(
            &trace,
            "client failed: unknown service (no registry: build a supervisor `with_registry()`)"
        ) < pos(&trace, "client init_finish")
    );
}

#[test]
fn a_discovery_that_times_out_goes_to_on_error() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry();
    // After init, a registry request waits as long as the init timeout.
    let client = Scripted::new("client", &log).on_start(|_, ctx| {
        ctx.discover("late")
            .wait()
            .on_error(|me: &mut Scripted, e, _| me.say(&format!("failed: {e}")))
            .then(|_: &mut Scripted, _, _| {});
    });
    let client = l
        .spawn(&root, client)
        .name("client")
        .init_timeout(Duration::from_millis(50))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    let t0 = l.now();
    l.run_until_idle(t0 + Duration::from_millis(50));
    assert_eq!(l.state_of(&client), Some(ActorState::Operational));
    let trace = log.lines();
    assert!(
        trace
            .iter()
            .any(|l| l.starts_with("client failed: request timeout")),
        "{trace:#?}"
    );
}

#[test]
fn a_discovered_server_that_cannot_be_linked_goes_to_on_error() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry();
    // The client discovers itself: it may not link to itself.
    let client = Scripted::new("client", &log).on_init(|_, ctx| {
        ctx.discover("me")
            .link()
            .on_error(|me: &mut Scripted, e, _| me.say(&format!("failed: {e:#}")))
            .then(|me: &mut Scripted, address, _| me.say(&format!("found {address}")));
    });
    let client = l
        .spawn(&root, client)
        .name("client")
        .register_as("me")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&client), Some(ActorState::Operational));
    assert_eq!(
        log.lines()[1..3],
        [
            "client found L0/client#3",
            "client failed: link failed (L0/client#3)\n  <- invalid argument (an actor cannot link to itself)"
        ]
    );
}

#[test]
fn without_on_error_a_failed_discovery_still_fails_the_init() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = with_registry();
    let client = Scripted::new("client", &log).on_init(|_, ctx| {
        ctx.discover("nobody").then(|_: &mut Scripted, _, _| {});
    });
    l.spawn(&root, client).name("client").finish().unwrap();
    l.run_until_idle(clock.at(0));
    assert!(
        l.is_finished(),
        "the default init-failure policy ends the root"
    );
    let reason = format!("{:#}", l.exit_reason().unwrap());
    assert!(
        reason.ends_with("<- unknown service (nobody: not registered)"),
        "{reason}"
    );
}

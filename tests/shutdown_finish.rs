//! Issue 14 ("Hostile input: no crash, no hang, bounded memory"), case 7:
//! nothing starts in `shutdown_finish`. Each test failed (or hung) before
//! its fix. Anything that could hang runs on a thread of its own under a
//! deadline, so a regression fails the test instead of stalling CI.

mod common;
use common::{Idle, within};
use commutator::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// A hook script of a [`Finisher`].
type Script = Box<dyn FnOnce(&mut Finisher, &mut Context<'_, Finisher>)>;

/// Runs a script of the test's in its `shutdown_finish` (or its
/// `shutdown_start`), and writes what it saw into `seen`.
#[derive(Default)]
struct Finisher {
    at_start: Option<Script>,
    at_finish: Option<Script>,
    seen: Rc<RefCell<Vec<String>>>,
    /// The [`Server`] beside it.
    server: Option<Address>,
}

impl Finisher {
    fn at_finish(script: impl FnOnce(&mut Finisher, &mut Context<'_, Finisher>) + 'static) -> Self {
        Finisher {
            at_finish: Some(Box::new(script)),
            ..Finisher::default()
        }
    }

    fn saw(&self, what: impl Into<String>) {
        self.seen.borrow_mut().push(what.into());
    }
}

impl Actor for Finisher {
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(script) = self.at_start.take() {
            script(self, ctx);
        }
    }
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(script) = self.at_finish.take() {
            script(self, ctx);
        }
    }
}

struct Ping;
impl Request for Ping {
    type Response = ();
}

/// Counts the requests (and cancellations) it gets; never answers.
#[derive(Default)]
struct Server {
    heard: Rc<RefCell<Vec<String>>>,
}
impl Actor for Server {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, _: &RequestMsg<Ping>, _: &mut Context<'_, Self>| {
                me.heard.borrow_mut().push("request".into());
            },
        );
        ctx.subscribe(
            |me: &mut Self, _: &CancelRequest<Ping>, _: &mut Context<'_, Self>| {
                me.heard.borrow_mut().push("cancel".into());
            },
        );
    }
}

/// What [`finish`] leaves: the locality, what the finisher saw and what
/// the server heard.
struct Finished {
    l: Locality,
    /// Outlives the locality registered on it: bound first where
    /// destructured (`..` would close it at once, and a poll another test
    /// makes meanwhile could get its descriptor while `l` still claims it).
    _poll: mio::Poll,
    seen: Vec<String>,
    heard: Vec<String>,
}

/// A root (with a registry) on `l`, on a poll, with a [`Server`] and the
/// finisher under it, made operational; then the finisher is shut down,
/// and everything stepped until idle (timers included, a minute on).
/// Inspection lines at level 2 go to `inspect` from the finisher's shutdown on.
fn finish(mut finisher: Finisher, inspect: Option<Rc<RefCell<Vec<String>>>>) -> Finished {
    let mut l = Locality::named("F");
    let poll = mio::Poll::new().unwrap();
    l.register(poll.registry(), mio::Token(0)).unwrap();
    let t0 = l.now();
    let root = l
        .spawn_root(Supervisor)
        .supervisor(
            SupervisorConfig::default()
                .with_registry()
                .init_failure(InitFailurePolicy::ShutdownChild),
        )
        .finish()
        .unwrap();
    let heard = Rc::new(RefCell::new(Vec::new()));
    let server = l
        .spawn(
            &root,
            Server {
                heard: heard.clone(),
            },
        )
        .name("server")
        .register_as("server")
        .finish()
        .unwrap();
    finisher.server = Some(server);
    let seen = finisher.seen.clone();
    let me = l
        .spawn(&root, finisher)
        .name("finisher")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.run_until_idle(t0);
    assert_eq!(l.state_of(&me), Some(ActorState::Operational));
    if let Some(lines) = inspect {
        l.inspect_with(2, move |line| lines.borrow_mut().push(line.to_string()));
    }
    l.shutdown(&me).unwrap();
    l.run_until_idle(t0);
    assert_eq!(l.state_of(&me), None, "the finisher is gone");
    l.run_until_idle(t0 + Duration::from_secs(60));
    let (seen, heard) = (seen.borrow().clone(), heard.borrow().clone());
    Finished {
        l,
        _poll: poll,
        seen,
        heard,
    }
}

/// The stores of `l` with only the root, its registry and the server left.
fn only_the_others_are_left(l: &Locality) {
    let stats = l.stats();
    assert_eq!(stats.actors, 3, "{stats:?}");
    assert_eq!(stats.timers, 0, "{stats:?}");
    assert_eq!(stats.requests, 0, "{stats:?}");
    assert_eq!(stats.addresses, 3, "{stats:?}");
}

#[test]
fn subscribe_in_shutdown_finish_subscribes_nothing_and_says_so() {
    within(Duration::from_secs(20), || {
        let finisher = Finisher::at_finish(|me, ctx| {
            let id = ctx.subscribe(|_: &mut Finisher, _: &Ping, _: &mut Context<'_, Finisher>| {});
            me.saw(format!("subscribe none={}", id.is_none()));
            me.saw(format!(
                "unsubscribe {:?}",
                ctx.unsubscribe(id).map_err(|e| e.code())
            ));
            let own = ctx.address().clone();
            let on = ctx.subscribe_on(&own, |_: &mut Finisher, _: &Ping, _| {});
            me.saw(format!("subscribe_on {:?}", on.map_err(|e| e.code())));
        });
        let Finished { _poll, l, seen, .. } = finish(finisher, None);
        assert_eq!(
            seen,
            [
                "subscribe none=true",
                "unsubscribe Err(UnknownSubscription)",
                "subscribe_on Err(ActorFinished)",
            ]
        );
        only_the_others_are_left(&l);
    });
}

#[test]
fn a_timer_started_in_shutdown_finish_is_none_and_never_fires() {
    within(Duration::from_secs(20), || {
        let fired = Rc::new(RefCell::new(false));
        let flag = fired.clone();
        let finisher = Finisher::at_finish(move |me, ctx| {
            let id = ctx.start_timer(Duration::from_secs(1), move |_, _, _| {
                *flag.borrow_mut() = true;
            });
            me.saw(format!(
                "timer none={} {}",
                id.is_none(),
                id == TimerId::NONE
            ));
            me.saw(format!("cancel {}", ctx.cancel_timer(id)));
        });
        let Finished { _poll, l, seen, .. } = finish(finisher, None);
        assert_eq!(seen, ["timer none=true true", "cancel false"]);
        assert!(!*fired.borrow());
        only_the_others_are_left(&l);
    });
}

#[test]
fn create_address_in_shutdown_finish_is_refused() {
    within(Duration::from_secs(20), || {
        let finisher = Finisher::at_finish(|me, ctx| {
            let made = ctx.create_address("late");
            me.saw(format!("create_address {:?}", made.map_err(|e| e.code())));
        });
        let Finished { _poll, l, seen, .. } = finish(finisher, None);
        assert_eq!(seen, ["create_address Err(ActorFinished)"]);
        only_the_others_are_left(&l);
    });
}

#[test]
fn no_request_leaves_an_actor_in_its_shutdown_finish() {
    within(Duration::from_secs(20), || {
        let finisher = Finisher::at_finish(|me, ctx| {
            let to = me.server.clone().unwrap();
            let id = ctx.request(&to, Ping, Duration::from_secs(1));
            me.saw(format!("request none={}", id.is_none()));
            me.saw(format!("cancel {}", ctx.cancel_request(id)));
            let own = ctx.address().clone();
            let via = ctx.request_via(&own, &to, Ping, Duration::from_secs(1));
            me.saw(format!("request_via {:?}", via.map_err(|e| e.code())));
        });
        let Finished {
            _poll,
            l,
            seen,
            heard,
            ..
        } = finish(finisher, None);
        assert_eq!(
            seen,
            [
                "request none=true",
                "cancel false",
                "request_via Err(ActorFinished)"
            ]
        );
        assert!(heard.is_empty(), "the server heard {heard:?}");
        only_the_others_are_left(&l);
    });
}

#[test]
fn subscribe_external_in_shutdown_finish_is_refused() {
    within(Duration::from_secs(20), || {
        let mut elsewhere = Locality::named("X");
        let there = elsewhere.spawn_root(Idle).finish().unwrap();
        let finisher = Finisher::at_finish(move |me, ctx| {
            let made = ctx.subscribe_external(&there, |_: &mut Finisher, _: &Tick, _| {});
            me.saw(format!(
                "subscribe_external {:?}",
                made.map_err(|e| e.code())
            ));
        });
        let Finished { _poll, l, seen, .. } = finish(finisher, None);
        assert_eq!(seen, ["subscribe_external Err(ActorFinished)"]);
        only_the_others_are_left(&l);
    });
}

#[derive(Clone)]
struct Tick;

#[test]
fn register_io_in_shutdown_finish_is_refused() {
    within(Duration::from_secs(20), || {
        let finisher = Finisher::at_finish(|me, ctx| {
            let socket = mio::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let guard = ctx.register_io(socket, mio::Interest::READABLE);
            me.saw(format!(
                "register_io {:?}",
                guard.map(drop).map_err(|e| e.code())
            ));
        });
        let Finished { _poll, l, seen, .. } = finish(finisher, None);
        assert_eq!(seen, ["register_io Err(ActorFinished)"]);
        assert_eq!(l.stats().io, 0);
    });
}

/// `link` fails there (`ActorFinished`), `discover` and `acquire_resource`
/// do nothing: no link request, no discovery leaves, no resource is counted; a spawn is refused.
#[test]
fn link_discover_acquire_and_spawn_in_shutdown_finish_start_nothing() {
    within(Duration::from_secs(20), || {
        let found = Rc::new(RefCell::new(false));
        let flag = found.clone();
        let finisher = Finisher::at_finish(move |me, ctx| {
            let server = me.server.clone().unwrap();
            me.saw(format!(
                "link {:?}",
                ctx.link(&server).map_err(|e| e.code())
            ));
            ctx.discover("server")
                .then(move |_, _, _| *flag.borrow_mut() = true);
            ctx.acquire_resource(7);
            me.saw(format!("resources {}", ctx.resources_held(7)));
            let spawned = ctx.spawn(Idle).finish();
            me.saw(format!("spawn {:?}", spawned.map_err(|e| e.code())));
        });
        let lines = Rc::new(RefCell::new(Vec::new()));
        let Finished { _poll, l, seen, .. } = finish(finisher, Some(lines.clone()));
        let lines = lines.borrow();
        for what in ["Discover", "LinkRequest"] {
            assert!(
                !lines.iter().any(|l| l.contains(what)),
                "{what} went out: {lines:#?}"
            );
        }
        assert!(!*found.borrow());
        assert_eq!(
            seen,
            [
                "link Err(ActorFinished)",
                "resources 0",
                "spawn Err(SupervisorShuttingDown)"
            ]
        );
        only_the_others_are_left(&l);
    });
}

/// A name registered once shutdown has started (after its names were
/// deregistered) used to stay registered to the dead address.
#[test]
fn a_name_registered_during_shutdown_is_not_left_behind() {
    within(Duration::from_secs(20), || {
        let mut l = Locality::named("R");
        let t0 = l.now();
        let root = l
            .spawn_root(Supervisor)
            .supervisor(
                SupervisorConfig::default()
                    .with_registry()
                    .init_failure(InitFailurePolicy::ShutdownChild),
            )
            .finish()
            .unwrap();
        let late = l.spawn(&root, LateRegistrar).finish().unwrap();
        l.run_until_idle(t0);
        l.shutdown(&late).unwrap();
        l.run_until_idle(t0);
        assert_eq!(l.state_of(&late), None);
        let found = Rc::new(RefCell::new(None));
        let finder = l
            .spawn(
                &root,
                Finder {
                    found: found.clone(),
                },
            )
            .finish()
            .unwrap();
        l.run_until_idle(t0);
        assert_eq!(*found.borrow(), None::<String>, "found a dead address");
        assert_eq!(
            l.state_of(&finder),
            None,
            "nothing to find: its init failed"
        );
    });
}

/// Registers `late` from a handler while it shuts down (a resource holds
/// its shutdown until then).
struct LateRegistrar;
impl Actor for LateRegistrar {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Tick, ctx: &mut Context<'_, Self>| {
            ctx.register_name("late");
            ctx.release_resource(1).unwrap();
        });
    }
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.acquire_resource(1);
        let me = ctx.address().clone();
        ctx.send(&me, Tick);
    }
}

/// Discovers `late` during init.
struct Finder {
    found: Rc<RefCell<Option<String>>>,
}
impl Actor for Finder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let found = self.found.clone();
        ctx.discover("late")
            .then(move |_, address, _| *found.borrow_mut() = Some(address.to_string()));
    }
}

//! Regressions found by a review of the source (November 2026): each test
//! failed before its fix.
use commutator::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

fn step(ls: &mut [&mut Locality]) {
    for _ in 0..20 {
        for l in ls.iter_mut() {
            let now = l.now();
            l.run_until_idle(now);
        }
    }
}

struct Good;
impl Actor for Good {}

struct FailsInit;
impl Actor for FailsInit {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.fail(Error::failure("no"));
    }
}

/// synchronize_start: a later child that fails its init leaves its
/// initialized sibling unstarted.
#[test]
fn a_synchronized_start_goes_on_when_a_sibling_fails_its_init() {
    let mut l = Locality::named("S");
    let root = l
        .spawn_root(Supervisor)
        .supervisor(
            SupervisorConfig::default()
                .synchronize_start(true)
                .init_failure(InitFailurePolicy::ShutdownChild),
        )
        .finish()
        .unwrap();
    step(&mut [&mut l]);
    assert_eq!(l.state_of(&root), Some(ActorState::Operational));
    let good = l.spawn(&root, Good).finish().unwrap();
    let _bad = l.spawn(&root, FailsInit).finish().unwrap();
    step(&mut [&mut l]);
    assert_eq!(
        l.state_of(&good),
        Some(ActorState::Operational),
        "good child never started"
    );
}

/// registry: a registration answered after its actor is gone stays.
#[derive(Default)]
struct Finder {
    found: Rc<RefCell<Option<String>>>,
}
impl Actor for Finder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let found = self.found.clone();
        ctx.discover("svc")
            .then(move |_, a, _| *found.borrow_mut() = Some(a.to_string()));
    }
}

#[test]
fn the_registry_forgets_the_name_of_an_actor_that_failed_its_init() {
    let mut l = Locality::named("R");
    let root = l
        .spawn_root(Supervisor)
        .supervisor(
            SupervisorConfig::default()
                .with_registry()
                .init_failure(InitFailurePolicy::ShutdownChild),
        )
        .finish()
        .unwrap();
    step(&mut [&mut l]);
    let dead = l
        .spawn(&root, FailsInit)
        .register_as("svc")
        .finish()
        .unwrap();
    step(&mut [&mut l]);
    assert_eq!(l.state_of(&dead), None);
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
    step(&mut [&mut l]);
    assert_eq!(
        l.state_of(&finder),
        None,
        "nothing to find under the name: its init failed"
    );
    let again = l.spawn(&root, Good).register_as("svc").finish().unwrap();
    step(&mut [&mut l]);
    assert_eq!(
        l.state_of(&again),
        Some(ActorState::Operational),
        "the name is free again"
    );
    assert!(
        found.borrow().is_none(),
        "discovered a dead address: {:?}",
        found.borrow()
    );
}

/// spawn_on this very locality: the child anchors it forever.
#[test]
fn a_child_spawned_on_its_own_locality_through_a_handle_does_not_keep_it_alive() {
    let mut l = Locality::named("O");
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let h = l.handle();
    l.spawn_on(&h, &root, || Good).finish().unwrap();
    drop(h);
    step(&mut [&mut l]);
    l.shutdown(&root).unwrap();
    step(&mut [&mut l]);
    assert!(l.is_finished(), "locality never finishes");
}

/// a panicking spawn_on factory unwinds out of the other locality's dispatch.
#[test]
fn a_panicking_factory_on_another_locality_is_a_failed_spawn() {
    let mut l0 = Locality::named("A");
    let mut l1 = Locality::named("B");
    let root = l0
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let h1 = l1.handle();
    l0.spawn_on(&h1, &root, || -> Good { panic!("factory boom") })
        .finish()
        .unwrap();
    drop(h1);
    let now = l0.now();
    l0.run_until_idle(now);
    let now = l1.now();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l1.run_until_idle(now)));
    assert!(r.is_ok(), "panic escaped L1's dispatch");
}

/// a contract violation on L0 leaves L0's children on L1 running forever.
struct Stuck;
impl Actor for Stuck {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.acquire_resource(1);
        ctx.shutdown();
    }
}

#[test]
fn a_contract_violation_shuts_down_the_supervisors_children_elsewhere() {
    let mut l0 = Locality::named("V0");
    let mut l1 = Locality::named("V1");
    let root = l0
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let h1 = l1.handle();
    l0.spawn_on(&h1, &root, || Good).finish().unwrap();
    drop(h1);
    step(&mut [&mut l0, &mut l1]);
    l0.spawn(&root, Stuck)
        .shutdown_timeout(Duration::from_millis(10))
        .finish()
        .unwrap();
    step(&mut [&mut l0, &mut l1]);
    let later = l0.now() + Duration::from_millis(20);
    l0.run_until_idle(later);
    assert!(l0.is_finished());
    step(&mut [&mut l1]);
    assert!(
        l1.is_finished(),
        "L1 waits forever for a child whose supervisor is gone"
    );
}

/// An actor's list of its I/O sources grew with every source it dropped.
/// (The list itself is not visible; what is: every dropped guard frees its
/// source at once, while the actor lives.)
#[test]
fn registering_and_dropping_many_sources_frees_each_at_once() {
    struct Churn {
        live: Rc<RefCell<Vec<usize>>>,
    }
    struct Count;
    impl Actor for Churn {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, _: &Count, ctx: &mut Context<'_, Self>| {
                for _ in 0..1000 {
                    let s = mio::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
                    let g = ctx.register_io(s, mio::Interest::READABLE).unwrap();
                    drop(g);
                }
                me.live.borrow_mut().push(0);
            });
        }
    }
    let poll = mio::Poll::new().unwrap();
    let mut l = Locality::named("IO");
    l.register(poll.registry(), mio::Token(0)).unwrap();
    let live = Rc::new(RefCell::new(Vec::new()));
    let churn = l.spawn_root(Churn { live: live.clone() }).finish().unwrap();
    step(&mut [&mut l]);
    l.send(&churn, Count).map_err(|e| e.error).unwrap();
    step(&mut [&mut l]);
    assert_eq!(live.borrow().len(), 1, "the thousand registrations ran");
    assert_eq!(l.stats().io, 0, "every dropped guard freed its source");
}

/// Duration::MAX as a timeout panics out of dispatch.
#[test]
fn an_init_timeout_of_duration_max_does_not_panic() {
    let mut l = Locality::named("T");
    l.spawn_root(Good)
        .init_timeout(Duration::MAX)
        .finish()
        .unwrap();
    let now = l.now();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l.run_until_idle(now)));
    assert!(
        r.is_ok(),
        "Builder::init_timeout(Duration::MAX) panicked in dispatch"
    );
}

#[test]
fn a_restart_delay_of_duration_max_does_not_panic() {
    struct Dies;
    impl Actor for Dies {
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.fail(Error::failure("x"));
        }
    }
    let mut l = Locality::named("T2");
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.spawn_with(&root, || Dies)
        .restart(RestartPolicy::Always)
        .restart_delay(Duration::MAX)
        .finish()
        .unwrap();
    let now = l.now();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l.run_until_idle(now)));
    assert!(
        r.is_ok(),
        "restart_delay(Duration::MAX) panicked in dispatch"
    );
}

/// A waiting discovery that times out stays in the registry.
#[test]
fn a_timed_out_waiting_discovery_leaves_no_promise_in_the_registry() {
    struct Waiter;
    impl Actor for Waiter {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.discover("never").wait().then(|_, _, _| {});
        }
    }
    let mut l = Locality::named("W");
    let root = l
        .spawn_root(Supervisor)
        .supervisor(
            SupervisorConfig::default()
                .with_registry()
                .init_failure(InitFailurePolicy::ShutdownChild),
        )
        .finish()
        .unwrap();
    step(&mut [&mut l]);
    l.spawn(&root, Waiter)
        .init_timeout(Duration::from_millis(5))
        .finish()
        .unwrap();
    step(&mut [&mut l]);
    let later = l.now() + Duration::from_millis(10);
    l.run_until_idle(later);
    // Register the name now: the registry answers a dead identity.
    l.spawn(&root, Good).register_as("never").finish().unwrap();
    let d0 = l.stats().dropped_stale;
    step(&mut [&mut l]);
    assert_eq!(l.stats().dropped_stale, d0, "a stale promise was answered");
}

/// ctx.request with Duration::MAX panicked (caught), and its pending request leaked.
#[test]
fn a_request_with_a_timeout_of_duration_max_leaks_nothing() {
    struct Q;
    impl Request for Q {
        type Response = ();
    }
    struct Asker;
    impl Actor for Asker {
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            let me = ctx.address().clone();
            ctx.request(&me, Q, Duration::MAX);
        }
    }
    let mut l = Locality::named("Q");
    let a = l.spawn_root(Asker).finish().unwrap();
    step(&mut [&mut l]);
    assert_eq!(
        l.state_of(&a),
        Some(ActorState::Operational),
        "no panic: the actor did not fail"
    );
    assert_eq!(l.stats().requests, 1, "pending, for a century");
    l.shutdown(&a).unwrap();
    step(&mut [&mut l]);
    assert_eq!(
        (l.stats().requests, l.stats().timers),
        (0, 0),
        "nothing leaked"
    );
}

/// A supervisor linked to its own child never finished its shutdown: now the link is refused.
#[test]
fn a_supervisor_cannot_link_to_its_own_child() {
    struct Sup {
        child: Option<Address>,
    }
    impl Actor for Sup {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            let c = ctx.spawn(Good).finish().unwrap();
            ctx.link(&c).unwrap();
            self.child = Some(c);
        }
    }
    let mut l = Locality::named("K");
    let root = l
        .spawn_root(Sup { child: None })
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    step(&mut [&mut l]);
    let _ = l.shutdown(&root); // its init failed already
    step(&mut [&mut l]);
    assert!(
        l.is_finished(),
        "no deadlock: the link was refused, so the supervisor's init failed"
    );
    let reason = format!("{:#}", l.exit_reason().unwrap());
    assert!(
        reason.contains("a supervisor cannot link to its own descendant"),
        "{reason}"
    );
}

#[test]
fn an_identity_can_be_removed_and_only_an_identity() {
    struct Maker;
    impl Actor for Maker {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            let extra = ctx.create_address("extra").unwrap();
            assert!(ctx.remove_address(&extra).is_ok());
            assert_eq!(
                ctx.remove_address(&extra).unwrap_err().code(),
                ErrorCode::InvalidArgument
            );
            let main = ctx.address().clone();
            assert_eq!(
                ctx.remove_address(&main).unwrap_err().code(),
                ErrorCode::InvalidArgument
            );
        }
    }
    let mut l = Locality::named("I");
    let before = l.stats().addresses;
    l.spawn_root(Maker).finish().unwrap();
    step(&mut [&mut l]);
    assert_eq!(
        l.stats().addresses,
        before + 1,
        "only the main address is left"
    );
}

#[test]
fn sends_from_outside_on_the_loop_thread_keep_their_order() {
    struct Seq(u32);
    #[derive(Default)]
    struct Listener {
        seen: Rc<RefCell<Vec<u32>>>,
    }
    impl Actor for Listener {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, s: &Seq, _: &mut Context<'_, Self>| {
                me.seen.borrow_mut().push(s.0)
            });
        }
    }
    let seen = Rc::new(RefCell::new(Vec::new()));
    let mut l = Locality::named("F");
    let a = l
        .spawn_root(Listener { seen: seen.clone() })
        .finish()
        .unwrap();
    step(&mut [&mut l]);
    a.send(Seq(1)).map_err(|e| e.error).unwrap(); // through the inbox
    l.send(&a, Seq(2)).map_err(|e| e.error).unwrap(); // straight into the queue
    step(&mut [&mut l]);
    assert_eq!(*seen.borrow(), [1, 2]);
}

#[test]
fn a_forwarder_to_a_finished_locality_removes_itself() {
    #[derive(Clone)]
    struct Tick;
    struct Hub;
    impl Actor for Hub {}
    struct Ear {
        hub: Address,
    }
    impl Actor for Ear {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            let hub = self.hub.clone();
            ctx.subscribe_external(&hub, |_: &mut Self, _: &Tick, _: &mut Context<'_, Self>| {})
                .unwrap();
        }
    }
    let mut owner = Locality::named("O2");
    let hub = owner.spawn_root(Hub).finish().unwrap();
    step(&mut [&mut owner]);
    let subs = owner.stats().subscriptions;
    {
        let mut far = Locality::named("E2");
        far.spawn_root(Ear { hub: hub.clone() }).finish().unwrap();
        step(&mut [&mut far, &mut owner]);
        assert_eq!(
            owner.stats().subscriptions,
            subs + 1,
            "the forwarder is installed"
        );
    } // `far` is dropped without unsubscribing: its inbox is closed
    owner.send(&hub, Tick).map_err(|e| e.error).unwrap();
    step(&mut [&mut owner]);
    assert_eq!(
        owner.stats().subscriptions,
        subs,
        "the forwarder removed itself"
    );
}

#[test]
fn a_restart_limit_over_no_time_is_refused() {
    let mut l = Locality::named("Z");
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let e = l
        .spawn_with(&root, || Good)
        .restart(RestartPolicy::Always)
        .restart_limit(3, Duration::ZERO)
        .finish()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

/// A poll closed while its locality lives left its descriptor's number
/// claimed: a new poll that got the number was refused with
/// `AlreadyRegisteredOnPoll` (about one parallel test run in ten failed so).
#[test]
fn a_new_poll_that_gets_a_closed_polls_descriptor_takes_a_locality() {
    use std::os::fd::AsRawFd;
    let mut first = Locality::named("first");
    let poll = mio::Poll::new().unwrap();
    first.register(poll.registry(), mio::Token(0)).unwrap();
    let number = poll.as_raw_fd();
    drop(poll);
    // The lowest free descriptor: the closed poll's number, unless a test
    // beside this one took it meanwhile (then try a few more).
    let mut polls = Vec::new();
    for _ in 0..8 {
        let again = mio::Poll::new().unwrap();
        let reused = again.as_raw_fd() == number;
        polls.push(again);
        if reused {
            break;
        }
    }
    let again = polls.last().unwrap();
    let mut second = Locality::named("second");
    second
        .register(again.registry(), mio::Token(0))
        .expect("another poll, whatever its number");
    drop((first, second));
}

/// Merging two branches (session 6): timers and requests left the actor's
/// rare part for lists in their sets, while a plain leaf's shutdown got a
/// short path for actors without a rare part, which then ended neither:
/// a plain requester's request stayed pending, and its timer armed.
struct Asks;
impl Request for Asks {
    type Response = ();
}

/// A plain leaf but for its `init_start`: one request, one timer.
struct PlainRequester {
    server: Address,
    fired: Rc<RefCell<u32>>,
}
impl Actor for PlainRequester {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let server = self.server.clone();
        ctx.request(&server, Asks, Duration::from_secs(60));
        ctx.start_timer(Duration::from_secs(30), |me: &mut Self, _, _| {
            *me.fired.borrow_mut() += 1;
        });
    }
}

/// Never answers; counts the cancels it hears of.
struct Silent(Rc<RefCell<u32>>);
impl Actor for Silent {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &RequestMsg<Asks>, _: &mut Context<'_, Self>| {});
        ctx.subscribe(
            |me: &mut Self, _: &CancelRequest<Asks>, _: &mut Context<'_, Self>| {
                *me.0.borrow_mut() += 1;
            },
        );
    }
}

#[test]
fn a_plain_requester_that_shuts_down_ends_its_requests_and_timers() {
    let mut l = Locality::named("R");
    let t0 = l.now();
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default());
    let root = root.finish().unwrap();
    let cancels = Rc::new(RefCell::new(0));
    let server = l.spawn(&root, Silent(cancels.clone())).finish().unwrap();
    let fired = Rc::new(RefCell::new(0));
    // The first of a type calls its default hooks (and learns that they
    // are); the second takes the short path.
    for round in 1..=2 {
        let requester = PlainRequester {
            server: server.clone(),
            fired: fired.clone(),
        };
        let requester = l.spawn(&root, requester).finish().unwrap();
        l.run_until_idle(t0);
        // The request's timeout counts as a timer.
        assert_eq!((l.stats().requests, l.stats().timers), (1, 2));
        l.shutdown(&requester).unwrap();
        l.run_until_idle(t0);
        assert_eq!(l.state_of(&requester), None);
        assert_eq!((l.stats().requests, l.stats().timers), (0, 0));
        assert_eq!(*cancels.borrow(), round, "the server hears of the cancel");
    }
    l.run_until_idle(t0 + Duration::from_secs(120));
    assert_eq!(*fired.borrow(), 0);
}

//! Hostile input against the core (issue 14, cases 3 and 6): a timer that
//! re-arms itself with no delay must not starve the locality, and a request
//! id from another locality must cancel nothing. Each test runs under a
//! deadline, so a regression fails instead of hanging.

mod common;
use common::within;
use commutator::prelude::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

/// Re-arms a zero-delay timer from its callback, forever.
struct Spinner {
    fired: Rc<Cell<u64>>,
}

impl Actor for Spinner {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::ZERO, Self::again);
    }
}

impl Spinner {
    fn again(&mut self, ctx: &mut Context<'_, Self>, _: TimerId) {
        self.fired.set(self.fired.get() + 1);
        ctx.start_timer(Duration::ZERO, Self::again);
    }
}

struct Ping;
struct Stop;

/// Counts pings; stops its supervisor on `Stop`.
struct Echo {
    pings: Rc<Cell<u64>>,
}

impl Actor for Echo {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {
            me.pings.set(me.pings.get() + 1)
        });
        ctx.subscribe(|_: &mut Self, _: &Stop, ctx: &mut Context<'_, Self>| {
            ctx.shutdown_supervisor()
        });
    }
}

#[test]
fn a_timer_that_rearms_itself_at_once_does_not_starve_the_queue() {
    within(Duration::from_secs(30), || {
        let (fired, pings) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let mut l = Locality::named("L0");
        let t0 = l.now();
        let root = l
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        l.spawn(
            &root,
            Spinner {
                fired: fired.clone(),
            },
        )
        .finish()
        .unwrap();
        let echo = l
            .spawn(
                &root,
                Echo {
                    pings: pings.clone(),
                },
            )
            .finish()
            .unwrap();
        l.set_budget(1000);
        l.dispatch(t0); // the tree comes up; the spinner starts spinning
        l.send(&echo, Ping).unwrap();
        l.dispatch(t0);
        assert_eq!(pings.get(), 1, "the ping was served beside the spinner");
        assert!(fired.get() > 0, "the spinner spins");
        assert!(l.has_pending(), "the spinner always has work");
        // A message from another thread is served too: the inbox is drained
        // between two rounds of timers.
        let echo_there = echo.clone();
        std::thread::spawn(move || echo_there.send(Stop).is_ok())
            .join()
            .unwrap();
        for _ in 0..100 {
            if l.is_finished() {
                break;
            }
            l.dispatch(t0);
        }
        assert!(l.is_finished(), "the stop from another thread got through");
    });
}

#[test]
fn a_timer_with_no_delay_fires_once_per_round_and_the_poll_timeout_says_so() {
    within(Duration::from_secs(30), || {
        let fired = Rc::new(Cell::new(0));
        let mut l = Locality::new();
        let t0 = l.now();
        l.spawn_root(Spinner {
            fired: fired.clone(),
        })
        .finish()
        .unwrap();
        let handled = l.dispatch(t0);
        assert!(handled <= commutator::DEFAULT_BUDGET, "dispatch returned");
        assert_eq!(l.poll_timeout(t0), Some(Duration::ZERO));
        let before = fired.get();
        l.set_budget(10);
        assert_eq!(l.dispatch(t0), 10, "a budget of 10 is 10 items");
        assert!(fired.get() > before && fired.get() <= before + 10);
    });
}

/// Sends one request that nobody answers, and records its id; on `Cancel`,
/// cancels the id it is given and records whether that worked.
struct Asker {
    server: Address,
    id: Rc<Cell<Option<RequestId>>>,
    log: Rc<RefCell<Vec<String>>>,
}

struct Cancel(RequestId);

struct Ask;
impl Request for Ask {
    type Response = ();
}

impl Actor for Asker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, c: &Cancel, ctx: &mut Context<'_, Self>| {
            let cancelled = ctx.cancel_request(c.0);
            me.log.borrow_mut().push(format!("cancel: {cancelled}"));
        });
        ctx.subscribe(
            |me: &mut Self, r: &Response<Ask>, _: &mut Context<'_, Self>| {
                me.log
                    .borrow_mut()
                    .push(format!("response: {:?}", r.error_code()));
            },
        );
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let id = ctx.request(&self.server, Ask, Duration::from_secs(60));
        self.id.set(Some(id));
    }
}

struct Silent;
impl Actor for Silent {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &RequestMsg<Ask>, _: &mut Context<'_, Self>| {});
    }
}

fn asker_on(
    name: &str,
    log: &Rc<RefCell<Vec<String>>>,
) -> (Locality, Address, Rc<Cell<Option<RequestId>>>) {
    let mut l = Locality::named(name);
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let server = l.spawn(&root, Silent).finish().unwrap();
    let id = Rc::new(Cell::new(None));
    let asker = Asker {
        server,
        id: id.clone(),
        log: log.clone(),
    };
    let asker = l.spawn(&root, asker).finish().unwrap();
    let now = l.now();
    l.run_until_idle(now);
    (l, asker, id)
}

#[test]
fn a_request_id_from_another_locality_cancels_nothing() {
    within(Duration::from_secs(30), || {
        let (log0, log1) = (Rc::default(), Rc::default());
        let (mut l0, asker0, id0) = asker_on("L0", &log0);
        let (_l1, _asker1, id1) = asker_on("L1", &log1);
        let (id0, id1) = (id0.get().unwrap(), id1.get().unwrap());
        assert_ne!(id0, id1, "ids of two localities differ");
        assert_ne!(
            id0.to_string(),
            id1.to_string(),
            "and print differently: {id0} {id1}"
        );
        // The asker on L0 is given L1's id (same slot and generation there).
        l0.send(&asker0, Cancel(id1)).unwrap();
        let now = l0.now();
        l0.run_until_idle(now);
        assert_eq!(
            *log0.borrow(),
            ["cancel: false"],
            "its own request is untouched"
        );
        assert_eq!(l0.stats().requests, 1);
        // Its own id still cancels its own request, once.
        l0.send(&asker0, Cancel(id0)).unwrap();
        l0.send(&asker0, Cancel(id0)).unwrap();
        l0.run_until_idle(now);
        assert_eq!(
            *log0.borrow(),
            [
                "cancel: false",
                "cancel: true",
                "cancel: false",
                "response: Some(Cancelled)"
            ]
        );
        assert_eq!(l0.stats().requests, 0);
    });
}

#[test]
fn request_ids_print_their_locality_slot_and_generation() {
    within(Duration::from_secs(30), || {
        let log = Rc::default();
        let (_l, _asker, id) = asker_on("L0", &log);
        let shown = id.get().unwrap().to_string();
        let parts: Vec<&str> = shown
            .strip_prefix("request#")
            .expect("request#...")
            .split('.')
            .collect();
        assert_eq!(parts.len(), 3, "{shown}");
        assert!(parts.iter().all(|p| p.parse::<u64>().is_ok()), "{shown}");
    });
}

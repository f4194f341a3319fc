//! Request/response: one response per request (reply, error, timeout, cancel),
//! late and duplicate replies dropped, deferred replies, replies to identities.

use commutator::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

struct Balance {
    account: u64,
}
impl Request for Balance {
    type Response = u64;
}

type Log = Rc<RefCell<Vec<String>>>;

/// How the bank answers each account number.
#[derive(Clone, Copy)]
enum Answer {
    Now(u64),
    Error,
    Never,
    Twice(u64),
    /// Keep the request, reply when the `Flush` message comes.
    Later(u64),
}

struct Flush;

struct Bank {
    answers: fn(u64) -> Answer,
    kept: Vec<(RequestMsg<Balance>, u64)>,
    log: Log,
}

impl Actor for Bank {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_balance);
        ctx.subscribe(Self::on_cancel);
        ctx.subscribe(Self::on_flush);
    }
}

impl Bank {
    fn on_balance(&mut self, q: &RequestMsg<Balance>, ctx: &mut Context<'_, Self>) {
        match (self.answers)(q.payload().account) {
            Answer::Now(v) => ctx.reply(q, v),
            Answer::Error => ctx.reply_error(q, Error::failure("no such account")),
            Answer::Never => {}
            Answer::Twice(v) => {
                ctx.reply(q, v);
                ctx.reply(q, v + 1);
            }
            Answer::Later(v) => self.kept.push((q.clone(), v)),
        }
    }
    fn on_cancel(&mut self, c: &CancelRequest<Balance>, _: &mut Context<'_, Self>) {
        // `request#<locality>.<slot>.<generation>`: the locality's number
        // depends on the other tests of this binary, so leave it out.
        let id = c.id().to_string();
        let (_, local) = id.split_once('.').expect("locality.slot.generation");
        self.log
            .borrow_mut()
            .push(format!("bank: cancelled request#{local}"));
    }
    fn on_flush(&mut self, _: &Flush, ctx: &mut Context<'_, Self>) {
        for (q, v) in std::mem::take(&mut self.kept) {
            ctx.reply(&q, v);
        }
    }
}

/// Sends the requests it is told to, logs every response.
struct Client {
    bank: Address,
    plan: Vec<(u64, u64)>, // (account, timeout ms)
    ids: Rc<RefCell<Vec<RequestId>>>,
    log: Log,
}

impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_response);
        ctx.subscribe(Self::on_cancel_order);
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        for &(account, ms) in &self.plan {
            let id = ctx.request(&self.bank, Balance { account }, Duration::from_millis(ms));
            self.ids.borrow_mut().push(id);
        }
    }
}

struct CancelOrder(RequestId, bool);

impl Client {
    fn on_response(&mut self, r: &Response<Balance>, ctx: &mut Context<'_, Self>) {
        let line = match r.result() {
            Ok(v) => format!(
                "account {}: {v} at {:?}",
                r.request().account,
                ms_since(ctx)
            ),
            Err(e) => format!(
                "account {}: {} at {:?}",
                r.request().account,
                e.code(),
                ms_since(ctx)
            ),
        };
        self.log.borrow_mut().push(line);
    }
    fn on_cancel_order(&mut self, c: &CancelOrder, ctx: &mut Context<'_, Self>) {
        let cancelled = ctx.cancel_request(c.0);
        assert_eq!(cancelled, c.1);
    }
}

thread_local! {
    static T0: RefCell<Option<Instant>> = const { RefCell::new(None) };
}

fn ms_since(ctx: &Context<'_, Client>) -> u128 {
    T0.with(|t| ctx.now().duration_since(t.borrow().unwrap()).as_millis())
}

struct World {
    locality: Locality,
    t0: Instant,
    root: Address,
    bank: Address,
    client: Address,
    ids: Rc<RefCell<Vec<RequestId>>>,
    log: Log,
}

impl World {
    fn new(answers: fn(u64) -> Answer, plan: Vec<(u64, u64)>) -> World {
        let mut locality = Locality::named("L0");
        let t0 = locality.now();
        T0.with(|t| *t.borrow_mut() = Some(t0));
        let log: Log = Rc::default();
        let ids = Rc::default();
        let root = locality
            .spawn_root(Supervisor)
            .name("root")
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let bank = locality
            .spawn(
                &root,
                Bank {
                    answers,
                    kept: Vec::new(),
                    log: log.clone(),
                },
            )
            .name("bank")
            .finish()
            .unwrap();
        let client = Client {
            bank: bank.clone(),
            plan,
            ids: Rc::clone(&ids),
            log: log.clone(),
        };
        let client = locality
            .spawn(&root, client)
            .name("client")
            .finish()
            .unwrap();
        locality.run_until_idle(t0);
        World {
            locality,
            t0,
            root,
            bank,
            client,
            ids,
            log,
        }
    }

    fn at(&mut self, ms: u64) {
        self.locality
            .run_until_idle(self.t0 + Duration::from_millis(ms));
    }

    fn log(&self) -> Vec<String> {
        self.log.borrow().clone()
    }

    fn id(&self, i: usize) -> RequestId {
        self.ids.borrow()[i]
    }
}

#[test]
fn a_reply_reaches_the_requester_with_the_original_request() {
    let w = World::new(|a| Answer::Now(a * 10), vec![(7, 50)]);
    assert_eq!(w.log(), ["account 7: 70 at 0"]);
    let s = w.locality.stats();
    assert_eq!(
        (s.requests, s.timers),
        (0, 0),
        "the request slot and its timer are freed"
    );
}

#[test]
fn the_server_can_reply_with_an_error() {
    let w = World::new(|_| Answer::Error, vec![(1, 50)]);
    assert_eq!(w.log(), ["account 1: actor failure at 0"]);
}

#[test]
fn no_reply_in_time_gives_exactly_one_timeout_at_the_deadline() {
    let mut w = World::new(|_| Answer::Never, vec![(1, 50)]);
    w.at(49);
    assert!(w.log().is_empty(), "nothing before the deadline");
    w.at(50);
    w.at(500);
    // The server is told that nobody waits any more; the requester gets the timeout.
    assert_eq!(
        w.log(),
        [
            "bank: cancelled request#0.0",
            "account 1: request timeout at 50"
        ]
    );
    assert_eq!(w.locality.stats().requests, 0);
}

#[test]
fn a_late_reply_is_dropped_silently() {
    let mut w = World::new(|_| Answer::Later(5), vec![(1, 50)]);
    w.at(50);
    w.at(60);
    w.locality.send(&w.bank, Flush).unwrap();
    w.at(70);
    // The server is told that nobody waits any more; the requester gets the timeout.
    assert_eq!(
        w.log(),
        [
            "bank: cancelled request#0.0",
            "account 1: request timeout at 50"
        ]
    );
    assert_eq!(w.locality.stats().dropped_late_replies, 1);
}

#[test]
fn a_second_reply_is_dropped_silently() {
    let w = World::new(|_| Answer::Twice(5), vec![(1, 50)]);
    assert_eq!(w.log(), ["account 1: 5 at 0"]);
    assert_eq!(w.locality.stats().dropped_late_replies, 1);
}

#[test]
fn a_deferred_reply_is_delivered() {
    let mut w = World::new(|_| Answer::Later(9), vec![(3, 50)]);
    w.at(20);
    assert!(w.log().is_empty());
    w.locality.send(&w.bank, Flush).unwrap();
    w.at(30);
    assert_eq!(w.log(), ["account 3: 9 at 30"]);
    w.at(100);
    assert_eq!(w.log().len(), 1, "the timer was cancelled by the reply");
}

#[test]
fn cancelling_gives_a_cancelled_response_and_tells_the_server() {
    let mut w = World::new(|_| Answer::Later(9), vec![(3, 50)]);
    let id = w.id(0);
    w.locality.send(&w.client, CancelOrder(id, true)).unwrap();
    w.at(10);
    assert_eq!(
        w.log(),
        [
            "bank: cancelled request#0.0",
            "account 3: request cancelled at 10"
        ]
    );
    w.locality.send(&w.client, CancelOrder(id, false)).unwrap(); // a second cancel is a no-op
    w.locality.send(&w.bank, Flush).unwrap();
    w.at(100);
    assert_eq!(
        w.log().len(),
        2,
        "no timeout, and the reply after the cancel is dropped"
    );
    assert_eq!(w.locality.stats().dropped_late_replies, 1);
}

#[test]
fn a_request_to_an_address_nobody_serves_times_out() {
    struct Nobody;
    impl Actor for Nobody {}
    let mut l = Locality::named("L0");
    let t0 = l.now();
    T0.with(|t| *t.borrow_mut() = Some(t0));
    let log: Log = Rc::default();
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let nobody = l.spawn(&root, Nobody).finish().unwrap();
    let client = Client {
        bank: nobody,
        plan: vec![(1, 30)],
        ids: Rc::default(),
        log: log.clone(),
    };
    l.spawn(&root, client).finish().unwrap();
    l.run_until_idle(t0);
    l.run_until_idle(t0 + Duration::from_millis(30));
    assert_eq!(*log.borrow(), ["account 1: request timeout at 30"]);
    assert_eq!(
        l.stats().dropped_unsubscribed,
        2,
        "the request itself was dropped, and so was the cancellation that followed the timeout"
    );
}

#[test]
fn concurrent_requests_complete_in_deadline_order() {
    let plan: Vec<(u64, u64)> = (0..100).map(|i| (i, 10 + (i * 37) % 100)).collect();
    let mut w = World::new(|_| Answer::Never, plan.clone());
    assert_eq!(w.locality.stats().requests, 100);
    for ms in 0..=200 {
        w.at(ms);
    }
    let mut expected: Vec<(u64, u64)> = plan;
    expected.sort_by_key(|&(account, ms)| (ms, account));
    let expected: Vec<String> = expected
        .iter()
        .map(|(a, ms)| format!("account {a}: request timeout at {ms}"))
        .collect();
    let timeouts: Vec<String> = w
        .log()
        .into_iter()
        .filter(|l| l.starts_with("account"))
        .collect();
    assert_eq!(timeouts, expected);
    assert_eq!(w.log().len(), 200, "and the bank was told of each one");
    assert_eq!(
        (w.locality.stats().requests, w.locality.stats().timers),
        (0, 0)
    );
}

#[test]
fn a_requester_that_shuts_down_cancels_its_requests_and_frees_everything() {
    let mut w = World::new(|_| Answer::Never, vec![(1, 50), (2, 60)]);
    assert_eq!(w.locality.stats().requests, 2);
    w.locality.shutdown(&w.client).unwrap();
    w.at(1);
    assert_eq!(
        w.log(),
        ["bank: cancelled request#0.0", "bank: cancelled request#1.1"]
    );
    let s = w.locality.stats();
    assert_eq!((s.requests, s.timers), (0, 0));
    w.locality.shutdown(&w.root).unwrap();
    w.at(2);
    assert!(w.locality.is_finished());
    let s = w.locality.stats();
    assert_eq!(
        (s.actors, s.addresses, s.subscriptions, s.timers, s.requests),
        (0, 0, 0, 0, 0)
    );
}

#[test]
fn a_requester_that_shuts_down_after_its_newest_request_was_answered_cancels_the_older_one() {
    // Account 1's request is the newest, answered first: the requester's
    // list of pending requests goes back to account 2's, which its
    // shutdown still finds (and account 1's it no longer does).
    let mut w = World::new(
        |account| match account {
            1 => Answer::Now(7),
            _ => Answer::Never,
        },
        vec![(2, 60), (1, 50)],
    );
    assert_eq!(w.log(), ["account 1: 7 at 0"]);
    assert_eq!(w.locality.stats().requests, 1);
    w.locality.shutdown(&w.client).unwrap();
    w.at(1);
    assert_eq!(
        w.log(),
        ["account 1: 7 at 0", "bank: cancelled request#0.0"]
    );
    let s = w.locality.stats();
    assert_eq!((s.requests, s.timers), (0, 0));
    w.at(100);
    assert_eq!(w.log().len(), 2, "no timeout after the requester went");
}

/// Sends two requests of one type with replies to two identities.
struct TwoWays {
    bank: Address,
    log: Log,
}

impl Actor for TwoWays {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let fast = ctx.create_address("fast").unwrap();
        let slow = ctx.create_address("slow").unwrap();
        ctx.subscribe_on(
            &fast,
            |me: &mut Self, r: &Response<Balance>, _: &mut Context<'_, Self>| {
                me.log
                    .borrow_mut()
                    .push(format!("fast got {:?}", r.result()));
            },
        )
        .unwrap();
        ctx.subscribe_on(
            &slow,
            |me: &mut Self, r: &Response<Balance>, _: &mut Context<'_, Self>| {
                me.log
                    .borrow_mut()
                    .push(format!("slow got {:?}", r.result()));
            },
        )
        .unwrap();
        let bank = self.bank.clone();
        ctx.request_via(
            &slow,
            &bank,
            Balance { account: 2 },
            Duration::from_millis(50),
        )
        .unwrap();
        ctx.request_via(
            &fast,
            &bank,
            Balance { account: 1 },
            Duration::from_millis(50),
        )
        .unwrap();
        let err = ctx
            .request_via(
                &bank,
                &bank,
                Balance { account: 1 },
                Duration::from_millis(50),
            )
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
    }
}

#[test]
fn replies_go_to_the_chosen_identity() {
    let mut l = Locality::named("L0");
    let t0 = l.now();
    let log: Log = Rc::default();
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let bank = Bank {
        answers: |a| Answer::Now(a * 100),
        kept: Vec::new(),
        log: log.clone(),
    };
    let bank = l.spawn(&root, bank).finish().unwrap();
    l.spawn(
        &root,
        TwoWays {
            bank,
            log: log.clone(),
        },
    )
    .finish()
    .unwrap();
    l.run_until_idle(t0);
    assert_eq!(*log.borrow(), ["slow got Ok(200)", "fast got Ok(100)"]);
    assert_eq!(l.stats().requests, 0);
}

/// Replies at once, and says so (and when it is told a request ended).
struct Teller {
    log: Log,
}

impl Actor for Teller {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |t: &mut Self, q: &RequestMsg<Balance>, ctx: &mut Context<'_, Self>| {
                ctx.reply(q, 7);
                t.log.borrow_mut().push("teller: replied".into());
            },
        );
        ctx.subscribe(
            |t: &mut Self, _: &CancelRequest<Balance>, _: &mut Context<'_, Self>| {
                t.log.borrow_mut().push("teller: told it ended".into());
            },
        );
    }
}

#[test]
fn a_timeout_due_while_the_reply_is_queued_is_the_one_response() {
    let mut l = Locality::named("L0");
    let t0 = l.now();
    T0.with(|t| *t.borrow_mut() = Some(t0));
    let log: Log = Rc::default();
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let teller = l
        .spawn(&root, Teller { log: log.clone() })
        .finish()
        .unwrap();
    let client = Client {
        bank: teller,
        plan: vec![(1, 50)],
        ids: Rc::default(),
        log: log.clone(),
    };
    l.spawn(&root, client).finish().unwrap();
    // One item at a time, until the teller has replied: the reply is queued.
    l.set_budget(1);
    for _ in 0..1000 {
        if !log.borrow().is_empty() {
            break;
        }
        l.dispatch(t0);
    }
    assert_eq!(*log.borrow(), ["teller: replied"]);
    // At the deadline the timeout fires first: it is the response, the
    // reply that comes after it is dropped, and the teller is told.
    l.run_until_idle(t0 + Duration::from_millis(50));
    assert_eq!(
        *log.borrow(),
        [
            "teller: replied",
            "teller: told it ended",
            "account 1: request timeout at 50"
        ]
    );
    assert_eq!(l.stats().dropped_late_replies, 1);
    assert_eq!(l.stats().requests, 0);
    l.run_until_idle(t0 + Duration::from_millis(500));
    assert_eq!(log.borrow().len(), 3, "exactly one response");
}

//! A request sent through an entity set or a pool that ends without a reply
//! (timeout, `cancel_request`): its `CancelRequest` reaches the entity or
//! worker that has it; one still held (its entity or worker not started) is
//! dropped and never delivered.

mod common;

use common::{Clock, Log, root_on_l0};
use commutator::{
    Actor, Address, CancelRequest, Context, EntitySet, EntityStats, Keyed, Locality, Pool, Request,
    RequestId, RequestMsg, Response, StatsHandle,
};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// Work for key `.0`, never answered unless `.1`.
struct Work(u32, bool);
impl Request for Work {
    type Response = u32;
}

/// Starts without delay.
struct Ping;

/// Keeps the work it gets (no reply unless asked to), logs cancellations.
/// With `hold_init`, its init waits that long (ms) for a resource.
struct Server {
    log: Log,
    hold_init: Option<u64>,
}

impl Actor for Server {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {});
        ctx.subscribe(
            |me: &mut Self, q: &RequestMsg<Work>, ctx: &mut Context<'_, Self>| {
                me.log
                    .push(format!("{} work {}", ctx.name(), q.payload().0));
                if q.payload().1 {
                    ctx.reply(q, q.payload().0);
                }
            },
        );
        ctx.subscribe(
            |me: &mut Self, c: &CancelRequest<Work>, ctx: &mut Context<'_, Self>| {
                me.log.push(format!("{} cancelled {}", ctx.name(), c.id()));
            },
        );
        if let Some(ms) = self.hold_init {
            ctx.acquire_resource(1);
            ctx.start_timer(Duration::from_millis(ms), |_: &mut Self, ctx, _| {
                ctx.release_resource(1).unwrap();
            });
        }
    }
}

/// Sends `Work` on `Ask` (timeout 100 ms), cancels its last request on
/// `Cancel`, logs the responses and the ids it got.
struct Client {
    to: Address,
    log: Log,
    last: Rc<Cell<Option<RequestId>>>,
}
struct Ask(u32, bool);
struct Cancel;

impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, a: &Ask, ctx: &mut Context<'_, Self>| {
            let id = ctx.request(&me.to, Work(a.0, a.1), Duration::from_millis(100));
            me.last.set(Some(id));
        });
        ctx.subscribe(|me: &mut Self, _: &Cancel, ctx: &mut Context<'_, Self>| {
            if let Some(id) = me.last.get() {
                assert!(ctx.cancel_request(id), "the request is pending");
            }
        });
        ctx.subscribe(
            |me: &mut Self, r: &Response<Work>, _: &mut Context<'_, Self>| {
                let line = match r.result() {
                    Ok(n) => format!("{}: {n}", r.request().0),
                    Err(e) => format!("{}: {:?}", r.request().0, e.code()),
                };
                me.log.push(format!("client {line}"));
            },
        );
    }
}

struct Fixture {
    l: Locality,
    clock: Clock,
    to: Address,
    client: Address,
    last: Rc<Cell<Option<RequestId>>>,
    log: Log,
}

impl Fixture {
    /// A client of `to`, spawned by `make` under a root on L0.
    fn new(make: impl FnOnce(&mut Locality, &Address, &Log) -> Address) -> Self {
        let (mut l, root) = root_on_l0();
        let clock = Clock { t0: l.now() };
        let log = Log::new();
        let to = make(&mut l, &root, &log);
        let last = Rc::default();
        let client = Client {
            to: to.clone(),
            log: log.clone(),
            last: Rc::clone(&last),
        };
        let client = l.spawn(&root, client).name("client").finish().unwrap();
        l.run_until_idle(clock.t0);
        Fixture {
            l,
            clock,
            to,
            client,
            last,
            log,
        }
    }

    fn at(&mut self, ms: u64) -> Vec<String> {
        self.l.run_until_idle(self.clock.at(ms));
        self.log.take()
    }

    fn last(&self) -> String {
        self.last.get().expect("a request was sent").to_string()
    }
}

fn set_fixture(hold_init: Option<u64>) -> (Fixture, StatsHandle<EntityStats>) {
    let stats = Rc::new(Cell::new(None));
    let kept = Rc::clone(&stats);
    let f = Fixture::new(move |l, root, log| {
        let log = log.clone();
        let set = EntitySet::new(move |_: &u32| Server {
            log: log.clone(),
            hold_init,
        })
        .route::<Ping>()
        .route_request::<Work>(|w| w.0);
        kept.set(Some(set.stats()));
        l.spawn(root, set).name("set").finish().unwrap()
    });
    (f, stats.take().unwrap())
}

#[test]
fn a_request_through_a_set_that_times_out_is_cancelled_at_its_entity() {
    let (mut f, _) = set_fixture(None);
    f.l.send(&f.client, Ask(7, false)).unwrap();
    assert_eq!(f.at(0), ["set/7 work 7"]);
    let id = f.last();
    assert_eq!(
        f.at(100),
        [
            format!("set/7 cancelled {id}"),
            "client 7: RequestTimeout".into()
        ]
    );
}

#[test]
fn a_request_through_a_set_cancelled_by_its_requester_is_cancelled_at_its_entity() {
    let (mut f, _) = set_fixture(None);
    f.l.send(&f.to, Keyed::new(3, Ping)).unwrap(); // key 3 is live first
    f.l.send(&f.client, Ask(3, false)).unwrap();
    assert_eq!(f.at(0), ["set/3 work 3"]);
    let id = f.last();
    f.l.send(&f.client, Cancel).unwrap();
    let lines = f.at(10);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines.contains(&format!("set/3 cancelled {id}")),
        "{lines:?}"
    );
    assert!(lines.contains(&"client 3: Cancelled".into()), "{lines:?}");
    assert_eq!(f.at(1000), Vec::<String>::new(), "nothing more");
}

#[test]
fn a_request_held_by_a_set_and_cancelled_never_reaches_its_entity() {
    let (mut f, stats) = set_fixture(Some(50)); // entities start at 50 ms
    f.l.send(&f.client, Ask(5, false)).unwrap();
    assert_eq!(f.at(0), Vec::<String>::new());
    assert_eq!(stats.get().buffered, 1);
    f.l.send(&f.client, Cancel).unwrap();
    assert_eq!(f.at(10), ["client 5: Cancelled"]);
    assert_eq!(stats.get().buffered, 0, "the held request is dropped");
    f.l.send(&f.client, Ask(5, true)).unwrap(); // the next one is served
    assert_eq!(f.at(60), ["set/5 work 5", "client 5: 5"]);
    assert_eq!(f.at(1000), Vec::<String>::new(), "nothing more");
}

#[test]
fn an_answered_request_through_a_set_is_not_cancelled() {
    let (mut f, _) = set_fixture(None);
    f.l.send(&f.client, Ask(2, true)).unwrap();
    assert_eq!(f.at(0), ["set/2 work 2", "client 2: 2"]);
    assert_eq!(f.at(1000), Vec::<String>::new(), "no cancel at the timeout");
}

fn pool_fixture(hold_init: Option<u64>) -> Fixture {
    Fixture::new(move |l, root, log| {
        let log = log.clone();
        let pool = Pool::local(move || Server {
            log: log.clone(),
            hold_init,
        })
        .size(1)
        .route_request::<Work>();
        l.spawn(root, pool).name("pool").finish().unwrap()
    })
}

#[test]
fn a_request_through_a_pool_cancelled_by_its_requester_is_cancelled_at_its_worker() {
    let mut f = pool_fixture(None);
    f.l.send(&f.client, Ask(1, false)).unwrap();
    assert_eq!(f.at(0), ["pool/0 work 1"]);
    let id = f.last();
    f.l.send(&f.client, Cancel).unwrap();
    let lines = f.at(10);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines.contains(&format!("pool/0 cancelled {id}")),
        "{lines:?}"
    );
    assert!(lines.contains(&"client 1: Cancelled".into()), "{lines:?}");
}

#[test]
fn a_request_held_by_a_pool_and_cancelled_never_reaches_a_worker() {
    let mut f = pool_fixture(Some(50)); // the worker starts at 50 ms
    f.l.send(&f.client, Ask(4, false)).unwrap();
    f.l.send(&f.client, Cancel).unwrap();
    assert_eq!(f.at(10), ["client 4: Cancelled"]);
    f.l.send(&f.client, Ask(6, true)).unwrap();
    let lines = f.at(60);
    assert_eq!(
        lines,
        ["pool/0 work 6", "client 6: 6"],
        "4 never reached it"
    );
}

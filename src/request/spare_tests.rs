//! Unit tests of the payloads' spare allocations: reused by the next
//! request of their type from any requester, for any reply address, with
//! or without drop glue; every payload dropped once, every response at the
//! right address with its own request.

use crate::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

/// A payload that counts its drops (it has drop glue).
struct Tracked {
    n: u32,
    drops: Arc<AtomicUsize>,
}
impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Relaxed);
    }
}
impl Request for Tracked {
    type Response = u32;
}

/// A payload without drop glue (its spare goes back unchecked).
struct Plain(u32);
impl Request for Plain {
    type Response = u32;
}

/// Serves both, with the number plus one.
struct Serves;
impl Actor for Serves {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, q: &RequestMsg<Tracked>, ctx| ctx.reply(q, q.payload().n + 1));
        ctx.subscribe(|_: &mut Self, q: &RequestMsg<Plain>, ctx| ctx.reply(q, q.payload().0 + 1));
    }
}

struct Go;

/// Requests one at a time from a shared count, replies going by turns to
/// its main address and to an identity, and hands the turn to the other
/// requester after every third response: each request reuses the spare of
/// the one before, made by the same requester or another, for the same
/// reply address or another. Payloads are `Tracked` and `Plain` by turns
/// of three.
struct Turns {
    server: Address,
    name: &'static str,
    left: Rc<Cell<u32>>,
    peers: Rc<RefCell<Vec<Address>>>,
    side: Option<Address>,
    drops: Arc<AtomicUsize>,
    log: Rc<RefCell<Vec<String>>>,
}
impl Turns {
    fn on_response(&mut self, at: &str, n: u32, r: Option<&u32>, ctx: &mut Context<'_, Self>) {
        let line = format!("{} {at} {n} -> {r:?}", self.name);
        self.log.borrow_mut().push(line);
        let next = match n % 3 {
            0 => self
                .peers
                .borrow()
                .iter()
                .find(|a| *a != ctx.address())
                .cloned(),
            _ => Some(ctx.address().clone()),
        };
        ctx.send(&next.expect("two requesters"), Go);
    }
    fn ask<R: Request>(&mut self, n: u32, q: R, ctx: &mut Context<'_, Self>) {
        if n % 4 < 2 {
            ctx.request(&self.server, q, SECOND);
        } else {
            let side = self.side.clone().expect("made at init");
            ctx.request_via(&side, &self.server, q, SECOND)
                .expect("its own identity");
        }
    }
}
impl Actor for Turns {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let side = ctx.create_address("side").expect("identity");
        ctx.subscribe(|t: &mut Self, r: &Response<Tracked>, ctx| {
            t.on_response("main", r.request().n, r.result().ok(), ctx)
        });
        ctx.subscribe(|t: &mut Self, r: &Response<Plain>, ctx| {
            t.on_response("main", r.request().0, r.result().ok(), ctx)
        });
        ctx.subscribe_on(&side, |t: &mut Self, r: &Response<Tracked>, ctx| {
            t.on_response("side", r.request().n, r.result().ok(), ctx)
        })
        .expect("subscribe");
        ctx.subscribe_on(&side, |t: &mut Self, r: &Response<Plain>, ctx| {
            t.on_response("side", r.request().0, r.result().ok(), ctx)
        })
        .expect("subscribe");
        self.side = Some(side);
        ctx.subscribe(|t: &mut Self, _: &Go, ctx| {
            let Some(n) = t.left.get().checked_sub(1) else {
                return;
            };
            t.left.set(n);
            if n % 6 < 3 {
                let drops = t.drops.clone();
                t.ask(n, Tracked { n, drops }, ctx);
            } else {
                t.ask(n, Plain(n), ctx);
            }
        });
    }
}

#[test]
fn spares_passed_between_requesters_and_reply_addresses_reply_to_the_right_one() {
    const COUNT: u32 = 48;
    let mut locality = Locality::new();
    let t0 = locality.now();
    let root = locality
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("root");
    let server = locality.spawn(&root, Serves).finish().expect("server");
    let (drops, log) = (Arc::new(AtomicUsize::new(0)), Rc::default());
    let (left, peers) = (Rc::new(Cell::new(COUNT)), Rc::default());
    for name in ["a", "b"] {
        let turns = Turns {
            server: server.clone(),
            name,
            left: Rc::clone(&left),
            peers: Rc::clone(&peers),
            side: None,
            drops: drops.clone(),
            log: Rc::clone(&log),
        };
        let address = locality.spawn(&root, turns).finish().expect("requester");
        peers.borrow_mut().push(address);
    }
    locality.run_until_idle(t0);
    let first = peers.borrow()[0].clone();
    locality.send(&first, Go).expect("go");
    locality.run_until_idle(t0);
    let mut name = "a";
    let mut expected = Vec::new();
    for n in (0..COUNT).rev() {
        let at = if n % 4 < 2 { "main" } else { "side" };
        expected.push(format!("{name} {at} {n} -> Some({})", n + 1));
        if n % 3 == 0 {
            name = if name == "a" { "b" } else { "a" };
        }
    }
    assert_eq!(*log.borrow(), expected);
    let tracked = (0..COUNT).filter(|n| n % 6 < 3).count();
    assert_eq!(drops.load(Relaxed), tracked, "each payload dropped once");
    let payloads = &locality.core_mut().payloads;
    assert!((1..=2).contains(&payloads.spares::<Tracked>()));
    assert!((1..=2).contains(&payloads.spares::<Plain>()));
    locality.run_until_idle(t0 + Duration::from_secs(5));
    assert_eq!(
        log.borrow().len(),
        COUNT as usize,
        "no timeout after a reply"
    );
}

/// Asks for one `Tracked`, and forwards its response to `to`.
struct Forwarder {
    server: Address,
    to: Address,
    drops: Arc<AtomicUsize>,
}
impl Actor for Forwarder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|f: &mut Self, _: &Response<Tracked>, ctx| {
            let to = f.to.clone();
            ctx.forward(&to).expect("in a handler");
        });
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let drops = self.drops.clone();
        ctx.request(&self.server, Tracked { n: 41, drops }, SECOND);
    }
}

/// Hears forwarded responses.
struct Hears(Rc<RefCell<Vec<String>>>);
impl Actor for Hears {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|h: &mut Self, r: &Response<Tracked>, _| {
            let line = format!("{} -> {:?}", r.request().n, r.result().ok());
            h.0.borrow_mut().push(line);
        });
    }
}

#[test]
fn a_forwarded_response_keeps_its_request_and_drops_it_once() {
    let mut locality = Locality::new();
    let t0 = locality.now();
    let root = locality
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("root");
    let server = locality.spawn(&root, Serves).finish().expect("server");
    let log = Rc::new(RefCell::new(Vec::new()));
    let to = locality
        .spawn(&root, Hears(log.clone()))
        .finish()
        .expect("hears");
    let drops = Arc::new(AtomicUsize::new(0));
    let forwarder = Forwarder {
        server,
        to,
        drops: drops.clone(),
    };
    locality
        .spawn(&root, forwarder)
        .finish()
        .expect("forwarder");
    locality.run_until_idle(t0);
    assert_eq!(*log.borrow(), ["41 -> Some(42)"]);
    assert_eq!(drops.load(Relaxed), 1);
    drop(locality);
    assert_eq!(drops.load(Relaxed), 1);
}

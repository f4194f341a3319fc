//! Unit tests of request payloads: every payload is dropped exactly once,
//! however its request ends (reply, timeout, cancel, requester gone, server
//! gone, locality finished), also when it ends while its payload is lent to
//! the `RequestMsg` of a server of the same locality.

use crate::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// A payload that counts its drops.
struct Counted {
    n: u32,
    drops: Arc<AtomicUsize>,
}
impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Relaxed);
    }
}
impl Request for Counted {
    type Response = u32;
}

/// What the server does with a request.
#[derive(Clone, Copy, PartialEq)]
enum Serve {
    Reply,
    Never,
    /// Keeps a clone, replies on `Flush`.
    Later,
}

struct Flush;

struct Server {
    serve: Serve,
    kept: Vec<RequestMsg<Counted>>,
    cancels: Rc<RefCell<u32>>,
}
impl Actor for Server {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|s: &mut Self, q: &RequestMsg<Counted>, ctx| match s.serve {
            Serve::Reply => ctx.reply(q, q.payload().n + 1),
            Serve::Never => {}
            Serve::Later => s.kept.push(q.clone()),
        });
        ctx.subscribe(|s: &mut Self, _: &CancelRequest<Counted>, _| {
            *s.cancels.borrow_mut() += 1;
        });
        ctx.subscribe(|s: &mut Self, _: &Flush, ctx| {
            for q in std::mem::take(&mut s.kept) {
                ctx.reply(&q, q.payload().n + 1);
            }
        });
    }
}

/// What the client does right after sending its requests.
#[derive(Clone, Copy, PartialEq)]
enum Then {
    Wait,
    /// Cancels them at once (their payloads are lent).
    Cancel,
    /// Shuts down at once (its requests end with it, payloads lent).
    Leave,
}

struct Go;
struct CancelAll;

struct Client {
    server: Address,
    count: u32,
    timeout: Duration,
    then: Then,
    ids: Vec<RequestId>,
    drops: Arc<AtomicUsize>,
    log: Rc<RefCell<Vec<String>>>,
}
impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|c: &mut Self, _: &Go, ctx| {
            for n in 0..c.count {
                let drops = c.drops.clone();
                let id = ctx.request(&c.server, Counted { n, drops }, c.timeout);
                c.ids.push(id);
            }
            match c.then {
                Then::Wait => {}
                Then::Cancel => {
                    for id in std::mem::take(&mut c.ids) {
                        assert!(ctx.cancel_request(id));
                    }
                }
                Then::Leave => ctx.shutdown(),
            }
        });
        ctx.subscribe(|c: &mut Self, _: &CancelAll, ctx| {
            for id in std::mem::take(&mut c.ids) {
                assert!(ctx.cancel_request(id));
            }
        });
        ctx.subscribe(|c: &mut Self, r: &Response<Counted>, _| {
            let line = match r.result() {
                Ok(v) => format!("{} ok {v}", r.request().n),
                Err(e) => format!("{} {}", r.request().n, e.code()),
            };
            c.log.borrow_mut().push(line);
        });
    }
}

struct Case {
    locality: Locality,
    t0: std::time::Instant,
    server: Address,
    client: Address,
    drops: Arc<AtomicUsize>,
    cancels: Rc<RefCell<u32>>,
    log: Rc<RefCell<Vec<String>>>,
}

const N: u32 = 3;

fn case(serve: Serve, then: Then, timeout: Duration) -> Case {
    let mut locality = Locality::new();
    let t0 = locality.now();
    let root = locality
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("root");
    let cancels = Rc::new(RefCell::new(0));
    let server = Server {
        serve,
        kept: Vec::new(),
        cancels: cancels.clone(),
    };
    let server = locality.spawn(&root, server).finish().expect("server");
    let (drops, log) = (Arc::new(AtomicUsize::new(0)), Rc::default());
    let client = Client {
        server: server.clone(),
        count: N,
        timeout,
        then,
        ids: Vec::new(),
        drops: drops.clone(),
        log: Rc::clone(&log),
    };
    let client = locality.spawn(&root, client).finish().expect("client");
    locality.run_until_idle(t0);
    Case {
        locality,
        t0,
        server,
        client,
        drops,
        cancels,
        log,
    }
}

impl Case {
    fn go(&mut self) {
        self.locality.send(&self.client, Go).expect("go");
        self.locality.run_until_idle(self.t0);
    }
    fn at(&mut self, secs: u64) {
        self.locality
            .run_until_idle(self.t0 + Duration::from_secs(secs));
    }
    fn drops(&self) -> usize {
        self.drops.load(Relaxed)
    }
    fn log(&self) -> Vec<String> {
        self.log.borrow().clone()
    }
    fn lent_ended(&mut self) -> usize {
        self.locality.core_mut().payloads.lent_ended()
    }
}

const SECOND: Duration = Duration::from_secs(1);

fn all(what: &str) -> Vec<String> {
    (0..N).map(|n| format!("{n} {what}")).collect()
}

#[test]
fn a_replied_payload_is_dropped_once_and_its_allocation_kept() {
    let mut c = case(Serve::Reply, Then::Wait, SECOND);
    c.go();
    let ok: Vec<String> = (0..N).map(|n| format!("{n} ok {}", n + 1)).collect();
    assert_eq!(c.log(), ok);
    assert_eq!(c.drops(), N as usize);
    assert!(c.locality.core_mut().payloads.spares::<Counted>() > 0);
    c.at(5); // no timeout comes after a reply
    assert_eq!(c.log().len(), N as usize);
    assert_eq!(*c.cancels.borrow(), 0);
}

#[test]
fn a_timed_out_payload_is_dropped_once() {
    let mut c = case(Serve::Never, Then::Wait, SECOND);
    c.go();
    assert_eq!(c.drops(), 0);
    c.at(1);
    assert_eq!(c.log(), all("request timeout"));
    assert_eq!(*c.cancels.borrow(), N);
    assert_eq!(c.drops(), N as usize);
}

#[test]
fn a_payload_whose_timeout_fires_while_it_is_lent_is_dropped_once() {
    // Sent with no time at all: the timeouts are due before the server
    // has seen the requests.
    let mut c = case(Serve::Reply, Then::Wait, Duration::ZERO);
    c.locality.send(&c.client, Go).expect("go");
    c.at(1);
    assert_eq!(c.log().len(), N as usize, "{:?}", c.log());
    assert_eq!(c.drops(), N as usize);
    assert_eq!(c.lent_ended(), 0);
}

#[test]
fn a_cancelled_payload_is_dropped_once_also_when_lent() {
    // Cancelled at once: the requests are still queued to the server.
    let mut c = case(Serve::Reply, Then::Cancel, SECOND);
    c.go();
    assert_eq!(c.log(), all("request cancelled"));
    assert_eq!(*c.cancels.borrow(), N);
    assert_eq!(c.drops(), N as usize);
    assert_eq!(c.locality.stats().dropped_late_replies, u64::from(N));
    assert_eq!(c.lent_ended(), 0);
    // Cancelled after the server has seen them (back in the record).
    let mut c = case(Serve::Never, Then::Wait, SECOND);
    c.go();
    c.locality.send(&c.client, CancelAll).expect("cancel");
    c.at(0);
    assert_eq!(c.log(), all("request cancelled"));
    assert_eq!(c.drops(), N as usize);
    c.at(5);
    assert_eq!(c.log().len(), N as usize);
}

#[test]
fn a_payload_whose_requester_is_gone_is_dropped_once() {
    // Gone at once, the payloads lent: the server is told all the same.
    let mut c = case(Serve::Never, Then::Leave, SECOND);
    c.go();
    assert!(c.log().is_empty());
    assert_eq!(*c.cancels.borrow(), N);
    assert_eq!(c.drops(), N as usize);
    assert_eq!(c.lent_ended(), 0);
    // Gone later, the payloads in the records.
    let mut c = case(Serve::Never, Then::Wait, SECOND);
    c.go();
    c.locality.shutdown(&c.client).expect("shutdown");
    c.at(0);
    assert!(c.log().is_empty());
    assert_eq!(*c.cancels.borrow(), N);
    assert_eq!(c.drops(), N as usize);
}

#[test]
fn a_payload_whose_timeout_fires_while_its_reply_is_queued_is_dropped_once() {
    let mut c = case(Serve::Reply, Then::Wait, SECOND);
    c.locality.set_budget(1);
    c.locality.send(&c.client, Go).expect("go");
    c.locality.dispatch(c.t0); // the client sends its requests
    c.locality.dispatch(c.t0); // the server replies to the first: queued
    assert!(c.log().is_empty());
    // The timeouts fire before the queue runs on: the first request's
    // reply is queued (its payload back in its record), the others' payloads
    // lent to their queued requests, whose handlers reply too. Each ends
    // with its timeout, and each reply is late.
    c.at(1);
    assert_eq!(c.log(), all("request timeout"));
    assert_eq!(*c.cancels.borrow(), N);
    assert_eq!(c.drops(), N as usize);
    assert_eq!(c.locality.stats().dropped_late_replies, u64::from(N));
    assert_eq!(c.lent_ended(), 0);
}

#[test]
fn a_kept_payload_is_dropped_once_after_a_deferred_reply() {
    let mut c = case(Serve::Later, Then::Wait, SECOND);
    c.go();
    assert_eq!(c.drops(), 0);
    c.locality.send(&c.server, Flush).expect("flush");
    c.at(0);
    let ok: Vec<String> = (0..N).map(|n| format!("{n} ok {}", n + 1)).collect();
    assert_eq!(c.log(), ok);
    assert_eq!(c.drops(), N as usize);
    // Kept past its timeout: dropped with the last holder.
    let mut c = case(Serve::Later, Then::Wait, SECOND);
    c.go();
    c.at(1);
    assert_eq!(c.log(), all("request timeout"));
    assert_eq!(c.drops(), 0, "the server still keeps them");
    c.locality.send(&c.server, Flush).expect("flush");
    c.at(1);
    assert_eq!(c.drops(), N as usize);
    assert_eq!(c.locality.stats().dropped_late_replies, u64::from(N));
}

#[test]
fn a_payload_whose_server_is_gone_is_dropped_once() {
    let mut c = case(Serve::Reply, Then::Wait, SECOND);
    c.locality.shutdown(&c.server).expect("shutdown");
    c.at(0);
    c.go();
    assert!(c.log().is_empty());
    c.at(1);
    assert_eq!(c.log(), all("request timeout"));
    assert_eq!(c.drops(), N as usize);
}

#[test]
fn payloads_pending_when_the_locality_finishes_are_dropped_once() {
    // Lent (still queued to the server) ...
    let mut c = case(Serve::Never, Then::Wait, SECOND);
    c.locality.send(&c.client, Go).expect("go");
    c.locality.dispatch(c.t0); // the client runs; the requests stay queued
    let drops = c.drops.clone();
    drop(c);
    assert_eq!(drops.load(Relaxed), N as usize);
    // ... and in their records.
    let mut c = case(Serve::Never, Then::Wait, SECOND);
    c.go();
    let drops = c.drops.clone();
    drop(c);
    assert_eq!(drops.load(Relaxed), N as usize);
}

/// Asks itself, and cancels the request while handling it (its payload
/// lent), before replying (the reply is late when made) or after (the
/// reply, made in time, is late when it comes).
struct Myself {
    reply_first: bool,
    drops: Arc<AtomicUsize>,
    log: Rc<RefCell<Vec<String>>>,
}
impl Actor for Myself {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|m: &mut Self, q: &RequestMsg<Counted>, ctx| {
            if m.reply_first {
                ctx.reply(q, 7);
            }
            assert!(ctx.cancel_request(q.id()));
            if !m.reply_first {
                ctx.reply(q, 7); // late: dropped
            }
        });
        ctx.subscribe(|m: &mut Self, r: &Response<Counted>, _| {
            let code = r.error_code().map(|c| c.to_string());
            m.log.borrow_mut().push(format!("{code:?}"));
        });
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.address().clone();
        let drops = self.drops.clone();
        ctx.request(&me, Counted { n: 0, drops }, SECOND);
    }
}

#[test]
fn a_request_cancelled_by_its_own_server_while_lent_is_answered_once() {
    for reply_first in [false, true] {
        let mut locality = Locality::new();
        let t0 = locality.now();
        let (drops, log) = (
            Arc::new(AtomicUsize::new(0)),
            Rc::new(RefCell::new(Vec::new())),
        );
        let myself = Myself {
            reply_first,
            drops: drops.clone(),
            log: log.clone(),
        };
        locality.spawn_root(myself).finish().expect("spawn");
        locality.run_until_idle(t0);
        locality.run_until_idle(t0 + Duration::from_secs(5));
        assert_eq!(*log.borrow(), [r#"Some("request cancelled")"#]);
        assert_eq!(drops.load(Relaxed), 1);
        assert_eq!(locality.stats().dropped_late_replies, 1);
        assert_eq!(locality.core_mut().payloads.lent_ended(), 0);
    }
}

/// A second payload type, for a client that alternates two (its drop
/// counted by the `Counted` inside it).
struct Other {
    text: String,
    _counted: Counted,
}
impl Request for Other {
    type Response = usize;
}

/// Requests one at a time, a `Counted` and an `Other` by turns, each sent
/// when the last one's response came back (so the spare given back last is
/// always of the other type).
struct Alternating {
    server: Address,
    left: u32,
    drops: Arc<AtomicUsize>,
    log: Rc<RefCell<Vec<String>>>,
}
impl Alternating {
    fn next(&mut self, ctx: &mut Context<'_, Self>) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let drops = self.drops.clone();
        if self.left.is_multiple_of(2) {
            ctx.request(
                &self.server,
                Counted {
                    n: self.left,
                    drops,
                },
                SECOND,
            );
        } else {
            let text = "x".repeat(self.left as usize);
            let _counted = Counted { n: 0, drops };
            ctx.request(&self.server, Other { text, _counted }, SECOND);
        }
    }
}
impl Actor for Alternating {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|s: &mut Self, _: &Go, ctx| s.next(ctx));
        ctx.subscribe(|s: &mut Self, r: &Response<Counted>, ctx| {
            let line = format!("{} -> {:?}", r.request().n, r.result().ok());
            s.log.borrow_mut().push(line);
            s.next(ctx);
        });
        ctx.subscribe(|s: &mut Self, r: &Response<Other>, ctx| {
            let line = format!("{} -> {:?}", r.request().text.len(), r.result().ok());
            s.log.borrow_mut().push(line);
            s.next(ctx);
        });
    }
}

struct Both;
impl Actor for Both {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, q: &RequestMsg<Counted>, ctx| ctx.reply(q, q.payload().n + 1));
        ctx.subscribe(|_: &mut Self, q: &RequestMsg<Other>, ctx| {
            ctx.reply(q, q.payload().text.len() * 2)
        });
    }
}

#[test]
fn two_payload_types_by_turns_each_get_their_own_replies_and_keep_few_spares() {
    const ROUNDS: u32 = 40;
    let mut locality = Locality::new();
    let t0 = locality.now();
    let root = locality
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("root");
    let server = locality.spawn(&root, Both).finish().expect("server");
    let (drops, log) = (Arc::new(AtomicUsize::new(0)), Rc::default());
    let client = Alternating {
        server,
        left: ROUNDS,
        drops: drops.clone(),
        log: Rc::clone(&log),
    };
    let client = locality.spawn(&root, client).finish().expect("client");
    locality.run_until_idle(t0);
    locality.send(&client, Go).expect("go");
    locality.run_until_idle(t0);

    let expected: Vec<String> = (0..ROUNDS)
        .rev()
        .map(|left| match left % 2 {
            0 => format!("{left} -> Some({})", left + 1),
            _ => format!("{left} -> Some({})", left * 2),
        })
        .collect();
    assert_eq!(*log.borrow(), expected, "each type its own reply, in turn");
    assert_eq!(
        drops.load(Relaxed),
        ROUNDS as usize,
        "each payload dropped once"
    );
    // The spare given back last was always of the other type: each type's
    // spares are kept for it (not piled up: one or two each).
    let payloads = &locality.core_mut().payloads;
    assert!((1..=2).contains(&payloads.spares::<Counted>()));
    assert!((1..=2).contains(&payloads.spares::<Other>()));
}

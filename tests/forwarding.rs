//! Forwarding a received message to another address after its delivery
//! here (rotor's redirect): moved, not copied, in order.

use commutator::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;

type Log = Rc<RefCell<Vec<String>>>;

/// Not `Clone`: forwarding must move it.
struct Job(u32);

/// Logs each job, and forwards it to `next` (if any).
struct Stage {
    name: &'static str,
    next: Option<Address>,
    log: Log,
}

impl Actor for Stage {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, job: &Job, ctx: &mut Context<'_, Self>| {
            me.log.borrow_mut().push(format!("{} {}", me.name, job.0));
            if let Some(next) = me.next.clone() {
                ctx.forward(&next).unwrap();
                let again = ctx.forward(&next).unwrap_err();
                assert_eq!(again.code(), ErrorCode::InvalidArgument);
            }
        });
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.address().clone();
        let outside = ctx.forward(&me).unwrap_err();
        assert_eq!(outside.code(), ErrorCode::InvalidArgument, "not in a hook");
    }
}

#[test]
fn a_forwarded_message_reaches_the_next_address_after_local_delivery_in_order() {
    let log: Log = Rc::default();
    let mut l = Locality::new();
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let last = Stage {
        name: "last",
        next: None,
        log: log.clone(),
    };
    let last = l.spawn(&root, last).finish().unwrap();
    let first = Stage {
        name: "first",
        next: Some(last),
        log: log.clone(),
    };
    let first = l.spawn(&root, first).finish().unwrap();
    let now = l.now();
    l.run_until_idle(now);
    for n in 0..3 {
        l.send(&first, Job(n)).unwrap();
    }
    l.run_until_idle(now);
    let log = log.borrow();
    let firsts: Vec<&String> = log.iter().filter(|l| l.starts_with("first")).collect();
    let lasts: Vec<&String> = log.iter().filter(|l| l.starts_with("last")).collect();
    assert_eq!(firsts, ["first 0", "first 1", "first 2"]);
    assert_eq!(lasts, ["last 0", "last 1", "last 2"], "moved on, in order");
    assert_eq!(l.stats().dropped_unsubscribed, 0);
}

/// A request handed on to a worker, which replies: the reply goes to the
/// requester (the request carries its reply address).
struct Square(u64);
impl Request for Square {
    type Response = u64;
}

struct Front {
    worker: Address,
}
impl Actor for Front {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, _: &RequestMsg<Square>, ctx: &mut Context<'_, Self>| {
                ctx.forward(&me.worker).unwrap();
            },
        );
    }
}

struct Worker;
impl Actor for Worker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Square>, ctx: &mut Context<'_, Self>| {
                ctx.reply(q, q.payload().0 * q.payload().0);
            },
        );
    }
}

struct Client {
    front: Address,
    log: Log,
}
impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, r: &Response<Square>, _: &mut Context<'_, Self>| {
                me.log.borrow_mut().push(format!("{:?}", r.result()));
            },
        );
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.request(&self.front, Square(7), std::time::Duration::from_secs(1));
    }
}

#[test]
fn a_forwarded_request_is_answered_by_the_next_server() {
    let log: Log = Rc::default();
    let mut l = Locality::new();
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let worker = l.spawn(&root, Worker).finish().unwrap();
    let front = l.spawn(&root, Front { worker }).finish().unwrap();
    l.spawn(
        &root,
        Client {
            front,
            log: log.clone(),
        },
    )
    .finish()
    .unwrap();
    let now = l.now();
    l.run_until_idle(now);
    assert_eq!(*log.borrow(), ["Ok(49)"]);
    assert_eq!(l.stats().requests, 0);
}

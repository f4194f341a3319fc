//! Deliveries when two message types share a tag (`routing::type_tag`):
//! each type's handlers hear that type's messages only, in order, on
//! every path (a send from outside, a handler's send on its kept route, a
//! request and its response), with several subscribers each and
//! subscriptions made and removed between.

use crate::routing::share_tag;
use crate::testing::Harness;
use crate::{Actor, Address, Context, Request, RequestMsg, Response};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
struct Ping(u32);
#[derive(Clone, Debug, PartialEq)]
struct Pong(u32);

/// Runs `test` on a thread of its own (the tags it shares are that
/// thread's), failing if it does not end in a while (a message turned
/// back for ever).
fn in_time(test: impl FnOnce() + Send + 'static) {
    let (done, ended) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match ended.recv_timeout(Duration::from_secs(30)) {
        Ok(()) => thread.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(thread.join().unwrap_err())
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the deliveries did not end"),
    }
}

/// Sends what it is told to, from its handler (on its kept routes).
struct Sender;

impl Actor for Sender {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, go: &(Address, Vec<Result<Ping, Pong>>), ctx: &mut Context<'_, Self>| {
                for m in &go.1 {
                    match m.clone() {
                        Ok(ping) => ctx.send(&go.0, ping),
                        Err(pong) => ctx.send(&go.0, pong),
                    }
                }
            },
        );
    }
}

#[test]
fn two_types_sharing_a_tag_are_each_heard_by_their_own_subscribers_only() {
    in_time(|| {
        let _shared = share_tag::<Ping, Pong>();
        let mut h = Harness::new();
        let ping1 = h.probe::<Ping>();
        let to = ping1.address().clone();
        let pong1 = h.watch::<Pong>(&to).unwrap();
        let root = h
            .spawn_root(crate::Supervisor)
            .supervisor(crate::SupervisorConfig::default())
            .finish()
            .unwrap();
        let sender = h.spawn(&root, Sender).finish().unwrap();
        h.run_until_idle();
        let mixed = |from: u32| -> Vec<Result<Ping, Pong>> {
            vec![Err(Pong(from)), Ok(Ping(from + 1)), Err(Pong(from + 2))]
        };
        // Alone in their channels: `Pong`s find the `Ping` channel by
        // its tag first, and are turned back.
        for m in mixed(0) {
            match m {
                Ok(ping) => to.send(ping).unwrap(),
                Err(pong) => to.send(pong).unwrap(),
            }
        }
        sender.send((to.clone(), mixed(10))).unwrap();
        h.run_until_idle();
        assert_eq!(ping1.take(), [Ping(1), Ping(11)]);
        assert_eq!(pong1.take(), [Pong(0), Pong(2), Pong(10), Pong(12)]);
        // Several subscribers each.
        let ping2 = h.watch::<Ping>(&to).unwrap();
        let pong2 = h.watch::<Pong>(&to).unwrap();
        sender.send((to.clone(), mixed(20))).unwrap();
        h.run_until_idle();
        for m in mixed(30) {
            match m {
                Ok(ping) => to.send(ping).unwrap(),
                Err(pong) => to.send(pong).unwrap(),
            }
        }
        h.run_until_idle();
        for ping in [&ping1, &ping2] {
            assert_eq!(ping.take(), [Ping(21), Ping(31)]);
        }
        for pong in [&pong1, &pong2] {
            assert_eq!(pong.take(), [Pong(20), Pong(22), Pong(30), Pong(32)]);
        }
        // The first `Ping` subscription removed: the other is alone again.
        let core = h.locality().core_mut();
        let first = core
            .routes
            .first_of(to.key(), std::any::TypeId::of::<Ping>());
        assert!(super::unsubscribe(core, first).is_some());
        sender.send((to.clone(), mixed(40))).unwrap();
        h.run_until_idle();
        assert_eq!(ping1.take(), []);
        assert_eq!(ping2.take(), [Ping(41)]);
        for pong in [&pong1, &pong2] {
            assert_eq!(pong.take(), [Pong(40), Pong(42)]);
        }
        let delivered = h.stats().delivered;
        for m in mixed(50) {
            match m {
                Ok(ping) => to.send(ping).unwrap(),
                Err(pong) => to.send(pong).unwrap(),
            }
        }
        h.run_until_idle();
        assert_eq!(h.stats().delivered - delivered, 3, "each counted once");
        assert_eq!(ping2.take(), [Ping(51)]);
        assert_eq!(pong2.take(), [Pong(50), Pong(52)]);
    });
}

struct Ask;
impl Request for Ask {
    type Response = u32;
}

/// Answers `Ask`s with their count; hears `Ping`s (which share the tag of
/// `RequestMsg<Ask>`, and were subscribed first).
struct Server(Rc<RefCell<Vec<String>>>, u32);

impl Actor for Server {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, p: &Ping, _: &mut Context<'_, Self>| {
            me.0.borrow_mut().push(format!("server {p:?}"));
        });
        ctx.subscribe(
            |me: &mut Self, q: &RequestMsg<Ask>, ctx: &mut Context<'_, Self>| {
                me.1 += 1;
                ctx.reply(q, me.1);
            },
        );
    }
}

/// Asks `server` twice, with a `Ping` to it between; hears `Pong`s (which
/// share the tag of `Response<Ask>`, and were subscribed first) and the
/// responses.
struct Client(Address, Rc<RefCell<Vec<String>>>);

impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, p: &Pong, _: &mut Context<'_, Self>| {
            me.1.borrow_mut().push(format!("client {p:?}"));
        });
        ctx.subscribe(
            |me: &mut Self, r: &Response<Ask>, _: &mut Context<'_, Self>| {
                let heard = format!("client reply {:?}", r.result());
                me.1.borrow_mut().push(heard);
            },
        );
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let server = self.0.clone();
        let me = ctx.address().clone();
        ctx.request(&server, Ask, Duration::from_secs(3600));
        ctx.send(&server, Ping(1));
        ctx.send(&me, Pong(2));
        ctx.request(&server, Ask, Duration::from_secs(3600));
    }
}

#[test]
fn a_request_and_its_response_sharing_a_tag_with_another_type_reach_their_handlers() {
    in_time(|| {
        let _request = share_tag::<Ping, RequestMsg<Ask>>();
        let _response = share_tag::<Pong, Response<Ask>>();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut h = Harness::new();
        let root = h
            .spawn_root(crate::Supervisor)
            .supervisor(crate::SupervisorConfig::default())
            .finish()
            .unwrap();
        let server = h.spawn(&root, Server(log.clone(), 0)).finish().unwrap();
        h.spawn(&root, Client(server, log.clone()))
            .finish()
            .unwrap();
        h.run_until_idle();
        assert_eq!(
            *log.borrow(),
            [
                "server Ping(1)",
                "client Pong(2)",
                "client reply Ok(1)",
                "client reply Ok(2)"
            ]
        );
    });
}

//! Batches between localities: what actors of one locality send to another
//! is pushed in one batch per dispatch, consecutive messages of one type in
//! one run; order holds across types and replies, and a batch drained a
//! part at a time arrives whole.

use commutator::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// Dispatches every locality, in turn, until none has work left.
fn settle(ls: &mut [&mut Locality]) {
    for _ in 0..50 {
        for l in ls.iter_mut() {
            let now = l.now();
            l.run_until_idle(now);
        }
    }
}

struct Ask;
impl Request for Ask {
    type Response = u64;
}

#[derive(Debug)]
struct A(u32);
#[derive(Debug)]
struct B(u32);

/// Answers an `Ask` with messages of two types around its reply.
struct Mixer;

impl Actor for Mixer {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Ask>, ctx: &mut Context<'_, Self>| {
                let to = q.reply_to().clone();
                ctx.send(&to, A(0));
                ctx.send(&to, B(1));
                ctx.reply(q, 2);
                ctx.send(&to, A(3));
                ctx.send(&to, A(4));
                ctx.send(&to, B(5));
            },
        );
    }
}

/// Asks `server` once it starts; records everything it hears, in order.
struct Recorder {
    server: Address,
    heard: Rc<RefCell<Vec<String>>>,
}

impl Actor for Recorder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, a: &A, _: &mut Context<'_, Self>| {
            me.heard.borrow_mut().push(format!("{a:?}"));
        });
        ctx.subscribe(|me: &mut Self, b: &B, _: &mut Context<'_, Self>| {
            me.heard.borrow_mut().push(format!("{b:?}"));
        });
        ctx.subscribe(
            |me: &mut Self, r: &Response<Ask>, _: &mut Context<'_, Self>| {
                me.heard
                    .borrow_mut()
                    .push(format!("reply {:?}", r.result()));
            },
        );
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let server = self.server.clone();
        ctx.request(&server, Ask, Duration::from_secs(3600));
    }
}

#[test]
fn messages_of_several_types_and_a_reply_to_another_locality_keep_their_order() {
    let mut l0 = Locality::named("mixing");
    let server = l0.spawn_root(Mixer).finish().unwrap();
    let mut l1 = Locality::named("recording");
    let heard = Rc::new(RefCell::new(Vec::new()));
    l1.spawn_root(Recorder {
        server,
        heard: heard.clone(),
    })
    .finish()
    .unwrap();
    settle(&mut [&mut l0, &mut l1]);
    assert_eq!(
        *heard.borrow(),
        ["A(0)", "B(1)", "reply Ok(2)", "A(3)", "A(4)", "B(5)"]
    );
}

/// Sends `count` messages to `to` in one handler, `A` and `B` by turns in
/// the first half, all `A` in the second (one run).
struct Burst {
    to: Address,
    count: u32,
}

impl Actor for Burst {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        for n in 0..self.count {
            if n < self.count / 2 && n % 2 == 1 {
                ctx.send(&self.to, B(n));
            } else {
                ctx.send(&self.to, A(n));
            }
        }
    }
}

/// Records the numbers of the `A`s and `B`s it hears.
struct Numbers {
    heard: Rc<RefCell<Vec<u32>>>,
}

impl Actor for Numbers {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, a: &A, _: &mut Context<'_, Self>| {
            me.heard.borrow_mut().push(a.0);
        });
        ctx.subscribe(|me: &mut Self, b: &B, _: &mut Context<'_, Self>| {
            me.heard.borrow_mut().push(b.0);
        });
    }
}

#[test]
fn a_burst_to_another_locality_arrives_whole_and_in_order_through_small_dispatches() {
    const COUNT: u32 = 6_000;
    let mut l1 = Locality::named("receiving");
    let heard = Rc::new(RefCell::new(Vec::new()));
    let to = l1
        .spawn_root(Numbers {
            heard: heard.clone(),
        })
        .finish()
        .unwrap();
    settle(&mut [&mut l1]);
    let mut l0 = Locality::named("bursting");
    l0.spawn_root(Burst { to, count: COUNT }).finish().unwrap();
    settle(&mut [&mut l0]);
    // Small dispatches: each drain finds part of the last batch in the
    // queue and takes only what fits.
    l1.set_budget(100);
    for _ in 0..1_000 {
        let now = l1.now();
        l1.dispatch(now);
    }
    assert_eq!(*heard.borrow(), (0..COUNT).collect::<Vec<_>>());
    assert_eq!(l1.stats().inbox, 0);
}

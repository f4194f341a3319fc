//! Delivery across threads: an external subscription forwards in order until
//! it is unsubscribed, and many senders on many threads keep their order
//! and lose nothing.
//!
//! Every test is bounded: threads are joined with a deadline, and no test
//! asserts on timing.

mod common;

use common::threads::{SharedLog, l0_root, serve};
use commutator::*;
use std::thread;
use std::time::Duration;

/// Publishes `k` ticks on its own address for a `Burst(k)` request, and
/// answers only after they were delivered (and so forwarded).
struct Publisher {
    next: u64,
}

#[derive(Clone)]
struct Tick(u64);
struct Burst(u64);
impl Request for Burst {
    type Response = ();
}
struct Ack(RequestMsg<Burst>);

impl Actor for Publisher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, q: &RequestMsg<Burst>, ctx: &mut Context<'_, Self>| {
                let here = ctx.address().clone();
                for _ in 0..q.payload().0 {
                    ctx.send(&here, Tick(me.next));
                    me.next += 1;
                }
                ctx.send(&here, Ack(q.clone())); // queued behind the ticks
            },
        );
        ctx.subscribe(|_: &mut Self, a: &Ack, ctx: &mut Context<'_, Self>| ctx.reply(&a.0, ()));
    }
}

/// Hears the publisher's ticks from the other thread; after a burst of ten it
/// unsubscribes, asks for five more, which must not arrive, then ends the tree.
#[derive(Default)]
struct Listener {
    log: SharedLog,
    publisher: Option<Address>,
    ticks: Vec<u64>,
    sub: Option<SubscriptionId>,
    bursts: u32,
}

impl Actor for Listener {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_burst);
        ctx.discover("publisher")
            .wait()
            .then(|me: &mut Self, publisher, _| me.publisher = Some(publisher.clone()));
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let publisher = self.publisher.clone().expect("discovered");
        self.sub = Some(ctx.subscribe_external(&publisher, Self::on_tick).unwrap());
        ctx.request(&publisher, Burst(10), Duration::from_secs(30)); // after the subscription
    }
}

impl Listener {
    fn on_tick(&mut self, tick: &Tick, _: &mut Context<'_, Self>) {
        self.ticks.push(tick.0);
    }
    fn on_burst(&mut self, r: &Response<Burst>, ctx: &mut Context<'_, Self>) {
        assert!(r.result().is_ok());
        self.bursts += 1;
        self.log
            .push(format!("after burst {}: {:?}", self.bursts, self.ticks));
        if self.bursts == 1 {
            ctx.unsubscribe(self.sub.take().unwrap()).unwrap();
            let publisher = self.publisher.clone().unwrap();
            ctx.request(&publisher, Burst(5), Duration::from_secs(30));
        } else {
            ctx.shutdown_supervisor();
        }
    }
}

#[test]
fn an_external_subscription_forwards_in_order_until_unsubscribed() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    l0.spawn_on(l1.handle(), &root, || Publisher { next: 0 })
        .name("publisher")
        .register_as("publisher")
        .finish()
        .unwrap();
    l0.spawn(
        &root,
        Listener {
            log: log.clone(),
            ..Listener::default()
        },
    )
    .name("listener")
    .finish()
    .unwrap();
    l0.run().unwrap();
    assert_eq!(l1.finish(), Ok(()));
    let all: Vec<u64> = (0..10).collect();
    assert_eq!(
        log.lines(),
        [
            format!("after burst 1: {all:?}"),
            format!("after burst 2: {all:?}")
        ]
    );
}

/// One numbered message from one sender.
struct Seq {
    sender: usize,
    n: u64,
}

/// Checks per-sender order; ends the tree when every message has come.
struct Counter {
    next: Vec<u64>,
    expected: u64,
    got: u64,
    log: SharedLog,
}

impl Actor for Counter {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, s: &Seq, ctx: &mut Context<'_, Self>| {
            if me.next[s.sender] != s.n {
                me.log.push(format!(
                    "sender {} sent {} after {}",
                    s.sender, s.n, me.next[s.sender]
                ));
            }
            me.next[s.sender] = s.n + 1;
            me.got += 1;
            if me.got == me.expected {
                ctx.shutdown_supervisor();
            }
        });
    }
}

/// An actor that sends `count` numbered messages to `to`, in bursts.
struct Sender {
    id: usize,
    to: Address,
    count: u64,
    sent: u64,
}

struct More;

impl Actor for Sender {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, _: &More, ctx: &mut Context<'_, Self>| me.burst(ctx));
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.burst(ctx);
    }
}

impl Sender {
    /// Sends the next thousand; when the receiver's inbox is full, keeps
    /// the message and tries again a little later (backpressure).
    fn burst(&mut self, ctx: &mut Context<'_, Self>) {
        let end = (self.sent + 1000).min(self.count);
        while self.sent < end {
            let seq = Seq {
                sender: self.id,
                n: self.sent,
            };
            match ctx.try_send(&self.to, seq) {
                Ok(()) => self.sent += 1,
                Err(e) => {
                    assert_eq!(e.error.code(), ErrorCode::InboxFull);
                    let retry = |me: &mut Self, ctx: &mut Context<'_, Self>, _| me.burst(ctx);
                    ctx.start_timer(Duration::from_millis(1), retry);
                    return;
                }
            }
        }
        if self.sent < self.count {
            let me = ctx.address().clone();
            ctx.send(&me, More);
        }
    }
}

#[test]
fn many_senders_on_many_threads_keep_their_order_and_lose_nothing() {
    // 100,000 messages in all: more than an inbox holds (65,536).
    const PER_SENDER: u64 = 20_000;
    const THREADS: usize = 3;
    const ACTORS: usize = 2;
    let (l1, l2) = (serve("L1"), serve("L2"));
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    let total = PER_SENDER * (THREADS + ACTORS) as u64;
    let counter = Counter {
        next: vec![0; THREADS + ACTORS],
        expected: total,
        got: 0,
        log: log.clone(),
    };
    let counter = l0.spawn(&root, counter).name("counter").finish().unwrap();
    for (i, l) in [&l1, &l2].into_iter().enumerate() {
        let to = counter.clone();
        let id = THREADS + i;
        l0.spawn_on(l.handle(), &root, move || Sender {
            id,
            to: to.clone(),
            count: PER_SENDER,
            sent: 0,
        })
        .finish()
        .unwrap();
    }
    let plain: Vec<_> = (0..THREADS)
        .map(|sender| {
            let to = counter.clone();
            thread::spawn(move || {
                // More than the inbox holds: wait for room when it is full.
                for n in 0..PER_SENDER {
                    to.send_blocking(Seq { sender, n })
                        .map_err(|e| e.error)
                        .unwrap();
                }
            })
        })
        .collect();
    l0.run().unwrap();
    for t in plain {
        t.join().unwrap();
    }
    assert_eq!(log.lines(), Vec::<String>::new(), "no message out of order");
    assert_eq!((l1.finish(), l2.finish()), (Ok(()), Ok(())));
}

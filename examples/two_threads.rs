//! Two loops on two threads, one supervisor tree across them.
//!
//! Thread L0 runs the root supervisor (with a registry); thread L1 serves
//! through its `LocalityHandle`. First a ponger made on L1 and a pinger on L0
//! exchange messages across the threads. Then four senders, two on each
//! thread, stream numbered messages to a counter on L0, which checks that each
//! sender's messages arrive in order and that none is lost. Each phase prints
//! its throughput.
//!
//! Run it with `cargo run --release --example two_threads [-- MESSAGES]`
//! (default 1,000,000 ping-pong messages, and 4 × 1,000,000 streamed). It
//! prints two lines, the ping-pong's rate and the streams' rate with the
//! order check, and ends by itself once both threads have shut down.

use commutator::LocalityHandle;
use commutator::prelude::*;
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

struct Hello(Address);
struct Ping;
struct Pong;

#[derive(Default)]
struct Ponger {
    pinger: Option<Address>,
}

impl Actor for Ponger {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, h: &Hello, _: &mut Context<'_, Self>| {
            me.pinger = Some(h.0.clone())
        });
        ctx.subscribe(|me: &mut Self, _: &Ping, ctx: &mut Context<'_, Self>| {
            if let Some(pinger) = &me.pinger {
                ctx.send(pinger, Pong);
            }
        });
    }
}

struct Pinger {
    ponger: Option<Address>,
    left: u64,
    total: u64,
    started: Instant,
    /// Senders to start when the ping-pong is over.
    senders: usize,
}

impl Actor for Pinger {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_pong);
        ctx.discover("ponger")
            .wait()
            .then(|me: &mut Self, ponger, _| me.ponger = Some(ponger.clone()));
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let Some(ponger) = self.ponger.clone() else {
            return ctx.fail(Error::failure("no ponger"));
        };
        let me = ctx.address().clone();
        ctx.send(&ponger, Hello(me));
        self.started = Instant::now();
        ctx.send(&ponger, Ping);
    }
}

impl Pinger {
    fn on_pong(&mut self, _: &Pong, ctx: &mut Context<'_, Self>) {
        self.left -= 1;
        if self.left > 0 {
            if let Some(ponger) = &self.ponger {
                ctx.send(ponger, Ping);
            }
            return;
        }
        let secs = self.started.elapsed().as_secs_f64();
        let n = self.total * 2;
        println!(
            "ping-pong across threads: {n} messages in {secs:.3} s, {:.0} msg/s",
            n as f64 / secs
        );
        for id in 0..self.senders {
            ctx.discover(format!("sender{id}"))
                .then(|_: &mut Self, sender, ctx| ctx.send(sender, Go));
        }
    }
}

/// One numbered message from one sender.
struct Seq {
    sender: usize,
    n: u64,
}

/// Checks per-sender order and counts; ends the tree when all have come.
struct Counter {
    next: Vec<u64>,
    expected: u64,
    got: u64,
    started: Option<Instant>,
}

impl Actor for Counter {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, s: &Seq, ctx: &mut Context<'_, Self>| {
            if me.next[s.sender] != s.n {
                let why = format!("sender {} sent {} after {}", s.sender, s.n, me.next[s.sender]);
                return ctx.fail(Error::failure(why));
            }
            me.next[s.sender] += 1;
            me.got += 1;
            let started = *me.started.get_or_insert_with(Instant::now);
            if me.got == me.expected {
                let secs = started.elapsed().as_secs_f64();
                println!(
                    "per-sender FIFO across threads: {} senders, {} messages in order, none lost, in {secs:.3} s, {:.0} msg/s",
                    me.next.len(),
                    me.got,
                    me.got as f64 / secs
                );
                ctx.shutdown_supervisor();
            }
        });
    }
}

/// Streams `count` numbered messages to `to`, a thousand per turn.
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
        ctx.subscribe(|me: &mut Self, _: &Go, ctx: &mut Context<'_, Self>| me.burst(ctx));
    }
}

struct Go;

impl Sender {
    fn burst(&mut self, ctx: &mut Context<'_, Self>) {
        let end = (self.sent + 1000).min(self.count);
        while self.sent < end {
            ctx.send(
                &self.to,
                Seq {
                    sender: self.id,
                    n: self.sent,
                },
            );
            self.sent += 1;
        }
        if self.sent < self.count {
            let me = ctx.address().clone();
            ctx.send(&me, More);
        }
    }
}

fn serve(
    name: &'static str,
) -> Result<(LocalityHandle, thread::JoinHandle<Result<(), Error>>), Error> {
    let (tx, rx) = mpsc::channel();
    let thread = thread::spawn(move || {
        let mut system = System::named(name)?;
        let _ = tx.send(system.handle());
        system.run()
    });
    let handle = rx
        .recv()
        .map_err(|_| Error::failure("the serving thread did not start"))?;
    Ok((handle, thread))
}

fn main() -> Result<(), Error> {
    let messages: u64 = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|_| Error::new(ErrorCode::InvalidArgument).with_context(arg))?,
        None => 1_000_000,
    };
    let (l1, thread) = serve("L1")?;
    let mut l0 = System::named("L0")?;
    let config = SupervisorConfig::default().with_registry();
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(config)
        .finish()?;

    l0.spawn_on(&l1, &root, Ponger::default)
        .name("ponger")
        .register_as("ponger")
        .finish()?;
    const SENDERS: usize = 4;
    let counter = Counter {
        next: vec![0; SENDERS],
        expected: messages * SENDERS as u64,
        got: 0,
        started: None,
    };
    let counter = l0.spawn(&root, counter).name("counter").finish()?;
    // Two senders on each thread, started when the ping-pong is over.
    let mut senders = Vec::new();
    for id in 0..SENDERS {
        let to = counter.clone();
        let sender = move || Sender {
            id,
            to: to.clone(),
            count: messages,
            sent: 0,
        };
        if id % 2 == 0 {
            senders.push(
                l0.spawn_with(&root, sender)
                    .name("sender")
                    .register_as(format!("sender{id}"))
                    .finish()?,
            );
        } else {
            l0.spawn_on(&l1, &root, sender)
                .name("sender")
                .register_as(format!("sender{id}"))
                .finish()?;
        }
    }
    let pinger = Pinger {
        ponger: None,
        left: messages / 2,
        total: messages / 2,
        started: Instant::now(),
        senders: SENDERS,
    };
    l0.spawn(&root, pinger).name("pinger").finish()?;
    l0.run()?;
    drop(l1);
    thread.join().map_err(|_| Error::failure("L1 panicked"))?
}

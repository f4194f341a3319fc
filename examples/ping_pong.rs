//! Two actors exchange messages under one supervisor, on a `System`'s own loop.
//!
//! The pinger sends `Ping` to the ponger's address; the ponger publishes `Pong`
//! on its own address, where the pinger has subscribed (pub/sub: any actor can
//! subscribe to any message type on any address).
//!
//! Run it with `cargo run --release --example ping_pong [-- COUNT]` (default
//! 10,000,000 messages). It ends with one line:
//! `ping_pong: <N> messages in <S> s, <R> msg/s`. With
//! `COMMUTATOR_INSPECT_DELIVERY=1` (and a small count, e.g. `-- 3`) every
//! delivery is printed; level 2 adds the framework's own traffic.

use commutator::prelude::*;
use std::time::Instant;

struct Ping;
struct Pong;

#[derive(Default)]
struct Ponger {
    me: Option<Address>,
}

impl Actor for Ponger {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.me = Some(ctx.address().clone());
        ctx.subscribe(Self::on_ping);
    }
}

impl Ponger {
    fn on_ping(&mut self, _: &Ping, ctx: &mut Context<'_, Self>) {
        if let Some(me) = &self.me {
            ctx.send(me, Pong);
        }
    }
}

struct Pinger {
    ponger: Address,
    messages: u64,
    sent: u64,
    started: Option<Instant>,
}

impl Actor for Pinger {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        // Pongs are published on the ponger's address: listen there.
        if let Err(e) = ctx.subscribe_on(&self.ponger, Self::on_pong) {
            ctx.fail(e);
        }
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.started = Some(Instant::now());
        self.ping(ctx);
    }
}

impl Pinger {
    fn ping(&mut self, ctx: &mut Context<'_, Self>) {
        self.sent += 1;
        ctx.send(&self.ponger, Ping);
    }

    fn on_pong(&mut self, _: &Pong, ctx: &mut Context<'_, Self>) {
        self.sent += 1;
        if self.sent >= self.messages {
            let secs = self.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
            let n = self.sent;
            println!(
                "ping_pong: {n} messages in {secs:.3} s, {:.0} msg/s",
                n as f64 / secs
            );
            ctx.shutdown_supervisor();
        } else {
            self.ping(ctx);
        }
    }
}

fn main() -> Result<(), Error> {
    let messages: u64 = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|_| Error::new(ErrorCode::InvalidArgument).with_context(arg))?,
        None => 10_000_000,
    };
    let mut system = System::named("L0")?;
    let root = system
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()?;
    let ponger = system
        .spawn(&root, Ponger::default())
        .name("ponger")
        .finish()?;
    let pinger = Pinger {
        ponger,
        messages: messages.max(2),
        sent: 0,
        started: None,
    };
    system.spawn(&root, pinger).name("pinger").finish()?;
    system.run()
}

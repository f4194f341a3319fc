//! Two processes talk over NATS (feature `nats`): `pong` serves the service
//! "ponger", `ping` finds it by name and sends it requests, one after another.
//!
//! ```sh
//! nats-server -a 127.0.0.1 &     # any NATS server (Debian: apt-get install nats-server)
//! cargo run --features nats --example nats_ping_pong -- pong
//! cargo run --features nats --example nats_ping_pong -- ping     # in another terminal
//! ```
//!
//! Options: `--url <url>` (default `$NATS_URL`, else `nats://127.0.0.1:4222`),
//! `--count <n>`: for `ping` the pings to send (default 5), for `pong` the
//! pings to answer before it exits (default: serve until killed). `ping`
//! waits up to 30 s for a `pong` to appear, so either may start first. Each
//! prints one line per ping, and a last line: `ping: <n> pongs` or
//! `pong: served <n> pings`.

use commutator::nats::{Nats, Options, Wire};
use commutator::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The request: a numbered ping, answered with a `Pong`.
#[derive(Debug, Serialize, Deserialize)]
struct Ping {
    seq: u32,
}
impl Wire for Ping {
    const NAME: &'static str = "example.Ping";
}
impl Request for Ping {
    type Response = Pong;
}

#[derive(Debug, Serialize, Deserialize)]
struct Pong {
    seq: u32,
    by: String,
}

/// Answers pings; after `count` of them (if given), ends its process.
struct Ponger {
    served: u32,
    count: Option<u32>,
}

impl Actor for Ponger {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_ping);
    }
}

impl Ponger {
    fn on_ping(&mut self, ping: &RequestMsg<Ping>, ctx: &mut Context<'_, Self>) {
        let seq = ping.payload().seq;
        println!("pong: ping #{seq}");
        let by = format!("pid {}", std::process::id());
        ctx.reply(ping, Pong { seq, by });
        self.served += 1;
        if Some(self.served) == self.count {
            println!("pong: served {} pings", self.served);
            ctx.shutdown_supervisor(); // the reply is queued first: it still goes out
        }
    }
}

/// Sends `count` pings to the (remote) ponger, one at a time.
struct Pinger {
    ponger: Address,
    sent: u32,
    count: u32,
}

impl Actor for Pinger {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_pong);
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.ping(ctx);
    }
}

impl Pinger {
    fn ping(&mut self, ctx: &mut Context<'_, Self>) {
        self.sent += 1;
        ctx.request(
            &self.ponger,
            Ping { seq: self.sent },
            Duration::from_secs(5),
        );
    }

    fn on_pong(&mut self, pong: &Response<Ping>, ctx: &mut Context<'_, Self>) {
        match pong.result() {
            Ok(pong) => println!("ping: pong #{} from {}", pong.seq, pong.by),
            Err(e) => {
                eprintln!("ping: #{} failed: {e:#}", pong.request().seq);
                ctx.fail(e.clone());
                return;
            }
        }
        if self.sent == self.count {
            println!("ping: {} pongs", self.count);
            ctx.shutdown_supervisor();
        } else {
            self.ping(ctx);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let role = args.next().unwrap_or_default();
    let mut url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let mut count = None;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--url", Some(value)) => url = value,
            ("--count", Some(value)) => count = Some(value.parse::<u32>()?),
            _ => return Err(format!(
                "unknown argument {arg:?}; usage: nats_ping_pong ping|pong [--url URL] [--count N]"
            )
            .into()),
        }
    }

    let nats = Nats::connect(Options::new(url).name(format!("nats_ping_pong {role}")))?;
    let mut system = System::named(role.clone())?;
    let root = system
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()?;
    match role.as_str() {
        "pong" => {
            let ponger = system.spawn(&root, Ponger { served: 0, count }).finish()?;
            system
                .spawn(&root, nats.service("ponger", &ponger).request::<Ping>())
                .finish()?;
            println!("pong: serving \"ponger\"");
        }
        "ping" => {
            let remote = nats
                .remote("ponger")
                .request::<Ping>()
                .wait(Duration::from_secs(30));
            let ponger = system.spawn(&root, remote).finish()?;
            let count = count.unwrap_or(5);
            system
                .spawn(
                    &root,
                    Pinger {
                        ponger,
                        sent: 0,
                        count,
                    },
                )
                .finish()?;
        }
        other => return Err(format!("say ping or pong, not {other:?}").into()),
    }
    system.run()?;
    nats.flush(Duration::from_secs(5))?; // what the last handler published
    Ok(())
}

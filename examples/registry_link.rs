//! Registry discovery with a promise, and a link that makes the server outlive
//! its client.
//!
//! The root supervisor makes a registry. The client is spawned first: it asks
//! the registry for "echo" and waits (a promise), holding its own init and so
//! the whole tree's. 50 ms later the root spawns the echo server, which
//! registers the name; the client gets the address, links to it, and the tree
//! becomes operational. The client talks to the server, then asks the root to
//! shut down: the server asks its linked client to unlink and finishes only
//! after it, so the client's `shut down` line comes first.
//!
//! Run it with `cargo run --example registry_link`; it ends by itself.

use commutator::prelude::*;
use std::time::{Duration, Instant};

struct Echo(String);
impl Request for Echo {
    type Response = String;
}

fn log(who: &str, what: impl std::fmt::Display) {
    let ms = START.with(|s| s.elapsed().as_millis());
    println!("{ms:>4} ms  {who:<7} {what}");
}

thread_local! {
    static START: Instant = Instant::now();
}

/// The root: spawns the server late, to show the client waiting for it.
struct Root;

impl Actor for Root {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::from_millis(50), |_, ctx, _| {
            log("root", "spawning the echo server");
            if let Err(e) = ctx.spawn(Server).name("echo").register_as("echo").finish() {
                ctx.fail(e);
            }
        });
    }
    fn on_start(&mut self, _: &mut Context<'_, Self>) {
        log("root", "the tree is operational");
    }
}

struct Server;

impl Actor for Server {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Echo>, ctx: &mut Context<'_, Self>| {
                ctx.reply(q, q.payload().0.to_uppercase());
            },
        );
        log("server", "initializing, registering as \"echo\"");
    }
    fn shutdown_start(&mut self, _: &mut Context<'_, Self>) {
        log(
            "server",
            "shutting down: asking linked clients to unlink first",
        );
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        log("server", "shut down");
    }
}

#[derive(Default)]
struct Client {
    echo: Option<Address>,
    said: usize,
}

const WORDS: [&str; 3] = ["hello", "linked", "world"];

impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_echo);
        log(
            "client",
            "initializing: discovering \"echo\" (waiting until registered), then linking",
        );
        ctx.discover("echo")
            .wait()
            .link()
            .then(|me: &mut Self, echo, _| {
                log("client", format!("discovered echo at {echo}"));
                me.echo = Some(echo.clone());
            });
    }
    fn init_finish(&mut self, _: &mut Context<'_, Self>) {
        log("client", "initialized (discovered and linked)");
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.say(ctx);
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        log("client", "shut down");
    }
}

impl Client {
    fn say(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(echo) = &self.echo {
            let word = WORDS[self.said].to_string();
            ctx.request(echo, Echo(word), Duration::from_millis(100));
        }
    }

    fn on_echo(&mut self, r: &Response<Echo>, ctx: &mut Context<'_, Self>) {
        match r.result() {
            Ok(answer) => log(
                "client",
                format!("{:?} came back as {answer:?}", r.request().0),
            ),
            Err(e) => log("client", format!("no echo: {e:#}")),
        }
        self.said += 1;
        if self.said < WORDS.len() {
            self.say(ctx);
        } else {
            log("client", "done talking: asking the root to shut down");
            ctx.shutdown_supervisor();
        }
    }
}

fn main() -> Result<(), Error> {
    START.with(|_| ());
    let mut system = System::named("L0")?;
    let config = SupervisorConfig::default().with_registry();
    let root = system
        .spawn_root(Root)
        .name("root")
        .supervisor(config)
        .init_timeout(Duration::from_secs(1))
        .finish()?;
    system
        .spawn(&root, Client::default())
        .name("client")
        .finish()?;
    system.run()
}

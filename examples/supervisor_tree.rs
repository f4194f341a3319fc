//! A three-level supervisor tree written in code, with restarts, back-off, a
//! restart limit, and escalation.
//!
//! `root` supervises `service`, which supervises a steady `cache` and a
//! `flaky` worker. The worker fails 30 ms after every start; `service`
//! restarts it with back-off (10, 20, 40 ms) but at most 3 times in a second,
//! then gives up and escalates: `service` shuts down (taking `cache` with it)
//! and escalates to `root`, which shuts down the whole tree. The output shows
//! each start and failure, then the cause chain that `System::run` returns.
//!
//! Run it with `cargo run --example supervisor_tree`; it ends by itself after
//! about 0.2 s, with the chain printed and a non-zero exit status.

use commutator::RestartPolicy;
use commutator::prelude::*;
use std::process::ExitCode;
use std::time::{Duration, Instant};

thread_local! {
    static START: Instant = Instant::now();
}

fn log(who: &str, what: impl std::fmt::Display) {
    let ms = START.with(|s| s.elapsed().as_millis());
    println!("{ms:>4} ms  {who:<8} {what}");
}

/// Fails 30 ms after it starts.
struct Flaky {
    instance: u32,
}

impl Actor for Flaky {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        log(
            "flaky",
            format!("instance {} started at {}", self.instance, ctx.address()),
        );
        ctx.start_timer(Duration::from_millis(30), |me, ctx, _| {
            log("flaky", format!("instance {} fails", me.instance));
            ctx.fail(Error::failure("lost its connection"));
        });
    }
}

/// Steady; it only says when it goes.
struct Cache;

impl Actor for Cache {
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        log("cache", "shut down with its supervisor");
    }
}

/// The middle level: spawns its children in code.
struct Service;

impl Actor for Service {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        if let Err(e) = ctx.spawn(Cache).name("cache").finish() {
            return ctx.fail(e);
        }
        let mut instance = 0;
        let flaky = ctx
            .spawn_with(move || {
                instance += 1;
                Flaky { instance }
            })
            .name("flaky")
            .restart(RestartPolicy::OnFailure)
            .restart_delay(Duration::from_millis(10))
            .restart_backoff(Duration::from_millis(80))
            .restart_limit(3, Duration::from_secs(1))
            .escalate_failure()
            .finish();
        if let Err(e) = flaky {
            ctx.fail(e);
        }
    }
    fn shutdown_start(&mut self, _: &mut Context<'_, Self>) {
        log(
            "service",
            "gave up on flaky: shutting down, escalating to root",
        );
    }
}

fn main() -> ExitCode {
    START.with(|_| ());
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(chain) => {
            println!("\nthe root's shutdown reason, from the top down:\n  {chain:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Error> {
    let mut system = System::named("app")?;
    let config = SupervisorConfig::default();
    let root = system
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(config.clone())
        .finish()?;
    system
        .spawn(&root, Service)
        .name("service")
        .supervisor(config)
        .escalate_failure()
        .finish()?;
    system.run()
}

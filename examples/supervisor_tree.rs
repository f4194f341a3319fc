//! A three-level supervisor tree written in code, with restarts, back-off, a
//! restart limit, escalation, and a root that ends when it has no child left.
//!
//! `root` supervises `service`, which supervises a steady `cache` and a
//! `flaky` worker. The worker fails 30 ms after every start; `service`
//! restarts it with back-off (10, 20, 40 ms) but at most 3 times in a second,
//! then gives up and escalates: `service` shuts down (taking `cache` with it).
//! `root` does not restart `service`, and was made to shut down when it has
//! no child left (`SupervisorConfig::shutdown_when_childless`), so the whole
//! tree ends. The output shows each start and failure, commutator's own log
//! (a `tracing` subscriber is installed: restarts at `INFO`, each give-up at
//! `WARN`), then the cause chain that `System::run` returns.
//!
//! Without `shutdown_when_childless` (or `escalate_failure()` on `service`),
//! `root` would carry on with no child and `run` would never return: rotor's
//! way, and the default. The `WARN` line `gave up on child ... then="carrying
//! on"` would then be the only word of it (and `Stats::children_given_up`,
//! and inspection at level 1).
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
        log("service", "gave up on flaky: shutting down");
    }
}

fn main() -> ExitCode {
    START.with(|_| ());
    // commutator logs through `tracing`: without a subscriber, its warnings
    // (such as a supervisor giving up on a child) go nowhere.
    tracing_subscriber::fmt()
        .with_target(false)
        .without_time()
        .init();
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
    let root = system
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default().shutdown_when_childless(true))
        .finish()?;
    system
        .spawn(&root, Service)
        .name("service")
        .supervisor(SupervisorConfig::default())
        .finish()?;
    system.run()
}

//! Stops cleanly on Ctrl-C: a signal handler sets a shared flag, and the
//! root supervisor, which reads it every 50 ms
//! (`SupervisorConfig::shutdown_flag`, rotor's `shutdown_flag`), shuts the
//! tree down: every actor runs its shutdown hooks, and `System::run`
//! returns `Ok`. A second Ctrl-C ends the process at once.
//!
//! `cargo run --example ctrl_c` ticks until you press Ctrl-C.
//! `cargo run --example ctrl_c -- --selftest` sends itself SIGINT after three
//! ticks and ends by itself (for tests and CI).
//!
//! commutator handles no signals itself: the handler comes from the
//! `signal-hook` crate (a dev-dependency), which sets the flag safely from
//! the signal handler.

use commutator::prelude::*;
use signal_hook::consts::SIGINT;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Ticks every 200 ms; in the self-test, raises SIGINT on its third tick.
struct Ticker {
    ticks: u32,
    selftest: bool,
}

impl Actor for Ticker {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::from_millis(200), Self::on_tick);
    }

    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        let reason = ctx.shutdown_reason().map(|r| r.to_string());
        println!(
            "ticker: stopped after {} ticks ({})",
            self.ticks,
            reason.unwrap_or_default()
        );
    }
}

impl Ticker {
    fn on_tick(&mut self, ctx: &mut Context<'_, Self>, _: TimerId) {
        self.ticks += 1;
        println!("tick {}", self.ticks);
        if self.selftest && self.ticks == 3 {
            println!("self-test: raising SIGINT");
            if let Err(e) = signal_hook::low_level::raise(SIGINT) {
                ctx.fail(Error::failure(format!("raise SIGINT: {e}")));
            }
        }
        ctx.start_timer(Duration::from_millis(200), Self::on_tick);
    }
}

/// The root: it only says why it ended.
struct Root;

impl Actor for Root {
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        let reason = ctx.shutdown_reason().map(|r| r.to_string());
        println!("root: shutting down ({})", reason.unwrap_or_default());
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let selftest = std::env::args().any(|a| a == "--selftest");
    let stop = Arc::new(AtomicBool::new(false));
    // A second Ctrl-C (with the flag already set) ends the process at once.
    signal_hook::flag::register_conditional_shutdown(SIGINT, 1, stop.clone())?;
    signal_hook::flag::register(SIGINT, stop.clone())?;

    let mut system = System::named("app")?;
    let config = SupervisorConfig::default().shutdown_flag(stop, Duration::from_millis(50));
    let root = system
        .spawn_root(Root)
        .name("root")
        .supervisor(config)
        .finish()?;
    system
        .spawn(&root, Ticker { ticks: 0, selftest })
        .name("ticker")
        .finish()?;
    println!("running: press Ctrl-C to stop");
    system.run()?;
    println!("stopped cleanly");
    Ok(())
}

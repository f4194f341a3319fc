//! Watching an actor, shutdown reasons and dead letters, in a small tree:
//!
//! ```text
//! boss (a supervisor with hooks: it hears each child's init and shutdown)
//! ├── worker   handles jobs; job 3 is poisoned and makes it fail
//! └── monitor  watches the worker, listens for dead letters
//! ```
//!
//! The monitor sends three jobs; the worker fails on the third. The monitor
//! hears each step of the worker's lifecycle with its reason; the boss
//! hears the child go down with it. A job sent to the gone worker, and a
//! message nobody subscribes to, come back to the monitor as dead letters;
//! then it ends the program, and each actor says why it shut down.
//!
//! `cargo run --example watch_and_dead_letters` (it ends by itself).

use commutator::prelude::*;

/// A job for the worker.
#[derive(Debug)]
struct Job(u32);
/// A message nobody subscribes to.
struct Hello;

struct Boss;

impl Actor for Boss {
    fn on_child_init(
        &mut self,
        child: &Address,
        result: Result<(), &Error>,
        _: &mut Context<'_, Self>,
    ) {
        match result {
            Ok(()) => println!("boss:    {child} initialized"),
            Err(reason) => println!("boss:    {child} failed its init: {reason}"),
        }
    }

    fn on_child_shutdown(&mut self, child: &Address, reason: &Error, _: &mut Context<'_, Self>) {
        println!("boss:    {child} shut down: {reason}");
    }

    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        let reason = ctx
            .shutdown_reason()
            .map(|r| r.to_string())
            .unwrap_or_default();
        println!("boss:    done [{}] ({reason})", ctx.state());
    }
}

struct Worker;

impl Actor for Worker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, job: &Job, ctx: &mut Context<'_, Self>| {
            println!("worker:  job {}", job.0);
            if job.0 == 3 {
                ctx.fail(Error::failure("job 3 is poisoned"));
            }
        });
    }
}

struct Monitor {
    worker: Address,
}

impl Actor for Monitor {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_watched);
        let dead = ctx.dead_letters();
        ctx.subscribe_on(&dead, Self::on_dead_letter)
            .expect("the dead-letter address is of this locality");
        let worker = self.worker.clone();
        ctx.watch(&worker).expect("an address of another actor");
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        for n in 1..=3 {
            ctx.send(&self.worker, Job(n));
        }
    }
}

impl Monitor {
    fn on_watched(&mut self, w: &Watched, ctx: &mut Context<'_, Self>) {
        match &w.event {
            LifecycleEvent::ShutDown(reason) => {
                println!("monitor: {} is gone: {reason:#}", w.address);
                // Too late: this one becomes a dead letter, as does a
                // message to an address nobody listens to for it.
                ctx.send(&self.worker, Job(4));
                let boss = ctx.supervisor().cloned().expect("a child of boss");
                ctx.send(&boss, Hello);
            }
            other => println!("monitor: {} {other}", w.address),
        }
    }

    fn on_dead_letter(&mut self, letter: &DeadLetter, ctx: &mut Context<'_, Self>) {
        let payload = letter
            .message::<Job>()
            .map(|j| format!(" {j:?}"))
            .unwrap_or_default();
        println!(
            "monitor: dead letter {}{payload} to {}: {}",
            letter.message_type(),
            letter.destination(),
            letter.reason()
        );
        if letter.message::<Hello>().is_some() {
            ctx.shutdown_supervisor(); // the end
        }
    }
}

fn main() -> Result<(), Error> {
    let mut system = System::named("app")?;
    let boss = system
        .spawn_root(Boss)
        .name("boss")
        .supervisor(SupervisorConfig::default())
        .finish()?;
    let worker = system.spawn(&boss, Worker).name("worker").finish()?;
    system
        .spawn(&boss, Monitor { worker })
        .name("monitor")
        .finish()?;
    system.run()?;
    println!("main:    the tree has shut down");
    Ok(())
}

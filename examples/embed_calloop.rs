//! A supervisor tree as a calloop event source, beside the program's own
//! sources: the shape of a Wayland client or a desktop tool on calloop.
//!
//! The locality is a `commutator::backend::calloop::LocalitySource` in the
//! program's `EventLoop`. Beside it, the program has a calloop timer of its
//! own (a status line every 25 ms) and a calloop channel on which the tree
//! reports to it. A worker thread, outside any loop, sends jobs straight to
//! an actor's address with `Address::send`: each send from that thread
//! wakes the sleeping loop (a calloop ping). The `batcher` actor gathers
//! jobs and, on a timer of its own (a calloop timer underneath), hands a
//! batch to the `adder`, which reports the sum on the channel. After the
//! last job the batcher flushes and shuts the tree down; the source reports
//! the tree's end, and the program stops its loop.
//!
//! Run it with `cargo run --example embed_calloop --features calloop`. It
//! ends by itself in about a tenth of a second; `-- --selftest` also checks
//! that every job was summed (CI runs this).

use calloop::channel::{Event, Sender, channel};
use calloop::timer::{TimeoutAction, Timer};
use calloop::{EventLoop, LoopSignal};
use commutator::backend::calloop::LocalitySource;
use commutator::prelude::*;
use std::time::Duration;

/// From the worker thread: one job, or the end of them.
enum Job {
    Add(u64),
    NoMore,
}

/// From the batcher to the adder.
struct Batch(Vec<u64>);

/// What the tree tells the program (on a calloop channel).
enum Report {
    Sum { jobs: usize, sum: u64 },
}

/// Gathers jobs; flushes them every 10 ms (its own timer); ends the tree
/// after the last one.
struct Batcher {
    adder: Address,
    held: Vec<u64>,
    ticking: bool,
}

impl Actor for Batcher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, job: &Job, ctx: &mut Context<'_, Self>| match job {
                Job::Add(n) => {
                    me.held.push(*n);
                    if !me.ticking {
                        me.ticking = true;
                        ctx.start_timer(Duration::from_millis(10), |me: &mut Self, ctx, _| {
                            me.ticking = false;
                            me.flush(ctx);
                        });
                    }
                }
                Job::NoMore => {
                    me.flush(ctx);
                    ctx.shutdown_supervisor(); // the adder's batches are queued before this
                }
            },
        );
    }
}

impl Batcher {
    fn flush(&mut self, ctx: &mut Context<'_, Self>) {
        if !self.held.is_empty() {
            let batch = std::mem::take(&mut self.held);
            ctx.send(&self.adder, Batch(batch));
        }
    }
}

/// Sums each batch and reports it to the program.
struct Adder {
    report: Sender<Report>,
}

impl Actor for Adder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, batch: &Batch, _: &mut Context<'_, Self>| {
            let sum = batch.0.iter().sum();
            let _ = me.report.send(Report::Sum {
                jobs: batch.0.len(),
                sum,
            });
        });
    }
}

/// The program's state, handed to every callback of the loop.
struct Program {
    jobs: usize,
    sum: u64,
    statuses: u32,
    end: Option<Result<(), Error>>,
    signal: LoopSignal,
}

const JOBS: u64 = 100;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let selftest = std::env::args().any(|a| a == "--selftest");
    let mut event_loop: EventLoop<'_, Program> = EventLoop::try_new()?;
    let handle = event_loop.handle();

    // The tree, as one source of the loop.
    let (report, reports) = channel::<Report>();
    let mut source = LocalitySource::new(Locality::named("app"))?;
    let locality = source.locality();
    let root = locality
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()?;
    let adder = locality
        .spawn(&root, Adder { report })
        .name("adder")
        .finish()?;
    let batcher = Batcher {
        adder,
        held: Vec::new(),
        ticking: false,
    };
    let batcher = locality.spawn(&root, batcher).name("batcher").finish()?;
    handle.insert_source(source, |result, locality, program: &mut Program| {
        println!(
            "the tree has shut down: {result:?} ({} messages delivered)",
            locality.stats().delivered
        );
        program.end = Some(result);
        program.signal.stop();
    })?;

    // The program's own sources: what the tree reports, and a status timer.
    handle.insert_source(reports, |event, _, program: &mut Program| {
        if let Event::Msg(Report::Sum { jobs, sum }) = event {
            program.jobs += jobs;
            program.sum += sum;
            println!("a batch of {jobs} jobs: sum {sum}");
        }
    })?;
    handle.insert_source(
        Timer::from_duration(Duration::from_millis(25)),
        |_, _, program: &mut Program| {
            program.statuses += 1;
            println!("status: {} jobs summed so far", program.jobs);
            TimeoutAction::ToDuration(Duration::from_millis(25))
        },
    )?;

    // A worker thread outside any loop: each send wakes the loop.
    let worker = std::thread::spawn(move || {
        for n in 1..=JOBS {
            if batcher.send(Job::Add(n)).is_err() {
                return;
            }
            if n % 10 == 0 {
                std::thread::sleep(Duration::from_millis(3));
            }
        }
        let _ = batcher.send(Job::NoMore);
    });

    let mut program = Program {
        jobs: 0,
        sum: 0,
        statuses: 0,
        end: None,
        signal: event_loop.get_signal(),
    };
    event_loop.run(None, &mut program, |_| {})?;
    // Reports sent just before the end may still be in the channel.
    event_loop.dispatch(Duration::ZERO, &mut program)?;
    worker.join().map_err(|_| "the worker panicked")?;
    println!(
        "{} jobs, sum {}, {} status lines",
        program.jobs, program.sum, program.statuses
    );
    if selftest {
        assert_eq!(program.jobs, JOBS as usize);
        assert_eq!(program.sum, JOBS * (JOBS + 1) / 2);
    }
    program.end.unwrap_or(Ok(()))?;
    Ok(())
}

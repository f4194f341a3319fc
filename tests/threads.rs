//! Several loops on several threads: trees that span threads, cross-thread
//! delivery and FIFO, requests, links, registry and subscriptions across threads.
//!
//! Every test is bounded: threads are joined with a deadline, and no test
//! asserts on timing.

use commutator::*;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A `System` on a thread of its own, serving through its handle.
struct Served {
    handle: Option<LocalityHandle>,
    thread: thread::JoinHandle<Result<(), Error>>,
}

fn serve(name: &'static str) -> Served {
    let (tx, rx) = mpsc::channel();
    let thread = thread::spawn(move || {
        let mut system = System::named(name)?;
        tx.send(system.handle())
            .expect("the test waits for the handle");
        system.run()
    });
    let handle = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the thread starts");
    Served {
        handle: Some(handle),
        thread,
    }
}

impl Served {
    fn handle(&self) -> &LocalityHandle {
        self.handle.as_ref().expect("not yet dropped")
    }

    /// Drops the handle and waits (boundedly) for the thread's `run` to end.
    fn finish(mut self) -> Result<(), Error> {
        self.handle = None;
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.thread.is_finished() {
            assert!(
                Instant::now() < deadline,
                "the serving thread did not finish"
            );
            thread::yield_now();
        }
        self.thread.join().expect("no panic")
    }
}

/// Tells `to` (on the main thread) when it starts and when it goes.
struct Reporter {
    to: Address,
    label: &'static str,
}

#[derive(Debug, PartialEq)]
struct Note(String);

impl Actor for Reporter {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let here = ctx.address().to_string();
        ctx.send(&self.to, Note(format!("{} started at {here}", self.label)));
    }
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send(&self.to, Note(format!("{} down", self.label)));
    }
}

/// Collects notes; shuts the root down after `stop_after` of them.
struct Collector {
    notes: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    stop_after: usize,
}

impl Actor for Collector {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, n: &Note, ctx: &mut Context<'_, Self>| {
            me.notes.borrow_mut().push(n.0.clone());
            if me.notes.borrow().len() == me.stop_after {
                ctx.shutdown_supervisor();
            }
        });
    }
}

/// A supervisor (on the other thread) that makes a reporter child.
struct Team {
    to: Address,
}

impl Actor for Team {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let to = self.to.clone();
        if let Err(e) = ctx
            .spawn(Reporter {
                to,
                label: "member",
            })
            .name("member")
            .finish()
        {
            ctx.fail(e);
        }
    }
}

#[test]
fn a_tree_across_threads_becomes_operational_and_shuts_down() {
    let l1 = serve("L1");
    let mut l0 = System::named("L0").unwrap();
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let notes = std::rc::Rc::default();
    let collector = Collector {
        notes: std::rc::Rc::clone(&notes),
        stop_after: 2,
    };
    let collector = l0
        .spawn(&root, collector)
        .name("collector")
        .finish()
        .unwrap();
    let to = collector.clone();
    l0.spawn_on(l1.handle(), &root, move || Team { to: to.clone() })
        .name("team")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let to = collector.clone();
    l0.spawn_on(l1.handle(), &root, move || Reporter {
        to: to.clone(),
        label: "solo",
    })
    .name("solo")
    .finish()
    .unwrap();
    l0.run().unwrap();
    // Actor numbers on L1 depend on how its inbox batches arrive: drop them.
    let mut seen: Vec<String> = notes.borrow().iter().map(|n| n.split('#').next().unwrap().to_string()).collect();
    seen.sort();
    assert_eq!(seen, ["member started at L1/member", "solo started at L1/solo"]);
    assert_eq!(l1.finish(), Ok(()));
}

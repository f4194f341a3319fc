//! Helpers for the tests that run localities on several threads (`threads*.rs`):
//! a `System` served on a thread of its own, a log that threads share, and a
//! root with a watchdog.

use commutator::{
    Actor, Address, Context, Error, LocalityHandle, Supervisor, SupervisorConfig, System,
};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A `System` on a thread of its own, serving through its handle.
pub struct Served {
    handle: Option<LocalityHandle>,
    thread: thread::JoinHandle<Result<(), Error>>,
}

pub fn serve(name: &'static str) -> Served {
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
    pub fn handle(&self) -> &LocalityHandle {
        self.handle.as_ref().expect("not yet dropped")
    }

    /// Drops the handle and waits (boundedly) for the thread's `run` to end.
    pub fn finish(mut self) -> Result<(), Error> {
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

/// A log that threads share.
#[derive(Clone, Default)]
pub struct SharedLog(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl SharedLog {
    pub fn push(&self, line: impl Into<String>) {
        self.0.lock().unwrap().push(line.into());
    }
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Ends the tree with an error if a test has not finished in a minute.
pub struct Watchdog;

impl Actor for Watchdog {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::from_secs(60), |_, ctx, _| {
            ctx.fail(Error::failure("watchdog: test stuck"))
        });
    }
}

/// `L0` as a `System`, with a root (with a registry) and a [`Watchdog`] under it.
pub fn l0_root() -> (System, Address) {
    let mut l0 = System::named("L0").unwrap();
    let config = SupervisorConfig::default().with_registry();
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(config)
        .finish()
        .unwrap();
    l0.spawn(&root, Watchdog)
        .name("watchdog")
        .escalate_failure()
        .finish()
        .unwrap();
    (l0, root)
}

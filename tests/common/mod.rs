//! Helpers shared by the behaviour tests.
//!
//! Every test drives its locality with a manual clock (`Clock`), never sleeps
//! and never looks at wall time. A submodule holds what the files of one
//! family share: `entities` for `entity_ref.rs` and `entity_router.rs`,
//! `lifecycle` for `lifecycle*.rs`, `misuse` for `misuse*.rs`,
//! `pubsub` for `pubsub*.rs`, `threads` for `threads*.rs` (on the real
//! clock, bounded by deadlines).

#![allow(dead_code, unreachable_pub)]

pub mod entities;
pub mod lifecycle;
pub mod misuse;
pub mod pubsub;
pub mod threads;

use commutator::{Address, Locality, Supervisor, SupervisorConfig};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A trace that actors push lines into, shared with the test.
#[derive(Clone, Default)]
pub struct Log(Rc<RefCell<Vec<String>>>);

impl Log {
    pub fn new() -> Log {
        Log::default()
    }

    pub fn push(&self, line: impl Into<String>) {
        self.0.borrow_mut().push(line.into());
    }

    /// A copy of every line so far.
    pub fn lines(&self) -> Vec<String> {
        self.0.borrow().clone()
    }

    /// Every line so far, joined with newlines (for snapshots).
    pub fn text(&self) -> String {
        self.0.borrow().join("\n")
    }

    /// Removes and returns every line so far.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.borrow_mut())
    }

    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }
}

/// A manual clock: `at(ms)` is `t0 + ms`.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    pub t0: Instant,
}

impl Clock {
    pub fn new() -> Clock {
        Clock { t0: Instant::now() }
    }

    pub fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    /// Milliseconds from `t0` to `t` (for readable traces).
    pub fn ms(&self, t: Instant) -> u128 {
        t.duration_since(self.t0).as_millis()
    }
}

/// An actor that does nothing.
pub struct Idle;

impl commutator::Actor for Idle {}

/// A locality named `L0` with a root supervisor named `root` (`L0/root#1`).
pub fn root_on_l0() -> (Locality, Address) {
    root_on("L0")
}

/// A locality with the given name and a root supervisor named `root`.
pub fn root_on(name: &str) -> (Locality, Address) {
    let mut locality = Locality::named(name);
    let root = locality
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("a fresh locality accepts a root");
    (locality, root)
}

/// An address without its locality prefix: `L0/leaf#3` becomes `leaf#3`.
pub fn short(address: &Address) -> String {
    let full = address.to_string();
    match full.split_once('/') {
        Some((_, rest)) => rest.to_string(),
        None => full,
    }
}

/// A value an actor hands out to the test (an address it made, an id...).
pub struct Slot<T>(Rc<RefCell<Option<T>>>);

impl<T> Clone for Slot<T> {
    fn clone(&self) -> Self {
        Slot(self.0.clone())
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot(Rc::new(RefCell::new(None)))
    }
}

impl<T: Clone> Slot<T> {
    pub fn new() -> Self {
        Slot::default()
    }

    pub fn set(&self, value: T) {
        *self.0.borrow_mut() = Some(value);
    }

    /// The value; panics if the actor has not set it.
    pub fn get(&self) -> T {
        self.0.borrow().clone().expect("set by the actor")
    }

    pub fn try_get(&self) -> Option<T> {
        self.0.borrow().clone()
    }
}

/// A hook of a [`Scripted`] actor.
pub type Script = Box<dyn FnMut(&mut Scripted, &mut commutator::Context<'_, Scripted>)>;

/// An actor whose hooks are closures given by the test; every hook logs
/// `"<name> <hook>"`.
#[derive(Default)]
pub struct Scripted {
    pub name: &'static str,
    pub log: Log,
    pub on_init: Option<Script>,
    pub on_start: Option<Script>,
    pub on_shutdown: Option<Script>,
    /// An address the scripts may keep (a discovered server, ...).
    pub peer: Option<Address>,
}

impl Scripted {
    pub fn new(name: &'static str, log: &Log) -> Scripted {
        Scripted {
            name,
            log: log.clone(),
            ..Scripted::default()
        }
    }

    pub fn on_init(
        mut self,
        f: impl FnMut(&mut Scripted, &mut commutator::Context<'_, Scripted>) + 'static,
    ) -> Self {
        self.on_init = Some(Box::new(f));
        self
    }

    pub fn on_start(
        mut self,
        f: impl FnMut(&mut Scripted, &mut commutator::Context<'_, Scripted>) + 'static,
    ) -> Self {
        self.on_start = Some(Box::new(f));
        self
    }

    pub fn on_shutdown(
        mut self,
        f: impl FnMut(&mut Scripted, &mut commutator::Context<'_, Scripted>) + 'static,
    ) -> Self {
        self.on_shutdown = Some(Box::new(f));
        self
    }

    fn run(
        &mut self,
        which: fn(&mut Scripted) -> &mut Option<Script>,
        ctx: &mut commutator::Context<'_, Scripted>,
    ) {
        if let Some(mut f) = which(self).take() {
            f(self, ctx);
            *which(self) = Some(f);
        }
    }

    pub fn say(&self, what: &str) {
        self.log.push(format!("{} {what}", self.name));
    }
}

impl commutator::Actor for Scripted {
    fn init_start(&mut self, ctx: &mut commutator::Context<'_, Self>) {
        self.say("init_start");
        self.run(|s| &mut s.on_init, ctx);
    }
    fn init_finish(&mut self, _: &mut commutator::Context<'_, Self>) {
        self.say("init_finish");
    }
    fn on_start(&mut self, ctx: &mut commutator::Context<'_, Self>) {
        self.say("on_start");
        self.run(|s| &mut s.on_start, ctx);
    }
    fn shutdown_start(&mut self, ctx: &mut commutator::Context<'_, Self>) {
        self.say("shutdown_start");
        self.run(|s| &mut s.on_shutdown, ctx);
    }
    fn shutdown_finish(&mut self, _: &mut commutator::Context<'_, Self>) {
        self.say("shutdown_finish");
    }
}

/// The position of `line` in `lines` (panics with the whole trace if absent).
pub fn pos(lines: &[String], line: &str) -> usize {
    lines
        .iter()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("{line:?} not in {lines:#?}"))
}

/// A supervisor that logs what it hears of its children:
/// `"<name> child init <child>: ok"` or `": <reason {:#}>"`, and
/// `"<name> child down <child>: <reason {:#}>"` (children by [`short`] name).
pub struct Boss {
    pub name: &'static str,
    pub log: Log,
}

impl Boss {
    pub fn new(name: &'static str, log: &Log) -> Boss {
        Boss {
            name,
            log: log.clone(),
        }
    }
}

impl commutator::Actor for Boss {
    fn on_child_init(
        &mut self,
        child: &Address,
        result: Result<(), &commutator::Error>,
        _: &mut commutator::Context<'_, Self>,
    ) {
        let result = match result {
            Ok(()) => "ok".to_string(),
            Err(reason) => format!("{reason:#}"),
        };
        let child = short(child);
        self.log
            .push(format!("{} child init {child}: {result}", self.name));
    }

    fn on_child_shutdown(
        &mut self,
        child: &Address,
        reason: &commutator::Error,
        _: &mut commutator::Context<'_, Self>,
    ) {
        let child = short(child);
        self.log
            .push(format!("{} child down {child}: {reason:#}", self.name));
    }
}

/// Runs `test` on a thread of its own; fails if it does not end within
/// `limit` (a hang or a blow-up fails instead of stalling the suite), and
/// passes a panic of the test on.
pub fn within(limit: Duration, test: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match finished.recv_timeout(limit) {
        Ok(()) => thread.join().expect("the test thread ended"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the test did not end within {limit:?}: a hang")
        }
    }
}

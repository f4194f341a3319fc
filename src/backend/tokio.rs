//! The tokio backend (feature `tokio`): a [`Locality`] as a task on a tokio
//! current-thread runtime or `LocalSet`, beside the program's own tasks.
//!
//! [`TokioLocality::run`] is a future that drives the locality until it
//! finishes. It is `!Send` (so is the locality): await it in
//! `Runtime::block_on` on a current-thread runtime, or in a `LocalSet`
//! (`run_until`, or `spawn_local` of a future that owns the
//! `TokioLocality`). It is woken by:
//!
//! - **messages from other threads and localities**: a post calls the
//!   task's waker (only while the task is parked: a busy locality costs its
//!   senders nothing);
//! - **its next deadline**: a `tokio::time::Sleep` reset to
//!   [`Locality::next_deadline`];
//! - **I/O readiness of its actors' sources**: the locality's poll
//!   ([`Driver`]) is watched by tokio's reactor through `AsyncFd`.
//!
//! The future cannot go to a multi-threaded executor: `tokio::spawn` (which
//! may move it to another thread) refuses it at compile time.
//!
//! ```compile_fail
//! # use commutator::{backend::tokio::TokioLocality, Locality};
//! # async fn f() -> Result<(), commutator::Error> {
//! let mut app = TokioLocality::new(Locality::new())?;
//! tokio::spawn(async move { app.run().await }); // error: the future is not `Send`
//! # Ok(()) }
//! ```
//!
//! Futures that actors start ([`Context::spawn_future`](crate::Context::spawn_future))
//! are polled inside this task, so they see the tokio runtime: `tokio::time`,
//! tokio sockets and tokio-based clients work in them.
//!
//! ```
//! use commutator::backend::tokio::TokioLocality;
//! use commutator::prelude::*;
//! use std::time::Duration;
//!
//! struct Nap;
//! impl Actor for Nap {
//!     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.subscribe(|_: &mut Self, _: &Woke, ctx: &mut Context<'_, Self>| ctx.shutdown());
//!     }
//!     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         // a tokio future, its output comes back as a message
//!         ctx.spawn_future(async {
//!             tokio::time::sleep(Duration::from_millis(5)).await;
//!             Woke
//!         });
//!     }
//! }
//! struct Woke;
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let mut app = TokioLocality::new(Locality::named("app"))?;
//! app.locality().spawn_root(Nap).finish()?;
//! runtime.block_on(app.run())?; // the root's reason: Ok for a normal end
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::embed::Driver;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::Locality;
use ::tokio::io::Interest;
use ::tokio::io::unix::AsyncFd;
use ::tokio::time::Sleep;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Instant;

/// Rounds of dispatch one poll of the task makes at most before it yields
/// to the runtime's other tasks.
const ROUNDS: usize = 4;

/// Items one round handles at most (fewer if the locality's budget is
/// smaller): a poll handles at most `ROUNDS * SLICE` items, so the
/// runtime's other tasks (a NATS connection on the same runtime, say) run
/// between the slices of a burst. (A quarter of it, 256, gave a NATS
/// publisher on the same runtime a little more; it cost w1 on tokio 5%.)
const SLICE: usize = 1024;

/// A [`Locality`] driven by a tokio task: see the [module](self).
pub struct TokioLocality {
    driver: Driver,
    task: Arc<TaskWaker>,
}

impl fmt::Debug for TokioLocality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokioLocality")
            .field("driver", &self.driver)
            .finish()
    }
}

/// The waker of the task that runs the locality (none while it does not run).
struct TaskWaker(Mutex<Option<Waker>>);

impl TaskWaker {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Waker>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn register(&self, waker: &Waker) {
        let mut slot = self.slot();
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    fn wake(&self) {
        if let Some(waker) = self.slot().as_ref() {
            waker.wake_by_ref();
        }
    }
}

impl TokioLocality {
    /// Takes `locality` for a tokio task; nothing runs until
    /// [`run`](TokioLocality::run) is awaited.
    ///
    /// Errors: [`ErrorCode::AlreadyRegisteredOnPoll`] if a loop drives
    /// `locality` already (the locality is dropped); [`ErrorCode::Io`] if its
    /// poll cannot be made.
    pub fn new(locality: Locality) -> Result<TokioLocality> {
        let task = Arc::new(TaskWaker(Mutex::new(None)));
        let waker = task.clone();
        let driver = Driver::with_waker(locality, move || waker.wake())?;
        Ok(TokioLocality { driver, task })
    }

    /// The locality: spawn, send, inspect (between runs, or before).
    pub fn locality(&mut self) -> &mut Locality {
        self.driver.locality()
    }

    /// Drives the locality until it finishes; returns as
    /// [`System::run`](crate::System::run) does: `Ok` for a normal end,
    /// else the root's shutdown reason (or the contract violation that
    /// stopped it).
    ///
    /// Cancel-safe: dropping the future stops driving the locality where it
    /// is, and a later `run` goes on from there.
    ///
    /// Errors: [`ErrorCode::NoRuntime`] outside a tokio runtime, or on one
    /// built without I/O or timers (`enable_io`, `enable_time`, or
    /// `enable_all`; tokio reports those as a panic, which is caught here,
    /// though the panic hook still prints it); [`ErrorCode::InvalidArgument`] if the locality has no
    /// actor and no handle (it could never finish); [`ErrorCode::Io`] if its
    /// poll fails.
    pub async fn run(&mut self) -> Result<()> {
        let (fd, sleep) = self.attach()?;
        let mut run = Run {
            this: self,
            fd,
            sleep,
            armed: None,
        };
        std::future::poll_fn(|cx| run.poll(cx)).await
    }

    /// Checks the runtime and watches the locality's poll on its reactor.
    fn attach(&mut self) -> Result<(AsyncFd<mio::Registry>, Pin<Box<Sleep>>)> {
        if ::tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::new(ErrorCode::NoRuntime)
                .with_context("TokioLocality::run outside a tokio runtime"));
        }
        let locality = self.driver.locality();
        if !locality.is_served() {
            return Err(Error::new(ErrorCode::InvalidArgument).with_context("no root actor to run"));
        }
        let registry = self.driver.registry().try_clone()?;
        // tokio panics, at once, on a runtime without I/O or timers: say so
        // with an error instead.
        let made = catch_unwind(AssertUnwindSafe(|| {
            // tokio 1.54 deprecates the safe constructors for their lack of
            // I/O safety, in favour of `unsafe` ones whose contract is: the
            // descriptor stays open, and the same, for as long as the
            // `AsyncFd` lives. The `AsyncFd` owns this registry (a duplicate
            // of the poll's descriptor, closed only when it is dropped), so
            // that holds, and the crate stays free of `unsafe`.
            #[allow(deprecated)]
            let fd = AsyncFd::with_interest(registry, Interest::READABLE);
            let sleep = Box::pin(::tokio::time::sleep_until(::tokio::time::Instant::now()));
            (fd, sleep)
        }));
        match made {
            Ok((Ok(fd), sleep)) => Ok((fd, sleep)),
            Ok((Err(e), _)) => Err(Error::io(e)),
            Err(_) => Err(Error::new(ErrorCode::NoRuntime)
                .with_context("the tokio runtime needs I/O and timers enabled (enable_all)")),
        }
    }
}

/// One `run`: the reactor's view of the locality's poll, and its timer.
struct Run<'a> {
    this: &'a mut TokioLocality,
    fd: AsyncFd<mio::Registry>,
    sleep: Pin<Box<Sleep>>,
    /// The deadline `sleep` is set to, if it is armed.
    armed: Option<Instant>,
}

impl Run<'_> {
    fn poll(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        self.this.task.register(cx.waker());
        self.this.driver.locality().set_parked(false);
        for _ in 0..ROUNDS {
            if let Err(e) = self.take_io(cx) {
                return Poll::Ready(Err(e));
            }
            let locality = self.this.driver.locality();
            let slice = locality.budget().min(SLICE);
            locality.dispatch_at_most(Instant::now(), slice);
            if locality.is_finished() {
                return Poll::Ready(self.this.driver.result());
            }
            if locality.has_pending() {
                continue; // the budget ran out with work left
            }
            if let Some(deadline) = locality.next_deadline() {
                if self.armed != Some(deadline) {
                    self.armed = Some(deadline);
                    let at = ::tokio::time::Instant::from_std(deadline);
                    self.sleep.as_mut().reset(at);
                }
                if self.sleep.as_mut().poll(cx).is_ready() {
                    self.armed = None;
                    continue;
                }
            }
            // Parked: from here on, senders wake the task. Mail that came
            // meanwhile is taken now.
            if self.this.driver.locality().set_parked(true) {
                self.this.driver.locality().set_parked(false);
                continue;
            }
            return Poll::Pending;
        }
        // Work is left: let the runtime's other tasks run, then go on.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Turns the I/O events waiting on the locality's poll into messages;
    /// leaves the reactor watching it.
    fn take_io(&mut self, cx: &mut TaskContext<'_>) -> Result<()> {
        loop {
            match self.fd.poll_read_ready(cx) {
                Poll::Ready(Ok(mut guard)) => {
                    self.this.driver.poll_events()?;
                    guard.clear_ready();
                }
                Poll::Ready(Err(e)) => return Err(Error::io(e)),
                Poll::Pending => return Ok(()),
            }
        }
    }
}

impl Drop for Run<'_> {
    fn drop(&mut self) {
        // Not driven any more: senders wake nobody until the next `run`,
        // which dispatches first.
        *self.this.task.slot() = None;
        self.this.driver.locality().set_parked(true);
    }
}

//! Embedding a locality in a loop commutator does not ship: the contract,
//! and [`Driver`], a locality with a poll of its own for any loop.
//!
//! Any loop can drive a [`Locality`] with three things:
//!
//! 1. **`dispatch(now)`** ([`Locality::dispatch`], [`Driver::dispatch`]):
//!    on the loop's thread, runs what is due at `now` (messages, timers,
//!    futures), up to a budget.
//! 2. **`poll_timeout(now)`** ([`Locality::poll_timeout`]): how long the
//!    loop may sleep before the next dispatch is due (`Some(ZERO)`: work is
//!    waiting; `None`: only a wake-up can bring work).
//! 3. **A wake-up from other threads**: either a function of yours
//!    ([`Locality::set_waker`], [`Driver::with_waker`]), called from the
//!    sender's thread, or, on unix, a file descriptor to watch for
//!    readability (the [`Driver`]'s poll, `AsRawFd`), which also carries the
//!    readiness of the actors' I/O sources.
//!
//! `docs/embedding.md` (in the [guide](crate::guide::embedding)) shows the
//! recipe for a GUI loop with a "wake" proxy. The tokio and calloop
//! backends ([`crate::backend`]) are built on [`Driver`].
//!
//! **One loop, one thread.** A locality has one loop: [`Locality::set_waker`],
//! [`Locality::register`], [`Driver`] and the backends refuse a locality a
//! loop drives already ([`ErrorCode::AlreadyRegisteredOnPoll`](crate::ErrorCode::AlreadyRegisteredOnPoll)).
//! And it stays on the thread that made it: a `Locality` (and a `Driver`)
//! is `!Send`, so driving it from another thread does not compile:
//!
//! ```compile_fail
//! let driver = commutator::embed::Driver::new(commutator::Locality::new())?;
//! std::thread::spawn(move || drop(driver)); // error: the driver is not `Send`
//! # Ok::<(), commutator::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::locality::Locality;
use std::fmt;
use std::time::{Duration, Instant};

/// The token of the driver's `mio::Waker` on its own poll.
const WAKER: mio::Token = mio::Token(0);

/// How many events one read of the poll takes at most (it reads again while full).
const EVENTS: usize = 256;

/// A [`Locality`] with a `mio::Poll` of its own, for any loop: the poll
/// carries the actors' I/O sources ([`Context::register_io`](crate::Context::register_io))
/// and, unless you give a waker function, the wake-ups from other threads.
///
/// Your loop, on the thread that made the driver:
///
/// - waits until the driver's file descriptor ([`AsRawFd`](std::os::fd::AsRawFd),
///   unix) is readable, or your waker function was called, or
///   [`poll_timeout`](Driver::poll_timeout) has passed;
/// - then calls [`dispatch`](Driver::dispatch) with the current time: it reads
///   the poll's events without waiting (I/O readiness becomes
///   [`Io`](crate::Io) messages) and dispatches the locality;
/// - stops when [`is_finished`](Driver::is_finished) (the root's reason is
///   [`result`](Driver::result)).
///
/// Watch the descriptor level-triggered (as `select`, `poll`, glib or
/// calloop's `Mode::Level` do), or edge-triggered if you dispatch until
/// [`poll_events`](Driver::poll_events) finds nothing.
///
/// ```
/// use commutator::embed::Driver;
/// use commutator::prelude::*;
/// use std::time::Instant;
///
/// struct Brief;
/// impl Actor for Brief {
///     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.shutdown(); // a root: the locality finishes
///     }
/// }
///
/// let mut driver = Driver::new(Locality::named("embedded"))?;
/// driver.locality().spawn_root(Brief).finish()?;
/// while !driver.is_finished() {
///     // Your loop: wait for the descriptor, or `poll_timeout`, then
///     driver.dispatch(Instant::now())?;
/// }
/// driver.result()?; // Ok: the root shut down normally
/// # Ok::<(), commutator::Error>(())
/// ```
pub struct Driver {
    // Dropped first: its I/O guards deregister from the poll while it lives.
    locality: Locality,
    poll: mio::Poll,
    events: mio::Events,
    /// `true` if the poll carries the mio waker (no waker function).
    fd_wakes: bool,
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("locality", &self.locality.name())
            .field("fd_wakes", &self.fd_wakes)
            .finish()
    }
}

impl Driver {
    /// Takes `locality` onto a poll of its own, woken through the poll's
    /// file descriptor: messages from other threads make it readable.
    ///
    /// Errors: [`ErrorCode::AlreadyRegisteredOnPoll`](crate::ErrorCode::AlreadyRegisteredOnPoll)
    /// if a loop drives `locality` already ([`Locality::is_driven`]; the
    /// locality is dropped); [`ErrorCode::Io`](crate::ErrorCode::Io) if the
    /// poll cannot be made.
    pub fn new(locality: Locality) -> Result<Driver> {
        locality.check_not_driven()?;
        let poll = mio::Poll::new()?;
        let mut locality = locality;
        locality.register(poll.registry(), WAKER)?;
        Ok(Driver::assemble(locality, poll, true))
    }

    /// Takes `locality` onto a poll of its own for its actors' I/O, woken
    /// from other threads by calling `wake` (see [`Locality::set_waker`]):
    /// for a loop with a wake-up of its own. Watch the descriptor too if the
    /// actors use I/O.
    ///
    /// Errors: as [`Driver::new`].
    pub fn with_waker(
        locality: Locality,
        wake: impl Fn() + Send + Sync + 'static,
    ) -> Result<Driver> {
        locality.check_not_driven()?;
        let poll = mio::Poll::new()?;
        let mut locality = locality;
        locality.attach_io(poll.registry())?;
        locality.set_waker(wake)?;
        Ok(Driver::assemble(locality, poll, false))
    }

    fn assemble(locality: Locality, poll: mio::Poll, fd_wakes: bool) -> Driver {
        Driver {
            locality,
            poll,
            events: mio::Events::with_capacity(EVENTS),
            fd_wakes,
        }
    }

    /// The locality: spawn, send, inspect.
    pub fn locality(&mut self) -> &mut Locality {
        &mut self.locality
    }

    /// Reads the poll's ready events without waiting: an I/O event becomes an
    /// [`Io`](crate::Io) message for its actor, a wake-up needs nothing more.
    /// Returns how many events it read. [`dispatch`](Driver::dispatch) calls
    /// it first; call it alone to drain the descriptor.
    ///
    /// Errors: [`ErrorCode::Io`](crate::ErrorCode::Io) if polling fails.
    pub fn poll_events(&mut self) -> Result<usize> {
        if !self.fd_wakes && self.locality.io_sources() == 0 {
            return Ok(0); // nothing can be ready on the poll
        }
        let mut read = 0;
        loop {
            match self.poll.poll(&mut self.events, Some(Duration::ZERO)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(e)),
            }
            let mut n = 0;
            for event in self.events.iter() {
                n += 1;
                if self.locality.owns_io(event.token()) {
                    self.locality.on_event(event);
                }
            }
            read += n;
            if n < EVENTS {
                return Ok(read);
            }
        }
    }

    /// Reads the poll's events without waiting, then dispatches the locality
    /// at `now` (see [`Locality::dispatch`]). Returns how many items the
    /// dispatch handled.
    ///
    /// Errors: [`ErrorCode::Io`](crate::ErrorCode::Io) if polling fails (the
    /// locality is not dispatched).
    pub fn dispatch(&mut self, now: Instant) -> Result<usize> {
        self.poll_events()?;
        Ok(self.locality.dispatch(now))
    }

    /// See [`Locality::poll_timeout`].
    pub fn poll_timeout(&self, now: Instant) -> Option<Duration> {
        self.locality.poll_timeout(now)
    }

    /// See [`Locality::is_finished`].
    pub fn is_finished(&self) -> bool {
        self.locality.is_finished()
    }

    /// How the locality ended, as [`System::run`](crate::System::run) says
    /// it: `Ok` for a normal end (or while it runs), else the root's
    /// shutdown reason or the contract violation that stopped it.
    pub fn result(&self) -> Result<()> {
        match self.locality.exit_reason() {
            Some(reason) if !reason.is_normal() => Err(reason.clone()),
            _ => Ok(()),
        }
    }

    /// `true` if the driver is woken through its file descriptor (made with
    /// [`new`](Driver::new)), `false` if through a function of yours.
    pub fn wakes_through_fd(&self) -> bool {
        self.fd_wakes
    }

    /// The poll's registry (for a backend that watches the descriptor).
    #[cfg(all(unix, any(feature = "tokio", feature = "calloop")))]
    pub(crate) fn registry(&self) -> &mio::Registry {
        self.poll.registry()
    }
}

#[cfg(unix)]
impl std::os::fd::AsRawFd for Driver {
    /// The poll's descriptor: readable when an I/O event or (with
    /// [`Driver::new`]) a wake-up waits; then call [`Driver::dispatch`].
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.poll.as_raw_fd()
    }
}

#[cfg(unix)]
impl std::os::fd::AsFd for Driver {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.poll.registry().as_fd()
    }
}

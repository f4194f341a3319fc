//! [`System`]: a locality on a `mio::Poll` of its own, run until its roots have shut down.

use crate::actor::Actor;
use crate::address::Address;
use crate::builder::Builder;
use crate::error::{Error, ErrorCode, Result, SendError};
use crate::locality::{Locality, Stats};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The waker token a `System` uses on its own poll.
pub const SYSTEM_WAKER: mio::Token = mio::Token(0);

/// A locality with an owned loop: one `mio::Poll`, one thread.
///
/// [`run`](System::run) returns when every root actor has shut down: `Ok` for
/// a normal end, `Err` with the root's shutdown reason (and its cause chain)
/// otherwise.
///
/// Spawn the tree with [`spawn_root`](System::spawn_root) and
/// [`spawn`](System::spawn) (or let actors spawn their children), then call
/// `run` on the thread that made the system: like its locality, a `System` is
/// `!Send`. For a loop you own, use a [`Locality`] directly (see its docs).
/// For several threads, run one system per thread and connect them with
/// [`handle`](System::handle) and [`spawn_on`](System::spawn_on).
///
/// ```
/// use commutator::*;
///
/// struct Once;
/// impl Actor for Once {
///     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.fail(Error::failure("out of coffee"));
///     }
/// }
///
/// let mut system = System::named("app")?;
/// system.spawn_root(Once).finish()?;
/// let err = system.run().unwrap_err();
/// assert_eq!(err.to_string(), "actor failure (out of coffee)");
/// # Ok::<(), commutator::Error>(())
/// ```
#[derive(Debug)]
pub struct System {
    // Dropped first: it releases its claim on the poll before the poll closes.
    locality: Locality,
    poll: mio::Poll,
    events: mio::Events,
    spin: Duration,
    /// Spins that found no mail, in a row (at most `SPIN_MISSES_MAX`), and how many of the
    /// next blocks skip the spin: see `run`.
    spin_misses: u32,
    spin_skip: u32,
    /// Ends `run` when set: read at least this often (until it is).
    shutdown_flag: Option<(Arc<AtomicBool>, Duration)>,
}

/// Spins in a row that find no mail before `run` skips any (a spin that
/// misses now and then costs little), and the most that count (then 63
/// blocks in a row skip the spin).
const SPIN_MISSES_FREE: u32 = 3;
const SPIN_MISSES_MAX: u32 = SPIN_MISSES_FREE + 6;

/// How long `System::run` spins for mail before it blocks, by default.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(20);

impl System {
    /// A system whose locality is named `L<n>` (`n` counts the localities
    /// made in this process).
    ///
    /// Errors: [`ErrorCode::Io`] if the poll or its waker cannot be made.
    pub fn new() -> Result<System> {
        System::with_locality(Locality::new())
    }

    /// A system whose locality has the given name (it shows in every address).
    ///
    /// Errors: as [`System::new`].
    pub fn named(name: impl Into<String>) -> Result<System> {
        System::with_locality(Locality::named(name))
    }

    fn with_locality(mut locality: Locality) -> Result<System> {
        let poll = mio::Poll::new()?;
        locality.register(poll.registry(), SYSTEM_WAKER)?;
        Ok(System {
            poll,
            events: mio::Events::with_capacity(256),
            locality,
            spin: DEFAULT_SPIN,
            spin_misses: 0,
            spin_skip: 0,
            shutdown_flag: None,
        })
    }

    /// Sets how long `run` spins, looking for mail from other threads, before
    /// it blocks in `poll` (default [`DEFAULT_SPIN`]; zero: never spin).
    /// Spinning trades a little CPU for much lower cross-thread latency; it
    /// is adaptive: after three spins in a row that found no mail, each one
    /// more doubles the number of blocks that skip it (up to 63), and one
    /// that finds mail resets that.
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin = spin;
    }

    /// Ends [`run`](System::run) cleanly once `flag` is set (from another
    /// thread, or a signal handler: see `examples/ctrl_c.rs`): every root
    /// is then asked to shut down, normally (`shutdown flag set`), and
    /// `run` returns when they are gone (and no [`LocalityHandle`](crate::LocalityHandle)
    /// is left, as always). `run` reads the flag at least
    /// every `every` (at least a millisecond). For one supervisor rather
    /// than the whole system, see
    /// [`SupervisorConfig::shutdown_flag`](crate::SupervisorConfig::shutdown_flag).
    pub fn set_shutdown_flag(&mut self, flag: Arc<AtomicBool>, every: Duration) {
        self.shutdown_flag = Some((flag, every.max(Duration::from_millis(1))));
    }

    /// The locality the system runs: for what `System` does not repeat
    /// ([`Locality::inspect_with`], [`Locality::state_of`],
    /// [`Locality::shutdown`], [`Locality::on_contract_violation`], ...).
    pub fn locality(&mut self) -> &mut Locality {
        &mut self.locality
    }

    /// See [`Locality::handle`]. While any handle lives, [`run`](System::run)
    /// does not return (more actors may still come through it): drop the
    /// handles you no longer need.
    pub fn handle(&self) -> crate::LocalityHandle {
        self.locality.handle()
    }

    /// See [`Locality::spawn_root`].
    pub fn spawn_root<A: Actor>(&mut self, actor: A) -> Builder<'_, A> {
        self.locality.spawn_root(actor)
    }

    /// See [`Locality::spawn`].
    pub fn spawn<A: Actor>(&mut self, supervisor: &Address, actor: A) -> Builder<'_, A> {
        self.locality.spawn(supervisor, actor)
    }

    /// See [`Locality::spawn_with`].
    pub fn spawn_with<A: Actor>(
        &mut self,
        supervisor: &Address,
        factory: impl FnMut() -> A + 'static,
    ) -> Builder<'_, A> {
        self.locality.spawn_with(supervisor, factory)
    }

    /// See [`Locality::spawn_on`].
    pub fn spawn_on<A: Actor>(
        &mut self,
        locality: &crate::LocalityHandle,
        supervisor: &Address,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Builder<'_, A, crate::Elsewhere<A>> {
        self.locality.spawn_on(locality, supervisor, factory)
    }

    /// See [`Locality::set_inbox_capacity`].
    pub fn set_inbox_capacity(&mut self, capacity: usize) -> Result<()> {
        self.locality.set_inbox_capacity(capacity)
    }

    /// See [`Locality::send`].
    pub fn send<M: Send + 'static>(
        &mut self,
        to: &Address,
        message: M,
    ) -> Result<(), SendError<M>> {
        self.locality.send(to, message)
    }

    /// See [`Locality::shutdown`].
    pub fn shutdown(&mut self, address: &Address) -> Result<()> {
        self.locality.shutdown(address)
    }

    /// See [`Locality::state_of`].
    pub fn state_of(&self, address: &Address) -> Option<crate::ActorState> {
        self.locality.state_of(address)
    }

    /// See [`Locality::registry_of`].
    pub fn registry_of(&self, address: &Address) -> Option<Address> {
        self.locality.registry_of(address)
    }

    /// See [`Locality::dead_letters`].
    pub fn dead_letters(&mut self) -> Address {
        self.locality.dead_letters()
    }

    /// See [`Locality::inspect_payload`].
    pub fn inspect_payload<M: std::fmt::Debug + 'static>(&mut self) {
        self.locality.inspect_payload::<M>();
    }

    /// See [`Locality::inspect`].
    pub fn inspect(&mut self, level: u8) {
        self.locality.inspect(level);
    }

    /// See [`Locality::stats`].
    pub fn stats(&self) -> Stats {
        self.locality.stats()
    }

    /// Runs the loop until every root actor has shut down.
    ///
    /// Between dispatches it spins for mail from other threads for up to the
    /// spin time ([`set_spin`](System::set_spin), while spinning pays off),
    /// then blocks in `poll`
    /// until an event, a message from another thread or the next timer.
    ///
    /// A system with no actor of its own may serve others through its
    /// [`handle`](System::handle): it runs until its actors are gone and the
    /// last handle is dropped.
    ///
    /// Errors: [`ErrorCode::InvalidArgument`] if no actor was spawned and no
    /// handle made;
    /// the root's shutdown reason if it was not normal; [`ErrorCode::Io`] if
    /// polling fails.
    pub fn run(&mut self) -> Result<()> {
        if !self.locality.is_served() {
            return Err(Error::new(ErrorCode::InvalidArgument).with_context("no root actor to run"));
        }
        self.locality.set_parked(false);
        loop {
            self.locality.dispatch(Instant::now());
            if self.locality.is_finished() {
                break;
            }
            let mut timeout = self.locality.poll_timeout(Instant::now());
            if let Some((flag, every)) = &self.shutdown_flag {
                if flag.load(Ordering::Acquire) {
                    self.shutdown_flag = None;
                    let reason = Error::normal().with_context("shutdown flag set");
                    self.locality.shutdown_roots(&reason);
                    continue;
                }
                let every = *every;
                timeout = Some(timeout.map_or(every, |t| t.min(every)));
            }
            if timeout != Some(Duration::ZERO) {
                // Spin a little for mail from other threads before blocking:
                // a thread that sleeps costs the sender a wake-up syscall and
                // the receiver a trip through the scheduler.
                // Yield while spinning: a sender on the same core (or an
                // oversubscribed machine) gets the CPU it needs to answer.
                // (Measured on a 2-vCPU VM: spinning without yielding, with
                // or without `spin_loop` hints, even for 2 µs, made w5 5 to
                // 20 times slower.)
                // Only while spinning pays off: after a few spins in a row
                // that found no mail, each one more doubles the number of
                // blocks that skip it (up to 63); one that finds mail
                // resets that (a locality that mostly waits for a network
                // round trip would otherwise take CPU from the threads that
                // do the work).
                if self.spin_skip > 0 {
                    self.spin_skip -= 1;
                } else if !self.spin.is_zero() {
                    let spin_until = Instant::now() + self.spin;
                    while !self.locality.has_mail() && Instant::now() < spin_until {
                        std::thread::yield_now();
                    }
                    if self.locality.has_mail() {
                        self.spin_misses = 0;
                    } else {
                        self.spin_misses = (self.spin_misses + 1).min(SPIN_MISSES_MAX);
                        self.spin_skip =
                            (1 << self.spin_misses.saturating_sub(SPIN_MISSES_FREE)) - 1;
                    }
                }
                if self.locality.has_mail() || self.locality.set_parked(true) {
                    self.locality.set_parked(false);
                    continue;
                }
            }
            let polled = self.poll.poll(&mut self.events, timeout);
            self.locality.set_parked(false);
            match polled {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
            for event in self.events.iter() {
                if self.locality.handles(event.token()) {
                    self.locality.on_event(event);
                }
            }
        }
        self.locality.set_parked(true);
        match self.locality.exit_reason() {
            Some(reason) if !reason.is_normal() => Err(reason.clone()),
            _ => Ok(()),
        }
    }
}

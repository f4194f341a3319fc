//! A test kit for your actors: a locality on a manual clock, stepped and
//! advanced by hand, and probes that collect what an address received. No
//! poll, no thread, no sleeping: a test of an hour-long timeout runs in
//! microseconds, the same way every time.
//!
//! ```
//! use commutator::prelude::*;
//! use commutator::testing::Harness;
//! use std::time::Duration;
//!
//! /// Sends `Beat(n)` to `to` every second, three times, then shuts down.
//! struct Heart { to: Address, beats: u32 }
//! #[derive(Clone, Debug, PartialEq)]
//! struct Beat(u32);
//! impl Actor for Heart {
//!     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.start_timer(Duration::from_secs(1), Heart::beat);
//!     }
//! }
//! impl Heart {
//!     fn beat(&mut self, ctx: &mut Context<'_, Self>, _: TimerId) {
//!         self.beats += 1;
//!         ctx.send(&self.to, Beat(self.beats));
//!         if self.beats < 3 {
//!             ctx.start_timer(Duration::from_secs(1), Heart::beat);
//!         } else {
//!             ctx.shutdown();
//!         }
//!     }
//! }
//!
//! let mut t = Harness::named("test");
//! let beats = t.probe::<Beat>(); // an address that keeps what it receives
//! t.spawn_root(Heart { to: beats.address().clone(), beats: 0 }).finish()?;
//! t.run_until_idle();
//! assert!(beats.is_empty());
//! t.advance(Duration::from_millis(1500));
//! assert_eq!(beats.take(), [Beat(1)]);
//! assert_eq!(t.advance_to_next_deadline(), Some(t.start() + Duration::from_secs(2)));
//! assert_eq!(beats.take(), [Beat(2)]);
//! assert!(t.run_until_finished(Duration::from_secs(60)));
//! assert_eq!(beats.take(), [Beat(3)]);
//! assert_eq!(t.elapsed(), Duration::from_secs(3));
//! # Ok::<(), commutator::Error>(())
//! ```

use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::{Core, Locality};
use crate::subscription::Handler;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A [`Locality`] on a manual clock, for tests. It dereferences to the
/// locality (spawn, send, `state_of`, `stats`...); time moves only when you
/// say so, and timers fire at their own deadlines, in order, however far
/// you jump.
pub struct Harness {
    locality: Locality,
    start: Instant,
    now: Instant,
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness")
            .field("locality", &self.locality.name())
            .field("elapsed", &self.elapsed())
            .finish()
    }
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new()
    }
}

impl Harness {
    /// A harness around a new locality (named `L<n>`); the clock starts now.
    pub fn new() -> Harness {
        Harness::with_locality(Locality::new())
    }

    /// A harness around a new locality with this name.
    pub fn named(name: impl Into<String>) -> Harness {
        Harness::with_locality(Locality::named(name))
    }

    /// A harness around a locality of yours; the clock starts at its
    /// [`now`](Locality::now).
    pub fn with_locality(locality: Locality) -> Harness {
        let now = locality.now();
        Harness {
            locality,
            start: now,
            now,
        }
    }

    /// The locality.
    pub fn locality(&mut self) -> &mut Locality {
        &mut self.locality
    }

    /// The manual clock's time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// When the clock started.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// How far the clock has moved since it started.
    pub fn elapsed(&self) -> Duration {
        self.now.duration_since(self.start)
    }

    /// Handles about one item at the current time (a message, a due timer,
    /// or the futures woken meanwhile); returns how many it handled (zero:
    /// nothing was waiting).
    pub fn step(&mut self) -> usize {
        let budget = self.locality.budget();
        self.locality.set_budget(1);
        let done = self.locality.dispatch(self.now);
        self.locality.set_budget(budget);
        done
    }

    /// Dispatches at the current time until nothing is left to do at it;
    /// returns how many items it handled.
    pub fn run_until_idle(&mut self) -> usize {
        self.locality.run_until_idle(self.now)
    }

    /// Moves the clock forward by `by`: every timer due on the way fires at
    /// its own deadline, in deadline order, with what it causes run to
    /// idle before the next. Returns how many items were handled.
    pub fn advance(&mut self, by: Duration) -> usize {
        let to = self.now.checked_add(by).unwrap_or(self.now);
        self.advance_to(to)
    }

    /// Moves the clock to `to` as [`advance`](Harness::advance) does (a time
    /// before the clock's only runs what is due now).
    pub fn advance_to(&mut self, to: Instant) -> usize {
        let mut done = self.run_until_idle();
        while let Some(deadline) = self.locality.next_deadline().filter(|d| *d <= to) {
            if self.locality.is_finished() {
                break;
            }
            self.now = self.now.max(deadline);
            done += self.run_until_idle();
        }
        self.now = self.now.max(to);
        done + self.run_until_idle()
    }

    /// Jumps to the next deadline (a timer, a request or lifecycle timeout,
    /// a restart delay) and runs until idle there; returns that deadline,
    /// or `None` (the clock unmoved) if no timer is pending.
    pub fn advance_to_next_deadline(&mut self) -> Option<Instant> {
        self.run_until_idle();
        let deadline = self.locality.next_deadline()?;
        self.now = self.now.max(deadline);
        self.run_until_idle();
        Some(deadline)
    }

    /// Jumps from deadline to deadline until the locality finishes, no timer
    /// is left, or the next deadline is more than `limit` after the clock's
    /// start; `true` if it finished. Mind the long timeouts this also fires
    /// (a registry discovery that waits, a request timeout).
    pub fn run_until_finished(&mut self, limit: Duration) -> bool {
        let end = self.start.checked_add(limit);
        self.run_until_idle();
        while !self.locality.is_finished() {
            match self.locality.next_deadline() {
                Some(d) if end.is_none_or(|end| d <= end) => {
                    self.now = self.now.max(d);
                    self.run_until_idle();
                }
                _ => break,
            }
        }
        self.locality.is_finished()
    }

    /// A new address of this locality that keeps every `M` it receives (a
    /// clone): give it to the actors under test as the place to send to.
    /// It belongs to no actor, so it never keeps the locality from finishing.
    pub fn probe<M: Clone + 'static>(&mut self) -> Probe<M> {
        let core = self.locality.core_mut();
        let seq = core.next_seq();
        let label = crate::message::short_type_name::<M>();
        let (key, address) = core.create_address_slot("probe".into(), seq, Some(label.into()));
        let probe = Probe::new(address);
        let handler = Box::new(Record(probe.received.clone(), PhantomData::<fn(M)>));
        crate::subscription::subscribe::<M>(core, key, Key::NONE, handler);
        probe
    }

    /// Collects every `M` that `address` (of this locality) receives from
    /// now on, beside its own subscribers (after them, in subscription order).
    ///
    /// Errors: [`ErrorCode::ForeignAddress`] for an address of another
    /// locality, [`ErrorCode::StaleAddress`] for one that is gone.
    pub fn watch<M: Clone + 'static>(&mut self, address: &Address) -> Result<Probe<M>> {
        let core = self.locality.core_mut();
        if address.locality_id() != core.id() {
            return Err(Error::new(ErrorCode::ForeignAddress).with_context(address.to_string()));
        }
        let probe = Probe::new(address.clone());
        let handler = Box::new(Record(probe.received.clone(), PhantomData::<fn(M)>));
        crate::subscription::subscribe::<M>(core, address.key(), Key::NONE, handler)
            .ok_or_else(|| address.stale_error())?;
        Ok(probe)
    }
}

impl Deref for Harness {
    type Target = Locality;
    fn deref(&self) -> &Locality {
        &self.locality
    }
}

impl DerefMut for Harness {
    fn deref_mut(&mut self) -> &mut Locality {
        &mut self.locality
    }
}

/// What an address received, in order: from [`Harness::probe`] or
/// [`Harness::watch`]. Cloning it shares the record.
pub struct Probe<M> {
    address: Address,
    received: Rc<RefCell<Vec<M>>>,
}

impl<M> Probe<M> {
    fn new(address: Address) -> Probe<M> {
        Probe {
            address,
            received: Rc::new(RefCell::new(Vec::new())),
        }
    }

    /// The address it listens on.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// Removes and returns what it received so far.
    pub fn take(&self) -> Vec<M> {
        std::mem::take(&mut *self.received.borrow_mut())
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.received.borrow().len()
    }

    /// `true` if it holds none.
    pub fn is_empty(&self) -> bool {
        self.received.borrow().is_empty()
    }
}

impl<M: Clone> Probe<M> {
    /// A copy of what it received so far (kept).
    pub fn received(&self) -> Vec<M> {
        self.received.borrow().clone()
    }

    /// The latest message it received.
    pub fn last(&self) -> Option<M> {
        self.received.borrow().last().cloned()
    }
}

impl<M> Clone for Probe<M> {
    fn clone(&self) -> Self {
        Probe {
            address: self.address.clone(),
            received: self.received.clone(),
        }
    }
}

impl<M> fmt::Debug for Probe<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Probe({}: {} received)", self.address, self.len())
    }
}

/// The probe's handler: keeps a clone of each message.
struct Record<M>(Rc<RefCell<Vec<M>>>, PhantomData<fn(M)>);

impl<M: Clone + 'static> Handler for Record<M> {
    fn call(self: Box<Self>, core: &mut Core, sub: Key, message: crate::queue::Lent<'_>) {
        match message.get::<M>() {
            Some(message) => self.0.borrow_mut().push(message.clone()),
            None => core.next = crate::subscription::Next::Reroute,
        }
        core.routes.put_handler(sub, self);
    }
}

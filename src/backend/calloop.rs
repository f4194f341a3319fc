//! The calloop backend (feature `calloop`): a [`Locality`] as a calloop
//! [`EventSource`], beside the program's own sources (a Wayland
//! connection, timers, channels).
//!
//! [`LocalitySource`] is inserted in an `EventLoop` like any source. It is
//! woken by:
//!
//! - **messages from other threads and localities**: a calloop ping (only
//!   while the loop is about to sleep: a busy locality costs its senders
//!   nothing);
//! - **its next deadline**: a calloop timer set to
//!   [`Locality::next_deadline`] (re-armed in place when it fires,
//!   registered again only for an earlier deadline);
//! - **I/O readiness of its actors' sources**: the locality's poll
//!   ([`Driver`]) is a level-triggered calloop source;
//! - **work left over** when a dispatch ran out of budget: the loop does
//!   not sleep while work waits (`before_sleep`).
//!
//! The callback is called once, when the locality has finished, with its
//! result (as [`System::run`](crate::System::run) returns it) and the
//! locality; the source then removes itself from the loop. Keep a
//! `calloop::Dispatcher` of it to reach the locality while it runs.
//!
//! ```
//! use calloop::EventLoop;
//! use commutator::backend::calloop::LocalitySource;
//! use commutator::prelude::*;
//! use std::time::Duration;
//!
//! struct Alarm;
//! impl Actor for Alarm {
//!     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.start_timer(Duration::from_millis(5), |_, ctx, _| ctx.shutdown());
//!     }
//! }
//!
//! let mut event_loop: EventLoop<Option<Result<(), Error>>> = EventLoop::try_new()?;
//! let mut source = LocalitySource::new(Locality::named("app"))?;
//! source.locality().spawn_root(Alarm).finish()?;
//! event_loop.handle().insert_source(source, |result, _locality, end| *end = Some(result))?;
//! let mut end = None;
//! while end.is_none() {
//!     event_loop.dispatch(None, &mut end)?; // the timer wakes it
//! }
//! assert_eq!(end, Some(Ok(())));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::embed::Driver;
use crate::error::{Error, ErrorCode, Result};
use crate::locality::Locality;
use ::calloop::generic::Generic;
use ::calloop::ping::{PingSource, make_ping};
use ::calloop::timer::{TimeoutAction, Timer};
use ::calloop::{EventSource, Interest, Mode, Poll, PostAction, Readiness, Token, TokenFactory};
use std::fmt;
use std::time::Instant;

/// A [`Locality`] as a calloop event source: see the [module](self).
pub struct LocalitySource {
    driver: Driver,
    ping: PingSource,
    /// The locality's poll, watched level-triggered.
    io: Generic<mio::Registry>,
    timer: Timer,
    /// The deadline the timer is registered for, if any.
    armed: Option<Instant>,
    /// The token of the events `before_sleep` makes up (work is waiting).
    token: Option<Token>,
    registered: bool,
    reported: bool,
}

impl fmt::Debug for LocalitySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalitySource")
            .field("driver", &self.driver)
            .field("armed", &self.armed)
            .field("registered", &self.registered)
            .finish()
    }
}

impl LocalitySource {
    /// Takes `locality` for a calloop loop; nothing runs until the source is
    /// inserted and the loop dispatches.
    ///
    /// Errors: [`ErrorCode::AlreadyRegisteredOnPoll`] if a loop drives
    /// `locality` already (the locality is dropped); [`ErrorCode::Io`] if its
    /// poll or its ping cannot be made.
    pub fn new(locality: Locality) -> Result<LocalitySource> {
        locality.check_not_driven()?;
        let (ping, ping_source) = make_ping()?;
        let driver = Driver::with_waker(locality, move || ping.ping())?;
        let registry = driver.registry().try_clone()?;
        Ok(LocalitySource {
            driver,
            ping: ping_source,
            io: Generic::new(registry, Interest::READ, Mode::Level),
            timer: Timer::immediate(),
            armed: None,
            token: None,
            registered: false,
            reported: false,
        })
    }

    /// The locality: spawn, send, inspect.
    pub fn locality(&mut self) -> &mut Locality {
        self.driver.locality()
    }

    /// Registers the parts, in the same order every time (their tokens come
    /// from `factory` in that order).
    fn register_parts(
        &mut self,
        poll: &mut Poll,
        factory: &mut TokenFactory,
        again: bool,
    ) -> ::calloop::Result<()> {
        if again {
            self.ping.reregister(poll, factory)?;
            self.io.reregister(poll, factory)?;
        } else {
            self.ping.register(poll, factory)?;
            self.io.register(poll, factory)?;
        }
        self.token = Some(factory.token());
        self.timer.unregister(poll)?;
        if let Some(deadline) = self.armed {
            self.timer.set_deadline(deadline);
            self.timer.register(poll, factory)?;
        }
        Ok(())
    }

    /// Arms the timer for the locality's next deadline: `true` if it must
    /// be registered again (an earlier deadline than the one armed). A
    /// later one is left to the armed timer, which re-arms when it fires.
    fn arm(&mut self) -> bool {
        let next = self.driver.locality().next_deadline();
        match next {
            Some(deadline) if self.armed.is_none_or(|armed| deadline < armed) => {
                self.armed = Some(deadline);
                true
            }
            _ => false,
        }
    }
}

impl EventSource for LocalitySource {
    /// The locality finished: `Ok` for a normal end, else the root's reason.
    type Event = Result<()>;
    /// The locality, to read its stats or exit reason.
    type Metadata = Locality;
    type Ret = ();
    type Error = Error;

    const NEEDS_EXTRA_LIFECYCLE_EVENTS: bool = true;

    fn process_events<F>(
        &mut self,
        readiness: Readiness,
        token: Token,
        mut callback: F,
    ) -> Result<PostAction>
    where
        F: FnMut(Result<()>, &mut Locality),
    {
        self.driver.locality().set_parked(false);
        self.ping
            .process_events(readiness, token, |(), _| {})
            .map_err(|e| Error::new(ErrorCode::Io).with_source(e))?;
        let mut io = false;
        self.io.process_events(readiness, token, |_, _| {
            io = true;
            Ok(PostAction::Continue)
        })?;
        // The timer: dispatch in its callback, and re-arm it in place for
        // the next deadline (no registration again).
        let mut fired = false;
        let (driver, armed) = (&mut self.driver, &mut self.armed);
        self.timer.process_events(readiness, token, |_, _| {
            fired = true;
            driver.locality().dispatch(Instant::now());
            *armed = driver.locality().next_deadline();
            match *armed {
                Some(deadline) => TimeoutAction::ToInstant(deadline),
                None => TimeoutAction::Drop,
            }
        })?;
        if io {
            self.driver.poll_events()?;
        }
        if !fired {
            self.driver.locality().dispatch(Instant::now());
        }
        if self.driver.is_finished() {
            if !self.reported {
                self.reported = true;
                let result = self.driver.result();
                callback(result, self.driver.locality());
            }
            return Ok(PostAction::Remove);
        }
        Ok(if self.arm() {
            PostAction::Reregister
        } else {
            PostAction::Continue
        })
    }

    fn register(&mut self, poll: &mut Poll, factory: &mut TokenFactory) -> ::calloop::Result<()> {
        if self.registered {
            let why = format!(
                "{}: this LocalitySource is in an event loop already (one loop per locality)",
                self.driver.locality().name()
            );
            let error = Error::new(ErrorCode::AlreadyRegisteredOnPoll).with_context(why);
            return Err(::calloop::Error::OtherError(Box::new(error)));
        }
        self.arm();
        self.register_parts(poll, factory, false)?;
        self.registered = true;
        Ok(())
    }

    fn reregister(&mut self, poll: &mut Poll, factory: &mut TokenFactory) -> ::calloop::Result<()> {
        self.register_parts(poll, factory, true)
    }

    fn unregister(&mut self, poll: &mut Poll) -> ::calloop::Result<()> {
        self.ping.unregister(poll)?;
        self.io.unregister(poll)?;
        self.timer.unregister(poll)?;
        self.armed = None;
        self.token = None;
        self.registered = false;
        Ok(())
    }

    /// Before the loop sleeps: work waiting (a dispatch that ran out of
    /// budget, messages posted meanwhile, or sent by the loop's own code)
    /// makes an event now. Otherwise the locality counts as parked: senders
    /// from other threads ping the loop from here on.
    fn before_sleep(&mut self) -> ::calloop::Result<Option<(Readiness, Token)>> {
        let Some(token) = self.token else {
            return Ok(None);
        };
        let locality = self.driver.locality();
        if locality.is_finished() && !self.reported {
            return Ok(Some((Readiness::EMPTY, token)));
        }
        if locality.has_pending() || locality.set_parked(true) {
            locality.set_parked(false);
            return Ok(Some((Readiness::EMPTY, token)));
        }
        Ok(None)
    }
}

//! What a foreign loop needs beyond `dispatch` and `poll_timeout`: a way to
//! be woken from other threads (a function of the loop's, or the `mio::Waker`
//! of a poll), and a poll for the actors' I/O sources.

use super::Locality;
use super::shared::Waker;
use crate::error::{Error, ErrorCode, Result};

impl Locality {
    /// Gives the locality a function to call when it needs a dispatch: the
    /// wake-up of your loop (a GUI toolkit's "wake" proxy, a channel send, a
    /// task waker). It is called from any thread (the sender's), at most
    /// once per batch of posts between two dispatches: when a message comes
    /// from another thread or locality, when a future started by an actor
    /// ([`Context::spawn_future`](crate::Context::spawn_future)) is woken,
    /// or when the last [`LocalityHandle`](crate::LocalityHandle) is
    /// dropped. Make it cheap and make it not block; then, on your loop's
    /// thread, call [`dispatch`](Locality::dispatch). A panic in it is
    /// caught and logged.
    ///
    /// This is the whole contract for a loop that cannot watch a file
    /// descriptor: `set_waker` once, then `dispatch(now)` when woken and
    /// when [`poll_timeout`](Locality::poll_timeout) has passed
    /// (`docs/embedding.md` has the recipe). A locality driven this way has
    /// no poll for its actors' I/O sources:
    /// [`Context::register_io`](crate::Context::register_io) fails with
    /// [`ErrorCode::NotRegistered`]; use [`Driver`](crate::embed::Driver)
    /// for that.
    ///
    /// Errors: [`ErrorCode::AlreadyRegisteredOnPoll`] if the locality is
    /// driven by a loop already (a waker set, registered on a poll, or in a
    /// backend): a locality has one loop.
    ///
    /// ```
    /// use commutator::prelude::*;
    /// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
    ///
    /// struct Hello;
    /// let woken = Arc::new(AtomicUsize::new(0));
    /// let counter = woken.clone();
    /// let mut locality = Locality::named("gui");
    /// locality.set_waker(move || { counter.fetch_add(1, Ordering::SeqCst); })?;
    /// let root = locality.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
    /// locality.run_until_idle(locality.now());
    ///
    /// std::thread::spawn(move || root.send(Hello).map_err(|e| e.error)).join().unwrap()?;
    /// assert_eq!(woken.load(Ordering::SeqCst), 1); // now dispatch, on this thread
    /// assert!(locality.set_waker(|| {}).is_err()); // one loop per locality
    /// # Ok::<(), commutator::Error>(())
    /// ```
    pub fn set_waker(&mut self, wake: impl Fn() + Send + Sync + 'static) -> Result<()> {
        self.check_not_driven()?;
        self.core.shared.set_waker(Waker::Callback(Box::new(wake)));
        Ok(())
    }

    /// `true` once a loop drives the locality: it was
    /// [registered](Locality::register) on a poll, given a
    /// [waker](Locality::set_waker), or put in a backend.
    pub fn is_driven(&self) -> bool {
        self.core.shared.has_waker()
    }

    /// [`ErrorCode::AlreadyRegisteredOnPoll`] if a loop drives the locality already.
    pub(crate) fn check_not_driven(&self) -> Result<()> {
        if self.is_driven() {
            let why = format!(
                "{}: a loop drives this locality already (one loop per locality)",
                self.name()
            );
            return Err(Error::new(ErrorCode::AlreadyRegisteredOnPoll).with_context(why));
        }
        Ok(())
    }

    /// Lets the locality's actors register I/O sources on `registry`.
    pub(crate) fn attach_io(&mut self, registry: &mio::Registry) -> Result<()> {
        self.core
            .io
            .borrow_mut()
            .set_registry(registry.try_clone()?);
        Ok(())
    }

    /// `true` if `token` is one of this locality's I/O tokens.
    pub(crate) fn owns_io(&self, token: mio::Token) -> bool {
        self.core.io.borrow().owns(token)
    }

    /// The dispatch budget (see [`Locality::set_budget`]).
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// The locality's state, for the crate's own tools (the test kit).
    pub(crate) fn core_mut(&mut self) -> &mut super::Core {
        &mut self.core
    }

    /// Registered I/O sources (no poll needed while there are none).
    pub(crate) fn io_sources(&self) -> usize {
        self.core.io.borrow().len()
    }
}

//! Making a child on another locality: a request posted to it, the
//! address reserved there at once, and [`PendingChild`], the handle on the
//! outcome.

use super::{Settings, spawn_from};
use crate::actor::{Actor, ParentLink, default_name};
use crate::address::Address;
use crate::error::{Error, ErrorCode, Result};
use crate::lifecycle::SystemMsg;
use crate::locality::Core;
use crate::locality::LocalityHandle;
use crate::locality::shared::Remote;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// A factory that other threads may call: the actor is made where it lives.
pub(crate) type SharedFactory<A> = Arc<Mutex<dyn FnMut() -> A + Send>>;

/// Makes an instance on the locality that runs it (at the address reserved
/// for it, if any).
type MakeThere = Box<dyn FnOnce(&mut Core, ParentLink, Option<Address>) -> Result<Address> + Send>;

/// A child being made on another locality, from
/// [`finish_pending`](crate::Builder::finish_pending): its address at once
/// (as [`finish`](crate::Builder::finish-1) returns it), and the outcome of
/// the spawn once that locality has handled it: the same address, or the
/// error that kept the child from being made (its locality finished, its
/// factory panicked). `Send + Sync + Clone`.
///
/// The address is reserved on the other locality when the spawn is asked:
/// messages sent to it at once are not lost, they reach the child once it
/// is made (after its `init_start`, as for a child spawned here). If the
/// child is not made, they are dead letters
/// ([`DeadLetterReason::StaleAddress`](crate::DeadLetterReason::StaleAddress)),
/// and a watch on it answers `Gone`.
///
/// An actor need not wait for the outcome: its supervisor hears the child's
/// init in [`Actor::on_child_init`], and a spawn that failed goes to its
/// restart policy and init-failure policy (as a child that went down, but
/// without the hooks). A restarted child is a new instance at a new
/// address; the handle keeps the first.
#[derive(Clone)]
pub struct PendingChild {
    address: Address,
    inner: Arc<(Mutex<Option<Result<Address>>>, Condvar)>,
}

impl PendingChild {
    fn new(address: Address) -> PendingChild {
        PendingChild {
            address,
            inner: Arc::new((Mutex::new(None), Condvar::new())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Result<Address>>> {
        self.inner.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves it (once: later calls change nothing).
    fn resolve(&self, result: Result<Address>) {
        let mut slot = self.lock();
        if slot.is_none() {
            *slot = Some(result);
            self.inner.1.notify_all();
        }
    }

    /// The child's address, known at once (reserved on its locality).
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// The outcome, once known: the address, or why the child could not
    /// be made (its locality finished, its factory panicked).
    pub fn result(&self) -> Option<Result<Address>> {
        self.lock().clone()
    }

    /// Blocks this thread until the outcome is known, or `timeout` has
    /// passed (`None`). Only from a thread that does not run the other
    /// locality (nor a locality the answer depends on): it would wait for
    /// itself.
    pub fn wait(&self, timeout: Duration) -> Option<Result<Address>> {
        let slot = self.lock();
        let (slot, _) = self
            .inner
            .1
            .wait_timeout_while(slot, timeout, |s| s.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        slot.clone()
    }
}

impl fmt::Debug for PendingChild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.lock() {
            None => write!(f, "PendingChild({}: pending)", self.address),
            Some(Ok(address)) => write!(f, "PendingChild({address}: made)"),
            Some(Err(error)) => write!(f, "PendingChild({}: {error})", self.address),
        }
    }
}

/// Resolves a [`PendingChild`] on every path: by the spawn, by a refusal,
/// or (the request dropped unserved) with an error.
struct Resolver(Option<PendingChild>);

impl Resolver {
    fn resolve(&mut self, result: &Result<Address>) {
        if let Some(pending) = self.0.take() {
            pending.resolve(result.clone());
        }
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        let why = "the spawn request was dropped unserved";
        self.resolve(&Err(
            Error::new(ErrorCode::LocalityFinished).with_context(why)
        ));
    }
}

/// The address reserved for a child on its locality (a far key): given
/// back there unless the child is made at it (then the address's removal
/// gives it back), also when the request is refused or dropped.
struct Reservation(Option<Address>);

impl Reservation {
    /// The child was made, or not: a key no address was made at is given
    /// back (its name kept for inspection lines and dead letters about it).
    fn settle(mut self, core: &mut Core) {
        let Some(at) = &self.0 else { return };
        if core.routes.address(at.key()).is_some() {
            self.0 = None; // made: the key goes with its address
        } else if core.inspect.level > 0 || core.dead_letters.is_some() {
            core.inspect.forget(at.key(), at.to_string());
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(at) = self.0.take() {
            at.locality().release_key(at.key());
        }
    }
}

/// Asks another locality to make a child of a supervisor here.
struct SpawnRequest {
    parent: Address,
    slot: usize,
    make: MakeThere,
    /// Told the outcome (the first instance's spawn only).
    pending: Resolver,
    /// The address reserved there (the first instance's spawn only).
    reserved: Reservation,
    /// Keeps the locality from finishing while the request is on its way:
    /// it was asked while a handle existed, and must be served.
    _keep: LocalityHandle,
}

impl Remote for SpawnRequest {
    /// The locality closed before making the child: tell its supervisor.
    fn refuse(mut self: Box<Self>) {
        let result = Err(Error::new(ErrorCode::LocalityFinished)
            .with_context("the child's locality has finished"));
        self.pending.resolve(&result);
        let msg = SystemMsg::ChildSpawned {
            slot: self.slot,
            result,
            reserved: self.reserved.0.clone().map(Box::new),
        };
        self.parent
            .locality()
            .post(Box::new(crate::lifecycle::SysEnvelope {
                dest: self.parent.key(),
                msg,
            }));
    }

    fn localize(self: Box<Self>, core: &mut Core) {
        let SpawnRequest {
            parent,
            slot,
            make,
            mut pending,
            reserved,
            _keep,
        } = *self;
        // A child of a supervisor elsewhere keeps this locality alive (its
        // shutdown unanchors it); one of a supervisor here does not.
        let foreign = parent.locality_id() != core.id();
        if foreign {
            core.anchor();
        }
        let link = ParentLink::new(core, &parent, slot);
        // The factory is user code: a panic there is a failed spawn.
        let at = reserved.0.clone();
        let result = match catch_unwind(AssertUnwindSafe(|| make(core, link, at))) {
            Ok(result) => result,
            Err(payload) => Err(Error::new(ErrorCode::Panicked).with_context(format!(
                "the factory of a child of {parent}: {}",
                crate::actor::panic_message(payload.as_ref())
            ))),
        };
        let reserved_for = result
            .is_err()
            .then(|| reserved.0.clone().map(Box::new))
            .flatten();
        reserved.settle(core);
        if result.is_err() && foreign {
            core.unanchor(None);
        }
        pending.resolve(&result);
        let msg = SystemMsg::ChildSpawned {
            slot,
            result,
            reserved: reserved_for,
        };
        core.send_system(&parent, msg);
        drop(_keep);
    }
}

/// Posts a request to make a child (from `factory`, with `settings`) of the
/// supervisor at `parent`, in its `slot`, on the locality of `handle`. The
/// first instance's spawn reserves the child's address there and returns a
/// handle on it and on the outcome; on this very locality, it makes the
/// child at once (so that a message sent to it now finds it).
pub(crate) fn spawn_elsewhere<A: Actor>(
    core: &mut Core,
    handle: &LocalityHandle,
    parent: Address,
    slot: usize,
    factory: SharedFactory<A>,
    settings: Settings,
    first: bool,
) -> Result<Option<PendingChild>> {
    let shared = &handle.shared;
    let reserved = match first {
        true => {
            let key = shared.reserve_key()?;
            let name = settings.name.clone().unwrap_or_else(default_name::<A>);
            Some(Address::new(
                shared.clone(),
                key,
                name,
                shared.next_seq(),
                None,
            ))
        }
        false => None,
    };
    let make = move |core: &mut Core, link: ParentLink, at: Option<Address>| {
        let actor = (factory.lock().unwrap_or_else(PoisonError::into_inner))();
        spawn_from(core, Some(link), settings, Vec::new(), actor, at)
    };
    let pending = reserved.clone().map(PendingChild::new);
    let request = Box::new(SpawnRequest {
        parent,
        slot,
        make: Box::new(make),
        pending: Resolver(pending.clone()),
        reserved: Reservation(reserved),
        _keep: handle.clone(),
    });
    if first && shared.id == core.id() {
        request.localize(core);
        return Ok(pending);
    }
    // Dropped if refused: the reservation is given back.
    match shared.post(request) {
        true => Ok(pending),
        false => Err(shared.finished_error()),
    }
}

//! The part of a locality that other threads may touch: its identity, its
//! cross-thread inbox and its waker (a `mio::Waker`, or a function of the
//! loop that drives it).

use super::inbox::{Inbox, Mail, Refused};
use crate::arena::Key;
use crate::error::{Error, ErrorCode, SendError};
use crate::locality::Core;
use crate::message::UserEnvelope;
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Something posted from another thread, made local again by the receiving locality.
pub(crate) trait Remote: Any + Send {
    fn localize(self: Box<Self>, core: &mut Core);

    /// The locality closed with this still in its inbox: answer for the
    /// missing actor where somebody waits for an answer (by default, nobody).
    fn refuse(self: Box<Self>) {}
}

/// Identity, inbox and waker of one locality; shared by every address it made.
pub(crate) struct LocalityShared {
    pub(crate) id: u32,
    pub(crate) name: String,
    /// Actor names interned for this locality's addresses (read from any thread).
    pub(crate) names: crate::names::Names,
    inbox: Inbox,
    waker: OnceLock<Waker>,
    /// Live `LocalityHandle`s: while any exists, more may be spawned here.
    handles: AtomicUsize,
    /// Set once an actor was anchored here or a handle was made.
    served: AtomicBool,
    /// The `#n` of the last actor made here (or reserved for one).
    seq: AtomicU64,
    /// Far address keys (`routing::FAR`) reserved by other threads for
    /// children they spawn here (`spawn_on`).
    reserved: Mutex<Reserved>,
}

/// The far keys in use: reserved, or the key of a live address here.
#[derive(Default)]
struct Reserved {
    /// Far indices given back, for reuse.
    free: Vec<u32>,
    /// The next far index never used.
    next: u32,
    /// The generation of the next reservation: no two reservations of one
    /// index share a key until it wraps (as in an `Arena`).
    generation: u32,
}

/// How a locality's loop is woken from other threads (set once).
pub(crate) enum Waker {
    /// The `mio::Waker` of the poll it is registered on.
    Mio(mio::Waker),
    /// A function of the loop that drives it (`Locality::set_waker`, the backends).
    Callback(Box<dyn Fn() + Send + Sync>),
}

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

impl LocalityShared {
    pub(crate) fn new(name: Option<String>) -> LocalityShared {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        LocalityShared {
            id,
            name: name.unwrap_or_else(|| format!("L{id}")),
            names: crate::names::Names::default(),
            inbox: Inbox::new(),
            waker: OnceLock::new(),
            handles: AtomicUsize::new(0),
            served: AtomicBool::new(false),
            seq: AtomicU64::new(0),
            reserved: Mutex::new(Reserved::default()),
        }
    }

    /// The `#n` of the next actor made here: from any thread, so that a
    /// child another thread spawns here has its number at once.
    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// [`next_seq`](Self::next_seq) on the locality's own thread: without
    /// a locked instruction while no [`LocalityHandle`](super::LocalityHandle)
    /// exists. Only a handle's holder takes a number from another thread,
    /// and a handle is made only on this thread (`Locality::handle`) or
    /// cloned from one that exists: with none, nobody else can take one
    /// until this thread makes a handle. A number taken elsewhere before
    /// the last handle went is seen here: the handle's drop (`AcqRel`) is
    /// ordered before the `Acquire` load that reads no handle.
    #[inline]
    pub(crate) fn next_seq_here(&self) -> u64 {
        if self.handles.load(Ordering::Acquire) != 0 {
            return self.next_seq();
        }
        let seq = self.seq.load(Ordering::Relaxed) + 1;
        self.seq.store(seq, Ordering::Relaxed);
        seq
    }

    /// Reserves a far address key (`routing::FAR`) for a child another
    /// thread spawns here, so that its address is known before this
    /// locality makes it. Given back by [`release_key`](Self::release_key):
    /// when the address made at it is removed, or when the child is not
    /// made. Errors: [`ErrorCode::LocalityFinished`] once the locality has
    /// finished (nothing is reserved); [`ErrorCode::InvalidArgument`] with
    /// 2^30 reservations at once.
    pub(crate) fn reserve_key(&self) -> Result<Key, Error> {
        if self.is_closed() {
            return Err(self.finished_error());
        }
        let mut reserved = self.reserved.lock().unwrap_or_else(PoisonError::into_inner);
        let index = match reserved.free.pop() {
            Some(index) => index,
            None if reserved.next < crate::routing::MAX_FAR => {
                reserved.next += 1;
                reserved.next - 1
            }
            None => {
                return Err(Error::new(ErrorCode::InvalidArgument).with_context(format!(
                    "{}: 2^30 children spawned from other threads and not gone",
                    self.name
                )));
            }
        };
        let generation = reserved.generation;
        reserved.generation = generation.wrapping_add(1);
        Ok(Key::new(crate::routing::FAR + index, generation))
    }

    /// Gives back a far key from [`reserve_key`](Self::reserve_key) (once).
    pub(crate) fn release_key(&self, key: Key) {
        debug_assert!(crate::routing::is_far(key));
        let mut reserved = self.reserved.lock().unwrap_or_else(PoisonError::into_inner);
        reserved.free.push(key.idx() - crate::routing::FAR);
    }

    /// Far keys reserved and not given back (for tests).
    #[cfg(test)]
    pub(crate) fn reserved_keys(&self) -> usize {
        let reserved = self.reserved.lock().unwrap_or_else(PoisonError::into_inner);
        reserved.next as usize - reserved.free.len()
    }

    /// The error for anything refused because this locality has finished.
    pub(crate) fn finished_error(&self) -> Error {
        Error::new(ErrorCode::LocalityFinished).with_context(self.name.clone())
    }

    /// The error for a message refused because the inbox is full.
    pub(crate) fn full_error(&self) -> Error {
        Error::new(ErrorCode::InboxFull).with_context(format!(
            "{}: {} user messages wait in its inbox",
            self.name,
            self.inbox.capacity()
        ))
    }

    /// Admits one user message (to be pushed now, or later in a batch):
    /// [`ErrorCode::InboxFull`] if the inbox is full,
    /// [`ErrorCode::LocalityFinished`] if the locality has finished.
    pub(crate) fn admit_user(&self) -> Result<(), Error> {
        self.inbox.admit_user().map_err(|why| match why {
            Refused::Full => self.full_error(),
            Refused::Closed => self.finished_error(),
        })
    }

    /// Admits a reply (never refused for room); `false` if the locality has finished.
    pub(crate) fn admit_reply(&self) -> bool {
        self.inbox.admit_reply()
    }

    /// Posts a user message from any thread, if the inbox has room; hands it
    /// back with [`ErrorCode::InboxFull`] if not, with
    /// [`ErrorCode::LocalityFinished`] if the locality has finished.
    /// `sender` is `Key::REMOTE` for an actor elsewhere, `Key::NONE` from outside any actor.
    pub(crate) fn post_user<M: Send + 'static>(
        &self,
        dest: Key,
        sender: Key,
        message: M,
    ) -> Result<(), SendError<M>> {
        if let Err(error) = self.admit_user() {
            return Err(SendError { message, error });
        }
        let envelope = Box::new(UserEnvelope {
            dest,
            sender,
            message,
        });
        match self.inbox.push_user(envelope) {
            Ok(()) => {
                self.wake();
                Ok(())
            }
            Err(item) => {
                // Closed since admitted: nothing was refused, hand it back.
                let item: Box<dyn Any> = item;
                let envelope = item
                    .downcast::<UserEnvelope<M>>()
                    .expect("the inbox hands back what it was given");
                let error = self.finished_error();
                Err(SendError {
                    message: envelope.message,
                    error,
                })
            }
        }
    }

    /// As [`post_user`](Self::post_user), but waits for room until
    /// `deadline` (`None`: for as long as it takes). Never waits on a thread
    /// that runs a locality (it could be the one that must drain).
    pub(crate) fn post_user_waiting<M: Send + 'static>(
        &self,
        dest: Key,
        message: M,
        deadline: Option<Instant>,
    ) -> Result<(), SendError<M>> {
        let mut message = message;
        loop {
            match self.post_user(dest, Key::NONE, message) {
                Err(e) if e.error.code() == ErrorCode::InboxFull => message = e.message,
                result => return result,
            }
            if super::inbox::runs_a_locality() {
                let error = Error::new(ErrorCode::InboxFull).with_context(format!(
                    "{}: the inbox is full, and a thread that runs a locality never waits",
                    self.name
                ));
                return Err(SendError { message, error });
            }
            if !self.inbox.wait_for_room(deadline) {
                let error = self.full_error();
                return Err(SendError { message, error });
            }
        }
    }

    /// Posts framework traffic (drained before user traffic, never refused
    /// for room); `false` if the locality has finished (dropped by design).
    pub(crate) fn post(&self, item: Box<dyn Remote>) -> bool {
        let posted = self.inbox.post_urgent(item);
        if posted {
            self.wake();
        }
        posted
    }

    /// User messages waiting in the inbox.
    pub(crate) fn inbox_len(&self) -> usize {
        self.inbox.user_len()
    }

    pub(crate) fn inbox_capacity(&self) -> usize {
        self.inbox.capacity()
    }

    pub(crate) fn set_inbox_capacity(&self, capacity: usize) {
        self.inbox.set_capacity(capacity);
    }

    pub(crate) fn handle_made(&self) {
        self.handles.fetch_add(1, Ordering::AcqRel);
        self.mark_served();
    }

    /// A handle is gone; the last one wakes the loop, which may now finish.
    pub(crate) fn handle_dropped(&self) {
        if self.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.wake();
        }
    }

    pub(crate) fn handles(&self) -> usize {
        self.handles.load(Ordering::Acquire)
    }

    pub(crate) fn mark_served(&self) {
        self.served.store(true, Ordering::Release);
    }

    pub(crate) fn served(&self) -> bool {
        self.served.load(Ordering::Acquire)
    }

    /// Wakes the loop, unless a wake is already pending or the loop is
    /// running (it will see the mail before it blocks).
    pub(crate) fn wake(&self) {
        if self.inbox.flag_mail()
            && let Some(waker) = self.waker.get()
        {
            self.call_waker(waker);
        }
    }

    #[cold]
    fn call_waker(&self, waker: &Waker) {
        match waker {
            Waker::Mio(waker) => {
                if let Err(e) = waker.wake() {
                    tracing::warn!(locality = %self.name, error = %e, "waking the locality failed");
                }
            }
            // User code, called on the sender's thread: a panic there must
            // not unwind into the sender (another locality's dispatch, say).
            Waker::Callback(wake) => {
                let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(wake));
                if let Err(payload) = called {
                    let what = crate::actor::panic_message(payload.as_ref());
                    tracing::error!(locality = %self.name, panic = %what, "the waker panicked");
                }
            }
        }
    }

    /// Marks mail as waiting, without waking anyone: for work the locality
    /// leaves itself (futures woken beyond a dispatch's budget), seen by its
    /// next look (`has_pending`, `poll_timeout`).
    pub(crate) fn note_mail(&self) {
        let _ = self.inbox.flag_mail();
    }

    /// The loop is running (`false`) or about to block (`true`). Returns,
    /// when parking, whether mail came meanwhile (then it must not block).
    pub(crate) fn set_parked(&self, parked: bool) -> bool {
        self.inbox.set_parked(parked)
    }

    /// `true` if something may be waiting in the inbox.
    pub(crate) fn has_mail(&self) -> bool {
        self.inbox.has_mail()
    }

    /// Moves what was posted into `into` (which should be empty): all
    /// framework traffic, then at most `user_limit` user messages.
    pub(crate) fn take_mail(&self, into: &mut Vec<Box<dyn Remote>>, user_limit: usize) {
        self.inbox.take(into, user_limit);
    }

    pub(crate) fn set_waker(&self, waker: Waker) -> bool {
        self.waker.set(waker).is_ok()
    }

    /// `true` once a loop's waker is set (the locality is driven by a loop).
    pub(crate) fn has_waker(&self) -> bool {
        self.waker.get().is_some()
    }

    /// Refuses everything from now on and refuses what is queued.
    pub(crate) fn close(&self) {
        self.inbox.close();
    }

    /// Closes the inbox if nothing waits in it (at once, so that nothing
    /// posted meanwhile is lost); `false` if something does.
    pub(crate) fn close_if_empty(&self) -> bool {
        self.inbox.close_if_empty()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.inbox.is_closed()
    }
}

/// `deadline` for a wait of `timeout` from now; `None` if too far to tell.
pub(crate) fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// What one locality sends to another, admitted there (counted against its
/// bound) and not yet pushed: user messages and replies, in the order sent,
/// consecutive user messages of one type in one run (one box). Flushed as
/// one batch, one channel operation, at the end of each dispatch, when it
/// holds `OUTBOX_FLUSH` messages, and when dropped.
pub(crate) struct Outbox {
    to: Arc<LocalityShared>,
    items: Vec<Mail>,
    messages: usize,
}

/// An outbox this full is flushed at once (it bounds the batch and the
/// delay a long dispatch adds).
pub(crate) const OUTBOX_FLUSH: usize = 256;

impl Outbox {
    pub(crate) fn new(to: Arc<LocalityShared>) -> Outbox {
        Outbox {
            to,
            items: Vec::new(),
            messages: 0,
        }
    }

    pub(crate) fn to(&self) -> &LocalityShared {
        &self.to
    }

    /// Appends a user message admitted by [`LocalityShared::admit_user`]:
    /// to the run of its type at the end, if there is one.
    pub(crate) fn push_user<M: Send + 'static>(&mut self, envelope: UserEnvelope<M>) {
        let envelope = match self.items.last_mut() {
            Some(last) => match last.append(envelope) {
                Ok(()) => return self.pushed(),
                Err(envelope) => envelope,
            },
            None => envelope,
        };
        self.items.push(Mail::new(Box::new(envelope)));
        self.pushed();
    }

    /// Appends an item admitted by [`LocalityShared::admit_reply`].
    pub(crate) fn push(&mut self, item: Box<dyn Remote>) {
        self.items.push(Mail::new(item));
        self.pushed();
    }

    fn pushed(&mut self) {
        self.messages += 1;
        if self.messages >= OUTBOX_FLUSH {
            self.flush();
        }
    }

    /// Pushes what waits here to the other locality and wakes it. If it has
    /// finished meanwhile, the items are dropped (messages and replies need
    /// no answer).
    pub(crate) fn flush(&mut self) {
        self.messages = 0;
        let pushed = match self.items.len() {
            0 => return,
            1 => {
                let mail = self.items.pop().expect("one item");
                self.to.inbox.push_mail(mail)
            }
            n => {
                let batch = std::mem::replace(&mut self.items, Vec::with_capacity(n));
                self.to.inbox.push_batch(batch)
            }
        };
        if pushed {
            self.to.wake();
        }
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.flush();
    }
}

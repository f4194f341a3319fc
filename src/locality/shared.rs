//! The part of a locality that other threads may touch: its identity, its
//! cross-thread inbox and its `mio::Waker`.

use crate::arena::Key;
use crate::error::{Error, ErrorCode, SendError};
use crate::locality::Core;
use crate::message::UserEnvelope;
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// Something posted from another thread, made local again by the receiving locality.
pub(crate) trait Remote: Any + Send {
    fn localize(self: Box<Self>, core: &mut Core);

    /// The locality closed with this still in its inbox: answer for the
    /// missing actor where somebody waits for an answer (by default, nobody).
    fn refuse(self: Box<Self>) {}
}

struct Inbox {
    closed: bool,
    items: Vec<Box<dyn Remote>>,
}

/// Identity, inbox and waker of one locality; shared by every address it made.
pub(crate) struct LocalityShared {
    pub(crate) id: u32,
    pub(crate) name: String,
    inbox: Mutex<Inbox>,
    waker: OnceLock<mio::Waker>,
    /// Mail may be waiting (set by senders, cleared when the inbox is taken).
    wake_pending: AtomicBool,
    /// The loop may be blocked in `poll`: senders must use the waker. Always
    /// `true` for an embedded locality; a `System` clears it while it runs
    /// and sets it just before blocking.
    parked: AtomicBool,
    /// Live `LocalityHandle`s: while any exists, more may be spawned here.
    handles: AtomicUsize,
    /// Set once an actor was anchored here or a handle was made.
    served: AtomicBool,
}

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

impl LocalityShared {
    pub(crate) fn new(name: Option<String>) -> LocalityShared {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        LocalityShared {
            id,
            name: name.unwrap_or_else(|| format!("L{id}")),
            inbox: Mutex::new(Inbox {
                closed: false,
                items: Vec::new(),
            }),
            waker: OnceLock::new(),
            wake_pending: AtomicBool::new(false),
            parked: AtomicBool::new(true),
            handles: AtomicUsize::new(0),
            served: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inbox> {
        // A panic while the lock is held cannot leave the Vec half-written.
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The error for anything refused because this locality has finished.
    pub(crate) fn finished_error(&self) -> Error {
        Error::new(ErrorCode::LocalityFinished).with_context(self.name.clone())
    }

    /// Posts a user message from any thread; hands it back if the locality has finished.
    /// `sender` is `Key::REMOTE` for an actor elsewhere, `Key::NONE` from outside any actor.
    pub(crate) fn post_user<M: Send + 'static>(
        &self,
        dest: Key,
        sender: Key,
        message: M,
    ) -> Result<(), SendError<M>> {
        let mut inbox = self.lock();
        if inbox.closed {
            let error = self.finished_error();
            return Err(SendError { message, error });
        }
        inbox.items.push(Box::new(UserEnvelope {
            dest,
            sender,
            message,
        }));
        drop(inbox);
        self.wake();
        Ok(())
    }

    /// Posts framework traffic; `false` if the locality has finished (dropped by design).
    pub(crate) fn post(&self, item: Box<dyn Remote>) -> bool {
        let mut inbox = self.lock();
        if inbox.closed {
            return false;
        }
        inbox.items.push(item);
        drop(inbox);
        self.wake();
        true
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
        // A plain load first: with a wake already pending (a busy receiver),
        // the sender skips the read-modify-write.
        if !self.wake_pending.load(Ordering::SeqCst)
            && !self.wake_pending.swap(true, Ordering::SeqCst)
            && self.parked.load(Ordering::SeqCst)
            && let Some(waker) = self.waker.get()
            && let Err(e) = waker.wake()
        {
            tracing::warn!(locality = %self.name, error = %e, "waking the locality failed");
        }
    }

    /// The loop is running (`false`) or about to block (`true`). Returns,
    /// when parking, whether mail came meanwhile (then it must not block).
    pub(crate) fn set_parked(&self, parked: bool) -> bool {
        self.parked.store(parked, Ordering::SeqCst);
        parked && self.wake_pending.load(Ordering::SeqCst)
    }

    /// `true` if something may be waiting in the inbox.
    pub(crate) fn has_mail(&self) -> bool {
        self.wake_pending.load(Ordering::SeqCst)
    }

    /// Moves everything posted so far into `into` (which should be empty).
    pub(crate) fn take_mail(&self, into: &mut Vec<Box<dyn Remote>>) {
        self.wake_pending.store(false, Ordering::SeqCst);
        std::mem::swap(&mut self.lock().items, into);
    }

    pub(crate) fn set_waker(&self, waker: mio::Waker) -> bool {
        self.waker.set(waker).is_ok()
    }

    /// Refuses everything from now on and drops what is queued.
    pub(crate) fn close(&self) {
        let items = {
            let mut inbox = self.lock();
            inbox.closed = true;
            std::mem::take(&mut inbox.items)
        };
        for item in items {
            item.refuse();
        }
    }

    /// Closes the inbox if nothing waits in it (at once, under its lock, so
    /// that nothing posted meanwhile is lost); `false` if something does.
    pub(crate) fn close_if_empty(&self) -> bool {
        let mut inbox = self.lock();
        if inbox.items.is_empty() {
            inbox.closed = true;
        }
        inbox.closed
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

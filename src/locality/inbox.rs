//! The cross-thread inbox of a locality: two lock-free lanes (std's
//! `mpsc`), a bound on user traffic, and a place for producers to wait.
//!
//! - The *urgent* lane carries framework traffic (lifecycle messages, spawn
//!   requests): never refused for being full, drained first.
//! - The *user* lane carries user messages (bounded: at most the capacity
//!   admitted and not yet drained) and replies (never refused: one per
//!   request, and the request was counted), one by one from plain threads
//!   or in batches from another locality (its outbox, flushed at the end of
//!   each dispatch: one channel operation per batch).
//!
//! One atomic word counts what was admitted and not yet drained, per lane,
//! and says whether the inbox is closed. A sender is admitted (the count goes
//! up) *before* it pushes, and the receiver counts down only what it took,
//! so the count never misses an item on its way: the locality can close when
//! the count is zero, atomically, and nothing posted meanwhile is lost.
//! Nothing here takes a lock per message; the receiver's lanes sit behind a
//! mutex that only the locality's own thread takes, once per drain.

use super::shared::Remote;
use crate::locality::Core;
use crate::message::UserEnvelope;
use std::any::Any;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// How many user messages from other threads (and from actors of other
/// localities) a locality's inbox holds, by default, before it refuses more.
pub const DEFAULT_INBOX_CAPACITY: usize = 1 << 16;

/// The largest inbox capacity; larger settings are taken as this one.
pub const MAX_INBOX_CAPACITY: usize = 1 << 31;

/// At most this many user messages wait in the local queue after a drain:
/// the rest stays in the inbox, so that framework traffic drained later
/// does not queue behind a whole backlog.
pub(crate) const DRAIN_BATCH: usize = 1024;

/// One user-lane item in the count (bits 0..32).
const USER: u64 = 1;
/// One urgent-lane item in the count (bits 32..63).
const URGENT: u64 = 1 << 32;
const USER_MASK: u64 = URGENT - 1;
const CLOSED: u64 = 1 << 63;

/// Why an item was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    Closed,
    Full,
}

thread_local! {
    /// Localities made on this thread and not yet closed: a thread that
    /// runs one must not block waiting for an inbox to drain.
    static LOCALITIES_HERE: Cell<usize> = const { Cell::new(0) };
}

/// `true` if the calling thread holds a locality that has not finished.
pub(crate) fn runs_a_locality() -> bool {
    LOCALITIES_HERE.try_with(Cell::get).unwrap_or(0) > 0
}

/// An item in a lane or an outbox, and how many user messages it carries
/// (a run carries several; framework traffic counts one on its own lane).
/// Dropped unopened (the lanes dropped at close, with whatever a racing
/// sender pushed last), it refuses itself: whoever waits for an answer gets one.
pub(crate) struct Mail {
    item: Option<Box<dyn Remote>>,
    messages: u64,
}

impl Mail {
    pub(crate) fn new(item: Box<dyn Remote>) -> Mail {
        Mail {
            item: Some(item),
            messages: 1,
        }
    }

    fn open(mut self) -> Box<dyn Remote> {
        self.item.take().expect("mail is made full and opened once")
    }

    /// Appends `envelope` to this item if it holds user messages of the same
    /// type (it becomes, or is, a run); hands it back if not.
    pub(crate) fn append<M: Send + 'static>(
        &mut self,
        envelope: UserEnvelope<M>,
    ) -> Result<(), UserEnvelope<M>> {
        let Some(item) = self.item.as_mut() else {
            return Err(envelope);
        };
        let item: &mut dyn Any = &mut **item;
        if let Some(run) = item.downcast_mut::<Run<M>>() {
            run.0.push(envelope);
        } else if item.is::<UserEnvelope<M>>() {
            let first: Box<dyn Any> = self.item.take().expect("checked above");
            let first = *first.downcast::<UserEnvelope<M>>().expect("checked above");
            let mut run = Vec::with_capacity(4);
            run.push(first);
            run.push(envelope);
            self.item = Some(Box::new(Run(run)));
        } else {
            return Err(envelope);
        }
        self.messages += 1;
        Ok(())
    }
}

impl Drop for Mail {
    fn drop(&mut self) {
        if let Some(item) = self.item.take() {
            item.refuse();
        }
    }
}

/// Consecutive user messages of one type from one locality to another, in
/// one box: a batch costs one allocation, not one per message.
struct Run<M>(Vec<UserEnvelope<M>>);

impl<M: Send + 'static> Remote for Run<M> {
    fn localize(self: Box<Self>, core: &mut Core) {
        for envelope in self.0 {
            core.enqueue(envelope);
        }
    }
}

/// What the user lane carries: one item, or a batch from another locality.
enum Post {
    One(Mail),
    Many(Vec<Mail>),
}

struct Lanes {
    urgent: Receiver<Mail>,
    user: Receiver<Post>,
    /// The rest of a batch that a drain did not take whole.
    rest: std::vec::IntoIter<Mail>,
}

/// The count, written by every sender (one compare-and-swap per message)
/// and by the receiver once per drain: on a cache line of its own.
#[repr(align(128))]
struct Count {
    /// Admitted and not yet drained, per lane; and `CLOSED`.
    state: AtomicU64,
    capacity: AtomicUsize,
    /// Producers waiting for room (read by each drain that took user items).
    waiting: AtomicUsize,
}

/// The mail and park flags, read by the receiver whenever it looks for
/// mail and written by senders once per push (or batch): apart from the
/// count, so that looking for mail does not take the count's line away
/// from a sender.
#[repr(align(128))]
struct Flags {
    /// Mail may be waiting (set by senders after their push, cleared by a drain).
    wake_pending: AtomicBool,
    /// The loop may be blocked in `poll`: senders must use the waker.
    parked: AtomicBool,
}

pub(crate) struct Inbox {
    count: Count,
    flags: Flags,
    urgent: Sender<Mail>,
    user: Sender<Post>,
    /// `None` once closed. Only the locality's thread takes this lock.
    lanes: Mutex<Option<Lanes>>,
    /// Counted on this thread's `LOCALITIES_HERE` until closed.
    counted: AtomicBool,
    room: Mutex<()>,
    room_made: Condvar,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while these locks are held; a poisoned one is intact.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inbox {
    /// A new, open inbox, counted as a locality of the calling thread.
    pub(crate) fn new() -> Inbox {
        let (urgent, urgent_rx) = channel();
        let (user, user_rx) = channel();
        let _ = LOCALITIES_HERE.try_with(|n| n.set(n.get() + 1));
        Inbox {
            count: Count {
                state: AtomicU64::new(0),
                capacity: AtomicUsize::new(DEFAULT_INBOX_CAPACITY),
                waiting: AtomicUsize::new(0),
            },
            flags: Flags {
                wake_pending: AtomicBool::new(false),
                parked: AtomicBool::new(true),
            },
            urgent,
            user,
            lanes: Mutex::new(Some(Lanes {
                urgent: urgent_rx,
                user: user_rx,
                rest: Vec::new().into_iter(),
            })),
            counted: AtomicBool::new(true),
            room: Mutex::new(()),
            room_made: Condvar::new(),
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.count.capacity.load(SeqCst)
    }

    /// Sets the bound (1 ..= `MAX_INBOX_CAPACITY`, checked by the caller).
    pub(crate) fn set_capacity(&self, capacity: usize) {
        self.count.capacity.store(capacity, SeqCst);
        self.notify_waiting();
    }

    /// User messages admitted and not yet drained (zero once closed).
    pub(crate) fn user_len(&self) -> usize {
        let state = self.count.state.load(SeqCst);
        if state & CLOSED != 0 {
            0
        } else {
            (state & USER_MASK) as usize
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.count.state.load(SeqCst) & CLOSED != 0
    }

    /// Admits one user message if there is room; then push it with
    /// [`push_user`](Inbox::push_user).
    pub(crate) fn admit_user(&self) -> Result<(), Refused> {
        let capacity = self.count.capacity.load(SeqCst) as u64;
        let mut state = self.count.state.load(SeqCst);
        loop {
            if state & CLOSED != 0 {
                return Err(Refused::Closed);
            }
            if state & USER_MASK >= capacity {
                return Err(Refused::Full);
            }
            match self
                .count
                .state
                .compare_exchange_weak(state, state + USER, SeqCst, SeqCst)
            {
                Ok(_) => return Ok(()),
                Err(now) => state = now,
            }
        }
    }

    /// Admits traffic that is never refused for room: `false` if closed.
    fn admit_always(&self, one: u64) -> bool {
        // Once closed, the count no longer matters: no need to take it back.
        self.count.state.fetch_add(one, SeqCst) & CLOSED == 0
    }

    /// Admits a reply (never refused for room); `false` if closed.
    pub(crate) fn admit_reply(&self) -> bool {
        self.admit_always(USER)
    }

    /// Pushes an admitted user message or reply; hands it back if the inbox
    /// closed since it was admitted.
    pub(crate) fn push_user(&self, item: Box<dyn Remote>) -> Result<(), Box<dyn Remote>> {
        // Fails only if the lanes were dropped: the item comes back unopened.
        match self.user.send(Post::One(Mail::new(item))) {
            Ok(()) => Ok(()),
            Err(e) => match e.0 {
                Post::One(mail) => Err(mail.open()),
                Post::Many(_) => unreachable!("sent one"),
            },
        }
    }

    /// Pushes one admitted user message or reply; `false` if the inbox
    /// closed since it was admitted (it is dropped).
    pub(crate) fn push_mail(&self, mail: Mail) -> bool {
        self.user.send(Post::One(mail)).is_ok()
    }

    /// Pushes a batch of admitted user messages and replies, in order;
    /// `false` if the inbox closed since they were admitted (they are
    /// dropped: user messages and replies need no answer).
    pub(crate) fn push_batch(&self, batch: Vec<Mail>) -> bool {
        self.user.send(Post::Many(batch)).is_ok()
    }

    /// Posts framework traffic: urgent lane, never full.
    pub(crate) fn post_urgent(&self, item: Box<dyn Remote>) -> bool {
        // A failed send hands the item back: opened, so it is not refused.
        self.admit_always(URGENT)
            && self
                .urgent
                .send(Mail::new(item))
                .map_err(|e| e.0.open())
                .is_ok()
    }

    /// Moves everything urgent and about `user_limit` user messages into `into`,
    /// urgent first, each lane in the order posted: an urgent item posted
    /// (by any thread) before a user message taken here is taken too.
    pub(crate) fn take(&self, into: &mut Vec<Box<dyn Remote>>, user_limit: usize) {
        self.flags.wake_pending.store(false, SeqCst);
        let user_limit = user_limit as u64;
        let (mut urgent, mut user) = (0u64, 0u64);
        let mut more = false;
        {
            let mut lanes = lock(&self.lanes);
            let Some(lanes) = lanes.as_mut() else {
                return;
            };
            while let Ok(mail) = lanes.urgent.try_recv() {
                into.push(mail.open());
                urgent += 1;
            }
            let urgent_end = into.len();
            #[cfg(test)]
            tests::between_lanes();
            // A run is taken whole: the limit may be passed by one run.
            while user < user_limit {
                let mail = match lanes.rest.next() {
                    Some(mail) => mail,
                    None => match lanes.user.try_recv() {
                        Ok(Post::One(mail)) => mail,
                        Ok(Post::Many(batch)) => {
                            lanes.rest = batch.into_iter();
                            continue;
                        }
                        Err(_) => break,
                    },
                };
                user += mail.messages;
                into.push(mail.open());
            }
            if user >= user_limit {
                more = true;
            }
            if user > 0 {
                // Framework traffic posted before a user message taken here
                // goes before it, even if it was posted after the urgent
                // lane was drained: a spawn request before a message to the
                // child's address (known at once, `spawn_on`), say.
                let before = into.len();
                while let Ok(mail) = lanes.urgent.try_recv() {
                    into.push(mail.open());
                    urgent += 1;
                }
                let late = into.len() - before;
                if late > 0 {
                    into[urgent_end..].rotate_right(late);
                }
            }
        }
        if urgent + user > 0 {
            self.count
                .state
                .fetch_sub(urgent * URGENT + user * USER, SeqCst);
        }
        if more {
            // What is left is drained next time, without a wake-up.
            self.flags.wake_pending.store(true, SeqCst);
        }
        if user > 0 {
            self.notify_waiting();
        }
    }

    fn notify_waiting(&self) {
        if self.count.waiting.load(SeqCst) > 0 {
            // Taking the lock orders us after a producer that saw no room
            // and is about to wait: it is waiting by the time we notify.
            drop(lock(&self.room));
            self.room_made.notify_all();
        }
    }

    /// Blocks until the user lane may have room (or the inbox is closed);
    /// `false` if `deadline` passed first.
    pub(crate) fn wait_for_room(&self, deadline: Option<Instant>) -> bool {
        let mut guard = lock(&self.room);
        self.count.waiting.fetch_add(1, SeqCst);
        let made = loop {
            let state = self.count.state.load(SeqCst);
            if state & CLOSED != 0 || state & USER_MASK < self.count.capacity.load(SeqCst) as u64 {
                break true;
            }
            guard = match deadline {
                None => self
                    .room_made
                    .wait(guard)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        break false;
                    }
                    self.room_made
                        .wait_timeout(guard, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        };
        self.count.waiting.fetch_sub(1, SeqCst);
        made
    }

    /// Closes the inbox if nothing was admitted and not drained (at once, so
    /// that nothing posted meanwhile is lost); `false` if something was.
    pub(crate) fn close_if_empty(&self) -> bool {
        match self.count.state.compare_exchange(0, CLOSED, SeqCst, SeqCst) {
            Ok(_) => true,
            Err(state) => state & CLOSED != 0,
        }
    }

    /// Refuses everything from now on, and refuses what is left (dropping
    /// the lanes drops their items, which refuse themselves). Called on the
    /// locality's own thread.
    pub(crate) fn close(&self) {
        self.count.state.fetch_or(CLOSED, SeqCst);
        let lanes = lock(&self.lanes).take();
        drop(lanes);
        if self.counted.swap(false, SeqCst) {
            let _ = LOCALITIES_HERE.try_with(|n| n.set(n.get().saturating_sub(1)));
        }
        self.notify_waiting();
    }

    /// `true` if something may be waiting (senders set it after pushing).
    pub(crate) fn has_mail(&self) -> bool {
        self.flags.wake_pending.load(SeqCst)
    }

    /// Sets the mail flag; `true` if this call set it and the loop may be
    /// blocked in `poll` (the caller must then use the waker).
    pub(crate) fn flag_mail(&self) -> bool {
        // A plain load first: with a wake already pending (a busy receiver),
        // the sender skips the read-modify-write.
        !self.flags.wake_pending.load(SeqCst)
            && !self.flags.wake_pending.swap(true, SeqCst)
            && self.flags.parked.load(SeqCst)
    }

    /// The loop is running (`false`) or about to block (`true`). Returns,
    /// when parking, whether mail came meanwhile (then it must not block).
    pub(crate) fn set_parked(&self, parked: bool) -> bool {
        self.flags.parked.store(parked, SeqCst);
        parked && self.flags.wake_pending.load(SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::sync::Arc;

    thread_local! {
        /// Runs once in the next `take`, between the two lanes.
        static BETWEEN: RefCell<Option<Box<dyn FnOnce()>>> = RefCell::new(None);
    }

    pub(super) fn between_lanes() {
        if let Some(run) = BETWEEN.with(|b| b.borrow_mut().take()) {
            run();
        }
    }

    struct Item(&'static str);
    impl Remote for Item {
        fn localize(self: Box<Self>, _: &mut Core) {}
    }

    /// Another thread posts a spawn request, then a message to the child,
    /// just after a drain took the urgent lane: the drain takes both, the
    /// request first (it used to take the message alone, which then found
    /// no child).
    #[test]
    fn an_urgent_item_posted_before_a_user_message_taken_with_it_comes_first() {
        let inbox = Arc::new(Inbox::new());
        let other = inbox.clone();
        BETWEEN.with(|b| {
            *b.borrow_mut() = Some(Box::new(move || {
                assert!(other.post_urgent(Box::new(Item("spawn"))));
                other.admit_user().unwrap();
                assert!(other.push_user(Box::new(Item("message"))).is_ok());
            }))
        });
        let mut into = Vec::new();
        inbox.take(&mut into, 10);
        let names: Vec<&str> = into
            .iter()
            .map(|item| {
                let item: &dyn Any = &**item;
                item.downcast_ref::<Item>().expect("an item").0
            })
            .collect();
        assert_eq!(names, ["spawn", "message"]);
        assert_eq!(inbox.count.state.load(SeqCst), 0, "both counted out");
        inbox.close();
    }
}

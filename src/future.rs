//! Futures as messages: an actor starts a future, and its output comes back
//! as a message on the actor's own address.
//!
//! The locality polls the futures itself, inside `dispatch`: on a
//! [`System`](crate::System), on a loop of yours, and on the
//! tokio backend (`backend::tokio`) alike. There the dispatch runs
//! inside a tokio task, so a future sees the runtime (its timers, its
//! reactor, `tokio::spawn_local`) and tokio's drivers wake it. A future's
//! waker is made once, when it starts: waking it puts the future's key on
//! the locality's ready list and wakes the loop the way a message from
//! another thread does; polling it allocates nothing.
//!
//! A future belongs to the actor that started it: it is dropped, unfinished,
//! when the actor shuts down (or when the actor cancels it), so no output
//! reaches an actor that is gone. A panic while polling it fails the actor
//! (`ErrorCode::Panicked`), as a panic in a handler does.

use crate::actor::Actor;
use crate::arena::{Arena, Key, KeyMap};
use crate::context::Context;
use crate::locality::Core;
use crate::locality::shared::LocalityShared;
use crate::message::UserEnvelope;
use smallvec::SmallVec;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Wake, Waker};

/// Names a future started by [`Context::spawn_future`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FutureId(Key);

impl FutureId {
    /// No future: what [`Context::spawn_future`] returns in `shutdown_finish`.
    pub const NONE: FutureId = FutureId(Key::NONE);

    /// `true` for [`FutureId::NONE`].
    pub fn is_none(self) -> bool {
        self.0.is_none()
    }
}

impl fmt::Display for FutureId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "future#{}.{}", self.0.idx(), self.0.generation())
    }
}

/// A future with its output type erased: polled, and on completion its
/// output is queued for `dest`.
trait Task {
    fn poll(&mut self, cx: &mut std::task::Context<'_>, core: &mut Core, dest: Key) -> Poll<()>;
}

struct Typed<F: Future> {
    future: Pin<Box<F>>,
}

impl<F> Task for Typed<F>
where
    F: Future + 'static,
    F::Output: Send + 'static,
{
    fn poll(&mut self, cx: &mut std::task::Context<'_>, core: &mut Core, dest: Key) -> Poll<()> {
        match self.future.as_mut().poll(cx) {
            Poll::Ready(message) => {
                core.enqueue(UserEnvelope {
                    dest,
                    sender: dest,
                    message,
                });
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The keys of the futures woken since the last look, shared with their wakers.
struct Ready {
    /// Set by a waker after it pushed: the dispatch loop looks at the list
    /// only then (one load, no lock, while nothing woke).
    any: AtomicBool,
    keys: Mutex<Vec<Key>>,
    locality: Arc<LocalityShared>,
}

/// The waker of one future (made once, when it starts).
struct FutureWaker {
    key: Key,
    /// On the ready list already: a second wake before the poll adds nothing.
    queued: AtomicBool,
    ready: Arc<Ready>,
}

impl Wake for FutureWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            let ready = &self.ready;
            ready
                .keys
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(self.key);
            ready.any.store(true, Ordering::Release);
            // As a message from another thread: the loop dispatches again.
            ready.locality.wake();
        }
    }
}

struct Slot {
    owner: Key,
    /// The owner's main address, where the output goes.
    dest: Key,
    /// Out of the table while it is polled.
    task: Option<Box<dyn Task>>,
    waker: Arc<FutureWaker>,
}

struct Table {
    slots: Arena<Slot>,
    by_actor: KeyMap<SmallVec<[Key; 2]>>,
    ready: Arc<Ready>,
    /// The ready keys being polled (kept for its allocation).
    polling: Vec<Key>,
}

/// The futures of one locality (nothing until the first one starts).
#[derive(Default)]
pub(crate) struct Futures(Option<Box<Table>>);

impl Futures {
    fn table(&mut self, locality: &Arc<LocalityShared>) -> &mut Table {
        self.0.get_or_insert_with(|| {
            Box::new(Table {
                slots: Arena::default(),
                by_actor: KeyMap::default(),
                ready: Arc::new(Ready {
                    any: AtomicBool::new(false),
                    keys: Mutex::new(Vec::new()),
                    locality: locality.clone(),
                }),
                polling: Vec::new(),
            })
        })
    }

    /// Futures not finished yet.
    pub(crate) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |t| t.slots.len())
    }
}

/// Starts `future` for actor `owner`, its output to go to `dest`.
fn spawn<F>(core: &mut Core, owner: Key, dest: Key, future: F) -> Key
where
    F: Future + 'static,
    F::Output: Send + 'static,
{
    let shared = core.shared.clone();
    let table = core.futures.table(&shared);
    let ready = table.ready.clone();
    let task: Box<dyn Task> = Box::new(Typed {
        future: Box::pin(future),
    });
    let key = table.slots.insert_with(|key| Slot {
        owner,
        dest,
        task: Some(task),
        waker: Arc::new(FutureWaker {
            key,
            queued: AtomicBool::new(false),
            ready,
        }),
    });
    table.by_actor.entry(owner).or_default().push(key);
    // The first poll comes with the next round of the dispatch loop.
    if let Some(slot) = table.slots.get(key) {
        slot.waker.wake_by_ref();
    }
    key
}

/// Polls the futures woken since the last call, at most `limit` (at least
/// one); returns how many it polled. The rest stay first on the ready list,
/// for the next round. Called by the dispatch loop on every round (one
/// branch while no future was ever started, one atomic load while none woke).
pub(crate) fn poll_ready(core: &mut Core, limit: usize) -> usize {
    let Some(table) = core.futures.0.as_mut() else {
        return 0;
    };
    if !table.ready.any.swap(false, Ordering::AcqRel) {
        return 0;
    }
    let mut keys = std::mem::take(&mut table.polling);
    {
        let mut ready = table
            .ready
            .keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        std::mem::swap(&mut keys, &mut ready);
        let limit = limit.max(1);
        if keys.len() > limit {
            // Over budget: the rest go back, ahead of later wakes.
            ready.splice(0..0, keys.drain(limit..));
            table.ready.any.store(true, Ordering::Release);
            table.ready.locality.note_mail(); // `has_pending` says so
        }
    }
    let polled = keys.len();
    for key in keys.drain(..) {
        poll_one(core, key);
    }
    if let Some(table) = core.futures.0.as_mut() {
        table.polling = keys;
    }
    polled
}

fn poll_one(core: &mut Core, key: Key) {
    let Some(slot) = core.futures.0.as_mut().and_then(|t| t.slots.get_mut(key)) else {
        return; // finished or dropped since it woke
    };
    slot.waker.queued.store(false, Ordering::Release);
    let Some(mut task) = slot.task.take() else {
        return;
    };
    let (owner, dest) = (slot.owner, slot.dest);
    let waker = Waker::from(slot.waker.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    let polled = catch_unwind(AssertUnwindSafe(|| task.poll(&mut cx, core, dest)));
    match polled {
        Ok(Poll::Pending) => {
            if let Some(slot) = core.futures.0.as_mut().and_then(|t| t.slots.get_mut(key)) {
                slot.task = Some(task);
            }
        }
        Ok(Poll::Ready(())) => {
            remove(core, key);
            drop_task(core, owner, task);
        }
        Err(payload) => {
            remove(core, key);
            drop_task(core, owner, task);
            let error = crate::actor::panicked(core, owner, payload.as_ref());
            crate::lifecycle::fail(core, owner, error);
        }
    }
}

/// Drops a future (user code: a panic there is logged, not resumed).
fn drop_task(core: &Core, owner: Key, task: Box<dyn Task>) {
    let _ = crate::actor::guarded(core, owner, || drop(task));
}

/// Forgets the future at `key`; hands back its task if it was not being polled.
fn remove(core: &mut Core, key: Key) -> Option<Box<dyn Task>> {
    let table = core.futures.0.as_mut()?;
    let slot = table.slots.remove(key)?;
    if let Some(keys) = table.by_actor.get_mut(&slot.owner) {
        crate::arena::remove_key(keys, key);
        if keys.is_empty() {
            table.by_actor.remove(&slot.owner);
        }
    }
    slot.task
}

/// The actor `me` shuts down: its futures are dropped unfinished.
pub(crate) fn actor_gone(core: &mut Core, me: Key) {
    let Some(keys) = core.futures.0.as_mut().and_then(|t| t.by_actor.remove(&me)) else {
        return;
    };
    for key in keys {
        if let Some(task) = remove(core, key) {
            drop_task(core, me, task);
        }
    }
}

impl<A: Actor> Context<'_, A> {
    /// Starts `future`; its output comes back as a message (of type
    /// `F::Output`) on this actor's main address, from this actor: subscribe
    /// to that type to receive it. Wrap the output in a type of yours to
    /// tell several futures apart: `async move { Fetched(id, client.get(url).await) }`.
    ///
    /// The future need not be `Send`: the locality polls it on its own
    /// thread, woken through its inbox. On the
    /// tokio backend (`backend::tokio`) it is polled inside the
    /// locality's tokio task, so tokio-based libraries work in it. It is
    /// dropped unfinished if the actor shuts down first, or on
    /// [`cancel_future`](Context::cancel_future). A panic while polling it
    /// fails the actor (`ErrorCode::Panicked`).
    ///
    /// In `shutdown_finish` it starts nothing (the future is dropped) and
    /// returns [`FutureId::NONE`].
    ///
    /// ```
    /// use commutator::prelude::*;
    ///
    /// struct Answer(u32);
    /// struct Asker;
    /// impl Actor for Asker {
    ///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.subscribe(|_: &mut Self, answer: &Answer, ctx: &mut Context<'_, Self>| {
    ///             assert_eq!(answer.0, 42);
    ///             ctx.shutdown();
    ///         });
    ///     }
    ///     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.spawn_future(async { Answer(6 * 7) }); // any async library call
    ///     }
    /// }
    ///
    /// let mut system = System::new()?;
    /// system.spawn_root(Asker).finish()?;
    /// system.run()?;
    /// # Ok::<(), commutator::Error>(())
    /// ```
    pub fn spawn_future<F>(&mut self, future: F) -> FutureId
    where
        F: Future + 'static,
        F::Output: Send + 'static,
    {
        if self.finishing {
            tracing::warn!(actor = %self.address(), call = "spawn_future", "ignored: called in shutdown_finish");
            return FutureId::NONE;
        }
        let dest = self.address().key();
        FutureId(spawn(self.core, self.me, dest, future))
    }

    /// Cancels one of this actor's futures: it is dropped unfinished and its
    /// output never comes. `true` if it was running; `false` for a future
    /// that finished, was cancelled, or is not this actor's.
    pub fn cancel_future(&mut self, id: FutureId) -> bool {
        let owned = self
            .core
            .futures
            .0
            .as_ref()
            .and_then(|t| t.slots.get(id.0))
            .is_some_and(|slot| slot.owner == self.me);
        if !owned {
            return false;
        }
        if let Some(task) = remove(self.core, id.0) {
            drop_task(self.core, self.me, task);
        }
        true
    }

    /// How many futures this actor has running.
    pub fn futures(&self) -> usize {
        self.core
            .futures
            .0
            .as_ref()
            .and_then(|t| t.by_actor.get(&self.me))
            .map_or(0, |keys| keys.len())
    }
}

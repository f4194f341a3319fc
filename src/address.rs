//! Addresses: delivery points made by a locality for its actors.

use crate::arena::Key;
use crate::error::{Error, ErrorCode, SendError};
use crate::locality::shared::LocalityShared;
use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A delivery point: any message can be sent to it, and any actor can subscribe
/// to any message type on it.
///
/// An address is made by the locality of the actor that owns it: every actor has
/// a main address, and can create more ("identities") with
/// [`Context::create_address`](crate::Context::create_address). Addresses are
/// cheap to clone, `Send + Sync`, and compare by identity. They are generational:
/// once the owner is gone, the address stays dead even when a newer actor reuses
/// its slot, and messages to it are dropped (and counted).
///
/// `Display` is stable and readable: `locality/actor#n`, plus `:identity` for
/// extra addresses, where `n` counts the actors spawned on that locality.
///
/// Inside an actor, send with [`Context::send`](crate::Context::send); from
/// the loop's code, with [`Locality::send`](crate::Locality::send); from any
/// other thread, with [`Address::send`].
///
/// # Examples
///
/// ```
/// use commutator::*;
///
/// struct Note(&'static str);
///
/// struct Inbox;
/// impl Actor for Inbox {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(|_: &mut Self, note: &Note, ctx: &mut Context<'_, Self>| {
///             assert_eq!(note.0, "from a thread");
///             ctx.shutdown();
///         });
///     }
/// }
///
/// let mut system = System::named("app")?;
/// let inbox = system.spawn_root(Inbox).name("inbox").finish()?;
/// assert_eq!(inbox.to_string(), "app/inbox#1");
///
/// let copy = inbox.clone(); // `Send + Sync`: hand clones to any thread
/// std::thread::spawn(move || copy.send(Note("from a thread")).is_ok())
///     .join()
///     .expect("the thread ran");
/// system.run()?;
///
/// // The locality has finished: the message is handed back.
/// let refused = inbox.send(Note("too late")).unwrap_err();
/// assert_eq!(refused.message.0, "too late");
/// assert!(inbox.is_closed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Address(pub(crate) Arc<AddressInner>);

pub(crate) struct AddressInner {
    /// The locality's id, copied here: one load less on every send.
    pub(crate) locality_id: u32,
    pub(crate) locality: Arc<LocalityShared>,
    pub(crate) key: Key,
    pub(crate) actor: Cow<'static, str>,
    pub(crate) seq: u64,
    /// The label of an identity (boxed: most addresses are main addresses).
    pub(crate) identity: Option<Box<Cow<'static, str>>>,
}

impl Address {
    pub(crate) fn new(
        locality: Arc<LocalityShared>,
        key: Key,
        actor: Cow<'static, str>,
        seq: u64,
        identity: Option<Cow<'static, str>>,
    ) -> Address {
        Address(Arc::new(AddressInner {
            locality_id: locality.id,
            locality,
            key,
            actor,
            seq,
            identity: identity.map(Box::new),
        }))
    }

    pub(crate) fn key(&self) -> Key {
        self.0.key
    }

    pub(crate) fn locality_id(&self) -> u32 {
        self.0.locality_id
    }

    /// Sends a message from outside any actor, from any thread: through the
    /// inbox of the address's locality, waking its loop. It never blocks
    /// (it is what other channels call `try_send`).
    ///
    /// Messages from one thread keep their order. A message accepted here may
    /// still be dropped on arrival (no subscriber, or the actor is gone), as
    /// any message may; the locality counts it in its
    /// [`Stats`](crate::Stats).
    ///
    /// Errors, with the message handed back: [`ErrorCode::InboxFull`] if the
    /// locality's inbox is full (see
    /// [`Locality::set_inbox_capacity`](crate::Locality::set_inbox_capacity));
    /// [`ErrorCode::LocalityFinished`] if the locality has finished.
    pub fn send<M: Send + 'static>(&self, message: M) -> Result<(), SendError<M>> {
        self.0.locality.post_user(self.0.key, Key::NONE, message)
    }

    /// Sends as [`send`](Address::send), but waits while the inbox is full,
    /// until the locality drains it: backpressure for a producer thread.
    ///
    /// It waits for as long as it takes: if the locality is alive but its
    /// loop does not run, forever (use
    /// [`send_timeout`](Address::send_timeout) to bound the wait). It never
    /// waits on a thread that holds a locality that has not finished (that
    /// thread may be the one that must drain): there a full inbox hands the
    /// message back at once, as `send` does. Waiting producers are woken
    /// together when room is made; no order among them is promised.
    ///
    /// Errors, with the message handed back: [`ErrorCode::LocalityFinished`]
    /// if the locality has finished (also while waiting);
    /// [`ErrorCode::InboxFull`] only on a thread that holds a locality.
    pub fn send_blocking<M: Send + 'static>(&self, message: M) -> Result<(), SendError<M>> {
        self.0.locality.post_user_waiting(self.0.key, message, None)
    }

    /// Sends as [`send_blocking`](Address::send_blocking), waiting at most
    /// `timeout` for room in the inbox.
    ///
    /// Errors, with the message handed back: [`ErrorCode::InboxFull`] if
    /// the inbox is still full after `timeout` (at once on a thread that
    /// holds a locality); [`ErrorCode::LocalityFinished`] if the locality has
    /// finished.
    pub fn send_timeout<M: Send + 'static>(
        &self,
        message: M,
        timeout: std::time::Duration,
    ) -> Result<(), SendError<M>> {
        let deadline = crate::locality::shared::deadline_after(timeout);
        self.0
            .locality
            .post_user_waiting(self.0.key, message, deadline)
    }

    /// `true` once the address's locality has finished: nothing sent will arrive.
    pub fn is_closed(&self) -> bool {
        self.0.locality.is_closed()
    }

    /// The name of the actor that owns the address.
    pub fn actor_name(&self) -> &str {
        &self.0.actor
    }

    pub(crate) fn stale_error(&self) -> Error {
        Error::new(ErrorCode::StaleAddress).with_context(self.to_string())
    }
}

impl PartialEq for Address {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key && self.0.locality_id == other.0.locality_id
    }
}

impl Eq for Address {}

impl Hash for Address {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.locality_id.hash(state);
        self.0.key.hash(state);
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.0;
        write!(f, "{}/{}#{}", a.locality.name, a.actor, a.seq)?;
        if let Some(id) = &a.identity {
            write!(f, ":{id}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Address({self})")
    }
}

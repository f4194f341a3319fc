//! Dead letters: user messages that could not be delivered, handed to
//! whoever listens for them.
//!
//! Opt-in: a locality makes its dead-letter address on first request
//! ([`Locality::dead_letters`](crate::Locality::dead_letters),
//! [`Context::dead_letters`](crate::Context::dead_letters)); while nobody is
//! subscribed to [`DeadLetter`] there, an undeliverable message is only
//! counted (in [`Stats`](crate::Stats)) and shown by inspection, as before,
//! and costs nothing more. With a subscriber, it is moved (not copied) into
//! a `DeadLetter` and delivered there.

use crate::address::Address;
use crate::arena::Key;
use crate::locality::Core;
use std::any::{Any, TypeId};
use std::fmt;

/// Why a message could not be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeadLetterReason {
    /// Nobody was subscribed to its type on its address when it arrived.
    NoSubscriber,
    /// Its address was gone (its actor shut down, or the identity was removed).
    StaleAddress,
    /// Its address's locality had finished (sent from an actor here).
    LocalityFinished,
    /// Its address's locality's inbox was full (sent from an actor here;
    /// see [`Locality::set_inbox_capacity`](crate::Locality::set_inbox_capacity)).
    InboxFull,
}

impl fmt::Display for DeadLetterReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeadLetterReason::NoSubscriber => "no subscriber",
            DeadLetterReason::StaleAddress => "stale address",
            DeadLetterReason::LocalityFinished => "locality finished",
            DeadLetterReason::InboxFull => "inbox full",
        })
    }
}

/// A user message that could not be delivered, with where it was going,
/// who sent it, and why it was not delivered. Subscribe to `DeadLetter` on
/// the locality's dead-letter address to receive them.
///
/// ```
/// use commutator::prelude::*;
/// use commutator::{DeadLetter, DeadLetterReason};
/// use std::{cell::RefCell, rc::Rc};
///
/// struct Lost(u32);
/// struct Deaf; // subscribes to nothing
/// impl Actor for Deaf {}
///
/// struct Watcher(Rc<RefCell<Vec<String>>>);
/// impl Actor for Watcher {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         let dead = ctx.dead_letters();
///         let log = self.0.clone();
///         ctx.subscribe_on(&dead, move |_: &mut Self, d: &DeadLetter, _: &mut Context<'_, Self>| {
///             let n = d.message::<Lost>().map_or(0, |m| m.0);
///             log.borrow_mut().push(format!("{} {n} to {}: {}", d.message_type(), d.destination(), d.reason()));
///         }).unwrap();
///     }
/// }
///
/// let log = Rc::new(RefCell::new(Vec::new()));
/// let mut locality = Locality::named("app");
/// let root = locality.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
/// locality.spawn(&root, Watcher(log.clone())).finish()?;
/// let deaf = locality.spawn(&root, Deaf).name("deaf").finish()?;
/// let now = locality.now();
/// locality.run_until_idle(now);
/// locality.send(&deaf, Lost(7)).unwrap();
/// locality.run_until_idle(now);
/// assert_eq!(*log.borrow(), ["Lost 7 to app/deaf#3: no subscriber"]);
/// # Ok::<(), commutator::Error>(())
/// ```
pub struct DeadLetter {
    destination: String,
    message_type: String,
    sender: String,
    reason: DeadLetterReason,
    message: Box<dyn Any + Send>,
}

impl DeadLetter {
    /// Where the message was going (as its address prints).
    pub fn destination(&self) -> &str {
        &self.destination
    }
    /// The message's type, without module paths (`Response<Balance>`).
    pub fn message_type(&self) -> &str {
        &self.message_type
    }
    /// Who sent it, as inspection names senders (an address, `outside`,
    /// `another locality`, `framework`, `gone`).
    pub fn sender(&self) -> &str {
        &self.sender
    }
    /// Why it was not delivered.
    pub fn reason(&self) -> DeadLetterReason {
        self.reason
    }
    /// The message, if it is an `M` (it was moved here, not copied).
    pub fn message<M: 'static>(&self) -> Option<&M> {
        self.message.downcast_ref()
    }
}

impl fmt::Debug for DeadLetter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DeadLetter({} {} -> {}: {})",
            self.message_type, self.sender, self.destination, self.reason
        )
    }
}

/// The locality's dead-letter address, made on first use (owned by no actor).
pub(crate) fn address(core: &mut Core) -> Address {
    if let Some(address) = core
        .dead_letters
        .and_then(|key| core.routes.address(key))
        .map(|info| info.address.clone())
    {
        return address;
    }
    let seq = 0;
    let (key, address) = core.create_address_slot("dead-letters".into(), seq, None);
    core.dead_letters = Some(key);
    address
}

/// `true` if someone listens for dead letters (so one is worth making).
#[inline]
pub(crate) fn wanted<M: 'static>(core: &Core) -> bool {
    core.dead_letters.is_some_and(|key| {
        TypeId::of::<M>() != TypeId::of::<DeadLetter>()
            && !matches!(
                core.routes.find(key, TypeId::of::<DeadLetter>()),
                crate::routing::Found::Stale | crate::routing::Found::NoSubscriber
            )
    })
}

/// Hands an undeliverable message to the dead-letter address (call only if
/// [`wanted`]).
#[cold]
pub(crate) fn post<M: Send + 'static>(
    core: &mut Core,
    destination: String,
    sender: Key,
    reason: DeadLetterReason,
    message: M,
) {
    let Some(key) = core.dead_letters else {
        return;
    };
    let letter = DeadLetter {
        destination,
        message_type: crate::message::short_type_name::<M>(),
        sender: crate::inspect::sender_name(core, sender),
        reason,
        message: Box::new(message),
    };
    core.enqueue(crate::message::UserEnvelope {
        dest: key,
        sender: Key::FRAMEWORK,
        message: letter,
    });
}

//! Addresses: delivery points made by a locality for its actors.

use crate::arena::Key;
use crate::error::{Error, ErrorCode, SendError};
use crate::locality::shared::LocalityShared;
use crate::names::NameId;
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
pub struct Address {
    /// Its key as one word (`Key::to_word`; `key()` splits it).
    key: u64,
    repr: Repr,
}

/// What an address knows besides its key (docs/architecture.md, "Addresses").
#[derive(Clone)]
enum Repr {
    /// A plain actor's main address: its name interned in the locality's
    /// table. Nothing allocated for it.
    /// (`name` and `seq` packed, so that the address is 24 bytes: names
    /// past the 256th of a locality, and actors past the 2^48th, are labelled.)
    Plain {
        locality: Arc<LocalityShared>,
        name: u8,
        seq_hi: u16,
        seq_lo: u32,
    },
    /// An address with a name of its own (an owned name, an identity's
    /// label): one allocation, shared by the clones. Its locality's id is
    /// kept beside it, so that a send (which compares ids) does not read
    /// the label.
    Labelled { locality: u32, label: Arc<Labelled> },
}

/// The names an address owns, and its locality (so that a clone still
/// costs one atomic increment).
struct Labelled {
    locality: Arc<LocalityShared>,
    actor: ActorName,
    seq: u64,
    identity: Option<Cow<'static, str>>,
}

/// Spare labelled parts of addresses, made in batches: the addresses of
/// actors with names of their own (an entity's `set/key`) take theirs from
/// here, so that their labels lie together, apart from the actors, and
/// actors spawned one after another lie back to back, on as few pages as
/// plain actors (docs/entities.md, "Where the entities lie"). A batch is
/// twice the one before, from [`Labels::FIRST`] to [`Labels::LAST`]: at most
/// `LAST - 1` are kept spare (about 37 KB).
#[derive(Default)]
pub(crate) struct Labels {
    spare: Vec<Arc<Labelled>>,
    /// How many labels the last batch made.
    made: usize,
}

impl Labels {
    /// How many labels the first batch makes.
    const FIRST: usize = 8;
    /// How many labels a batch makes at most (256 actors of 64 bytes fill
    /// four pages; 32 at a time, a page held about 20 of them, and the
    /// actors spread over three times as many pages).
    const LAST: usize = 256;
    /// The room for a name that a spare label has (names that fit are
    /// copied into it; longer ones are kept as they come).
    const NAME: usize = 32;

    /// A label for `name`, the `seq`-th actor of `locality`, unshared.
    fn take(&mut self, locality: &Arc<LocalityShared>, name: String, seq: u64) -> Arc<Labelled> {
        let mut label = match self.spare.pop() {
            Some(label) => label,
            None => self.refill(locality),
        };
        debug_assert!(Arc::ptr_eq(&label.locality, locality), "one pool per core");
        let actor = match Short::new(&name) {
            Some(short) => ActorName::Short(short),
            None => ActorName::Own(Cow::Owned(name)),
        };
        match Arc::get_mut(&mut label) {
            Some(blank) => {
                blank.seq = seq;
                blank.actor = actor;
                label
            }
            // Spare labels are never shared; should one be, a new one does.
            None => Arc::new(Labelled {
                locality: locality.clone(),
                actor,
                seq,
                identity: None,
            }),
        }
    }

    /// Makes a batch of blank labels: keeps all but one, returns that one.
    #[cold]
    fn refill(&mut self, locality: &Arc<LocalityShared>) -> Arc<Labelled> {
        let blank = || {
            Arc::new(Labelled {
                locality: locality.clone(),
                actor: ActorName::Short(Short::EMPTY),
                seq: 0,
                identity: None,
            })
        };
        self.made = (self.made * 2).clamp(Self::FIRST, Self::LAST);
        self.spare.reserve_exact(self.made);
        self.spare.extend((1..self.made).map(|_| blank()));
        blank()
    }
}

/// The name of the actor an address belongs to.
enum ActorName {
    Interned(NameId),
    Own(Cow<'static, str>),
    /// A name of [`Labels::NAME`] bytes at most, in the label itself.
    Short(Short),
}

/// A short name kept in place (a label's: no allocation of its own).
#[derive(Clone)]
struct Short {
    len: u8,
    bytes: [u8; Labels::NAME],
}

impl Short {
    const EMPTY: Short = Short {
        len: 0,
        bytes: [0; Labels::NAME],
    };

    /// `name`, if it fits.
    fn new(name: &str) -> Option<Short> {
        let mut short = Short::EMPTY;
        short
            .bytes
            .get_mut(..name.len())?
            .copy_from_slice(name.as_bytes());
        short.len = name.len() as u8; // at most `Labels::NAME`
        Some(short)
    }

    fn as_str(&self) -> &str {
        // Copied whole from a `&str`: valid UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl Address {
    /// An address named `actor` (interned if it is `&'static` and the address
    /// is no identity), the `seq`-th actor of `locality`.
    pub(crate) fn new(
        locality: Arc<LocalityShared>,
        key: Key,
        actor: Cow<'static, str>,
        seq: u64,
        identity: Option<Cow<'static, str>>,
    ) -> Address {
        let actor = match actor {
            Cow::Borrowed(text) => match locality.names.intern_static(text) {
                Some(id) => ActorName::Interned(id),
                None => ActorName::Own(actor),
            },
            Cow::Owned(_) => ActorName::Own(actor),
        };
        Address::with_name(locality, key, actor, seq, identity)
    }

    /// An actor's main address with a name of its own (`actor`, owned), its
    /// labelled part taken from `labels` (see [`Labels`]).
    pub(crate) fn owned_name(
        labels: &mut Labels,
        locality: &Arc<LocalityShared>,
        key: Key,
        actor: String,
        seq: u64,
    ) -> Address {
        let repr = Repr::Labelled {
            locality: locality.id,
            label: labels.take(locality, actor, seq),
        };
        Address {
            key: key.to_word(),
            repr,
        }
    }

    /// The main address of a plain actor, its name interned as `name`: no
    /// allocation (the packed case inline: it is made on every spawn).
    #[inline]
    pub(crate) fn interned(
        locality: Arc<LocalityShared>,
        key: Key,
        name: NameId,
        seq: u64,
    ) -> Address {
        if let (Ok(packed), Ok(seq_hi)) = (u8::try_from(name.0), u16::try_from(seq >> 32)) {
            let repr = Repr::Plain {
                locality,
                name: packed,
                seq_hi,
                seq_lo: seq as u32,
            };
            return Address {
                key: key.to_word(),
                repr,
            };
        }
        Address::with_name(locality, key, ActorName::Interned(name), seq, None)
    }

    /// An identity of the actor at `owner` (named as `owner`).
    pub(crate) fn identity_of(owner: &Address, key: Key, label: Cow<'static, str>) -> Address {
        let actor = match &owner.repr {
            Repr::Plain { name, .. } => ActorName::Interned(NameId(u32::from(*name))),
            Repr::Labelled { label: l, .. } => match &l.actor {
                ActorName::Interned(id) => ActorName::Interned(*id),
                ActorName::Own(text) => ActorName::Own(text.clone()),
                ActorName::Short(short) => ActorName::Short(short.clone()),
            },
        };
        let locality = owner.locality().clone();
        Address::with_name(locality, key, actor, owner.seq(), Some(label))
    }

    fn with_name(
        locality: Arc<LocalityShared>,
        key: Key,
        actor: ActorName,
        seq: u64,
        identity: Option<Cow<'static, str>>,
    ) -> Address {
        let packed = match (&actor, &identity) {
            (ActorName::Interned(name), None) => {
                u8::try_from(name.0).ok().zip(u16::try_from(seq >> 32).ok())
            }
            _ => None,
        };
        let repr = match packed {
            Some((name, seq_hi)) => Repr::Plain {
                locality,
                name,
                seq_hi,
                seq_lo: seq as u32,
            },
            None => Repr::Labelled {
                locality: locality.id,
                label: Arc::new(Labelled {
                    locality,
                    actor,
                    seq,
                    identity,
                }),
            },
        };
        Address {
            key: key.to_word(),
            repr,
        }
    }

    #[inline]
    pub(crate) fn key(&self) -> Key {
        Key::from_word(self.key)
    }

    /// The shared part of the address's locality.
    #[inline]
    pub(crate) fn locality(&self) -> &Arc<LocalityShared> {
        match &self.repr {
            Repr::Plain { locality, .. } => locality,
            Repr::Labelled { label: l, .. } => &l.locality,
        }
    }

    /// `true` if the address is of the locality whose shared part is
    /// `shared` (a pointer compare: the test of every send).
    #[inline(always)]
    pub(crate) fn is_of(&self, shared: &Arc<LocalityShared>) -> bool {
        match &self.repr {
            Repr::Plain { locality, .. } => Arc::ptr_eq(locality, shared),
            // Ids are unique among live localities, and the address keeps its own alive.
            Repr::Labelled { locality, .. } => *locality == shared.id,
        }
    }

    #[inline]
    pub(crate) fn locality_id(&self) -> u32 {
        match &self.repr {
            Repr::Plain { locality, .. } => locality.id,
            Repr::Labelled { locality, .. } => *locality,
        }
    }

    /// The number of the actor on its locality (`#n` in `Display`).
    pub(crate) fn seq(&self) -> u64 {
        match &self.repr {
            Repr::Plain { seq_hi, seq_lo, .. } => u64::from(*seq_hi) << 32 | u64::from(*seq_lo),
            Repr::Labelled { label: l, .. } => l.seq,
        }
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
        self.locality().post_user(self.key(), Key::NONE, message)
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
        self.locality().post_user_waiting(self.key(), message, None)
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
        self.locality()
            .post_user_waiting(self.key(), message, deadline)
    }

    /// `true` once the address's locality has finished: nothing sent will arrive.
    pub fn is_closed(&self) -> bool {
        self.locality().is_closed()
    }

    /// The name of the actor that owns the address.
    pub fn actor_name(&self) -> &str {
        match &self.repr {
            Repr::Plain { locality, name, .. } => interned(locality, NameId(u32::from(*name))),
            Repr::Labelled { label: l, .. } => match &l.actor {
                ActorName::Interned(id) => interned(&l.locality, *id),
                ActorName::Own(text) => text,
                ActorName::Short(short) => short.as_str(),
            },
        }
    }

    pub(crate) fn stale_error(&self) -> Error {
        Error::new(ErrorCode::StaleAddress).with_context(self.to_string())
    }
}

/// An interned name (never removed from its table: it is there).
fn interned(locality: &LocalityShared, id: NameId) -> &str {
    locality.names.get(id).unwrap_or("?")
}

impl PartialEq for Address {
    /// Same key on the same locality (the same shared part: ids are unique
    /// among the live ones, and both addresses keep theirs alive).
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && Arc::ptr_eq(self.locality(), other.locality())
    }
}

impl Eq for Address {}

impl Hash for Address {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.locality_id().hash(state);
        self.key().hash(state);
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let locality = &self.locality().name;
        write!(f, "{locality}/{}#{}", self.actor_name(), self.seq())?;
        if let Repr::Labelled { label: l, .. } = &self.repr
            && let Some(id) = &l.identity
        {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::Arena;

    fn keys(n: usize) -> Vec<Key> {
        let mut arena = Arena::default();
        (0..n).map(|i| arena.insert(i)).collect()
    }

    #[test]
    fn owned_names_take_labels_made_in_batches_and_keep_their_names() {
        let locality = Arc::new(LocalityShared::new(Some("here".into())));
        let mut labels = Labels::default();
        let long = "x".repeat(Labels::NAME + 1);
        // Batches of 8, 16 and 32: the last one partly taken.
        let keys = keys(Labels::FIRST * 4 + 2);
        let addresses: Vec<Address> = keys
            .iter()
            .enumerate()
            .map(|(i, &key)| {
                let name = match i {
                    1 => long.clone(),
                    _ => format!("set/key-{i}"),
                };
                Address::owned_name(&mut labels, &locality, key, name, i as u64 + 7)
            })
            .collect();
        assert_eq!(labels.made, Labels::FIRST * 4);
        assert_eq!(labels.spare.len(), Labels::FIRST * 7 - keys.len());
        for (i, address) in addresses.iter().enumerate() {
            let name = match i {
                1 => long.clone(),
                _ => format!("set/key-{i}"),
            };
            assert_eq!(address.actor_name(), name);
            assert_eq!(address.to_string(), format!("here/{name}#{}", i + 7));
            assert_eq!(address.key(), keys[i]);
            assert!(address.is_of(&locality));
        }
        // A clone shares its label; the spare ones are unshared.
        // Batches grow no further than `LAST`.
        let mut big = Labels {
            made: Labels::LAST,
            ..Labels::default()
        };
        let one = Address::owned_name(&mut big, &locality, keys[0], "x".into(), 1);
        assert_eq!(
            (big.made, big.spare.len()),
            (Labels::LAST, Labels::LAST - 1)
        );
        drop((one, big));
        let clone = addresses[0].clone();
        assert_eq!(clone.to_string(), addresses[0].to_string());
        assert!(labels.spare.iter().all(|l| Arc::strong_count(l) == 1));
    }
}

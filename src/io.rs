//! Actor I/O: mio sources owned by actors, their readiness delivered as
//! messages.
//!
//! [`Context::register_io`](crate::Context::register_io) registers a source
//! (a `TcpListener`, `TcpStream`, `UdpSocket`, any `mio::event::Source`) with
//! the locality's poll and returns an [`IoGuard`] that owns it. Each readiness
//! event becomes an [`Io`] message on the actor's main address. Dropping the
//! guard deregisters the source; when the actor shuts down, its events stop.
//!
//! Tokens are generational and carry the locality: bit 63 is set (see
//! [`RESERVED_TOKENS`](crate::RESERVED_TOKENS)), then 15 bits of the locality's
//! id, 16 bits of generation and 32 bits of slot. So a late event for a closed
//! source never reaches a newer source in its slot (unless the slot was reused
//! 65,536 times meanwhile), and the user's own tokens (below
//! `RESERVED_TOKENS`) never clash with the locality's.

use crate::arena::{Arena, Key};
use crate::error::{Error, ErrorCode, Result};
use crate::locality::RESERVED_TOKENS;
use mio::event::Source;
use mio::{Interest, Token};
use std::cell::RefCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;

/// Names one registered source: [`IoGuard::id`], carried by each [`Io`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct IoId(pub(crate) Key);

impl fmt::Display for IoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "io#{}", self.0.idx())
    }
}

/// Readiness of a registered source, delivered to its actor's main address
/// (subscribe to `Io`; with several sources, tell them apart by
/// [`id`](Io::id)). See [`IoGuard`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    id: IoId,
    readable: bool,
    writable: bool,
    read_closed: bool,
    write_closed: bool,
    error: bool,
}

impl Io {
    /// Which source.
    pub fn id(&self) -> IoId {
        self.id
    }
    /// Reading may not block.
    pub fn is_readable(&self) -> bool {
        self.readable
    }
    /// Writing may not block.
    pub fn is_writable(&self) -> bool {
        self.writable
    }
    /// The peer closed its side for writing (reads will end).
    pub fn is_read_closed(&self) -> bool {
        self.read_closed
    }
    /// The peer closed its side for reading (writes will fail).
    pub fn is_write_closed(&self) -> bool {
        self.write_closed
    }
    /// The source reported an error (`take_error` tells which).
    pub fn is_error(&self) -> bool {
        self.error
    }
}

const LOCALITY_SHIFT: u32 = 48;
const GENERATION_SHIFT: u32 = 32;
const LOCALITY_MASK: usize = 0x7fff;
const GENERATION_MASK: usize = 0xffff;

struct IoSlot {
    /// The owning actor's main address.
    address: Key,
}

/// The sources of one locality, shared with their guards.
pub(crate) struct IoTable {
    registry: Option<mio::Registry>,
    slots: Arena<IoSlot>,
    locality_bits: usize,
}

pub(crate) type SharedIo = Rc<RefCell<IoTable>>;

impl IoTable {
    pub(crate) fn new(locality_id: u32) -> SharedIo {
        let locality_bits = locality_id as usize & LOCALITY_MASK;
        Rc::new(RefCell::new(IoTable {
            registry: None,
            slots: Arena::default(),
            locality_bits,
        }))
    }

    pub(crate) fn set_registry(&mut self, registry: mio::Registry) {
        self.registry = Some(registry);
    }

    fn token(&self, key: Key) -> Token {
        let generation = key.generation() as usize & GENERATION_MASK;
        Token(
            RESERVED_TOKENS
                | (self.locality_bits << LOCALITY_SHIFT)
                | (generation << GENERATION_SHIFT)
                | key.idx() as usize,
        )
    }

    /// `true` if `token` is one of this locality's I/O tokens.
    pub(crate) fn owns(&self, token: Token) -> bool {
        token.0 >= RESERVED_TOKENS
            && (token.0 >> LOCALITY_SHIFT) & LOCALITY_MASK == self.locality_bits
    }

    /// The live source behind `token` and its actor's main address.
    pub(crate) fn target(&self, token: Token) -> Option<(IoId, Key)> {
        if !self.owns(token) {
            return None;
        }
        let key = self.slots.key_at((token.0 & 0xffff_ffff) as u32)?;
        let generation = (token.0 >> GENERATION_SHIFT) & GENERATION_MASK;
        if key.generation() as usize & GENERATION_MASK != generation {
            return None;
        }
        self.slots.get(key).map(|slot| (IoId(key), slot.address))
    }

    pub(crate) fn contains(&self, key: Key) -> bool {
        self.slots.contains(key)
    }

    /// Stops routing the events of `keys` (their actor is gone).
    pub(crate) fn forget(&mut self, keys: impl IntoIterator<Item = Key>) {
        for key in keys {
            self.slots.remove(key);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

/// Registers `source` for the actor whose main address is `address`.
pub(crate) fn register<S: Source>(
    table: &SharedIo,
    address: Key,
    mut source: S,
    interest: Interest,
) -> Result<IoGuard<S>> {
    let mut t = table.borrow_mut();
    if t.registry.is_none() {
        return Err(Error::new(ErrorCode::NotRegistered)
            .with_context("register the locality on a mio::Poll first"));
    }
    let key = t.slots.insert(IoSlot { address });
    let token = t.token(key);
    let registered = t
        .registry
        .as_ref()
        .map(|r| r.register(&mut source, token, interest));
    if let Some(Err(e)) = registered {
        t.slots.remove(key);
        return Err(Error::io(e));
    }
    drop(t);
    Ok(IoGuard {
        source: Some(source),
        id: IoId(key),
        table: table.clone(),
    })
}

/// Turns a mio event into an [`Io`] for the source `id`.
pub(crate) fn readiness(id: IoId, event: &mio::event::Event) -> Io {
    Io {
        id,
        readable: event.is_readable(),
        writable: event.is_writable(),
        read_closed: event.is_read_closed(),
        write_closed: event.is_write_closed(),
        error: event.is_error(),
    }
}

/// A registered source, owned by an actor: use it through `Deref`; dropping
/// it deregisters the source.
///
/// Made by [`Context::register_io`](crate::Context::register_io), which
/// needs the locality to be on a poll (a [`System`](crate::System), or a
/// [`Locality`](crate::Locality) you [`register`](crate::Locality::register)ed).
/// Each readiness event of the source becomes an [`Io`] message on the
/// actor's main address, carrying the guard's [`id`](IoGuard::id). Keep the
/// guard in the actor; when the actor shuts down its events stop, and the
/// guard deregisters when the actor is dropped. [`into_inner`](IoGuard::into_inner)
/// deregisters and hands the source back.
///
/// As with any mio source, read or accept until `WouldBlock` on each
/// readiness message: the events are edge-triggered.
///
/// # Examples
///
/// An actor that owns a listener and ends once it has accepted one connection:
///
/// ```
/// use commutator::mio::{Interest, net::TcpListener};
/// use commutator::*;
///
/// struct Door {
///     socket: Option<TcpListener>,
///     guard: Option<IoGuard<TcpListener>>,
/// }
/// impl Actor for Door {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(Self::on_io); // readiness comes as `Io` messages
///         if let Some(socket) = self.socket.take() {
///             match ctx.register_io(socket, Interest::READABLE) {
///                 Ok(guard) => self.guard = Some(guard),
///                 Err(e) => ctx.fail(e),
///             }
///         }
///     }
/// }
/// impl Door {
///     fn on_io(&mut self, io: &Io, ctx: &mut Context<'_, Self>) {
///         let Some(listener) = self.guard.as_mut() else { return };
///         assert_eq!(io.id(), listener.id());
///         if let Ok((_stream, _peer)) = listener.accept() {
///             self.guard = None; // dropping the guard deregisters the listener
///             ctx.shutdown();
///         }
///     }
/// }
///
/// let socket = TcpListener::bind("127.0.0.1:0".parse()?)?;
/// let address = socket.local_addr()?;
/// let mut system = System::new()?; // a locality on a poll of its own
/// system.spawn_root(Door { socket: Some(socket), guard: None }).finish()?;
/// let _client = std::net::TcpStream::connect(address)?; // waits in the backlog
/// system.run()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct IoGuard<S: Source> {
    source: Option<S>,
    id: IoId,
    table: SharedIo,
}

impl<S: Source> IoGuard<S> {
    /// The id that this source's [`Io`] messages carry.
    pub fn id(&self) -> IoId {
        self.id
    }

    /// Changes the readiness the source is registered for.
    pub fn reregister(&mut self, interest: Interest) -> Result<()> {
        let t = self.table.borrow();
        let (Some(registry), Some(source)) = (t.registry.as_ref(), self.source.as_mut()) else {
            return Err(Error::new(ErrorCode::NotRegistered));
        };
        if !t.slots.contains(self.id.0) {
            return Err(
                Error::new(ErrorCode::StaleAddress).with_context(format!("{} is gone", self.id))
            );
        }
        registry
            .reregister(source, t.token(self.id.0), interest)
            .map_err(Error::io)
    }

    /// Deregisters the source and hands it back.
    pub fn into_inner(mut self) -> S {
        self.release()
            .expect("a guard holds its source until released")
    }

    fn release(&mut self) -> Option<S> {
        let mut source = self.source.take()?;
        let mut t = self.table.borrow_mut();
        t.slots.remove(self.id.0);
        if let Some(registry) = t.registry.as_ref()
            && let Err(e) = registry.deregister(&mut source)
        {
            tracing::debug!(io = %self.id, error = %e, "deregistering an I/O source failed");
        }
        Some(source)
    }
}

impl<S: Source> Drop for IoGuard<S> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<S: Source> Deref for IoGuard<S> {
    type Target = S;
    fn deref(&self) -> &S {
        self.source
            .as_ref()
            .expect("a guard holds its source until released")
    }
}

impl<S: Source> DerefMut for IoGuard<S> {
    fn deref_mut(&mut self) -> &mut S {
        self.source
            .as_mut()
            .expect("a guard holds its source until released")
    }
}

impl<S: Source> fmt::Debug for IoGuard<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IoGuard({})", self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_of_a_removed_source_never_reaches_a_newer_one_in_its_slot() {
        let table = IoTable::new(3);
        let mut t = table.borrow_mut();
        let old = t.slots.insert(IoSlot { address: Key::NONE });
        let old_token = t.token(old);
        assert!(t.target(old_token).is_some());
        t.slots.remove(old);
        let new = t.slots.insert(IoSlot { address: Key::NONE });
        assert_eq!(new.idx(), old.idx(), "slab reuses the slot");
        assert_eq!(t.target(old_token), None);
        assert!(t.target(t.token(new)).is_some());
    }

    #[test]
    fn tokens_carry_their_locality() {
        let (a, b) = (IoTable::new(1), IoTable::new(2));
        let key = a.borrow_mut().slots.insert(IoSlot { address: Key::NONE });
        let token = a.borrow().token(key);
        assert!(token.0 >= RESERVED_TOKENS);
        assert!(a.borrow().owns(token));
        assert!(!b.borrow().owns(token));
        assert!(!a.borrow().owns(Token(7)));
    }
}

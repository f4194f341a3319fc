//! Payload allocations kept for the next request of their type, and the
//! requests settled while their payload was lent to the server.

use super::Payload;
use super::flow::{Outcome, Pending, Server};
use crate::address::Address;
use crate::arena::Key;
use crate::request::Request;
use std::any::{Any, TypeId};
use std::sync::Arc;

/// Payload allocations waiting for the next request of their type, and the
/// requests that ended while their payload was lent out.
#[derive(Default)]
pub(crate) struct Payloads {
    /// The spares of each payload type (a `Vec<Arc<Payload<R>>>`), the type
    /// used last first: a program has a few request types, and a stream of
    /// requests mostly uses one (a short scan, cheaper than hashing).
    by_type: Vec<(TypeId, Box<dyn Any>)>,
    /// The spare given back last, if the next request takes it: a stream
    /// of requests of one type reuses two allocations by turns, and finds
    /// the one it takes here, given back without a lookup by type (the
    /// others go to `by_type`). Its type is the downcast's check alone (no
    /// `TypeId` kept beside it: one comparison less per request).
    last: Option<Arc<dyn Any + Send + Sync>>,
    /// Requests to a server of this locality that ended (timeout, cancel,
    /// requester gone: key, requester, how) while their `RequestMsg` was
    /// queued or being handled: the payload was lent to it, so they are
    /// settled when it comes back (right after the server's handlers).
    lent: Vec<(Key, Key, Outcome)>,
}

/// Who sends a request, and where its replies go: what a payload's
/// allocation needs to know (see `Payloads::take`).
pub(super) struct Requester<K, A> {
    /// The requesting actor.
    pub(super) me: Key,
    /// Where replies go, if not `me`'s main address.
    pub(super) via: Option<Key>,
    /// The key of the reply address (`None` if `me` is gone).
    pub(super) reply_key: K,
    /// The address of a key of this locality.
    pub(super) reply_address: A,
}

/// How many spare allocations one payload type keeps.
const SPARE: usize = 32;

impl Payloads {
    /// `take` in the common case, inline: a request from `me` with replies
    /// to its main address, to a server here, and the spare given back
    /// last is of its type, not shared, and was `me`'s (whose main address
    /// it keeps: the address of the actor the key names, for its whole
    /// life). The value back if not: then `take`.
    #[inline(always)]
    pub(super) fn take_mine<R: Request>(
        &mut self,
        value: R,
        me: Key,
        to: &Address,
    ) -> Result<Arc<Payload<R>>, R> {
        let Some(last) = self.last.take() else {
            return Err(value);
        };
        let mut arc = match last.downcast::<Payload<R>>() {
            Ok(arc) => arc,
            Err(other) => {
                self.last = Some(other); // another type's: kept for it
                return Err(value);
            }
        };
        if let Some(payload) = Arc::get_mut(&mut arc)
            && payload.requester == me
            && let Server::Here(key) = &mut payload.server
        {
            payload.value = Some(value);
            // Written in place (a whole `Server` made on the stack and
            // copied in was stored in parts and read back whole: a stall).
            *key = to.key();
            return Ok(arc);
        }
        self.last = Some(arc);
        Err(value)
    }

    /// A payload holding `value`, sent by `requester.me`, the request going
    /// to `to` (`here`: an address of this locality): a spare allocation if
    /// there is one (its reply address and server are kept when they are
    /// the same: no `Address` clone, no store), else a new one. `None` if
    /// the reply address is gone.
    #[cold]
    #[inline(never)]
    pub(super) fn take<R: Request, K, A>(
        &mut self,
        value: R,
        requester: Requester<K, A>,
        to: &Address,
        here: bool,
    ) -> Option<Arc<Payload<R>>>
    where
        K: FnOnce() -> Option<Key>,
        A: FnOnce(Key) -> Option<Address>,
    {
        match self.last.take().map(Arc::downcast::<Payload<R>>) {
            Some(Ok(spare)) => refill(Some(spare), value, requester, to, here),
            Some(Err(other)) => {
                self.last = Some(other); // another type's: kept for it
                self.take_slow(value, requester, to, here)
            }
            None => self.take_slow(value, requester, to, here),
        }
    }

    /// `take` without the spare given back last: one of `R`'s spares.
    fn take_slow<R: Request, K, A>(
        &mut self,
        value: R,
        requester: Requester<K, A>,
        to: &Address,
        here: bool,
    ) -> Option<Arc<Payload<R>>>
    where
        K: FnOnce() -> Option<Key>,
        A: FnOnce(Key) -> Option<Address>,
    {
        let spare = self.spares_of::<R>().and_then(Vec::pop);
        refill(spare, value, requester, to, here)
    }

    /// Takes back a payload after its response was delivered: if nobody else
    /// holds it, its value is dropped now and its allocation kept.
    ///
    /// A value without drop glue (`Add(u64)`) is not emptied: dropping it
    /// later changes nothing, so the allocation goes to the spares
    /// unchecked, and `take` checks it once (one atomic operation per
    /// request instead of two). Its type is not checked either (the
    /// response's payload is type-erased) unless it goes to `R`'s spares.
    /// Such a spare may keep the address of a server elsewhere until it is
    /// reused (at most the spares of each type).
    #[inline(always)]
    pub(super) fn give<R: Request>(&mut self, mut payload: Arc<dyn Pending>) {
        if std::mem::needs_drop::<R>() {
            let Some(unique) = Arc::get_mut(&mut payload) else {
                return; // a server keeps it (a deferred reply): dropped with the last holder
            };
            unique.empty();
        }
        if self.last.is_none() {
            self.last = Some(payload);
            return;
        }
        let any: Arc<dyn Any + Send + Sync> = payload;
        let Ok(payload) = any.downcast::<Payload<R>>() else {
            return; // not reachable: a response of `R` holds a payload of `R`
        };
        match self.spares_of::<R>() {
            Some(spares) if spares.len() < SPARE => spares.push(payload),
            Some(_) => {}
            None => self.first_spare(payload),
        }
    }

    /// The first spare of payload type `R`: its list is made.
    #[cold]
    #[inline(never)]
    fn first_spare<R: Request>(&mut self, payload: Arc<Payload<R>>) {
        let spares: Vec<Arc<Payload<R>>> = vec![payload];
        self.by_type.push((TypeId::of::<R>(), Box::new(spares)));
        let last = self.by_type.len() - 1;
        self.by_type.swap(0, last);
    }

    /// The spares of payload type `R`, moved to the front if found further
    /// on (the type used last is found first).
    #[inline(always)]
    fn spares_of<R: Request>(&mut self) -> Option<&mut Vec<Arc<Payload<R>>>> {
        let id = TypeId::of::<R>();
        let at = match self.by_type.first() {
            Some((first, _)) if *first == id => 0,
            _ => self.find::<R>()?,
        };
        self.by_type[at].1.downcast_mut()
    }

    /// Where the spares of `R` are (moved to the front).
    #[cold]
    #[inline(never)]
    fn find<R: Request>(&mut self) -> Option<usize> {
        let id = TypeId::of::<R>();
        let at = self.by_type.iter().position(|(t, _)| *t == id)?;
        self.by_type.swap(0, at);
        Some(0)
    }

    /// Request `key` of `requester` ended (`outcome`) while its payload was
    /// lent: settled when the payload comes back.
    pub(super) fn ended_while_lent(&mut self, key: Key, requester: Key, outcome: Outcome) {
        self.lent.push((key, requester, outcome));
    }

    /// How request `key` ended while its payload was lent, if it did.
    pub(super) fn take_ended(&mut self, key: Key) -> Option<(Key, Outcome)> {
        let at = self.lent.iter().position(|&(k, _, _)| k == key)?;
        let (_, requester, outcome) = self.lent.swap_remove(at);
        Some((requester, outcome))
    }

    /// Spare allocations of payload type `R` (for tests).
    #[cfg(test)]
    pub(crate) fn spares<R: Request>(&self) -> usize {
        let id = TypeId::of::<R>();
        let last = usize::from(
            self.last
                .as_deref()
                .is_some_and(<dyn Any + Send + Sync>::is::<Payload<R>>),
        );
        last + self
            .by_type
            .iter()
            .find(|(t, _)| *t == id)
            .and_then(|(_, pool)| pool.downcast_ref::<Vec<Arc<Payload<R>>>>())
            .map_or(0, Vec::len)
    }

    /// Requests settled while lent and not yet answered (for tests).
    #[cfg(test)]
    pub(crate) fn lent_ended(&self) -> usize {
        self.lent.len()
    }
}

/// A payload holding `value` (see `Payloads::take`) in `spare` if it is
/// not shared, else in a new allocation.
#[cold]
#[inline(never)]
fn refill<R: Request, K, A>(
    spare: Option<Arc<Payload<R>>>,
    value: R,
    requester: Requester<K, A>,
    to: &Address,
    here: bool,
) -> Option<Arc<Payload<R>>>
where
    K: FnOnce() -> Option<Key>,
    A: FnOnce(Key) -> Option<Address>,
{
    let reply_to = (requester.reply_key)()?;
    let main = match requester.via {
        None => requester.me,
        Some(_) => Key::NONE,
    };
    // A spare of a type without drop glue may still be held by a kept
    // `RequestMsg` (see `Payloads::give`): then it is left to that one.
    if let Some(mut arc) = spare
        && let Some(payload) = Arc::get_mut(&mut arc)
    {
        if payload.reply_to.key() != reply_to {
            payload.reply_to = (requester.reply_address)(reply_to)?;
        }
        payload.requester = main;
        payload.value = Some(value);
        match &mut payload.server {
            Server::Here(key) if here => *key = to.key(),
            server => *server = Server::of(to, here),
        }
        return Some(arc);
    }
    Some(Arc::new(Payload {
        value: Some(value),
        reply_to: (requester.reply_address)(reply_to)?,
        requester: main,
        server: Server::of(to, here),
    }))
}

//! Payload allocations kept for the next request of their type, and the
//! requests settled while their payload was lent to the server.

use super::Payload;
use super::flow::{Outcome, Server};
use crate::address::Address;
use crate::arena::Key;
use crate::request::Request;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Payload allocations waiting for the next request of their type, and the
/// requests that ended while their payload was lent out.
#[derive(Default)]
pub(crate) struct Payloads {
    by_type: HashMap<TypeId, Box<dyn Any>, BuildHasherDefault<TypeIdHasher>>,
    /// Requests to a server of this locality that ended (timeout, cancel,
    /// requester gone: key, requester, how) while their `RequestMsg` was
    /// queued or being handled: the payload was lent to it, so they are
    /// settled when it comes back (right after the server's handlers).
    lent: Vec<(Key, Key, Outcome)>,
}

/// How many spare allocations one payload type keeps.
const SPARE: usize = 32;

impl Payloads {
    /// A payload holding `value`, replies going to `reply_to`: a spare
    /// allocation if there is one (its reply address is kept when it is the
    /// same, the common case: no `Address` clone).
    #[inline]
    pub(super) fn take<R: Request>(
        &mut self,
        value: R,
        reply_to: &Address,
        server: Server,
    ) -> Arc<Payload<R>> {
        let spare = self
            .by_type
            .get_mut(&TypeId::of::<R>())
            .and_then(|pool| pool.downcast_mut::<Vec<Arc<Payload<R>>>>())
            .and_then(Vec::pop);
        // A spare of a type without drop glue may still be held by a kept
        // `RequestMsg` (see `give`): then it is left to that one.
        if let Some(mut arc) = spare
            && let Some(payload) = Arc::get_mut(&mut arc)
        {
            payload.value = Some(value);
            payload.server = server;
            if payload.reply_to != *reply_to {
                payload.reply_to = reply_to.clone();
            }
            return arc;
        }
        Arc::new(Payload {
            value: Some(value),
            reply_to: reply_to.clone(),
            server,
        })
    }

    /// Takes back a payload after its response was delivered: if nobody else
    /// holds it, its value is dropped now and its allocation kept.
    ///
    /// A value without drop glue (`Add(u64)`) is not emptied: dropping it
    /// later changes nothing, so the allocation goes to the spares
    /// unchecked, and `take` checks it once (one atomic operation per
    /// request instead of two).
    #[inline]
    pub(super) fn give<R: Request>(&mut self, mut payload: Arc<Payload<R>>) {
        let keeps_nothing = !std::mem::needs_drop::<R>() && matches!(payload.server, Server::Here(_));
        if !keeps_nothing {
            let Some(unique) = Arc::get_mut(&mut payload) else {
                return; // a server keeps it (a deferred reply): dropped with the last holder
            };
            unique.value = None;
            if let Server::Elsewhere(_) = unique.server {
                unique.server = Server::Here(Key::NONE); // no address kept alive by a spare
            }
        }
        let pool = self
            .by_type
            .entry(TypeId::of::<R>())
            .or_insert_with(|| Box::new(Vec::<Arc<Payload<R>>>::new()));
        if let Some(pool) = pool.downcast_mut::<Vec<Arc<Payload<R>>>>()
            && pool.len() < SPARE
        {
            pool.push(payload);
        }
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
        self.by_type
            .get(&TypeId::of::<R>())
            .and_then(|pool| pool.downcast_ref::<Vec<Arc<Payload<R>>>>())
            .map_or(0, Vec::len)
    }

    /// Requests settled while lent and not yet answered (for tests).
    #[cfg(test)]
    pub(crate) fn lent_ended(&self) -> usize {
        self.lent.len()
    }
}

/// `TypeId` is already a hash: fold its bits instead of hashing them again.
#[derive(Default)]
struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
    fn write_u128(&mut self, n: u128) {
        self.0 ^= (n as u64) ^ ((n >> 64) as u64);
    }
}

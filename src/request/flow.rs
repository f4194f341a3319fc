//! How a request travels: sent with a timer, settled once by the first of
//! the reply, the timeout or a cancellation; whatever comes after (a late or
//! second reply) is dropped, counted in
//! [`Stats::dropped_late_replies`](crate::Stats) and shown by inspection.
//!
//! A pending request lives in the requester's locality as a timer that
//! carries it (a [`Timers`](crate::timer::Timers) of its own: per-duration
//! lists, linked per requester), so sending and settling are O(1) and a
//! request costs one record, not a record and a timer. The
//! payload's allocation is shared by the request and the response, and
//! reused: once the response has been delivered and nobody else holds the
//! payload, its allocation goes to a per-type pool for the next request, so
//! a steady stream of requests allocates nothing.

use super::{CancelRequest, Payload, Request, RequestId, RequestMsg, Response};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode};
use crate::locality::Core;
use crate::locality::fire::head_of;
use crate::locality::shared::Remote;
use crate::queue::Envelope;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// How a pending request ends without a reply.
#[derive(Clone, Copy)]
enum Outcome {
    Timeout,
    Cancelled,
    RequesterGone,
}

/// A request waiting for its response, in the requester's locality: a
/// handle on its payload, which knows the reply address, the server and how
/// to end the request (one pointer pair, so a pending request's timer
/// record stays small: it is moved on every start and settle).
pub(crate) struct PendingRequest(Arc<dyn Pending>);

/// What a pending request's payload does when the request ends without a reply.
trait Pending: Send + Sync {
    /// Ends the request without a reply: (core, request key, requester, how).
    fn settle(self: Arc<Self>, core: &mut Core, key: Key, requester: Key, outcome: Outcome);
}

impl<R: Request> Pending for Payload<R> {
    fn settle(self: Arc<Self>, core: &mut Core, key: Key, requester: Key, outcome: Outcome) {
        settle(core, key, requester, self, outcome);
    }
}

/// Where the server of a pending request is: an address of this locality
/// is kept as its key (no `Arc` clone for a local request), another's as
/// the address.
pub(crate) enum Server {
    /// An address of the requester's locality.
    Here(Key),
    /// An address of another locality.
    Elsewhere(Address),
}

/// Sends a request from actor `me`, replies going to `reply_to` (one of
/// `me`'s addresses, a key of this locality).
pub(crate) fn send<R: Request>(
    core: &mut Core,
    me: Key,
    reply_to: Key,
    to: &Address,
    payload: R,
    timeout: Duration,
) -> RequestId {
    let due = core.due(timeout);
    let Some(reply_address) = core.routes.address(reply_to).map(|a| &a.address) else {
        return RequestId::NONE; // not reachable: the caller checked the address
    };
    let server = if to.is_of(&core.shared) {
        Server::Here(to.key())
    } else {
        Server::Elsewhere(to.clone())
    };
    let payload = core.payloads.take(payload, reply_address, server);
    let Some(cell) = core.actors.get_mut(me) else {
        // Not reachable from a handler (its actor is live); refuse quietly.
        return RequestId::NONE;
    };
    let pending = PendingRequest(payload.clone());
    let head = &mut cell.rare().requests_head;
    let key = core.requests.start(due, me, head, pending);
    let id = RequestId {
        locality: core.id(),
        key,
    };
    core.send(
        to,
        me,
        RequestMsg {
            id,
            payload,
            watcher: None,
        },
    );
    id
}

/// Sends a reply (or the server's error) for `request`.
pub(crate) fn reply<R: Request>(
    core: &mut Core,
    me: Key,
    request: &RequestMsg<R>,
    result: Result<R::Response, Error>,
) {
    if let Some(watcher) = &request.watcher {
        core.send(watcher, me, super::Answered(request.id));
    }
    let response = Response {
        id: request.id,
        request: request.payload.clone(),
        result,
    };
    let to = &request.payload.reply_to;
    if to.is_of(&core.shared) {
        core.enqueue(ReplyEnvelope {
            dest: to.key(),
            sender: me,
            response,
            settled: false,
        });
    } else {
        let envelope = ReplyEnvelope {
            dest: to.key(),
            sender: Key::NONE,
            response,
            settled: false,
        };
        if !core.post_reply(to, Box::new(envelope)) {
            core.stats.dropped_closed += 1;
        }
    }
}

/// Cancels a pending request of `me`; `false` if it is not pending, not
/// `me`'s, or of another locality.
pub(crate) fn cancel(core: &mut Core, me: Key, id: RequestId) -> bool {
    if id.locality != core.id() || core.requests.owner(id.key) != Some(me) {
        return false;
    }
    let Some((requester, pending)) = remove(core, id.key) else {
        return false;
    };
    pending
        .0
        .settle(core, id.key, requester, Outcome::Cancelled);
    true
}

/// The request's timeout fired (it is out of the request set already).
pub(crate) fn on_timeout(core: &mut Core, key: Key, pending: PendingRequest) {
    pending
        .0
        .settle(core, key, Key::FRAMEWORK, Outcome::Timeout);
}

/// The requester is shutting down: its pending requests (the list that
/// starts at `head`) end, and the servers are told.
pub(crate) fn requester_gone(core: &mut Core, head: Key) {
    for (key, entry) in core.requests.cancel_all(head) {
        entry
            .action
            .0
            .settle(core, key, entry.owner, Outcome::RequesterGone);
    }
}

/// Takes a pending request out of the request set (and its requester's
/// list): its requester and what it keeps.
#[inline(always)]
fn remove(core: &mut Core, key: Key) -> Option<(Key, PendingRequest)> {
    let owner = core.requests.owner(key)?;
    let mut detached = Key::NONE;
    let head = head_of!(core.actors, owner, requests_head, detached);
    core.requests.cancel(key, head).map(|e| (owner, e.action))
}

fn settle<R: Request>(
    core: &mut Core,
    key: Key,
    requester: Key,
    request: Arc<Payload<R>>,
    outcome: Outcome,
) {
    let id = RequestId {
        locality: core.id(),
        key,
    };
    // However it ends without a reply, the server is told: it may stop working
    // on it (a registry drops a waiting discovery, say).
    let server = match &request.server {
        Server::Here(key) => core.routes.address(*key).map(|a| a.address.clone()),
        Server::Elsewhere(address) => Some(address.clone()),
    };
    let reply_key = request.reply_to.key();
    let reply_to = core.routes.address(reply_key).map(|a| a.address.clone());
    if let Some(reply_to) = reply_to {
        let cancel = CancelRequest::<R> {
            id,
            reply_to,
            _request: PhantomData,
        };
        let sender = if let Outcome::Cancelled = outcome {
            requester
        } else {
            Key::FRAMEWORK
        };
        if let Some(server) = &server {
            core.send(server, sender, cancel);
        }
    }
    let code = match outcome {
        Outcome::Timeout => ErrorCode::RequestTimeout,
        Outcome::Cancelled => ErrorCode::Cancelled,
        Outcome::RequesterGone => return,
    };
    let response = Response {
        id,
        request,
        result: Err(Error::new(code).with_context(match &server {
            Some(server) => server.to_string(),
            None => format!("{}/? (gone)", core.name()),
        })),
    };
    core.enqueue(ReplyEnvelope {
        dest: reply_key,
        sender: Key::FRAMEWORK,
        response,
        settled: true,
    });
}

/// A response on its way to the requester's reply address.
struct ReplyEnvelope<R: Request> {
    dest: Key,
    sender: Key,
    response: Response<R>,
    /// `true` when the framework made it (timeout, cancel): the request is settled already.
    settled: bool,
}

impl<R: Request> Envelope<Core> for ReplyEnvelope<R> {
    fn deliver(self, core: &mut Core) {
        if !self.settled {
            let key = self.response.id.key;
            let pending = (self.response.id.locality == core.id())
                .then(|| remove(core, key))
                .flatten();
            if pending.is_none() {
                core.stats.dropped_late_replies += 1;
                crate::inspect::late_reply::<Response<R>>(
                    core,
                    self.dest,
                    self.sender,
                    &self.response,
                );
                return;
            }
        }
        crate::subscription::route(core, self.dest, self.sender, &self.response);
        match std::mem::replace(&mut core.next, crate::subscription::Next::Done) {
            // Forwarded: moved on as a user message.
            crate::subscription::Next::Forward(to, by) => core.send(&to, by, self.response),
            _ => core.payloads.give(self.response.request),
        }
    }
}

impl<R: Request> Remote for ReplyEnvelope<R> {
    fn localize(self: Box<Self>, core: &mut Core) {
        core.enqueue(*self);
    }
}

/// Payload allocations waiting for the next request of their type.
#[derive(Default)]
pub(crate) struct Payloads {
    by_type: HashMap<TypeId, Box<dyn Any>, BuildHasherDefault<TypeIdHasher>>,
}

/// How many spare allocations one payload type keeps.
const SPARE: usize = 32;

impl Payloads {
    /// A payload holding `value`, replies going to `reply_to`: a spare
    /// allocation if there is one (its reply address is kept when it is the
    /// same, the common case: no `Address` clone).
    fn take<R: Request>(
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
    fn give<R: Request>(&mut self, mut payload: Arc<Payload<R>>) {
        let Some(unique) = Arc::get_mut(&mut payload) else {
            return; // a server keeps it (a deferred reply): dropped with the last holder
        };
        unique.value = None;
        if let Server::Elsewhere(_) = unique.server {
            unique.server = Server::Here(Key::NONE); // no address kept alive by a spare
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

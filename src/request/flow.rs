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
//!
//! A request to a server of the same locality shares its payload without
//! touching its reference count: the payload is *lent* to the `RequestMsg`
//! (the pending record holds none while it is queued and handled) and
//! comes back to the pending record right after the server's handlers
//! ([`RequestEnvelope`]); a reply made meanwhile carries no payload, the
//! response takes it from the pending record. A request that ends while
//! its payload is lent (its timeout, a cancel, its requester gone) is
//! settled when the payload comes back. Only a clone a server keeps, a
//! request to another locality and a reply from there count references.

use super::pool::Requester;
use super::{CancelRequest, Payload, Request, RequestId, RequestMsg, Response};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode};
use crate::locality::Core;
use crate::locality::shared::Remote;
use crate::queue::Envelope;
use crate::subscription::Next;
use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// How a pending request ends without a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Timeout,
    Cancelled,
    RequesterGone,
}

/// A request waiting for its response, in the requester's locality: a
/// handle on its payload, which knows the reply address, the server and how
/// to end the request (one pointer pair, so a pending request's timer
/// record stays small: it is moved on every start and settle). `None`
/// while the payload is lent to the `RequestMsg` of a server here.
pub(crate) struct PendingRequest(Option<Arc<dyn Pending>>);

/// A request's payload with its type erased: what a pending request holds,
/// and what a [`Response`] holds (its `request()` checks the type, the
/// delivery does not).
pub(crate) trait Pending: Any + Send + Sync {
    /// Ends the request without a reply: (core, request key, requester, how).
    fn settle(self: Arc<Self>, core: &mut Core, key: Key, requester: Key, outcome: Outcome);
    /// Drops the value, and the server's address if it is elsewhere (the
    /// allocation is kept as a spare).
    fn empty(&mut self);
}

impl<R: Request> Pending for Payload<R> {
    fn settle(self: Arc<Self>, core: &mut Core, key: Key, requester: Key, outcome: Outcome) {
        settle(core, key, requester, self, outcome);
    }
    fn empty(&mut self) {
        self.value = None;
        if let Server::Elsewhere(_) = self.server {
            self.server = Server::Here(Key::NONE); // no address kept alive by a spare
        }
    }
}

impl crate::timer::Action for PendingRequest {
    /// A free slot's placeholder (a request is never settled from it).
    fn vacant() -> Self {
        PendingRequest(None)
    }
}

impl PendingRequest {
    /// Ends the request without a reply now, or (its payload lent) when
    /// the payload comes back.
    fn settle(self, core: &mut Core, key: Key, requester: Key, outcome: Outcome) {
        match self.0 {
            Some(payload) => payload.settle(core, key, requester, outcome),
            None => core.payloads.ended_while_lent(key, requester, outcome),
        }
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

impl Server {
    /// Where `to` is (`here`: an address of the requester's locality).
    #[inline(always)]
    pub(super) fn of(to: &Address, here: bool) -> Server {
        if here {
            Server::Here(to.key())
        } else {
            Server::Elsewhere(to.clone())
        }
    }
}

/// Sends a request from actor `me`, replies going to `reply_to` (one of
/// `me`'s addresses, a key of this locality; `None`: its main address).
pub(crate) fn send<R: Request>(
    core: &mut Core,
    me: Key,
    reply_to: Option<Key>,
    to: &Address,
    payload: R,
    timeout: Duration,
) -> RequestId {
    let due = core.due(timeout);
    let locality = core.id();
    let here = to.is_of(&core.shared);
    let mine = match reply_to {
        None if here => core.payloads.take_mine(payload, me, to),
        _ => Err(payload),
    };
    let payload = match mine {
        Ok(payload) => payload,
        Err(payload) => {
            // The reply address is looked up only here: a spare of the
            // same requester replying to its main address knows it.
            let (actors, routes) = (&core.actors, &core.routes);
            let reply_key = || reply_to.or_else(|| actors.get(me).map(|cell| cell.main));
            let reply_address = |key| routes.address(key).map(|a| a.address.clone());
            let requester = Requester {
                me,
                via: reply_to,
                reply_key,
                reply_address,
            };
            let Some(payload) = core.payloads.take(payload, requester, to, here) else {
                // Not reachable from a handler (its actor is live, the
                // caller checked the address); refused quietly.
                return RequestId::NONE;
            };
            payload
        }
    };
    if !here {
        return send_elsewhere(core, me, to, payload, due);
    }
    // Here the payload is lent to the request.
    let key = core.requests.start(due, me, PendingRequest(None));
    core.enqueue(RequestEnvelope {
        dest: to.key(),
        sender: me,
        key,
        payload,
    });
    RequestId { locality, key }
}

/// A request to a server of another locality: its payload is shared with
/// the pending request (out of line: the send here keeps fewer registers).
#[cold]
#[inline(never)]
fn send_elsewhere<R: Request>(
    core: &mut Core,
    me: Key,
    to: &Address,
    payload: Arc<Payload<R>>,
    due: crate::timer::Due,
) -> RequestId {
    let locality = core.id();
    let pending = PendingRequest(Some(payload.clone() as Arc<dyn Pending>));
    let key = core.requests.start(due, me, pending);
    let id = RequestId { locality, key };
    let request = RequestMsg {
        id,
        payload,
        watcher: None,
    };
    core.send(to, me, request);
    id
}

/// Sends a reply (or the server's error) for `request`.
///
/// The common case (a requester of this locality, no watcher) calls
/// nothing before the reply is queued, so that `result` stays in registers
/// (spilled around a call, it was stored in parts and read back whole: a
/// stall on the forwarded stores).
#[inline]
pub(crate) fn reply<R: Request>(
    core: &mut Core,
    me: Key,
    request: &RequestMsg<R>,
    result: Result<R::Response, Error>,
) {
    if request.watcher.is_some() || !request.payload.reply_to.is_of(&core.shared) {
        return reply_slow(core, me, request, result);
    }
    reply_here(core, me, request, result);
}

/// Queues a reply to a requester of this locality.
#[inline(always)]
fn reply_here<R: Request>(
    core: &mut Core,
    me: Key,
    request: &RequestMsg<R>,
    result: Result<R::Response, Error>,
) {
    let id = request.id;
    // The response takes the payload from the pending record (lent to this
    // request now, it is back there before the reply is delivered). A late
    // reply is only counted, so it needs none, except to be shown by
    // inspection: with inspection on, the reply carries it.
    let dest = request.payload.reply_to.key();
    if id.locality == core.id() && core.inspect.level == 0 {
        core.enqueue(ReplyEnvelope::<R> {
            dest,
            sender: me,
            key: id.key,
            result,
        });
    } else {
        core.enqueue(CarriedReplyEnvelope {
            dest,
            sender: me,
            key: id.key,
            payload: request.payload.clone(),
            result,
        });
    }
}

/// A reply to a forwarded request (its watcher is told), or to a
/// requester of another locality.
#[cold]
#[inline(never)]
fn reply_slow<R: Request>(
    core: &mut Core,
    me: Key,
    request: &RequestMsg<R>,
    result: Result<R::Response, Error>,
) {
    if let Some(watcher) = &request.watcher {
        core.send(watcher, me, super::Answered(request.id));
    }
    let to = &request.payload.reply_to;
    if to.is_of(&core.shared) {
        return reply_here(core, me, request, result);
    }
    let envelope = CarriedReplyEnvelope {
        dest: to.key(),
        sender: Key::NONE,
        key: request.id.key,
        payload: request.payload.clone(),
        result,
    };
    if !core.post_reply(to, Box::new(envelope)) {
        core.stats.dropped_closed += 1;
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
    pending.settle(core, id.key, requester, Outcome::Cancelled);
    true
}

/// The request's timeout fired (it is out of the request set already).
pub(crate) fn on_timeout(core: &mut Core, key: Key, pending: PendingRequest) {
    pending.settle(core, key, Key::FRAMEWORK, Outcome::Timeout);
}

/// The requester `me` is shutting down: its pending requests end, and the
/// servers are told.
pub(crate) fn requester_gone(core: &mut Core, me: Key) {
    for (key, entry) in core.requests.cancel_all(me) {
        let requester = entry.owner;
        entry
            .action
            .settle(core, key, requester, Outcome::RequesterGone);
    }
}

/// Takes a pending request out of the request set (and its requester's
/// list): its requester and what it keeps.
#[inline(always)]
fn remove(core: &mut Core, key: Key) -> Option<(Key, PendingRequest)> {
    let entry = core.requests.cancel(key)?;
    Some((entry.owner, entry.action))
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
    let reply_to = match core.routes.address(reply_key) {
        Some(slot) => Some(slot.address.clone()),
        // Settled late (its payload was lent when the requester went): the
        // server is told all the same.
        None if outcome == Outcome::RequesterGone => Some(request.reply_to.clone()),
        None => None,
    };
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
    let result = Err(Error::new(code).with_context(match &server {
        Some(server) => server.to_string(),
        None => format!("{}/? (gone)", core.name()),
    }));
    core.enqueue(SettledEnvelope {
        dest: reply_key,
        id,
        request,
        result,
    });
}

/// A request on its way to a server of its requester's locality, its
/// payload lent: given back to the pending request after the delivery.
/// Its `RequestMsg` (no watcher) is made at delivery: a smaller envelope
/// is a shorter copy into the queue and out.
struct RequestEnvelope<R: Request> {
    dest: Key,
    sender: Key,
    /// The request's key (its id names this locality).
    key: Key,
    payload: Arc<Payload<R>>,
}

impl<R: Request> Envelope<Core> for RequestEnvelope<R> {
    #[inline]
    fn deliver(self, core: &mut Core) {
        let RequestEnvelope {
            dest,
            sender,
            key,
            payload,
        } = self;
        let id = RequestId {
            locality: core.id(),
            key,
        };
        let request = RequestMsg {
            id,
            payload,
            watcher: None,
        };
        crate::subscription::route(core, dest, sender, &request);
        if !matches!(core.next, Next::Done) {
            after_request(core, dest, sender, &request);
        }
        give_back(core, id.key, request.payload);
    }
}

/// A handler forwarded a request, or nobody heard it: a clone goes on (the
/// lent payload goes back to the pending request).
#[cold]
#[inline(never)]
fn after_request<R: Request>(core: &mut Core, dest: Key, sender: Key, request: &RequestMsg<R>) {
    match std::mem::replace(&mut core.next, Next::Done) {
        Next::Forward(to, by) => core.send(&to, by, request.clone()),
        Next::Dropped(reason) if crate::dead_letter::wanted::<RequestMsg<R>>(core) => {
            let destination = crate::inspect::address_name(core, dest);
            let request = request.clone();
            crate::dead_letter::post(core, destination, sender, reason, request);
        }
        _ => {}
    }
}

/// A lent payload comes back from the server: to its pending request, or
/// (the request ended meanwhile) it settles the request now.
#[inline(always)]
fn give_back<R: Request>(core: &mut Core, key: Key, payload: Arc<Payload<R>>) {
    match core.requests.action_mut(key) {
        Some(PendingRequest(slot @ None)) => *slot = Some(payload),
        Some(_) => {} // not lent (not reachable): it has its own
        None => ended_while_lent(core, key, payload),
    }
}

#[cold]
#[inline(never)]
fn ended_while_lent<R: Request>(core: &mut Core, key: Key, payload: Arc<Payload<R>>) {
    if let Some((requester, outcome)) = core.payloads.take_ended(key) {
        settle(core, key, requester, payload, outcome);
    }
}

/// A reply on its way to a requester of the server's locality, which
/// holds the request's payload (the response takes it from there).
struct ReplyEnvelope<R: Request> {
    dest: Key,
    sender: Key,
    /// The request's key in its requester's locality (where a reply is
    /// always delivered: its id names that locality).
    key: Key,
    result: Result<R::Response, Error>,
}

impl<R: Request> Envelope<Core> for ReplyEnvelope<R> {
    fn deliver(self, core: &mut Core) {
        let ReplyEnvelope {
            dest,
            sender,
            key,
            result,
        } = self;
        deliver_reply::<R>(core, dest, sender, key, None, result);
    }
}

/// A reply that carries the request's payload: from another locality (or
/// with inspection on, to show the request if the reply comes late).
struct CarriedReplyEnvelope<R: Request> {
    dest: Key,
    sender: Key,
    key: Key,
    payload: Arc<Payload<R>>,
    result: Result<R::Response, Error>,
}

impl<R: Request> Envelope<Core> for CarriedReplyEnvelope<R> {
    fn deliver(self, core: &mut Core) {
        let CarriedReplyEnvelope {
            dest,
            sender,
            key,
            payload,
            result,
        } = self;
        deliver_reply(core, dest, sender, key, Some(payload), result);
    }
}

impl<R: Request> Remote for CarriedReplyEnvelope<R> {
    fn localize(self: Box<Self>, core: &mut Core) {
        core.enqueue(*self);
    }
}

/// Delivers a reply to request `key` (whose payload it carries, or the
/// pending request holds), or drops it if the request was settled.
#[inline(always)]
fn deliver_reply<R: Request>(
    core: &mut Core,
    dest: Key,
    sender: Key,
    key: Key,
    payload: Option<Arc<Payload<R>>>,
    result: Result<R::Response, Error>,
) {
    let id = RequestId {
        locality: core.id(),
        key,
    };
    let Some((_, pending)) = remove(core, key) else {
        return late_reply(core, dest, sender, id, payload, result);
    };
    // The payload as the pending record holds it, its type not checked:
    // the response's `request()` checks it.
    let request = match (payload, pending.0) {
        (Some(payload), _) => Some(payload as Arc<dyn Pending>),
        (None, held) => held,
    };
    let Some(request) = request else {
        // Not reachable: a payload is lent only while its request is
        // queued to the server or handled there, and any reply made by
        // then is delivered after the payload is back.
        debug_assert!(false, "a reply found its request's payload lent");
        return;
    };
    respond::<R>(core, dest, sender, id, request, result);
}

/// The response of a request the framework settled (timeout, cancel).
struct SettledEnvelope<R: Request> {
    dest: Key,
    id: RequestId,
    request: Arc<Payload<R>>,
    result: Result<R::Response, Error>,
}

impl<R: Request> Envelope<Core> for SettledEnvelope<R> {
    fn deliver(self, core: &mut Core) {
        let SettledEnvelope {
            dest,
            id,
            request,
            result,
        } = self;
        respond::<R>(core, dest, Key::FRAMEWORK, id, request, result);
    }
}

/// Delivers a response; its payload's allocation is kept for the next
/// request unless a handler forwarded it.
#[inline(always)]
fn respond<R: Request>(
    core: &mut Core,
    dest: Key,
    sender: Key,
    id: RequestId,
    request: Arc<dyn Pending>,
    result: Result<R::Response, Error>,
) {
    let response = Response::<R> {
        id,
        request,
        result,
    };
    crate::subscription::route(core, dest, sender, &response);
    if matches!(core.next, Next::Done) {
        return core.payloads.give::<R>(response.request);
    }
    match std::mem::replace(&mut core.next, Next::Done) {
        // Forwarded: moved on as a user message.
        Next::Forward(to, by) => core.send(&to, by, response),
        _ => core.payloads.give::<R>(response.request),
    }
}

/// A reply after the request was settled: dropped, counted, and shown by
/// inspection.
#[cold]
#[inline(never)]
fn late_reply<R: Request>(
    core: &mut Core,
    dest: Key,
    sender: Key,
    id: RequestId,
    payload: Option<Arc<Payload<R>>>,
    result: Result<R::Response, Error>,
) {
    core.stats.dropped_late_replies += 1;
    if let Some(request) = payload {
        let response = Response {
            id,
            request: request as Arc<dyn Pending>,
            result,
        };
        crate::inspect::late_reply::<Response<R>>(core, dest, sender, &response);
    }
}

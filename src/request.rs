//! Request/response: typed requests with a timeout each, exactly one response.
//!
//! A request arms a timer in the requester's locality. The first of these
//! settles it: the reply, the timeout, a cancellation. Whatever comes after
//! (a late or second reply) is dropped silently, counted in
//! [`Stats::dropped_late_replies`](crate::Stats) and shown by inspection.

use crate::address::Address;
use crate::arena::{Key, remove_key};
use crate::error::{Error, ErrorCode};
use crate::locality::Core;
use crate::locality::shared::Remote;
use crate::message::Deliver;
use crate::timer::TimerAction;
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// A request payload, naming the type of its response.
///
/// ```
/// use commutator::Request;
/// struct Balance { account: u64 }
/// impl Request for Balance { type Response = u64; }
/// ```
///
/// The requester calls [`Context::request`](crate::Context::request) with a
/// timeout and subscribes to [`Response<R>`](Response); the server
/// subscribes to [`RequestMsg<R>`](RequestMsg) and answers with
/// [`Context::reply`](crate::Context::reply) or
/// [`reply_error`](crate::Context::reply_error), now or later from a kept
/// clone. The payload is shared, not copied, between the server and the
/// response (hence `Sync`).
///
/// # Examples
///
/// One request answered, one never answered; the timeout comes on the
/// locality's clock, so the test needs no sleeping:
///
/// ```
/// use commutator::*;
/// use std::{cell::RefCell, rc::Rc, time::Duration};
///
/// struct Square(u64);
/// impl Request for Square {
///     type Response = u64;
/// }
///
/// /// Squares numbers, but never answers for 13.
/// struct Calculator;
/// impl Actor for Calculator {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(|_: &mut Self, q: &RequestMsg<Square>, ctx: &mut Context<'_, Self>| {
///             let n = q.payload().0;
///             if n != 13 {
///                 ctx.reply(q, n * n);
///             }
///         });
///     }
/// }
///
/// struct Asker {
///     calculator: Address,
///     log: Rc<RefCell<Vec<String>>>,
/// }
/// impl Actor for Asker {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.subscribe(Self::on_square);
///     }
///     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
///         for n in [3, 13] {
///             ctx.request(&self.calculator, Square(n), Duration::from_secs(1));
///         }
///     }
/// }
/// impl Asker {
///     fn on_square(&mut self, r: &Response<Square>, _: &mut Context<'_, Self>) {
///         let line = match r.result() {
///             Ok(square) => format!("{} -> {square}", r.request().0),
///             Err(e) => format!("{} -> {}", r.request().0, e.code()),
///         };
///         self.log.borrow_mut().push(line);
///     }
/// }
///
/// let log = Rc::new(RefCell::new(Vec::new()));
/// let mut locality = Locality::new();
/// let t0 = locality.now();
/// let root = locality.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
/// let calculator = locality.spawn(&root, Calculator).finish()?;
/// locality.spawn(&root, Asker { calculator, log: log.clone() }).finish()?;
/// locality.run_until_idle(t0);
/// assert_eq!(*log.borrow(), ["3 -> 9"]); // 13 is still pending
/// locality.run_until_idle(t0 + Duration::from_secs(1)); // a virtual second later
/// assert_eq!(*log.borrow(), ["3 -> 9", "13 -> request timeout"]);
/// # Ok::<(), commutator::Error>(())
/// ```
pub trait Request: Send + Sync + 'static {
    /// What a successful reply carries.
    type Response: Send + 'static;
}

/// Names one request of the requester's locality: returned by
/// [`Context::request`](crate::Context::request), carried by its
/// [`RequestMsg`], [`Response`] and [`CancelRequest`], and taken by
/// [`Context::cancel_request`](crate::Context::cancel_request).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RequestId(pub(crate) Key);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request#{}", self.0.idx)
    }
}

/// A request as the server sees it: subscribe to `RequestMsg<R>` to serve `R`.
///
/// Answer it with [`Context::reply`](crate::Context::reply) or
/// [`Context::reply_error`](crate::Context::reply_error). Keep a clone to
/// reply later (a deferred reply); clones are cheap. Only the first answer
/// counts, and only if it comes before the requester's timeout.
pub struct RequestMsg<R: Request> {
    id: RequestId,
    reply_to: Address,
    payload: Arc<R>,
}

impl<R: Request> Clone for RequestMsg<R> {
    fn clone(&self) -> Self {
        RequestMsg {
            id: self.id,
            reply_to: self.reply_to.clone(),
            payload: self.payload.clone(),
        }
    }
}

impl<R: Request> fmt::Debug for RequestMsg<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestMsg({}, reply to {})", self.id, self.reply_to)
    }
}

impl<R: Request> RequestMsg<R> {
    /// The request payload.
    pub fn payload(&self) -> &R {
        &self.payload
    }
    /// The request's id (as the requester knows it).
    pub fn id(&self) -> RequestId {
        self.id
    }
    /// Where the reply goes.
    pub fn reply_to(&self) -> &Address {
        &self.reply_to
    }
}

/// The one response a requester gets for each request: the reply, the server's
/// error, a `RequestTimeout` or a `Cancelled` error. Subscribe to `Response<R>`
/// on the address the replies go to (the main address, or the one given to
/// [`Context::request_via`](crate::Context::request_via)).
pub struct Response<R: Request> {
    id: RequestId,
    request: Arc<R>,
    result: Result<R::Response, Error>,
}

impl<R: Request> fmt::Debug for Response<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.result {
            Ok(_) => write!(f, "Response({}, Ok)", self.id),
            Err(e) => write!(f, "Response({}, Err({e}))", self.id),
        }
    }
}

impl<R: Request> Response<R> {
    /// The id [`Context::request`](crate::Context::request) returned.
    pub fn id(&self) -> RequestId {
        self.id
    }
    /// The original request.
    pub fn request(&self) -> &R {
        &self.request
    }
    /// The reply, or why there is none.
    pub fn result(&self) -> Result<&R::Response, &Error> {
        self.result.as_ref()
    }
    /// The error code, or `None` for a successful reply.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.result.as_ref().err().map(Error::code)
    }
}

/// Sent to the server's address when the requester cancels a request or shuts
/// down before a response; a server may subscribe to it to stop its work.
pub struct CancelRequest<R: Request> {
    id: RequestId,
    reply_to: Address,
    _request: PhantomData<fn() -> R>,
}

impl<R: Request> fmt::Debug for CancelRequest<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CancelRequest({}, from {})", self.id, self.reply_to)
    }
}

impl<R: Request> CancelRequest<R> {
    /// The id of the cancelled request (as in [`RequestMsg::id`]).
    pub fn id(&self) -> RequestId {
        self.id
    }
    /// The reply address of the cancelled request (as in [`RequestMsg::reply_to`]).
    pub fn reply_to(&self) -> &Address {
        &self.reply_to
    }
}

/// How a pending request ends without a reply.
#[derive(Clone, Copy)]
pub(crate) enum Outcome {
    Timeout,
    Cancelled,
    RequesterGone,
}

type SettleFn = fn(&mut Core, Key, PendingRequest, Outcome);

/// A request waiting for its response, in the requester's locality.
pub(crate) struct PendingRequest {
    requester: Key,
    reply_to: Address,
    timer: Key,
    server: Address,
    payload: Arc<dyn Any + Send + Sync>,
    settle: SettleFn,
}

/// Sends a request from actor `me`, replies going to `reply_to`.
pub(crate) fn send<R: Request>(
    core: &mut Core,
    me: Key,
    reply_to: Address,
    to: &Address,
    payload: R,
    timeout: Duration,
) -> RequestId {
    let payload = Arc::new(payload);
    let pending = PendingRequest {
        requester: me,
        reply_to: reply_to.clone(),
        timer: Key::NONE,
        server: to.clone(),
        payload: payload.clone(),
        settle: settle::<R>,
    };
    let key = core.requests.insert(pending);
    let timer = core
        .timers
        .start(core.deadline(timeout), me, TimerAction::Request(key));
    if let Some(p) = core.requests.get_mut(key) {
        p.timer = timer;
    }
    if let Some(cell) = core.actors.get_mut(me) {
        cell.rare().requests.push(key);
    }
    let id = RequestId(key);
    core.send(
        to,
        me,
        RequestMsg {
            id,
            reply_to,
            payload,
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
    let response = Response {
        id: request.id,
        request: request.payload.clone(),
        result,
    };
    let to = &request.reply_to;
    if to.locality_id() == core.id() {
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

/// Cancels a pending request of `me`; `false` if it is not pending (or not `me`'s).
pub(crate) fn cancel(core: &mut Core, me: Key, id: RequestId) -> bool {
    match core.requests.get(id.0) {
        Some(p) if p.requester == me => {}
        _ => return false,
    }
    let pending = core.requests.remove(id.0).expect("checked above");
    core.timers.cancel(pending.timer);
    (pending.settle)(core, id.0, pending, Outcome::Cancelled);
    true
}

/// The request timer fired.
pub(crate) fn on_timeout(core: &mut Core, key: Key) {
    if let Some(pending) = core.requests.remove(key) {
        (pending.settle)(core, key, pending, Outcome::Timeout);
    }
}

/// The requester is shutting down: its pending requests end, the servers are told.
pub(crate) fn requester_gone(core: &mut Core, keys: impl IntoIterator<Item = Key>) {
    for key in keys {
        if let Some(pending) = core.requests.remove(key) {
            core.timers.cancel(pending.timer);
            (pending.settle)(core, key, pending, Outcome::RequesterGone);
        }
    }
}

fn forget(core: &mut Core, requester: Key, key: Key) {
    if let Some(rare) = core
        .actors
        .get_mut(requester)
        .and_then(|cell| cell.rare.as_deref_mut())
    {
        remove_key(&mut rare.requests, key);
    }
}

fn settle<R: Request>(core: &mut Core, key: Key, pending: PendingRequest, outcome: Outcome) {
    forget(core, pending.requester, key);
    let Ok(request) = pending.payload.downcast::<R>() else {
        return;
    };
    let id = RequestId(key);
    let server = pending.server;
    // However it ends without a reply, the server is told: it may stop working
    // on it (a registry drops a waiting discovery, say).
    let cancel = CancelRequest::<R> {
        id,
        reply_to: pending.reply_to.clone(),
        _request: PhantomData,
    };
    let sender = if let Outcome::Cancelled = outcome {
        pending.requester
    } else {
        Key::FRAMEWORK
    };
    core.send(&server, sender, cancel);
    let code = match outcome {
        Outcome::Timeout => ErrorCode::RequestTimeout,
        Outcome::Cancelled => ErrorCode::Cancelled,
        Outcome::RequesterGone => return,
    };
    let response = Response {
        id,
        request,
        result: Err(Error::new(code).with_context(server.to_string())),
    };
    core.enqueue(ReplyEnvelope {
        dest: pending.reply_to.key(),
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

impl<R: Request> Deliver for ReplyEnvelope<R> {
    fn deliver(self, core: &mut Core) {
        if !self.settled {
            let key = self.response.id.0;
            let Some(pending) = core.requests.remove(key) else {
                core.stats.dropped_late_replies += 1;
                crate::inspect::late_reply::<Response<R>>(core, self.dest, self.sender);
                return;
            };
            core.timers.cancel(pending.timer);
            forget(core, pending.requester, key);
        }
        crate::subscription::route(core, self.dest, self.sender, &self.response);
    }
}

impl<R: Request> Remote for ReplyEnvelope<R> {
    fn localize(self: Box<Self>, core: &mut Core) {
        core.enqueue(*self);
    }
}

//! Request/response: typed requests with a timeout each, exactly one response.
//!
//! This file holds the public types; `flow.rs` how a request travels.
//!
//! A request arms a timer in the requester's locality. The first of these
//! settles it: the reply, the timeout, a cancellation. Whatever comes after
//! (a late or second reply) is dropped silently, counted in
//! [`Stats::dropped_late_replies`](crate::Stats) and shown by inspection.

mod flow;
mod pool;
#[cfg(test)]
mod spare_tests;
#[cfg(test)]
mod tests;

pub(crate) use flow::{Pending, PendingRequest, cancel, on_timeout, reply, requester_gone, send};
pub(crate) use pool::Payloads;

use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode};
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

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
///
/// An id names its requester's locality and the request's generational
/// slot there, so two ids of one program never compare equal, and an id
/// from another locality (or one already settled) cancels nothing.
/// `Display` shows all three: `request#<locality>.<slot>.<generation>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RequestId {
    pub(crate) locality: u32,
    pub(crate) key: Key,
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "request#{}.{}.{}",
            self.locality,
            self.key.idx(),
            self.key.generation()
        )
    }
}

/// A request payload, shared by the request the server sees and the
/// response the requester gets. Empty only while its allocation waits in a
/// locality's pool for the next request of its type (never while a
/// `RequestMsg` or a `Response` holds it).
pub(crate) struct Payload<R> {
    pub(crate) value: Option<R>,
    /// Where the reply goes: kept in the payload's allocation, so a request
    /// clones no `Address` (a pooled allocation keeps it for the next
    /// request from the same address).
    pub(crate) reply_to: Address,
    /// The requester whose main address `reply_to` is (`Key::NONE`: another
    /// address, given to `request_via`): a spare reused by the same
    /// requester keeps its reply address without a lookup.
    pub(crate) requester: Key,
    /// Where the request went (read by the requester only, to tell the
    /// server when the request ends without a reply).
    pub(crate) server: flow::Server,
}

impl<R> Payload<R> {
    fn get(&self) -> &R {
        self.value
            .as_ref()
            .expect("a request or response holds a full payload")
    }
}

/// A request as the server sees it: subscribe to `RequestMsg<R>` to serve `R`.
///
/// Answer it with [`Context::reply`](crate::Context::reply) or
/// [`Context::reply_error`](crate::Context::reply_error). Keep a clone to
/// reply later (a deferred reply); clones are cheap. Only the first answer
/// counts, and only if it comes before the requester's timeout.
pub struct RequestMsg<R: Request> {
    pub(crate) id: RequestId,
    pub(crate) payload: Arc<Payload<R>>,
    /// Who forwarded the request and wants to hear when it is answered (a
    /// pool): told with an `Answered` by each reply.
    pub(crate) watcher: Option<Address>,
}

impl<R: Request> Clone for RequestMsg<R> {
    fn clone(&self) -> Self {
        RequestMsg {
            id: self.id,
            payload: self.payload.clone(),
            watcher: self.watcher.clone(),
        }
    }
}

/// Sent to a forwarded request's watcher when a server replies to it.
#[derive(Debug)]
pub(crate) struct Answered(pub(crate) RequestId);

impl<R: Request> fmt::Debug for RequestMsg<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RequestMsg({}, reply to {})",
            self.id, self.payload.reply_to
        )
    }
}

impl<R: Request> RequestMsg<R> {
    /// The request payload.
    pub fn payload(&self) -> &R {
        self.payload.get()
    }
    /// The request's id (as the requester knows it).
    pub fn id(&self) -> RequestId {
        self.id
    }
    /// Where the reply goes.
    pub fn reply_to(&self) -> &Address {
        &self.payload.reply_to
    }
}

/// The one response a requester gets for each request: the reply, the server's
/// error, a `RequestTimeout` or a `Cancelled` error. Subscribe to `Response<R>`
/// on the address the replies go to (the main address, or the one given to
/// [`Context::request_via`](crate::Context::request_via)).
pub struct Response<R: Request> {
    pub(crate) id: RequestId,
    /// The request's payload (a `Payload<R>`), its type erased: a response
    /// is delivered without a type check, `request()` makes it.
    pub(crate) request: Arc<dyn Pending>,
    pub(crate) result: Result<R::Response, Error>,
}

impl<R: Request> fmt::Debug for Response<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.result {
            Ok(_) => write!(f, "Response({}, Ok)", self.id),
            Err(e) => write!(f, "Response({}, Err({e:#}))", self.id),
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
        let request: &(dyn Any + Send + Sync) = &*self.request;
        request
            .downcast_ref::<Payload<R>>()
            .expect("a response holds its request's payload")
            .get()
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

/// Sent to the server's address when a request ends without a reply: its
/// timeout expired, the requester cancelled it, or the requester shut down
/// first. It does not say which. A server may subscribe to it to stop its work.
pub struct CancelRequest<R: Request> {
    pub(crate) id: RequestId,
    pub(crate) reply_to: Address,
    pub(crate) _request: PhantomData<fn() -> R>,
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

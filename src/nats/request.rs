//! Requests across processes, the requester's side: [`Remote`], a local
//! stand-in for a service served elsewhere ([`Service`](super::Service)).
//!
//! A requester sends an ordinary request to the remote's address
//! ([`Context::request`](crate::Context::request)), with its timeout armed on
//! its own locality as always. The remote publishes it on the service's
//! subject with a reply subject in the connection's inbox, and answers the
//! local request when the reply comes back: with the value, with the server's
//! error, or with [`ErrorCode::UnknownService`] when NATS says no instance
//! serves it. So the requester gets exactly one [`Response`](crate::Response)
//! by the ordinary rules: the reply, the error, the timeout or the
//! cancellation, whichever comes first; a reply after that is dropped.

use super::codec::{Codec, Json, Pack, Wire, WireError, WireReply};
use super::connection::{Counters, Nats};
use super::names::{
    ServiceInfo, cancel_subject, check_service_name, check_wire_name, discover, svc_subject,
};
use super::pump::{BRIDGE_RESOURCE, IdMap, RemoteEntry, Reply, Task};
use crate::actor::Actor;
use crate::context::Context;
use crate::error::{Error, ErrorCode, Result};
use crate::request::{CancelRequest, Request, RequestId, RequestMsg};
use crate::timer::TimerId;
use async_nats::{Message, StatusCode, Subject};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

type Install<C> = Box<dyn FnOnce(&mut Context<'_, Remote<C>>)>;
/// Answers the local request: (codec, service name, context, the reply or why none).
type Settle<C> = Box<dyn FnOnce(&C, &str, &mut Context<'_, Remote<C>>, Result<Message>)>;

/// A request on its way to the service: how to answer the local request.
struct Pending<C: Codec> {
    request: RequestId,
    settle: Settle<C>,
}

/// The discovery's answer, sent to the remote by the bridge.
struct Discovered(Result<ServiceInfo>);

/// A local stand-in for a service of another process: made by
/// [`Nats::remote`], told which request types to carry with
/// [`request`](Remote::request), spawned like any actor. Requests sent to
/// its address go to the service over NATS; their responses come back as
/// usual.
///
/// Its init finds the service (see [`Nats::discover`]): it fails with
/// [`ErrorCode::UnknownService`] if no instance answers, or, with
/// [`wait`](Remote::wait), if none appears in time (the wait is a timer of its
/// locality). Register it in the local registry
/// ([`Builder::register_as`](crate::Builder::register_as)) and local actors
/// find the remote service by name like a local one.
///
/// A response that is not the reply says why: the server's error (its code
/// and context, cause by cause), [`ErrorCode::RequestTimeout`] or
/// [`ErrorCode::Cancelled`] (local, as always),
/// [`ErrorCode::UnknownService`] (no instance serves the name now),
/// [`ErrorCode::BufferFull`] (not sent: the connection is down or busy),
/// [`ErrorCode::Codec`] (the request or the reply could not be encoded or
/// decoded). When the remote shuts down, what it still waits for is answered
/// with [`ErrorCode::Unreachable`].
///
/// Core NATS delivers at most once: a request or reply lost on the way (a
/// server restart, say) ends in the local timeout. A request that ends here
/// without its reply (cancelled, timed out, its requester gone, or this
/// remote shut down) is cancelled at the service too, best-effort: a
/// message on `<prefix>.cancel.<name>` (see [`Stats::cancels_sent`](super::Stats))
/// that makes the instance serving it cancel its local request, so that
/// its server sees a [`CancelRequest`] as for a local cancellation. That
/// message may be lost, or come after the reply was sent: the service may
/// still do the work, and its reply is then dropped here as late.
///
/// A request carries the time its requester still waits (the last token of
/// its reply subject, `t<ms>`), so the service does not serve it longer, nor
/// at all once that time has passed (see [`Service::timeout`](super::Service::timeout)).
/// That needs the requester in this remote's locality (as usual); a request
/// from another locality goes without it.
pub struct Remote<C: Codec = Json> {
    nats: Nats<C>,
    name: String,
    wait: Option<Duration>,
    types: Vec<&'static str>,
    install: Vec<Install<C>>,
    slot: Option<(usize, Arc<RemoteEntry>)>,
    pending: IdMap<u64, Pending<C>>,
    by_request: IdMap<RequestId, u64>,
    /// The subject of each request type (`<prefix>.svc.<name>.<type>`).
    subjects: HashMap<&'static str, Subject>,
    /// Where payloads and reply subjects are written.
    pack: Pack,
    discovery: Task,
    /// `true` while the discovery at init runs (its answer and its deadline
    /// race: the first ends it).
    searching: bool,
    timer: Option<TimerId>,
    info: Option<ServiceInfo>,
}

impl<C: Codec> fmt::Debug for Remote<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Remote")
            .field("name", &self.name)
            .field("types", &self.types)
            .field("pending", &self.pending.len())
            .field("found", &self.info)
            .finish_non_exhaustive()
    }
}

impl<C: Codec> Nats<C> {
    /// A local stand-in for the service `name` of another process; see
    /// [`Remote`].
    pub fn remote(&self, name: impl Into<String>) -> Remote<C> {
        Remote {
            nats: self.clone(),
            name: name.into(),
            wait: None,
            types: Vec::new(),
            install: Vec::new(),
            slot: None,
            pending: IdMap::default(),
            by_request: IdMap::default(),
            subjects: HashMap::new(),
            pack: Pack::default(),
            discovery: Task::default(),
            searching: false,
            timer: None,
            info: None,
        }
    }
}

impl<C: Codec> Remote<C> {
    /// Carries requests of type `R` (the service must serve `R` too).
    pub fn request<R>(mut self) -> Self
    where
        R: Request + Wire,
        R::Response: Serialize + DeserializeOwned,
    {
        self.types.push(R::NAME);
        self.install.push(Box::new(|ctx: &mut Context<'_, Self>| {
            ctx.subscribe(Self::on_request::<R>);
            ctx.subscribe(
                |this: &mut Self, cancel: &CancelRequest<R>, _: &mut Context<'_, Self>| {
                    if let Some(id) = this.by_request.remove(&cancel.id()) {
                        this.pending.remove(&id);
                        this.forward_cancel(id);
                    }
                },
            );
        }));
        self
    }

    /// Waits up to `wait` for an instance of the service to appear, instead
    /// of failing at once when there is none.
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    fn on_request<R>(&mut self, request: &RequestMsg<R>, ctx: &mut Context<'_, Self>)
    where
        R: Request + Wire,
        R::Response: Serialize + DeserializeOwned,
    {
        let shared = &self.nats.shared;
        let Some((slot, entry)) = &self.slot else {
            let why = format!("nats: remote service {:?} is shutting down", self.name);
            ctx.reply_error(
                request,
                Error::new(ErrorCode::Unreachable).with_context(why),
            );
            return;
        };
        let payload = match self.pack.encode(&shared.codec, request.payload()) {
            Ok(payload) => payload,
            Err(e) => return ctx.reply_error(request, e),
        };
        let id = shared
            .next_request
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let subject = match self.subjects.get(R::NAME) {
            Some(subject) => subject,
            None => return ctx.reply_error(request, Error::new(ErrorCode::UnknownService)),
        };
        // The requester's deadline travels as the time it has left.
        let left_ms = ctx.request_deadline(request.id()).map(|deadline| {
            let left = deadline.saturating_duration_since(ctx.now());
            left.as_micros().div_ceil(1000)
        });
        let prefix = &shared.inbox.prefix;
        let reply = match left_ms {
            Some(ms) => self
                .pack
                .subject(format_args!("{prefix}.{slot}.{id}.t{ms}")),
            None => self.pack.subject(format_args!("{prefix}.{slot}.{id}")),
        };
        entry.asked();
        if let Err(e) = shared.publish_on(subject, Some(reply), payload) {
            entry.unask();
            return ctx.reply_error(request, e);
        }
        let kept = request.clone();
        let settle: Settle<C> = Box::new(move |codec, name, ctx, answer| {
            match decode_reply::<R, C>(codec, name, answer) {
                Ok(value) => ctx.reply(&kept, value),
                Err(e) => ctx.reply_error(&kept, e),
            }
        });
        self.pending.insert(
            id,
            Pending {
                request: request.id(),
                settle,
            },
        );
        self.by_request.insert(request.id(), id);
    }

    /// Tells the service that request `id` ended here without its reply
    /// (best-effort: a message at most once), so that the instance serving
    /// it cancels its local request; its reply, if one still comes, is
    /// dropped as late.
    fn forward_cancel(&self, id: u64) {
        let Some((slot, entry)) = &self.slot else {
            return;
        };
        entry.unask();
        let shared = &self.nats.shared;
        let reply = shared.inbox.reply_subject(*slot, id, None);
        let subject = cancel_subject(&shared.prefix, &self.name);
        match shared.publish(&subject, None, reply.into()) {
            Ok(()) => Counters::add(&shared.stats.cancels_sent, 1),
            Err(e) => tracing::debug!(
                service = %self.name,
                error = e.as_dyn_error(),
                "nats: a cancellation could not be sent"
            ),
        }
    }

    fn on_reply(&mut self, reply: &Reply, ctx: &mut Context<'_, Self>) {
        let Some(pending) = self.pending.remove(&reply.id) else {
            Counters::add(&self.nats.shared.stats.late_replies, 1);
            return;
        };
        self.by_request.remove(&pending.request);
        (pending.settle)(
            &self.nats.shared.codec,
            &self.name,
            ctx,
            Ok(reply.message.clone()),
        );
    }

    fn on_discovered(&mut self, found: &Discovered, ctx: &mut Context<'_, Self>) {
        if !std::mem::replace(&mut self.searching, false) {
            return;
        }
        if let Some(timer) = self.timer.take() {
            ctx.cancel_timer(timer);
        }
        let _ = ctx.release_resource(BRIDGE_RESOURCE);
        let result = found.0.clone().and_then(|info| {
            match self
                .types
                .iter()
                .find(|t| !info.types.iter().any(|s| s == *t))
            {
                Some(missing) => Err(Error::new(ErrorCode::UnknownService).with_context(format!(
                    "nats: service {:?} ({}) does not serve {missing}",
                    self.name, info.instance
                ))),
                None => Ok(info),
            }
        });
        match result {
            Ok(info) => {
                tracing::debug!(service = %self.name, instance = %info.instance, "nats: remote service found");
                self.info = Some(info);
            }
            Err(e) => ctx.fail(e),
        }
    }

    fn on_wait_over(&mut self, ctx: &mut Context<'_, Self>, _: TimerId) {
        self.timer = None;
        if !std::mem::replace(&mut self.searching, false) {
            return;
        }
        self.discovery.abort();
        let _ = ctx.release_resource(BRIDGE_RESOURCE);
        let wait = self.wait.unwrap_or_default();
        ctx.fail(Error::new(ErrorCode::UnknownService).with_context(format!(
            "nats: no instance of service {:?} appeared within {wait:?}",
            self.name
        )));
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) -> Result<()> {
        check_service_name(&self.name)?;
        for wire in &self.types {
            check_wire_name(wire)?;
        }
        for wire in &self.types {
            let subject = svc_subject(&self.nats.shared.prefix, &self.name, wire);
            self.subjects.insert(wire, Subject::from(subject));
        }
        for install in std::mem::take(&mut self.install) {
            install(ctx);
        }
        ctx.subscribe(Self::on_reply);
        ctx.subscribe(Self::on_discovered);
        let shared = self.nats.shared.clone();
        self.slot = Some(shared.inbox.register(ctx.address().clone()));
        ctx.acquire_resource(BRIDGE_RESOURCE);
        self.searching = true;
        let search = discover(shared.clone(), self.name.clone(), self.wait.is_some());
        let task = shared.spawn_to(
            ctx.address().clone(),
            async move { Discovered(search.await) },
        );
        self.discovery.set(task);
        if let Some(wait) = self.wait {
            self.timer = Some(ctx.start_timer(wait, Self::on_wait_over));
        }
        Ok(())
    }

    /// Answers what still waits (and tells the service), and leaves the inbox.
    fn stop(&mut self, ctx: &mut Context<'_, Self>) {
        self.discovery.abort();
        if std::mem::replace(&mut self.searching, false) {
            let _ = ctx.release_resource(BRIDGE_RESOURCE);
        }
        for id in self.pending.keys() {
            self.forward_cancel(*id);
        }
        if let Some((slot, _)) = self.slot.take() {
            self.nats.shared.inbox.deregister(slot);
        }
        self.by_request.clear();
        let why = format!("nats: remote service {:?} shut down", self.name);
        for (_, pending) in self.pending.drain() {
            let error = Error::new(ErrorCode::Unreachable).with_context(why.clone());
            (pending.settle)(&self.nats.shared.codec, &self.name, ctx, Err(error));
        }
    }
}

/// A reply's value, or why there is none.
fn decode_reply<R, C>(codec: &C, name: &str, answer: Result<Message>) -> Result<R::Response>
where
    R: Request + Wire,
    R::Response: DeserializeOwned,
    C: Codec,
{
    let message = answer?;
    match message.status {
        Some(StatusCode::NO_RESPONDERS) => {
            return Err(Error::new(ErrorCode::UnknownService).with_context(format!(
                "nats: no instance of service {name:?} serves {}",
                R::NAME
            )));
        }
        Some(status) if status != StatusCode::OK => {
            let what = message.description.unwrap_or_default();
            return Err(Error::new(ErrorCode::Unreachable)
                .with_context(format!("nats: status {status} {what} for {}", R::NAME)));
        }
        _ => {}
    }
    match codec.decode::<WireReply<R::Response>>(&message.payload)? {
        WireReply::Ok(value) => Ok(value),
        WireReply::Err(error) => Err(WireError::into_error(error)),
    }
}

impl<C: Codec> Actor for Remote<C> {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        if let Err(e) = self.start(ctx) {
            ctx.fail(e);
        }
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.stop(ctx);
    }
}

impl<C: Codec> Drop for Remote<C> {
    fn drop(&mut self) {
        if let Some((slot, _)) = self.slot.take() {
            self.nats.shared.inbox.deregister(slot);
        }
    }
}

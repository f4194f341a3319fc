//! Requests across processes, the server's side: [`Service`] serves requests
//! that come over NATS by asking a local actor.

use super::codec::{Codec, Json, Pack, Wire, WireError, WireReplyRef};
use super::connection::{Counters, Nats, Shared};
use super::names::{
    ServiceInfo, announce_subject, cancel_subject, check_service_name, check_wire_name, round_trip,
    svc_group, svc_wildcard, transport_error, who_subject,
};
use super::pump::{Ack, BRIDGE_RESOURCE, Handoff, IdMap, Task, Window, deadline_token, pump};
use crate::actor::{Actor, ActorState};
use crate::address::Address;
use crate::context::Context;
use crate::error::{Error, ErrorCode, Result};
use crate::request::{Request, RequestId, Response};
use async_nats::Message;
use bytes::Bytes;
use futures_util::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many cancellations that came before their request a service
/// remembers (the oldest is forgotten first).
const EARLY_CANCELS: usize = 256;

/// The default of [`Service::timeout`].
pub const DEFAULT_SERVICE_TIMEOUT: Duration = Duration::from_secs(30);

type Install<C> = Box<dyn FnOnce(&mut Context<'_, Service<C>>)>;
type Serve<C> = Rc<dyn Fn(&mut Service<C>, &mut Context<'_, Service<C>>, String, &Bytes, Duration)>;

/// A request that came over NATS, handed to the service actor by its pump,
/// with when the pump read it.
struct Incoming(Message, Instant);

/// The service's subscriptions are in place (or could not be made).
struct Serving(Result<()>);

/// A request being served: where its answer goes, and whether its local
/// timeout is its requester's (then a timeout is not answered: the
/// requester has had its own).
struct InFlight {
    reply: String,
    theirs: bool,
}

/// Where the requests go: an address, or a name of the local registry.
enum Target {
    Address(Address),
    Registered,
}

/// An actor that serves requests of other processes: made by
/// [`Nats::service`] (or [`Nats::service_registered`]), told which request
/// types it serves with [`request`](Service::request), spawned like any actor.
///
/// Each request that comes is made again, as an ordinary local request, to
/// the target (an actor that subscribes to [`RequestMsg<R>`](crate::RequestMsg)
/// as usual), with [`timeout`](Service::timeout); its response (the value, or
/// the error with its chain of causes) goes back to the requester. Several
/// instances of a service (in one process or many) share the requests: each
/// goes to one of them (a NATS queue group).
///
/// Its init finishes once the server has its subscriptions; then it
/// announces itself, so that a [`Remote`](super::Remote) waiting for the name
/// finds it. Shutting it down unsubscribes, and answers the requests it was
/// still serving with [`ErrorCode::Unreachable`]. A request that cannot be served
/// is answered with an error: [`ErrorCode::Codec`] if it does not decode,
/// [`ErrorCode::UnknownService`] for a type it does not serve.
///
/// Errors (its init fails): [`ErrorCode::InvalidArgument`] for a name that is
/// not one subject token, [`ErrorCode::Unreachable`] if the server could not
/// be told.
pub struct Service<C: Codec = Json> {
    nats: Nats<C>,
    name: String,
    target: Target,
    to: Option<Address>,
    timeout: Duration,
    types: Vec<&'static str>,
    install: Vec<Install<C>>,
    serve: HashMap<&'static str, Serve<C>>,
    pending: IdMap<RequestId, InFlight>,
    /// The subjects' common part, `<prefix>.svc.<name>` (built once).
    group: String,
    /// Where requesters' cancellations come (`<prefix>.cancel.<name>`).
    cancels: String,
    /// Reply subjects of cancellations that came before their request (a
    /// cancellation may overtake it here): at most [`EARLY_CANCELS`].
    early: VecDeque<Arc<str>>,
    early_set: HashSet<Arc<str>>,
    window: Arc<Window>,
    task: Task,
    /// Where answers and their subjects are written.
    pack: Pack,
}

impl<C: Codec> fmt::Debug for Service<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.name)
            .field("types", &self.types)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

impl<C: Codec> Nats<C> {
    /// An actor that serves the requests for service `name` that come over
    /// NATS by asking the actor at `to`; see [`Service`].
    pub fn service(&self, name: impl Into<String>, to: &Address) -> Service<C> {
        self.make_service(name.into(), Target::Address(to.clone()))
    }

    /// Publishes a name of the local registry: the actor registered under
    /// `name` (found with a waiting discovery, so it may register later)
    /// serves the requests for service `name`; see [`Service`]. The service
    /// actor must be built with a registry (under a supervisor that keeps
    /// one, see [`SupervisorConfig::with_registry`](crate::SupervisorConfig::with_registry)).
    pub fn service_registered(&self, name: impl Into<String>) -> Service<C> {
        self.make_service(name.into(), Target::Registered)
    }

    fn make_service(&self, name: String, target: Target) -> Service<C> {
        Service {
            nats: self.clone(),
            name,
            target,
            to: None,
            timeout: DEFAULT_SERVICE_TIMEOUT,
            types: Vec::new(),
            install: Vec::new(),
            serve: HashMap::new(),
            pending: IdMap::default(),
            group: String::new(),
            cancels: String::new(),
            early: VecDeque::new(),
            early_set: HashSet::new(),
            window: Arc::new(Window::default()),
            task: Task::default(),
            pack: Pack::default(),
        }
    }
}

impl<C: Codec> Service<C> {
    /// Serves requests of type `R`.
    pub fn request<R>(mut self) -> Self
    where
        R: Request + Wire,
        R::Response: Serialize + DeserializeOwned,
    {
        self.types.push(R::NAME);
        self.install.push(Box::new(|ctx: &mut Context<'_, Self>| {
            ctx.subscribe(Self::on_response::<R>);
        }));
        let serve: Serve<C> = Rc::new(Self::serve::<R>);
        self.serve.insert(R::NAME, serve);
        self
    }

    /// The longest timeout of the local request made for each request that
    /// comes (default [`DEFAULT_SERVICE_TIMEOUT`]). A request from a
    /// [`Remote`](super::Remote) says how long its requester still waits:
    /// the local request gets that if it is shorter, and one whose time ran
    /// out before its turn came is dropped unserved
    /// ([`Stats::expired`](super::Stats)).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn serve<R>(
        &mut self,
        ctx: &mut Context<'_, Self>,
        reply: String,
        payload: &Bytes,
        timeout: Duration,
    ) where
        R: Request + Wire,
        R::Response: Serialize + DeserializeOwned,
    {
        let request = match self.nats.shared.codec.decode::<R>(payload) {
            Ok(request) => request,
            Err(e) => {
                return answer::<R::Response, C>(
                    &self.nats.shared,
                    &mut self.pack,
                    &reply,
                    Err(&e),
                );
            }
        };
        let Some(to) = self.to.clone() else {
            let e = Error::new(ErrorCode::UnknownService)
                .with_context(format!("nats: service {:?} has no target yet", self.name));
            return answer::<R::Response, C>(&self.nats.shared, &mut self.pack, &reply, Err(&e));
        };
        let id = ctx.request(&to, request, timeout);
        if !id.is_none() {
            let theirs = timeout < self.timeout;
            self.pending.insert(id, InFlight { reply, theirs });
        }
    }

    fn on_response<R>(&mut self, response: &Response<R>, _: &mut Context<'_, Self>)
    where
        R: Request + Wire,
        R::Response: Serialize + DeserializeOwned,
    {
        let Some(served) = self.pending.remove(&response.id()) else {
            return;
        };
        if served.theirs && response.error_code() == Some(ErrorCode::RequestTimeout) {
            Counters::add(&self.nats.shared.stats.expired, 1);
            return;
        }
        answer::<R::Response, C>(
            &self.nats.shared,
            &mut self.pack,
            &served.reply,
            response.result(),
        );
    }

    fn on_incoming(&mut self, incoming: &Incoming, ctx: &mut Context<'_, Self>) {
        let message = &incoming.0;
        if message.subject.as_str() == self.cancels {
            return self.on_cancel(&message.payload, ctx);
        }
        let wire = message
            .subject
            .strip_prefix(self.group.as_str())
            .and_then(|w| w.strip_prefix('.'))
            .unwrap_or("");
        let Some(reply) = message.reply.as_ref() else {
            Counters::add(&self.nats.shared.stats.dead_letters, 1);
            tracing::warn!(subject = %message.subject, "nats: a request without a reply subject, dropped");
            return;
        };
        // The reply subject names the request (as its cancellation does)
        // without the requester's deadline, which is read off it.
        let (reply, left) = deadline_token(reply.as_str());
        let reply = reply.to_string();
        if self.cancelled_early(&reply) {
            return;
        }
        let Some(timeout) = self.time_left(left, incoming.1) else {
            Counters::add(&self.nats.shared.stats.expired, 1);
            tracing::debug!(subject = %message.subject, "nats: a request past its requester's deadline, dropped");
            return;
        };
        match self.serve.get(wire).cloned() {
            Some(serve) => serve(self, ctx, reply, &message.payload, timeout),
            None => {
                let e = Error::new(ErrorCode::UnknownService).with_context(format!(
                    "nats: service {:?} does not serve {wire:?}",
                    self.name
                ));
                answer::<(), C>(&self.nats.shared, &mut self.pack, &reply, Err(&e));
            }
        }
    }

    /// A requester cancelled the request whose reply subject is `reply`:
    /// its local request is cancelled (its server sees a
    /// [`CancelRequest`](crate::CancelRequest)) and no answer is sent. One
    /// not served here is ignored (another instance serves it, or it was
    /// answered already), unless it has not come yet.
    fn on_cancel(&mut self, reply: &[u8], ctx: &mut Context<'_, Self>) {
        let Ok(reply) = std::str::from_utf8(reply) else {
            return;
        };
        let found = self
            .pending
            .iter()
            .find(|(_, served)| served.reply == reply)
            .map(|(id, _)| *id);
        match found {
            Some(id) => {
                self.pending.remove(&id);
                ctx.cancel_request(id);
                Counters::add(&self.nats.shared.stats.cancelled, 1);
            }
            None => {
                if self.early.len() == EARLY_CANCELS
                    && let Some(oldest) = self.early.pop_front()
                {
                    self.early_set.remove(&oldest);
                }
                let reply: Arc<str> = Arc::from(reply);
                if self.early_set.insert(reply.clone()) {
                    self.early.push_back(reply);
                }
            }
        }
    }

    /// The timeout of the local request for a request read by the pump at
    /// `received`, whose requester waited `left` more when it sent it: the
    /// service's own, or the time its requester still waits if that is
    /// shorter; `None` if that time has passed.
    fn time_left(&self, left: Option<Duration>, received: Instant) -> Option<Duration> {
        match left {
            None => Some(self.timeout),
            Some(left) => {
                let left = left.checked_sub(received.elapsed())?;
                (!left.is_zero()).then(|| left.min(self.timeout))
            }
        }
    }

    /// `true` (and forgotten) if `reply`'s request was cancelled before it came.
    fn cancelled_early(&mut self, reply: &str) -> bool {
        if self.early_set.is_empty() || !self.early_set.remove(reply) {
            return false;
        }
        self.early.retain(|r| &**r != reply);
        Counters::add(&self.nats.shared.stats.cancelled, 1);
        true
    }

    fn on_serving(&mut self, serving: &Serving, ctx: &mut Context<'_, Self>) {
        if ctx.state() >= ActorState::ShuttingDown {
            return;
        }
        let _ = ctx.release_resource(BRIDGE_RESOURCE);
        if let Err(e) = &serving.0 {
            ctx.fail(e.clone());
        }
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) -> Result<()> {
        check_service_name(&self.name)?;
        for wire in &self.types {
            check_wire_name(wire)?;
        }
        self.group = svc_group(&self.nats.shared.prefix, &self.name);
        self.cancels = cancel_subject(&self.nats.shared.prefix, &self.name);
        for install in std::mem::take(&mut self.install) {
            install(ctx);
        }
        ctx.subscribe(Self::on_incoming);
        ctx.subscribe(Self::on_serving);
        ctx.subscribe(|this: &mut Self, ack: &Ack, _: &mut Context<'_, Self>| {
            this.window.ack(ack.0)
        });
        ctx.acquire_resource(BRIDGE_RESOURCE);
        match &self.target {
            Target::Address(to) => {
                self.to = Some(to.clone());
                self.listen(ctx);
            }
            Target::Registered => {
                let name = self.name.clone();
                ctx.discover(name).wait().then(
                    |this: &mut Self, to: &Address, ctx: &mut Context<'_, Self>| {
                        this.to = Some(to.clone());
                        this.listen(ctx);
                    },
                );
            }
        }
        Ok(())
    }

    /// Subscribes on the bridge; the answer comes back as [`Serving`].
    fn listen(&mut self, ctx: &mut Context<'_, Self>) {
        let shared = self.nats.shared.clone();
        let (name, me, window, cancels) = (
            self.name.clone(),
            ctx.address().clone(),
            self.window.clone(),
            self.cancels.clone(),
        );
        let info = ServiceInfo {
            name: self.name.clone(),
            types: self.types.iter().map(|t| t.to_string()).collect(),
            instance: ctx.address().to_string(),
        };
        let task = self.nats.shared.runtime.spawn(async move {
            let client = &shared.client;
            let (prefix, codec) = (&shared.prefix, &shared.codec);
            let setup = async {
                let info = codec.encode(&info)?;
                let (svc, group, who) = (
                    svc_wildcard(prefix, &name),
                    svc_group(prefix, &name),
                    who_subject(prefix, &name),
                );
                let requests = client
                    .queue_subscribe(svc.clone(), group)
                    .await
                    .map_err(|e| transport_error(format!("nats: cannot subscribe to {svc}"), e))?;
                let asks = client
                    .subscribe(who.clone())
                    .await
                    .map_err(|e| transport_error(format!("nats: cannot subscribe to {who}"), e))?;
                let cancels = client.subscribe(cancels.clone()).await.map_err(|e| {
                    transport_error(format!("nats: cannot subscribe to {cancels}"), e)
                })?;
                // Requests and cancellations share one window into the locality.
                let requests = futures_util::stream::select(requests, cancels);
                round_trip(client).await?;
                let _ = client
                    .publish(announce_subject(prefix, &name), info.clone())
                    .await;
                Ok::<_, Error>((requests, asks, info))
            };
            let (requests, mut asks, info) = match setup.await {
                Ok(ready) => ready,
                Err(e) => {
                    let _ = me.send(Serving(Err(e)));
                    return;
                }
            };
            if me.send(Serving(Ok(()))).is_err() {
                return;
            }
            let answer_asks = async {
                while let Some(ask) = asks.next().await {
                    if let Some(reply) = ask.reply {
                        let _ = client.publish(reply, info.clone()).await;
                    }
                }
            };
            let stats = shared.stats.clone();
            let each = |message, handoff: &mut Handoff| {
                // The locality is likely to answer soon: the bridge
                // thread waits for that a little before it sleeps.
                super::spin::handed_off();
                handoff.send(&me, Incoming(message, Instant::now()))
            };
            let serve = pump(requests, window, shared.window, me.clone(), stats, each);
            futures_util::future::join(serve, answer_asks).await;
        });
        self.task.set(task.abort_handle());
    }
}

/// Publishes the answer to a request on its reply subject (both written
/// into `pack`).
fn answer<T: Serialize, C: Codec>(
    shared: &Shared<C>,
    pack: &mut Pack,
    reply: &str,
    result: std::result::Result<&T, &Error>,
) {
    let encoded = match result {
        Ok(value) => pack.encode(&shared.codec, &WireReplyRef::Ok(value)),
        Err(e) => pack.encode(
            &shared.codec,
            &WireReplyRef::<T>::Err(WireError::from_error(e)),
        ),
    };
    let encoded = encoded.or_else(|e| {
        pack.encode(
            &shared.codec,
            &WireReplyRef::<T>::Err(WireError::from_error(&e)),
        )
    });
    let sent = encoded.and_then(|payload| {
        let to = pack.subject(format_args!("{reply}"));
        shared.publish_on(&to, None, payload)
    });
    if let Err(e) = sent {
        Counters::add(&shared.stats.dead_letters, 1);
        tracing::warn!(
            reply,
            error = e.as_dyn_error(),
            "nats: a reply could not be sent"
        );
    }
}

impl<C: Codec> Actor for Service<C> {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        if let Err(e) = self.start(ctx) {
            let _ = ctx.release_resource(BRIDGE_RESOURCE);
            ctx.fail(e);
        }
    }

    /// Unsubscribes, and answers what is still being served: its local
    /// requests end with this actor, so no response would come.
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.task.abort();
        while ctx.resources_held(BRIDGE_RESOURCE) > 0 {
            let _ = ctx.release_resource(BRIDGE_RESOURCE);
        }
        let why = format!("nats: service {:?} shut down", self.name);
        let gone = Error::new(ErrorCode::Unreachable).with_context(why);
        for (_, served) in self.pending.drain() {
            answer::<(), C>(&self.nats.shared, &mut self.pack, &served.reply, Err(&gone));
        }
    }
}

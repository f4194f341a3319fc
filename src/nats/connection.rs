//! [`Nats`]: one client connection to a NATS server or cluster, driven by a
//! bridge thread of its own.
//!
//! The bridge thread runs a small current-thread tokio runtime: async-nats's
//! connection task and the bridge's tasks (subscriptions pumping into
//! localities, the reply inbox, discovery) run there. Localities never block
//! on it: they hand it work through async-nats's bounded command channel (a
//! publish is one non-blocking try) or by spawning a task on its runtime
//! handle, and it hands results back with [`Address::send`] (the ordinary
//! cross-thread path: a locality's inbox and its waker).
//!
//! Everything the tasks need is in [`Shared`]; the runtime itself is kept
//! alive by [`Keeper`], which only the [`Nats`] handles hold, so that tasks
//! never keep their own runtime running: when the last handle goes, the
//! thread flushes what is buffered (for up to a second) and stops.

use super::bridge::{Connected, bridge_thread, client_options, establish, keep};
use super::codec::{Codec, Json, Wire};
use super::names::round_trip;
use super::options::Options;
use super::pump::Inbox;
use crate::address::Address;
use crate::error::{Error, ErrorCode, Result};
use async_nats::{Client, Subject};
use bytes::Bytes;
use futures_util::FutureExt;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::runtime::Handle;

/// A connection to NATS, shared by the localities of a process: `Clone`,
/// `Send + Sync`. Made by [`Nats::connect`]; the bridge actors
/// ([`export`](Nats::export), [`import`](Nats::import),
/// [`service`](Nats::service), [`remote`](Nats::remote)) each keep a clone.
///
/// `C` is the [`Codec`] for every message of this connection ([`Json`]
/// unless [`Nats::connect_with`] says otherwise).
///
/// The connection lives until its last clone is dropped; the bridge thread
/// then flushes what it still buffers (for up to a second) and stops.
pub struct Nats<C: Codec = Json> {
    pub(crate) shared: Arc<Shared<C>>,
    _keeper: Arc<Keeper>,
}

impl<C: Codec> Clone for Nats<C> {
    fn clone(&self) -> Self {
        Nats {
            shared: self.shared.clone(),
            _keeper: self._keeper.clone(),
        }
    }
}

impl<C: Codec> fmt::Debug for Nats<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nats")
            .field("servers", &self.shared.servers)
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

/// What the bridge's tasks and the localities share.
pub(crate) struct Shared<C> {
    pub(crate) client: Client,
    pub(crate) codec: C,
    /// Where the bridge's tasks run: the bridge thread's runtime, or the
    /// caller's ([`Nats::connect_async`]).
    pub(crate) runtime: Handle,
    /// `true` for a connection made by [`Nats::connect_async`].
    pub(crate) on_caller_runtime: bool,
    pub(crate) stats: Arc<Counters>,
    pub(crate) prefix: String,
    pub(crate) window: u64,
    /// The servers, as given (credentials cut out), for error contexts.
    pub(crate) servers: String,
    /// The reply inbox of requests to remote services.
    pub(crate) inbox: Arc<Inbox>,
    pub(crate) next_request: AtomicU64,
}

/// Stops the bridge thread when the last [`Nats`] goes.
struct Keeper {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Keeper {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Counters of one connection, read with [`Nats::stats`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) connected: AtomicBool,
    pub(crate) published: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) dead_letters: AtomicU64,
    pub(crate) late_replies: AtomicU64,
    pub(crate) reconnects: AtomicU64,
    pub(crate) disconnects: AtomicU64,
    pub(crate) slow_consumer: AtomicU64,
    pub(crate) cancels_sent: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) expired: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// What a connection has done so far: [`Nats::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Messages handed to the client (publishes, requests and replies).
    pub published: u64,
    /// Messages that arrived on bridged subscriptions and services.
    pub received: u64,
    /// Messages refused because the buffer was full ([`ErrorCode::BufferFull`]).
    pub refused: u64,
    /// Messages that could not be decoded or published and became dead letters.
    pub dead_letters: u64,
    /// Replies that came after their request had ended (dropped).
    pub late_replies: u64,
    /// Times the client connected again after losing its server.
    pub reconnects: u64,
    /// Times the client lost its server.
    pub disconnects: u64,
    /// Times the client dropped incoming messages because a subscription was
    /// full (a "slow consumer").
    pub slow_consumer: u64,
    /// Cancellations sent to services: a request that ended here without
    /// its reply (cancelled, timed out, its requester gone, or its
    /// [`Remote`](super::Remote) shut down).
    pub cancels_sent: u64,
    /// Requests a [`Service`](super::Service) of this connection stopped
    /// serving because their requester cancelled them.
    pub cancelled: u64,
    /// Requests a [`Service`](super::Service) of this connection stopped
    /// serving, without an answer, because their requester's time ran out:
    /// before their turn came (dropped unserved), or while served (the
    /// local request timed out at the requester's deadline). The requester
    /// has had its own timeout.
    pub expired: u64,
}

/// The servers of `options`, credentials cut out, for error contexts.
fn servers_of(options: &Options) -> String {
    options
        .servers
        .iter()
        .map(|s| redact(s))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A URL with any `user:password@` cut out.
pub(crate) fn redact(url: &str) -> String {
    match url.rsplit_once('@') {
        Some((head, host)) => match head.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://***@{host}"),
            None => format!("***@{host}"),
        },
        None => url.to_string(),
    }
}

impl Nats<Json> {
    /// Connects to NATS with the [`Json`] codec, on a bridge thread of its own.
    ///
    /// Blocks until the first connection is made (at most
    /// [`Options::connect_timeout`]). Errors: [`ErrorCode::Unreachable`] if no
    /// server can be reached (the context names the servers, the cause says
    /// why: refused, timed out, TLS), [`ErrorCode::Unauthorized`] if the server
    /// refuses the credentials, [`ErrorCode::InvalidArgument`] for options that
    /// cannot work, [`ErrorCode::Io`] if the thread cannot start.
    pub fn connect(options: Options) -> Result<Nats<Json>> {
        Nats::connect_with(options, Json)
    }

    /// Connects with the [`Json`] codec on the caller's tokio runtime; see
    /// [`Nats::connect_async_with`].
    pub async fn connect_async(options: Options) -> Result<Nats<Json>> {
        Nats::connect_async_with(options, Json).await
    }
}

impl<C: Codec> Nats<C> {
    /// Connects to NATS with a codec of your own; otherwise as [`Nats::connect`].
    pub fn connect_with(options: Options, codec: C) -> Result<Nats<C>> {
        options.validate()?;
        let servers = servers_of(&options);
        let stats = Arc::new(Counters::default());
        let connect_options = client_options(&options, stats.clone())?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(Connected, Handle)>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let urls = options.servers.clone();
        let timeout = options.connect_timeout;
        let context = servers.clone();
        let counters = stats.clone();
        std::thread::Builder::new()
            .name("commutator-nats".into())
            .spawn(move || {
                bridge_thread(
                    connect_options,
                    urls,
                    timeout,
                    context,
                    counters,
                    ready_tx,
                    stop_rx,
                )
            })
            .map_err(Error::io)?;
        let (connected, runtime) = ready_rx.recv().map_err(|_| {
            Error::new(ErrorCode::Unreachable)
                .with_context(format!("nats: the bridge thread stopped ({servers})"))
        })??;
        Ok(Nats::made(
            options, codec, servers, stats, connected, runtime, false, stop_tx,
        ))
    }

    /// Connects to NATS from inside a tokio runtime, and runs the client and
    /// the bridge's tasks on that runtime instead of a bridge thread: for
    /// localities that run on it too (a `TokioLocality` of feature `tokio`
    /// on a current-thread runtime), so that a message crosses from the
    /// client into a locality, and back, without leaving the thread.
    /// Otherwise as [`Nats::connect_with`].
    ///
    /// The connection's task sends only between the locality's dispatches
    /// (`TokioLocality` yields after 4,096 items at most); a locality that
    /// publishes bursts may take a smaller budget still
    /// (`Locality::set_budget(256)`), so that the connection sends more
    /// often while the burst is made.
    ///
    /// The runtime must keep running for the connection to work (a
    /// current-thread runtime runs only inside its `block_on`). The blocking
    /// calls ([`flush`](Nats::flush), [`discover`](Nats::discover)) refuse to
    /// run on that runtime's threads ([`ErrorCode::InvalidArgument`]): they
    /// would wait for themselves.
    ///
    /// Errors: as [`Nats::connect`], and [`ErrorCode::NoRuntime`] outside a
    /// tokio runtime.
    pub async fn connect_async_with(options: Options, codec: C) -> Result<Nats<C>> {
        let runtime = Handle::try_current().map_err(|_| {
            Error::new(ErrorCode::NoRuntime)
                .with_context("nats: Nats::connect_async outside a tokio runtime")
        })?;
        options.validate()?;
        let servers = servers_of(&options);
        let stats = Arc::new(Counters::default());
        let connect_options = client_options(&options, stats.clone())?;
        let urls = options.servers.clone();
        let connected = establish(
            connect_options,
            urls,
            options.connect_timeout,
            &servers,
            stats.clone(),
        )
        .await?;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        runtime.spawn(keep(
            connected.client.clone(),
            connected.inbox_task.clone(),
            stop_rx,
        ));
        Ok(Nats::made(
            options, codec, servers, stats, connected, runtime, true, stop_tx,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn made(
        options: Options,
        codec: C,
        servers: String,
        stats: Arc<Counters>,
        connected: Connected,
        runtime: Handle,
        on_caller_runtime: bool,
        stop: tokio::sync::oneshot::Sender<()>,
    ) -> Nats<C> {
        stats.connected.store(true, Ordering::SeqCst);
        Nats {
            shared: Arc::new(Shared {
                client: connected.client,
                codec,
                runtime,
                on_caller_runtime,
                stats,
                prefix: options.prefix.clone(),
                window: options.window as u64,
                servers,
                inbox: connected.inbox,
                next_request: AtomicU64::new(1),
            }),
            _keeper: Arc::new(Keeper { stop: Some(stop) }),
        }
    }

    /// Publishes `message` on `subject`, from any thread or actor, without
    /// blocking: it is encoded here and queued for the connection.
    ///
    /// Errors: [`ErrorCode::BufferFull`] when [`Options::buffer`] messages
    /// already wait (the connection is down or slower than the sender),
    /// [`ErrorCode::Codec`] if it cannot be encoded,
    /// [`ErrorCode::InvalidArgument`] for an invalid subject or a message over
    /// the server's size limit.
    pub fn publish<M: Wire>(&self, subject: &str, message: &M) -> Result<()> {
        let payload = self.shared.codec.encode(message)?;
        self.shared.publish(subject, None, payload)
    }

    /// Publishes bytes as they are (for peers that are not commutator, and
    /// tests); otherwise as [`publish`](Nats::publish).
    pub fn publish_bytes(&self, subject: &str, payload: impl Into<Bytes>) -> Result<()> {
        self.shared.publish(subject, None, payload.into())
    }

    /// Waits until the server has received everything published so far (a
    /// round trip to it), or `timeout` passed. Blocking: for a program's main
    /// thread and tests, not for an actor. Errors: [`ErrorCode::Unreachable`]
    /// when it could not in time (the connection is down).
    pub fn flush(&self, timeout: Duration) -> Result<()> {
        let shared = self.shared.clone();
        let flushed = self.block_on(async move {
            let client = &shared.client;
            let both = async { client.flush().await.is_ok() && round_trip(client).await.is_ok() };
            tokio::time::timeout(timeout, both).await
        })?;
        match flushed {
            Some(Ok(true)) => Ok(()),
            _ => Err(Error::new(ErrorCode::Unreachable).with_context(format!(
                "nats: could not flush within {timeout:?} ({})",
                self.shared.servers
            ))),
        }
    }

    /// `true` while the client is connected to a server.
    pub fn is_connected(&self) -> bool {
        self.shared.stats.connected.load(Ordering::SeqCst)
    }

    /// What the connection has done so far.
    pub fn stats(&self) -> Stats {
        let c = &self.shared.stats;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            published: get(&c.published),
            received: get(&c.received),
            refused: get(&c.refused),
            dead_letters: get(&c.dead_letters),
            late_replies: get(&c.late_replies),
            reconnects: get(&c.reconnects),
            disconnects: get(&c.disconnects),
            slow_consumer: get(&c.slow_consumer),
            cancels_sent: get(&c.cancels_sent),
            cancelled: get(&c.cancelled),
            expired: get(&c.expired),
        }
    }

    /// The port of the server the client is connected to (or was last), as
    /// that server says.
    pub fn server_port(&self) -> u16 {
        self.shared.client.server_info().port
    }

    /// Runs `future` on the bridge and waits for its output (`None` if the
    /// bridge stopped first). Refused inside a runtime when the connection
    /// runs on the caller's (it might be that very thread).
    pub(crate) fn block_on<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<Option<T>> {
        if self.shared.on_caller_runtime && Handle::try_current().is_ok() {
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(
                "nats: a blocking call inside a tokio runtime, on a connection that runs on one \
                 (Nats::connect_async): it could wait for itself",
            ));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        self.shared.runtime.spawn(async move {
            let _ = tx.send(future.await);
        });
        Ok(rx.recv().ok())
    }
}

impl<C: Codec> Shared<C> {
    /// Queues a message for the connection without waiting: async-nats's
    /// command channel (of [`Options::buffer`] places) either takes it at once
    /// or is full.
    pub(crate) fn publish(
        &self,
        subject: &str,
        reply: Option<Subject>,
        payload: Bytes,
    ) -> Result<()> {
        self.publish_on(&Subject::from(subject), reply, payload)
    }

    /// As [`publish`](Shared::publish), on a subject made once (an
    /// [`Export`](super::Export)'s, a [`Remote`](super::Remote)'s): its
    /// clone is a count, not a copy.
    pub(crate) fn publish_on(
        &self,
        subject: &Subject,
        reply: Option<Subject>,
        payload: Bytes,
    ) -> Result<()> {
        let client = &self.client;
        let to = subject.clone();
        // `unconstrained`: inside a tokio task (a `TokioLocality` with its
        // connection on the same runtime) tokio's cooperative budget would
        // make the command channel say "not now" after 128 operations in one
        // poll, and a burst would be refused with room left in the buffer.
        let sent = match reply {
            None => tokio::task::unconstrained(client.publish(to, payload)).now_or_never(),
            Some(reply) => {
                tokio::task::unconstrained(client.publish_with_reply(to, reply, payload))
                    .now_or_never()
            }
        };
        match sent {
            Some(Ok(())) => {
                Counters::add(&self.stats.published, 1);
                Ok(())
            }
            None => {
                Counters::add(&self.stats.refused, 1);
                let state = if self.stats.connected.load(Ordering::SeqCst) {
                    "busy"
                } else {
                    "disconnected"
                };
                Err(Error::new(ErrorCode::BufferFull)
                    .with_context(format!("nats: {subject}: buffer full ({state})")))
            }
            Some(Err(e)) => {
                let code = match e.kind() {
                    async_nats::client::PublishErrorKind::Send => ErrorCode::Unreachable,
                    _ => ErrorCode::InvalidArgument,
                };
                Err(Error::new(code)
                    .with_context(format!("nats: cannot publish on {subject:?}"))
                    .with_source(e))
            }
        }
    }

    /// Runs `future` on the bridge and sends its output to `to` as a message.
    pub(crate) fn spawn_to<T, F>(&self, to: Address, future: F) -> tokio::task::AbortHandle
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        self.runtime
            .spawn(async move {
                let _ = to.send(future.await);
            })
            .abort_handle()
    }
}

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

use super::codec::{Codec, Json, Wire};
use super::names::round_trip;
use super::options::{Auth, Options};
use super::pump::Inbox;
use crate::address::Address;
use crate::error::{Error, ErrorCode, Result};
use async_nats::{Client, ConnectErrorKind, ConnectOptions, Event};
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
    /// Where the bridge's tasks run: the bridge thread's runtime (a tokio
    /// backend would hand its own runtime's handle here instead).
    pub(crate) runtime: Handle,
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
}

impl<C: Codec> Nats<C> {
    /// Connects to NATS with a codec of your own; otherwise as [`Nats::connect`].
    pub fn connect_with(options: Options, codec: C) -> Result<Nats<C>> {
        options.validate()?;
        let servers = options
            .servers
            .iter()
            .map(|s| redact(s))
            .collect::<Vec<_>>()
            .join(", ");
        let stats = Arc::new(Counters::default());
        let connect_options = client_options(&options, stats.clone())?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<Connected>>();
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
        let Connected {
            client,
            runtime,
            inbox,
        } = ready_rx.recv().map_err(|_| {
            Error::new(ErrorCode::Unreachable)
                .with_context(format!("nats: the bridge thread stopped ({servers})"))
        })??;
        stats.connected.store(true, Ordering::SeqCst);
        Ok(Nats {
            shared: Arc::new(Shared {
                client,
                codec,
                runtime,
                stats,
                prefix: options.prefix.clone(),
                window: options.window as u64,
                servers,
                inbox,
                next_request: AtomicU64::new(1),
            }),
            _keeper: Arc::new(Keeper {
                stop: Some(stop_tx),
            }),
        })
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
        });
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
        }
    }

    /// The port of the server the client is connected to (or was last), as
    /// that server says.
    pub fn server_port(&self) -> u16 {
        self.shared.client.server_info().port
    }

    /// Runs `future` on the bridge and waits for its output (`None` if the
    /// bridge stopped first). Never called from the bridge thread itself.
    pub(crate) fn block_on<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.shared.runtime.spawn(async move {
            let _ = tx.send(future.await);
        });
        rx.recv().ok()
    }
}

impl<C: Codec> Shared<C> {
    /// Queues a message for the connection without waiting: async-nats's
    /// command channel (of [`Options::buffer`] places) either takes it at once
    /// or is full.
    pub(crate) fn publish(
        &self,
        subject: &str,
        reply: Option<String>,
        payload: Bytes,
    ) -> Result<()> {
        let sent = match reply {
            None => self
                .client
                .publish(subject.to_string(), payload)
                .now_or_never(),
            Some(reply) => self
                .client
                .publish_with_reply(subject.to_string(), reply, payload)
                .now_or_never(),
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

/// The async-nats options for `options`, with an event callback that keeps
/// `stats`.
fn client_options(options: &Options, stats: Arc<Counters>) -> Result<ConnectOptions> {
    // async-nats reads no credentials from URLs: take the first URL's.
    let from_url = options.servers.iter().find_map(|url| {
        let addr = url.parse::<async_nats::ServerAddr>().ok()?;
        let user = addr.username().filter(|u| !u.is_empty())?;
        Some(match addr.password() {
            Some(password) => Auth::UserPassword(percent_decoded(user), percent_decoded(password)),
            None => Auth::Token(percent_decoded(user)),
        })
    });
    let mut o = ConnectOptions::new()
        .client_capacity(options.buffer)
        .subscription_capacity(options.subscription_capacity)
        .connection_timeout(options.connect_timeout)
        .request_timeout(None);
    if let Some(name) = &options.name {
        o = o.name(name);
    }
    let auth = match (&options.auth, from_url) {
        (Auth::None, Some(from_url)) => from_url,
        (auth, _) => auth.clone(),
    };
    o = match &auth {
        Auth::None => o,
        Auth::Token(token) => o.token(token.clone()),
        Auth::UserPassword(user, password) => o.user_and_password(user.clone(), password.clone()),
    };
    if options.tls_required {
        o = o.require_tls(true);
    }
    for root in &options.root_certificates {
        o = o.add_root_certificates(root.clone());
    }
    if let Some((cert, key)) = &options.client_certificate {
        o = o.add_client_certificate(cert.clone(), key.clone());
    }
    if let Some(max) = options.max_reconnects {
        o = o.max_reconnects(max);
    }
    let max_delay = options.reconnect_delay;
    o = o.reconnect_delay_callback(move |attempts| {
        let exp = u32::try_from(attempts.saturating_sub(1)).unwrap_or(u32::MAX);
        let delay = if attempts <= 1 {
            Duration::ZERO
        } else {
            Duration::from_millis(2u64.saturating_pow(exp.min(40)))
        };
        delay.min(max_delay)
    });
    let first = Arc::new(AtomicBool::new(true));
    o = o.event_callback(move |event| {
        let stats = stats.clone();
        let first = first.clone();
        async move {
            match event {
                Event::Connected => {
                    stats.connected.store(true, Ordering::SeqCst);
                    if !first.swap(false, Ordering::SeqCst) {
                        Counters::add(&stats.reconnects, 1);
                    }
                }
                Event::Disconnected => {
                    stats.connected.store(false, Ordering::SeqCst);
                    Counters::add(&stats.disconnects, 1);
                    tracing::warn!("nats: disconnected; reconnecting");
                }
                Event::SlowConsumer(sid) => {
                    Counters::add(&stats.slow_consumer, 1);
                    tracing::warn!(sid, "nats: slow consumer, messages dropped");
                }
                Event::ServerError(e) => tracing::warn!(error = %e, "nats: server error"),
                Event::ClientError(e) => tracing::warn!(error = %e, "nats: client error"),
                Event::LameDuckMode | Event::Draining | Event::Closed => {}
            }
        }
    });
    Ok(o)
}

/// What the bridge thread hands back once connected.
struct Connected {
    client: Client,
    runtime: Handle,
    inbox: Arc<Inbox>,
}

/// The bridge thread: a current-thread runtime that connects, reports, and
/// then serves the connection and the bridge's tasks until told to stop.
fn bridge_thread(
    options: ConnectOptions,
    urls: Vec<String>,
    timeout: Duration,
    servers: String,
    stats: Arc<Counters>,
    ready: std::sync::mpsc::Sender<Result<Connected>>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(Error::io(e)));
            return;
        }
    };
    runtime.block_on(async move {
        let addrs: Vec<async_nats::ServerAddr> = match urls.iter().map(|u| u.parse()).collect() {
            Ok(addrs) => addrs,
            Err(e) => {
                let error = Error::new(ErrorCode::InvalidArgument)
                    .with_context(format!("nats: bad server address in {servers}"))
                    .with_source(e);
                let _ = ready.send(Err(error));
                return;
            }
        };
        let client = match tokio::time::timeout(timeout, options.connect(addrs)).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => {
                let _ = ready.send(Err(connect_error(e, &servers)));
                return;
            }
            Err(elapsed) => {
                let error = Error::new(ErrorCode::Unreachable)
                    .with_context(format!(
                        "nats: no connection within {timeout:?} ({servers})"
                    ))
                    .with_source(elapsed);
                let _ = ready.send(Err(error));
                return;
            }
        };
        // The reply inbox is subscribed before anyone can send a request
        // (commands reach the server in the order given).
        let inbox = Arc::new(Inbox::new(client.new_inbox()));
        let subject = format!("{}.>", inbox.prefix);
        let subscription = match client.subscribe(subject.clone()).await {
            Ok(subscription) => subscription,
            Err(e) => {
                let error = Error::new(ErrorCode::Unreachable)
                    .with_context(format!("nats: cannot subscribe to {subject} ({servers})"))
                    .with_source(e);
                let _ = ready.send(Err(error));
                return;
            }
        };
        tokio::spawn(inbox.clone().run(subscription, stats));
        let connected = Connected {
            client: client.clone(),
            runtime: Handle::current(),
            inbox,
        };
        if ready.send(Ok(connected)).is_err() {
            return;
        }
        let _ = stop.await;
        let _ = tokio::time::timeout(Duration::from_secs(1), client.flush()).await;
    });
}

/// `%xx` escapes of a URL's user or password decoded (`p%40ss` is `p@ss`).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A connect error as an [`Error`] that says what to do about it.
fn connect_error(e: async_nats::ConnectError, servers: &str) -> Error {
    let (code, what) = match e.kind() {
        ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
            (ErrorCode::Unauthorized, "credentials refused by")
        }
        ConnectErrorKind::ServerParse => (ErrorCode::InvalidArgument, "bad server address in"),
        ConnectErrorKind::Tls => (ErrorCode::Unreachable, "TLS failed with"),
        _ => (ErrorCode::Unreachable, "cannot reach"),
    };
    Error::new(code)
        .with_context(format!("nats: {what} {servers}"))
        .with_source(e)
}

#[cfg(test)]
mod tests {
    use super::{percent_decoded, redact};

    #[test]
    fn credentials_in_urls_are_never_printed() {
        assert_eq!(
            redact("nats://bob:secret@127.0.0.1:4222"),
            "nats://***@127.0.0.1:4222"
        );
        assert_eq!(redact("bob:secret@host:1"), "***@host:1");
        assert_eq!(redact("nats://host:1"), "nats://host:1");
    }

    #[test]
    fn escapes_in_url_credentials_are_decoded() {
        assert_eq!(percent_decoded("p%40ss%2Fw0rd"), "p@ss/w0rd");
        assert_eq!(percent_decoded("100%"), "100%");
        assert_eq!(percent_decoded("%zz"), "%zz");
    }
}

//! Making a connection: the async-nats options, the connect itself, and
//! where the client runs (a bridge thread of its own, or the caller's
//! runtime).

use super::connection::Counters;
use super::options::{Auth, Options};
use super::pump::Inbox;
use super::spin::Spin;
use crate::error::{Error, ErrorCode, Result};
use async_nats::{Client, ConnectErrorKind, ConnectOptions, Event};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::runtime::Handle;

/// The async-nats options for `options`, with an event callback that keeps
/// `stats`.
pub(crate) fn client_options(options: &Options, stats: Arc<Counters>) -> Result<ConnectOptions> {
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
        Auth::NKey(seed) => o.nkey(seed.clone()),
        Auth::CredentialsFile(path) => {
            let unusable = |e: std::io::Error| {
                Error::new(ErrorCode::InvalidArgument)
                    .with_context(format!(
                        "nats: credentials file {} cannot be used",
                        path.display()
                    ))
                    .with_source(e)
            };
            let creds = std::fs::read_to_string(path).map_err(unusable)?;
            o.credentials(&creds).map_err(unusable)?
        }
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

/// A connection made: the client, its reply inbox, and the task that reads
/// the inbox (aborted when the connection is dropped).
pub(crate) struct Connected {
    pub(crate) client: Client,
    pub(crate) inbox: Arc<Inbox>,
    pub(crate) inbox_task: tokio::task::AbortHandle,
}

/// Connects, subscribes the reply inbox and starts reading it, on the
/// current runtime.
pub(crate) async fn establish(
    options: ConnectOptions,
    urls: Vec<String>,
    timeout: Duration,
    servers: &str,
    stats: Arc<Counters>,
) -> Result<Connected> {
    let addrs: Vec<async_nats::ServerAddr> = urls
        .iter()
        .map(|u| u.parse())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| {
            Error::new(ErrorCode::InvalidArgument)
                .with_context(format!("nats: bad server address in {servers}"))
                .with_source(e)
        })?;
    let client = match tokio::time::timeout(timeout, options.connect(addrs)).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => return Err(connect_error(e, servers)),
        Err(elapsed) => {
            return Err(Error::new(ErrorCode::Unreachable)
                .with_context(format!(
                    "nats: no connection within {timeout:?} ({servers})"
                ))
                .with_source(elapsed));
        }
    };
    // The reply inbox is subscribed before anyone can send a request
    // (commands reach the server in the order given).
    let inbox = Arc::new(Inbox::new(client.new_inbox()));
    let subject = format!("{}.>", inbox.prefix);
    let subscription = client.subscribe(subject.clone()).await.map_err(|e| {
        Error::new(ErrorCode::Unreachable)
            .with_context(format!("nats: cannot subscribe to {subject} ({servers})"))
            .with_source(e)
    })?;
    let inbox_task = tokio::spawn(inbox.clone().run(subscription, stats)).abort_handle();
    Ok(Connected {
        client,
        inbox,
        inbox_task,
    })
}

/// The bridge thread: a current-thread runtime that connects, reports, and
/// then serves the connection and the bridge's tasks until told to stop.
pub(crate) fn bridge_thread(
    options: ConnectOptions,
    urls: Vec<String>,
    timeout: Duration,
    servers: String,
    stats: Arc<Counters>,
    ready: std::sync::mpsc::Sender<Result<(Connected, Handle)>>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let spin = Arc::new(Spin::default());
    let before_park = spin.clone();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(move || before_park.before_park())
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(Error::io(e)));
            return;
        }
    };
    let _ = spin.handle.set(runtime.handle().clone());
    runtime.block_on(async move {
        let connected = match establish(options, urls, timeout, &servers, stats).await {
            Ok(connected) => connected,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let client = connected.client.clone();
        if ready.send(Ok((connected, Handle::current()))).is_err() {
            return;
        }
        let _ = stop.await;
        let _ = tokio::time::timeout(Duration::from_secs(1), client.flush()).await;
    });
}

/// On a runtime of the caller's ([`Nats::connect_async`](super::Nats::connect_async)):
/// waits for the last handle to go, then stops reading the inbox and flushes
/// what is buffered (for up to a second); the client's own task ends with
/// the last of its handles.
pub(crate) async fn keep(
    client: Client,
    inbox_task: tokio::task::AbortHandle,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let _ = stop.await;
    inbox_task.abort();
    let _ = tokio::time::timeout(Duration::from_secs(1), client.flush()).await;
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
    use super::percent_decoded;
    use crate::nats::connection::redact;

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

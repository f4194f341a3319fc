//! [`Options`]: where the NATS servers are, how to log in, how much to buffer.

use crate::error::{Error, ErrorCode, Result};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// How to reach and use a NATS server or cluster, for
/// [`Nats::connect`](super::Nats::connect).
///
/// ```
/// use commutator::nats::Options;
/// use std::time::Duration;
///
/// let options = Options::new("nats://127.0.0.1:4222")
///     .server("nats://127.0.0.1:4223") // another node of the cluster
///     .user_and_password("app", "secret")
///     .name("billing")
///     .buffer(4096)
///     .reconnect_delay(Duration::from_millis(250));
/// assert_eq!(options.servers().len(), 2);
/// ```
///
/// Credentials in a URL (`nats://user:pass@host:4222`) work too. What is not
/// set here keeps its default: a connect timeout of 5 s, reconnection for
/// ever with a growing pause (up to [`reconnect_delay`]), no TLS unless the
/// server asks for it. `Debug` shows no credentials.
///
/// [`reconnect_delay`]: Options::reconnect_delay
#[derive(Clone)]
pub struct Options {
    pub(crate) servers: Vec<String>,
    pub(crate) name: Option<String>,
    pub(crate) auth: Auth,
    pub(crate) tls_required: bool,
    pub(crate) root_certificates: Vec<PathBuf>,
    pub(crate) client_certificate: Option<(PathBuf, PathBuf)>,
    pub(crate) buffer: usize,
    pub(crate) subscription_capacity: usize,
    pub(crate) window: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) reconnect_delay: Duration,
    pub(crate) max_reconnects: Option<usize>,
    pub(crate) prefix: String,
}

/// Credentials; never printed.
#[derive(Clone)]
pub(crate) enum Auth {
    None,
    Token(String),
    UserPassword(String, String),
    NKey(String),
    CredentialsFile(PathBuf),
}

/// The default of [`Options::buffer`]: outgoing messages held while the
/// connection is down or busy.
pub const DEFAULT_BUFFER: usize = 65_536;

/// The default of [`Options::window`]: messages a bridged subscription may
/// have on their way into a locality, not yet delivered.
pub const DEFAULT_WINDOW: usize = 4_096;

/// The default of [`Options::prefix`]: the first token of the subjects
/// commutator makes for services and discovery.
pub const DEFAULT_PREFIX: &str = "commutator";

impl Options {
    /// Options for one server (`nats://host:port`, `tls://host:port`, or
    /// `host:port`); add more with [`server`](Options::server).
    pub fn new(url: impl Into<String>) -> Options {
        Options {
            servers: vec![url.into()],
            name: None,
            auth: Auth::None,
            tls_required: false,
            root_certificates: Vec::new(),
            client_certificate: None,
            buffer: DEFAULT_BUFFER,
            subscription_capacity: 65_536,
            window: DEFAULT_WINDOW,
            connect_timeout: Duration::from_secs(5),
            reconnect_delay: Duration::from_secs(2),
            max_reconnects: None,
            prefix: DEFAULT_PREFIX.to_string(),
        }
    }

    /// Adds a server: the client connects to one of them, and after a
    /// disconnection tries them all (and the nodes the cluster told it of).
    pub fn server(mut self, url: impl Into<String>) -> Options {
        self.servers.push(url.into());
        self
    }

    /// The servers given so far.
    pub fn servers(&self) -> &[String] {
        &self.servers
    }

    /// The connection's name, as the server shows it (`/connz`).
    pub fn name(mut self, name: impl Into<String>) -> Options {
        self.name = Some(name.into());
        self
    }

    /// Logs in with a token (the server's `--auth`).
    pub fn token(mut self, token: impl Into<String>) -> Options {
        self.auth = Auth::Token(token.into());
        self
    }

    /// Logs in with a user and password (the server's `--user`, `--pass`).
    pub fn user_and_password(
        mut self,
        user: impl Into<String>,
        password: impl Into<String>,
    ) -> Options {
        self.auth = Auth::UserPassword(user.into(), password.into());
        self
    }

    /// Logs in with an NKey: `seed` is the user's seed (`SU...`), which
    /// signs the server's challenge; the server knows the user by its
    /// public key (`nkey: U...` in its `authorization`). The seed never
    /// leaves the process.
    pub fn nkey(mut self, seed: impl Into<String>) -> Options {
        self.auth = Auth::NKey(seed.into());
        self
    }

    /// Logs in with a credentials file (`.creds`, as `nsc` makes it: a user
    /// JWT and its NKey seed), for servers in operator mode. Read when
    /// connecting: a file that cannot be read or parsed is
    /// [`ErrorCode::InvalidArgument`] (its contents are never printed).
    pub fn credentials_file(mut self, path: impl Into<PathBuf>) -> Options {
        self.auth = Auth::CredentialsFile(path.into());
        self
    }

    /// Requires TLS even if the server does not ask for it.
    pub fn require_tls(mut self, required: bool) -> Options {
        self.tls_required = required;
        self
    }

    /// Trusts the certificate authorities in a PEM file (for a server whose
    /// certificate is not signed by a public authority). Implies TLS.
    pub fn root_certificate(mut self, pem: impl Into<PathBuf>) -> Options {
        self.root_certificates.push(pem.into());
        self.tls_required = true;
        self
    }

    /// Presents a client certificate and its key (PEM files), for servers
    /// that verify clients. Implies TLS.
    pub fn client_certificate(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Options {
        self.client_certificate = Some((cert.into(), key.into()));
        self.tls_required = true;
        self
    }

    /// How many outgoing messages (publishes, requests, replies) may wait
    /// while the connection is down or busy; one more is refused with
    /// [`ErrorCode::BufferFull`]. Default [`DEFAULT_BUFFER`]; at least 1.
    pub fn buffer(mut self, messages: usize) -> Options {
        self.buffer = messages;
        self
    }

    /// How many incoming messages one subscription holds on the bridge side
    /// when its locality does not keep up; past that, NATS drops them (a
    /// "slow consumer", counted in [`Stats::slow_consumer`](super::Stats)).
    /// Default 65,536; at least 1.
    pub fn subscription_capacity(mut self, messages: usize) -> Options {
        self.subscription_capacity = messages;
        self
    }

    /// How many messages a bridged subscription may have on their way into a
    /// locality (sent, not yet delivered); the bridge stops reading the
    /// subscription until the locality catches up. Default
    /// [`DEFAULT_WINDOW`]; at least 2.
    pub fn window(mut self, messages: usize) -> Options {
        self.window = messages;
        self
    }

    /// How long [`Nats::connect`](super::Nats::connect) waits for a first
    /// connection before it gives up with [`ErrorCode::Unreachable`].
    /// Default 5 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Options {
        self.connect_timeout = timeout;
        self
    }

    /// The longest pause between two reconnection attempts (the first is
    /// immediate, then the pause doubles from 2 ms). Default 2 s.
    pub fn reconnect_delay(mut self, max: Duration) -> Options {
        self.reconnect_delay = max;
        self
    }

    /// Gives up after this many failed reconnection attempts in a row
    /// (default: never).
    pub fn max_reconnects(mut self, attempts: usize) -> Options {
        self.max_reconnects = Some(attempts);
        self
    }

    /// The first token of the subjects commutator makes for services and
    /// discovery (`<prefix>.svc.<name>.<type>`, `<prefix>.who.<name>`,
    /// `<prefix>.announce.<name>`): processes that should find each other use
    /// the same prefix. Default [`DEFAULT_PREFIX`].
    pub fn prefix(mut self, prefix: impl Into<String>) -> Options {
        self.prefix = prefix.into();
        self
    }

    /// Checks what the client cannot check itself.
    pub(crate) fn validate(&self) -> Result<()> {
        let invalid = |what: String| Err(Error::new(ErrorCode::InvalidArgument).with_context(what));
        if self.servers.is_empty() {
            return invalid("nats: no server given".into());
        }
        if self.buffer == 0 {
            return invalid("nats: buffer of 0 messages".into());
        }
        if self.subscription_capacity == 0 {
            return invalid("nats: subscription capacity of 0 messages".into());
        }
        if self.window < 2 {
            return invalid(format!(
                "nats: window of {} messages (at least 2)",
                self.window
            ));
        }
        if !super::names::is_token(&self.prefix) {
            return invalid(format!(
                "nats: prefix {:?} is not one subject token",
                self.prefix
            ));
        }
        Ok(())
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match self.auth {
            Auth::None => "none",
            Auth::Token(_) => "token",
            Auth::UserPassword(..) => "user and password",
            Auth::NKey(_) => "nkey",
            Auth::CredentialsFile(_) => "credentials file",
        };
        f.debug_struct("Options")
            .field(
                "servers",
                &self
                    .servers
                    .iter()
                    .map(|s| super::connection::redact(s))
                    .collect::<Vec<_>>(),
            )
            .field("name", &self.name)
            .field("auth", &auth)
            .field("tls_required", &self.tls_required)
            .field("buffer", &self.buffer)
            .field("window", &self.window)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

//! Errors: one [`Error`] value for API misuse and for shutdown reasons, with a
//! code and a chain of causes (as rotor's `extended_error_t`).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// What went wrong, or why an actor shut down.
///
/// The codes listed before [`ErrorCode::SupervisorShuttingDown`] are
/// *reasons*: they end up in shutdown reasons and responses. The codes from
/// there on come back as `Err` from a call that was refused: mostly misuse of
/// the API, but also outcomes of the moment (`LocalityFinished`: the other side
/// has finished) and the operating system's errors (`Io`). The transport
/// codes at the end ([`Unreachable`](ErrorCode::Unreachable) to
/// [`Codec`](ErrorCode::Codec), used by the `nats` feature) are both: a
/// refused call returns them, and a request across processes can end with
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A normal, requested shutdown.
    #[error("normal shutdown")]
    Normal,
    /// The actor's supervisor is shutting down and takes its children with it.
    #[error("supervisor shutdown")]
    SupervisorShutdown,
    /// A child actor went down.
    #[error("child down")]
    ChildDown,
    /// A child actor failed its initialization.
    #[error("child init failed")]
    ChildInitFailed,
    /// The actor failed its own initialization.
    #[error("init failed")]
    InitFailed,
    /// Initialization did not finish within the init timeout.
    #[error("init timeout")]
    InitTimeout,
    /// Shutdown did not finish within the shutdown timeout (a contract violation).
    #[error("shutdown timeout")]
    ShutdownTimeout,
    /// A linked server asked its client to unlink.
    #[error("unlink requested")]
    UnlinkRequested,
    /// A supervisor gave up restarting a child: too many restarts in the period.
    #[error("restart limit reached")]
    RestartLimit,
    /// A child failed and its supervisor escalates the failure.
    #[error("failure escalation")]
    FailureEscalation,
    /// The actor reported a failure of its own.
    #[error("actor failure")]
    Failure,
    /// A request got no reply within its timeout.
    #[error("request timeout")]
    RequestTimeout,
    /// A request was cancelled.
    #[error("request cancelled")]
    Cancelled,
    /// A name is already registered.
    #[error("already registered")]
    AlreadyRegistered,
    /// No service is registered under a name.
    #[error("unknown service")]
    UnknownService,
    /// A link was refused or its server went away.
    #[error("link failed")]
    LinkFailed,
    /// User code (a handler, a hook, a factory, a `Drop`) panicked; the context says who and what.
    #[error("panicked")]
    Panicked,
    /// The locality an actor lived on is gone before the actor shut down
    /// (dropped before it finished); the context names the locality. Its
    /// supervisor elsewhere gets this as the child's reason.
    #[error("locality lost")]
    LocalityLost,
    /// An entity set is at its cap of live entities and none of them is
    /// idle, so a new key is refused (see `docs/entities.md`).
    #[error("entity limit reached")]
    EntityLimit,
    /// A pool or an entity set cannot take the message: it is shutting
    /// down, it has no worker left, its buffer is full, or the entity failed
    /// its init; the context says which (and the cause, if any, why).
    #[error("unavailable")]
    Unavailable,

    /// Misuse: spawning on a supervisor that is shutting down or gone.
    #[error("supervisor is shutting down")]
    SupervisorShuttingDown,
    /// Misuse: the actor asked to spawn or to supervise is not a supervisor.
    #[error("not a supervisor")]
    NotASupervisor,
    /// Misuse: the address is not served by this locality, and the call needs one that is.
    #[error("address of another locality")]
    ForeignAddress,
    /// Misuse: the address (or actor) is gone.
    #[error("stale address")]
    StaleAddress,
    /// Misuse: the locality has finished or is gone; nothing can be sent through it.
    #[error("locality finished")]
    LocalityFinished,
    /// Misuse: a mio token clashes with a token the locality uses.
    #[error("token clash")]
    TokenClash,
    /// Misuse: the locality is not registered on a `mio::Poll` (needed for I/O).
    #[error("locality not registered on a poll")]
    NotRegistered,
    /// Misuse: the locality is already registered on a `mio::Poll`.
    #[error("already registered on a poll")]
    AlreadyRegisteredOnPoll,
    /// Misuse: the subscription is unknown or not the caller's.
    #[error("unknown subscription")]
    UnknownSubscription,
    /// Misuse: an argument is out of its range.
    #[error("invalid argument")]
    InvalidArgument,
    /// An I/O error from the operating system.
    #[error("I/O error")]
    Io,
    /// Misuse: the actor is in its `shutdown_finish`, after which nothing it
    /// starts could run (its subscriptions, timers, requests, addresses and
    /// I/O go next); the context names the call.
    #[error("actor finished")]
    ActorFinished,
    /// Outcome: the inbox of the destination's locality is full (see
    /// [`Locality::set_inbox_capacity`](crate::Locality::set_inbox_capacity));
    /// the message was not accepted. Try again later, or wait with
    /// [`Address::send_blocking`](crate::Address::send_blocking).
    #[error("inbox full")]
    InboxFull,
    /// Misuse: the actor is linked to that server already, or has asked to
    /// be ([`Context::link`](crate::Context::link)).
    #[error("already linked")]
    AlreadyLinked,

    /// Transport: the messaging server cannot be reached (refused, timed
    /// out, TLS handshake failed); the context names the servers, the cause
    /// says why.
    #[error("server unreachable")]
    Unreachable,
    /// Transport: the server refused the credentials (or their absence).
    #[error("unauthorized")]
    Unauthorized,
    /// Transport: the bounded buffer of outgoing messages is full (the
    /// connection is down or slower than the sender): the message was refused,
    /// not queued.
    #[error("buffer full")]
    BufferFull,
    /// Transport: a message could not be encoded, or what arrived could not be
    /// decoded as the expected type.
    #[error("codec error")]
    Codec,
    /// Misuse: a backend was driven outside its event loop: the tokio
    /// backend outside a tokio runtime, or on one without I/O or timers
    /// enabled; the context says which.
    #[error("no runtime")]
    NoRuntime,
}

impl ErrorCode {
    /// `true` for the codes that mean "ended as asked", not a failure:
    /// [`Normal`](ErrorCode::Normal) and [`SupervisorShutdown`](ErrorCode::SupervisorShutdown).
    pub fn is_normal(self) -> bool {
        matches!(self, ErrorCode::Normal | ErrorCode::SupervisorShutdown)
    }
}

/// An error: a [code](ErrorCode), an optional context (who or what), and the
/// error that caused it, if any.
///
/// It follows the conventions of [`std::error::Error`]: `Display` (`{}`)
/// prints this level only (the code and the context), [`source`] returns the
/// cause, and the alternate form `{:#}` prints the whole chain, one cause per
/// line. `Debug` prints as `{:#}`, so a `main` that returns an `Error` shows
/// the whole chain. Cloning is cheap (context and cause are shared).
///
/// ```
/// use commutator::{Error, ErrorCode};
/// let root = Error::new(ErrorCode::InitFailed).with_context("db#2");
/// let top = Error::new(ErrorCode::ChildInitFailed).with_context("sup#1").caused_by(root);
/// assert_eq!(top.to_string(), "child init failed (sup#1)");
/// assert_eq!(format!("{top:#}"), "child init failed (sup#1)\n  <- init failed (db#2)");
/// assert_eq!(top.root_cause().code(), ErrorCode::InitFailed);
/// ```
///
/// The cause is another `Error` ([`caused_by`](Error::caused_by)) or any
/// other error ([`with_source`](Error::with_source), [`Error::io`]).
/// [`chain`](Error::chain) and [`root_cause`](Error::root_cause) walk the
/// `Error` links only and stop at a cause of another type;
/// [`sources`](Error::sources) (and `{:#}`) go on through it and its own
/// sources.
///
/// Two errors are equal when their codes and contexts are equal level by
/// level down their `Error` links, and a cause of another type is the *same*
/// value (a clone of one error): such errors have no equality of their own.
///
/// Dropping, printing and comparing walk the chain in a loop, so a chain of
/// any length (one link per supervisor of a deep tree) needs no more stack
/// than a short one.
///
/// [`source`]: std::error::Error::source
#[derive(Clone)]
pub struct Error {
    code: ErrorCode,
    /// Context and cause, shared: an error of a code alone (most shutdown
    /// reasons) needs no allocation and clones for free.
    more: Option<Arc<More>>,
}

/// An error of another type, shared so that [`Error`] stays `Clone`.
type Foreign = Arc<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Clone, Default)]
struct More {
    context: Option<Cow<'static, str>>,
    cause: Cause,
}

#[derive(Clone, Default)]
enum Cause {
    #[default]
    None,
    Error(Error),
    Foreign(Foreign),
}

static NO_CAUSE: Cause = Cause::None;

impl Drop for More {
    /// Unlinks the chain below in a loop (the derived drop would recurse once
    /// per link and overflow the stack on a long chain). A link still shared
    /// with a clone stops the loop: its last owner drops the rest.
    fn drop(&mut self) {
        let mut next = std::mem::take(&mut self.cause);
        while let Cause::Error(Error {
            more: Some(more), ..
        }) = next
        {
            match Arc::into_inner(more) {
                Some(mut more) => next = std::mem::take(&mut more.cause),
                None => break,
            }
        }
    }
}

impl Error {
    /// An error with only a code.
    pub fn new(code: ErrorCode) -> Error {
        Error { code, more: None }
    }

    fn more_mut(&mut self) -> &mut More {
        Arc::make_mut(self.more.get_or_insert_with(Default::default))
    }

    fn parts(&self) -> (Option<&str>, &Cause) {
        match &self.more {
            Some(more) => (more.context.as_deref(), &more.cause),
            None => (None, &NO_CAUSE),
        }
    }

    /// A normal-shutdown reason.
    pub fn normal() -> Error {
        Error::new(ErrorCode::Normal)
    }

    /// A user failure with a description, for [`Context::fail`](crate::Context::fail).
    pub fn failure(what: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorCode::Failure).with_context(what)
    }

    /// Wraps an operating-system I/O error: code [`ErrorCode::Io`], with the
    /// `io::Error` itself as the [source](std::error::Error::source) (the same
    /// as `Error::from(err)`).
    pub fn io(err: std::io::Error) -> Error {
        Error::new(ErrorCode::Io).with_source(err)
    }

    /// Sets the context: which actor, address or name the error is about.
    pub fn with_context(mut self, context: impl Into<Cow<'static, str>>) -> Error {
        self.more_mut().context = Some(context.into());
        self
    }

    /// Sets the cause: the error below this one in the chain.
    pub fn caused_by(mut self, cause: Error) -> Error {
        self.more_mut().cause = Cause::Error(cause);
        self
    }

    /// Sets the cause to an error of any type: it becomes this error's
    /// [`source`](std::error::Error::source) and is printed by `{:#}`.
    ///
    /// Takes any `std::error::Error + Send + Sync + 'static`, or one already
    /// boxed as `Box<dyn Error + Send + Sync>`. An [`Error`] given here
    /// becomes an `Error` link, as with [`caused_by`](Error::caused_by).
    ///
    /// ```
    /// use commutator::{Error, ErrorCode};
    /// use std::error::Error as _;
    ///
    /// let parse = "x1".parse::<u32>().unwrap_err();
    /// let err = Error::new(ErrorCode::InvalidArgument)
    ///     .with_context("port")
    ///     .with_source(parse);
    /// assert_eq!(err.to_string(), "invalid argument (port)");
    /// assert_eq!(format!("{err:#}"), "invalid argument (port)\n  <- invalid digit found in string");
    /// let source = err.source().unwrap();
    /// assert!(source.downcast_ref::<std::num::ParseIntError>().is_some());
    /// ```
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Error {
        self.more_mut().cause = match source.into().downcast::<Error>() {
            Ok(error) => Cause::Error(*error),
            Err(other) => Cause::Foreign(Arc::from(other)),
        };
        self
    }

    /// The code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The context, if any.
    pub fn context(&self) -> Option<&str> {
        self.parts().0
    }

    /// The `Error` that caused this one, if any. A cause of another type
    /// (see [`with_source`](Error::with_source)) is not an `Error`: reach it
    /// with [`source`](std::error::Error::source) or [`sources`](Error::sources).
    pub fn cause(&self) -> Option<&Error> {
        match self.parts().1 {
            Cause::Error(e) => Some(e),
            _ => None,
        }
    }

    /// This error and then each cause that is an `Error`, down to the root
    /// cause; it stops at a cause of another type.
    pub fn chain(&self) -> impl Iterator<Item = &Error> {
        std::iter::successors(Some(self), |e| e.cause())
    }

    /// This error and then every source below it, of any type (what `{:#}`
    /// prints, one per line).
    pub fn sources(&self) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
        let first: &(dyn std::error::Error + 'static) = self;
        std::iter::successors(Some(first), |e| e.source())
    }

    /// The deepest `Error` of the [chain](Error::chain) (this error if it has
    /// no `Error` cause).
    pub fn root_cause(&self) -> &Error {
        self.chain().last().unwrap_or(self)
    }

    /// `true` if the code is a normal end (see [`ErrorCode::is_normal`]).
    pub fn is_normal(&self) -> bool {
        self.code.is_normal()
    }

    /// As a `dyn Error`, for `tracing` fields: a subscriber may then print
    /// the sources too.
    pub(crate) fn as_dyn_error(&self) -> &(dyn std::error::Error + 'static) {
        self
    }
}

impl PartialEq for Error {
    /// Level by level, in a loop (see [`Error`] for causes of other types).
    fn eq(&self, other: &Error) -> bool {
        let (mut a, mut b) = (self, other);
        loop {
            if a.code != b.code {
                return false;
            }
            if let (Some(x), Some(y)) = (&a.more, &b.more)
                && Arc::ptr_eq(x, y)
            {
                return true;
            }
            let ((context_a, cause_a), (context_b, cause_b)) = (a.parts(), b.parts());
            if context_a != context_b {
                return false;
            }
            match (cause_a, cause_b) {
                (Cause::None, Cause::None) => return true,
                (Cause::Error(x), Cause::Error(y)) => (a, b) = (x, y),
                (Cause::Foreign(x), Cause::Foreign(y)) => return Arc::ptr_eq(x, y),
                _ => return false,
            }
        }
    }
}

impl Eq for Error {}

impl fmt::Display for Error {
    /// `{}` prints this level: the code, then the context in parentheses.
    /// `{:#}` prints the whole chain, each source on a line of its own after
    /// `  <- `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code)?;
        if let Some(c) = self.context() {
            write!(f, " ({c})")?;
        }
        if f.alternate() {
            for source in self.sources().skip(1) {
                write!(f, "\n  <- {source}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    /// As `{:#}`: what `main` prints when it returns this error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:#}")
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.parts().1 {
            Cause::None => None,
            Cause::Error(e) => Some(e),
            Cause::Foreign(e) => Some(&**e),
        }
    }
}

impl From<ErrorCode> for Error {
    fn from(code: ErrorCode) -> Error {
        Error::new(code)
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Error {
        Error::io(err)
    }
}

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A message that could not be sent, handed back to the caller with the reason.
///
/// `Display` prints "message not sent: " and the error's own level; its
/// [`source`](std::error::Error::source) is the error's cause.
pub struct SendError<M> {
    /// The message, returned unchanged.
    pub message: M,
    /// Why it was not sent.
    pub error: Error,
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "message not sent: {}", self.error)
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SendError({:#})", self.error)
    }
}

impl<M> std::error::Error for SendError<M> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_walks_to_the_root_cause() {
        let e = Error::new(ErrorCode::FailureEscalation)
            .caused_by(Error::new(ErrorCode::ChildDown).caused_by(Error::failure("disk full")));
        let codes: Vec<_> = e.chain().map(Error::code).collect();
        assert_eq!(
            codes,
            [
                ErrorCode::FailureEscalation,
                ErrorCode::ChildDown,
                ErrorCode::Failure
            ]
        );
        assert_eq!(e.root_cause().context(), Some("disk full"));
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn normal_codes() {
        assert!(Error::normal().is_normal());
        assert!(Error::new(ErrorCode::SupervisorShutdown).is_normal());
        assert!(!Error::failure("x").is_normal());
    }
}

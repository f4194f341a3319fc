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
/// has finished) and the operating system's errors (`Io`).
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
    /// Outcome: the inbox of the destination's locality is full (see
    /// [`Locality::set_inbox_capacity`](crate::Locality::set_inbox_capacity));
    /// the message was not accepted. Try again later, or wait with
    /// [`Address::send_blocking`](crate::Address::send_blocking).
    #[error("inbox full")]
    InboxFull,
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
/// Cloning is cheap (the cause is shared). `Display` prints the whole chain,
/// one cause after another:
///
/// ```
/// use commutator::{Error, ErrorCode};
/// let root = Error::new(ErrorCode::InitFailed).with_context("db#2");
/// let top = Error::new(ErrorCode::ChildInitFailed).with_context("sup#1").caused_by(root);
/// assert_eq!(top.to_string(), "child init failed (sup#1) <- init failed (db#2)");
/// assert_eq!(top.root_cause().code(), ErrorCode::InitFailed);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    code: ErrorCode,
    /// Context and cause, shared: an error of a code alone (most shutdown
    /// reasons) needs no allocation and clones for free.
    more: Option<Arc<More>>,
}

#[derive(Clone, Default, PartialEq, Eq)]
struct More {
    context: Option<Cow<'static, str>>,
    cause: Option<Error>,
}

impl Error {
    /// An error with only a code.
    pub fn new(code: ErrorCode) -> Error {
        Error { code, more: None }
    }

    fn more_mut(&mut self) -> &mut More {
        Arc::make_mut(self.more.get_or_insert_with(Default::default))
    }

    /// A normal-shutdown reason.
    pub fn normal() -> Error {
        Error::new(ErrorCode::Normal)
    }

    /// A user failure with a description, for [`Context::fail`](crate::Context::fail).
    pub fn failure(what: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorCode::Failure).with_context(what)
    }

    /// Wraps an operating-system I/O error (kept as text, so the error stays `Clone`).
    pub fn io(err: &std::io::Error) -> Error {
        Error::new(ErrorCode::Io).with_context(err.to_string())
    }

    /// Sets the context: which actor, address or name the error is about.
    pub fn with_context(mut self, context: impl Into<Cow<'static, str>>) -> Error {
        self.more_mut().context = Some(context.into());
        self
    }

    /// Sets the cause: the error below this one in the chain.
    pub fn caused_by(mut self, cause: Error) -> Error {
        self.more_mut().cause = Some(cause);
        self
    }

    /// The code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The context, if any.
    pub fn context(&self) -> Option<&str> {
        self.more.as_ref()?.context.as_deref()
    }

    /// The error that caused this one, if any.
    pub fn cause(&self) -> Option<&Error> {
        self.more.as_ref()?.cause.as_ref()
    }

    /// This error and then each cause, down to the root cause.
    pub fn chain(&self) -> impl Iterator<Item = &Error> {
        std::iter::successors(Some(self), |e| e.cause())
    }

    /// The deepest cause (this error if it has none).
    pub fn root_cause(&self) -> &Error {
        self.chain().last().unwrap_or(self)
    }

    /// `true` if the code is a normal end (see [`ErrorCode::is_normal`]).
    pub fn is_normal(&self) -> bool {
        self.code.is_normal()
    }

    fn fmt_one(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code)?;
        if let Some(c) = self.context() {
            write!(f, " ({c})")?;
        }
        Ok(())
    }
}

impl fmt::Display for Error {
    /// `{}` prints the chain on one line, causes after ` <- `; `{:#}` puts
    /// each cause on a line of its own.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let separator = if f.alternate() { "\n  <- " } else { " <- " };
        for (i, e) in self.chain().enumerate() {
            if i > 0 {
                f.write_str(separator)?;
            }
            e.fmt_one(f)?;
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
        self.cause()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<ErrorCode> for Error {
    fn from(code: ErrorCode) -> Error {
        Error::new(code)
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Error {
        Error::io(&err)
    }
}

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A message that could not be sent, handed back to the caller with the reason.
#[derive(thiserror::Error)]
#[error("message not sent: {error}")]
pub struct SendError<M> {
    /// The message, returned unchanged.
    pub message: M,
    /// Why it was not sent.
    pub error: Error,
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SendError({})", self.error)
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

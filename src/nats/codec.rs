//! What crosses the wire: [`Wire`] types, the [`Codec`] that turns them into
//! bytes ([`Json`] by default), and how an [`Error`] travels in a reply.

use crate::error::{Error, ErrorCode};
use async_nats::Subject;
use bytes::{BufMut, Bytes, BytesMut};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A message type that crosses the wire: a `serde` type with a stable name.
///
/// The name is part of the protocol: a request of type `R` to service `calc`
/// travels on the subject `<prefix>.svc.calc.<R::NAME>`, so both sides must
/// agree on it (and not on a Rust path that a refactoring would change). It is
/// one or more subject tokens: letters, digits, `-`, `_`, separated by dots.
///
/// ```
/// use commutator::nats::Wire;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Ping {
///     seq: u64,
/// }
/// impl Wire for Ping {
///     const NAME: &'static str = "demo.Ping";
/// }
/// ```
pub trait Wire: Serialize + DeserializeOwned + Send + 'static {
    /// The stable wire name.
    const NAME: &'static str;
}

/// Turns wire types into bytes and back; [`Json`] is the default.
///
/// A codec must not panic: a value it cannot encode, or bytes it cannot
/// decode, is an [`ErrorCode::Codec`] error (see [`codec_error`]). It is
/// shared by the bridge thread and the localities (`Send + Sync`).
pub trait Codec: Send + Sync + 'static {
    /// Encodes a value.
    fn encode<T: Serialize + ?Sized>(&self, value: &T) -> Result<Bytes, Error>;
    /// Decodes a value of type `T`.
    fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, Error>;
    /// Encodes a value at the end of `buf`, where an [`Export`](super::Export)
    /// packs the messages it publishes (many to one allocation). By default
    /// [`encode`](Codec::encode) and a copy; a codec that can write into a
    /// buffer saves the copy and the allocation. On an error `buf` may hold
    /// part of the value: the caller drops it.
    fn encode_into<T: Serialize + ?Sized>(
        &self,
        value: &T,
        buf: &mut BytesMut,
    ) -> Result<(), Error> {
        buf.extend_from_slice(&self.encode(value)?);
        Ok(())
    }
}

/// The default codec: JSON (`serde_json`), readable with `nats sub` and by
/// clients in other languages.
#[derive(Clone, Copy, Debug, Default)]
pub struct Json;

impl Codec for Json {
    fn encode<T: Serialize + ?Sized>(&self, value: &T) -> Result<Bytes, Error> {
        serde_json::to_vec(value)
            .map(Bytes::from)
            .map_err(|e| codec_error("encode", std::any::type_name::<T>(), e))
    }

    fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, Error> {
        serde_json::from_slice(bytes)
            .map_err(|e| codec_error("decode", std::any::type_name::<T>(), e))
    }

    fn encode_into<T: Serialize + ?Sized>(
        &self,
        value: &T,
        buf: &mut BytesMut,
    ) -> Result<(), Error> {
        serde_json::to_writer(buf.writer(), value)
            .map_err(|e| codec_error("encode", std::any::type_name::<T>(), e))
    }
}

/// The room a [`Pack`] makes when it runs low: what an actor publishes
/// shares allocations of this size.
pub(crate) const PACK: usize = 16 * 1024;

/// Where a bridge actor encodes what it publishes (payloads, reply
/// subjects): each is split off as its own `Bytes`, many sharing one
/// allocation of [`PACK`] bytes, freed when the client has sent them all.
/// The client frees what it sent on the bridge thread, and glibc frees an
/// allocation made on another thread slowly, under a lock the allocating
/// thread contends for: one such free per pack rather than one per message.
#[derive(Default)]
pub(crate) struct Pack(BytesMut);

impl Pack {
    fn room(&mut self) {
        if self.0.capacity() < PACK / 16 {
            // Reuses the allocation if everything cut from it was sent.
            self.0.reserve(PACK);
        }
    }

    fn cut(&mut self) -> Bytes {
        let cut = self.0.split().freeze();
        if cut.len() > PACK {
            // A large one takes its allocation with it (the pack would
            // keep it alive for the small ones).
            self.0 = BytesMut::new();
        }
        cut
    }

    /// `value` encoded by `codec`, on its own.
    pub(crate) fn encode<C: Codec, T: Serialize + ?Sized>(
        &mut self,
        codec: &C,
        value: &T,
    ) -> Result<Bytes, Error> {
        self.room();
        match codec.encode_into(value, &mut self.0) {
            Ok(()) => Ok(self.cut()),
            Err(e) => {
                self.0.clear();
                Err(e)
            }
        }
    }

    /// A subject written by `text` (`format_args!`).
    pub(crate) fn subject(&mut self, text: fmt::Arguments<'_>) -> Subject {
        self.room();
        let _ = fmt::Write::write_fmt(&mut self.0, text);
        // Formatted text is UTF-8: the error cannot happen.
        Subject::from_utf8(self.cut()).unwrap_or_else(|_| Subject::from_static(""))
    }
}

/// An [`ErrorCode::Codec`] error: `what` (encode, decode) failed for type
/// `ty`, caused by `source` (for codecs of your own).
pub fn codec_error(
    what: &str,
    ty: &str,
    source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
) -> Error {
    Error::new(ErrorCode::Codec)
        .with_context(format!("nats: cannot {what} {ty}"))
        .with_source(source)
}

/// A reply as it travels: the value, or the server's error.
#[derive(Serialize, Deserialize)]
pub(crate) enum WireReply<T> {
    Ok(T),
    Err(WireError),
}

/// The same, borrowed, for encoding without a copy.
#[derive(Serialize)]
pub(crate) enum WireReplyRef<'a, T> {
    Ok(&'a T),
    Err(WireError),
}

/// An [`Error`] as it travels: its `Error` links, top first, and the text of
/// a cause of another type below them. At most [`MAX_LEVELS`] links.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct WireError {
    levels: Vec<WireLevel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct WireLevel {
    code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context: Option<String>,
}

/// How many links of an error chain travel (the rest is summed up in one line).
const MAX_LEVELS: usize = 32;

/// Every code, to find one by name (a name not here decodes as `Failure`,
/// with the name kept in the context).
const CODES: &[ErrorCode] = &[
    ErrorCode::Normal,
    ErrorCode::SupervisorShutdown,
    ErrorCode::ChildDown,
    ErrorCode::ChildInitFailed,
    ErrorCode::InitFailed,
    ErrorCode::InitTimeout,
    ErrorCode::ShutdownTimeout,
    ErrorCode::UnlinkRequested,
    ErrorCode::RestartLimit,
    ErrorCode::FailureEscalation,
    ErrorCode::Failure,
    ErrorCode::RequestTimeout,
    ErrorCode::Cancelled,
    ErrorCode::AlreadyRegistered,
    ErrorCode::UnknownService,
    ErrorCode::LinkFailed,
    ErrorCode::Panicked,
    ErrorCode::LocalityLost,
    ErrorCode::SupervisorShuttingDown,
    ErrorCode::NotASupervisor,
    ErrorCode::ForeignAddress,
    ErrorCode::StaleAddress,
    ErrorCode::LocalityFinished,
    ErrorCode::TokenClash,
    ErrorCode::NotRegistered,
    ErrorCode::AlreadyRegisteredOnPoll,
    ErrorCode::UnknownSubscription,
    ErrorCode::InvalidArgument,
    ErrorCode::Io,
    ErrorCode::ActorFinished,
    ErrorCode::Unreachable,
    ErrorCode::Unauthorized,
    ErrorCode::BufferFull,
    ErrorCode::Codec,
];

fn code_name(code: ErrorCode) -> String {
    format!("{code:?}")
}

fn code_by_name(name: &str) -> Option<ErrorCode> {
    CODES.iter().copied().find(|c| code_name(*c) == name)
}

/// A cause of another type, as text (it cannot travel as itself).
#[derive(Debug)]
struct RemoteCause(String);

impl fmt::Display for RemoteCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RemoteCause {}

impl WireError {
    /// The error as it will travel.
    pub(crate) fn from_error(error: &Error) -> WireError {
        let mut levels = Vec::new();
        let mut last = error;
        let mut cut = 0usize;
        for e in error.chain() {
            if levels.len() < MAX_LEVELS {
                levels.push(WireLevel {
                    code: code_name(e.code()),
                    context: e.context().map(str::to_string),
                });
            } else {
                cut += 1;
            }
            last = e;
        }
        let foreign = std::error::Error::source(last).map(|s| s.to_string());
        let detail = match (cut, foreign) {
            (0, foreign) => foreign,
            (n, _) => Some(format!("... {n} more causes")),
        };
        WireError { levels, detail }
    }

    /// The error again: the same codes and contexts, link by link; a cause of
    /// another type comes back as its text.
    pub(crate) fn into_error(self) -> Error {
        let mut below: Option<Error> = None;
        for level in self.levels.into_iter().rev() {
            let (code, context) = match code_by_name(&level.code) {
                Some(code) => (code, level.context),
                None => {
                    let unknown = format!(
                        "{} (unknown code {})",
                        level.context.unwrap_or_default(),
                        level.code
                    );
                    (ErrorCode::Failure, Some(unknown))
                }
            };
            let mut error = Error::new(code);
            if let Some(context) = context {
                error = error.with_context(context);
            }
            error = match below.take() {
                Some(cause) => error.caused_by(cause),
                None => match &self.detail {
                    Some(detail) => error.with_source(RemoteCause(detail.clone())),
                    None => error,
                },
            };
            below = Some(error);
        }
        below.unwrap_or_else(|| {
            Error::new(ErrorCode::Failure).with_context("nats: an empty error arrived")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A codec with only `encode` and `decode`: the provided `encode_into`.
    struct Plain;
    impl Codec for Plain {
        fn encode<T: Serialize + ?Sized>(&self, value: &T) -> Result<Bytes, Error> {
            Json.encode(value)
        }
        fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, Error> {
            Json.decode(bytes)
        }
    }

    /// Not JSON: a map whose keys are not strings.
    fn unencodable() -> std::collections::HashMap<(u8, u8), u8> {
        [((1, 2), 3)].into_iter().collect()
    }

    #[test]
    fn encode_into_appends_what_encode_makes_and_fails_as_it_does() {
        let value = ("temperature", 21.5, vec![1u8, 2]);
        let mut buf = BytesMut::from(&b"head"[..]);
        Json.encode_into(&value, &mut buf).unwrap();
        let mut plain = BytesMut::from(&b"head"[..]);
        Plain.encode_into(&value, &mut plain).unwrap();
        let expected = [&b"head"[..], &Json.encode(&value).unwrap()].concat();
        assert_eq!(&buf[..], &expected[..]);
        assert_eq!(&plain[..], &expected[..]);
        for codec_error in [
            Json.encode_into(&unencodable(), &mut buf).unwrap_err(),
            Plain.encode_into(&unencodable(), &mut plain).unwrap_err(),
        ] {
            assert_eq!(codec_error.code(), ErrorCode::Codec);
        }
    }

    #[test]
    fn an_error_chain_travels_code_by_code_with_its_foreign_cause_as_text() {
        let io = std::io::Error::other("disk on fire");
        let error = Error::new(ErrorCode::Failure)
            .with_context("db#3")
            .caused_by(
                Error::new(ErrorCode::Io)
                    .with_context("write")
                    .with_source(io),
            );
        let wire = WireError::from_error(&error);
        let text = serde_json::to_string(&wire).expect("encodes");
        let back: WireError = serde_json::from_str(&text).expect("decodes");
        let again = back.into_error();
        assert_eq!(format!("{again:#}"), format!("{error:#}"));
        assert_eq!(again.code(), ErrorCode::Failure);
        assert_eq!(again.cause().map(Error::code), Some(ErrorCode::Io));
    }

    #[test]
    fn every_code_is_found_by_its_name() {
        for code in CODES {
            assert_eq!(code_by_name(&code_name(*code)), Some(*code));
        }
        let strange = WireError {
            levels: vec![WireLevel {
                code: "Martian".into(),
                context: Some("x".into()),
            }],
            detail: None,
        };
        let e = strange.into_error();
        assert_eq!(e.code(), ErrorCode::Failure);
        assert_eq!(e.context(), Some("x (unknown code Martian)"));
    }

    #[test]
    fn a_very_long_chain_is_cut() {
        let mut error = Error::new(ErrorCode::Failure);
        for _ in 0..100 {
            error = Error::new(ErrorCode::ChildDown).caused_by(error);
        }
        let wire = WireError::from_error(&error);
        assert_eq!(wire.levels.len(), MAX_LEVELS);
        let back = wire.into_error();
        assert_eq!(back.chain().count(), MAX_LEVELS);
    }
}

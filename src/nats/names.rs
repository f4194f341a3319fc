//! Names across processes: the subjects of a service, announcing it, and
//! discovering it (once, or waiting for it to appear).
//!
//! A service `calc` served under prefix `p` (see [`Options::prefix`]) is:
//!
//! | subject | who listens | what for |
//! |---|---|---|
//! | `p.svc.calc.<type>` | every instance, in the queue group `p.svc.calc` | requests of wire type `<type>`; one instance gets each |
//! | `p.who.calc` | every instance | discovery: each answers with its [`ServiceInfo`] |
//! | `p.announce.calc` | those who wait for it | an instance publishes its [`ServiceInfo`] here when it starts serving |
//! | `p.cancel.calc` | every instance | a requester's cancellation: the payload is the request's reply subject; the instance serving it cancels its local request |
//!
//! Discovery asks `p.who.calc`; NATS answers "no responders" at once when
//! nobody serves the name. A discovery that waits subscribes to
//! `p.announce.calc` first, so an instance that starts meanwhile is seen, and
//! asks again now and then (a node of a cluster learns of a new instance's
//! subscriptions a moment after the node it is connected to).
//!
//! [`Options::prefix`]: super::Options::prefix

use super::codec::Codec;
use super::connection::{Nats, Shared};
use crate::error::{Error, ErrorCode, Result};
use async_nats::client::RequestErrorKind;
use async_nats::{Client, Request};
use futures_util::StreamExt;
use futures_util::future::{Either, select};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// What an instance of a service says about itself when discovered or when
/// it starts serving.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceInfo {
    /// The service's name.
    pub name: String,
    /// The wire names of the request types it serves.
    pub types: Vec<String>,
    /// Which instance answered: its locality and actor (`billing/service#3`).
    pub instance: String,
}

/// `true` for one subject token: letters, digits, `-` and `_`.
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `true` for tokens separated by dots (a wire name).
pub(crate) fn is_dotted(s: &str) -> bool {
    s.split('.').all(is_token)
}

/// Checks a service name (one token).
pub(crate) fn check_service_name(name: &str) -> Result<()> {
    if is_token(name) {
        Ok(())
    } else {
        Err(Error::new(ErrorCode::InvalidArgument).with_context(format!(
            "nats: service name {name:?} is not one subject token (letters, digits, '-', '_')"
        )))
    }
}

/// Checks a wire name (dotted tokens).
pub(crate) fn check_wire_name(name: &str) -> Result<()> {
    if is_dotted(name) {
        Ok(())
    } else {
        Err(Error::new(ErrorCode::InvalidArgument).with_context(format!(
            "nats: wire name {name:?} is not subject tokens separated by dots"
        )))
    }
}

pub(crate) fn svc_subject(prefix: &str, name: &str, wire: &str) -> String {
    format!("{prefix}.svc.{name}.{wire}")
}

pub(crate) fn svc_wildcard(prefix: &str, name: &str) -> String {
    format!("{prefix}.svc.{name}.>")
}

pub(crate) fn svc_group(prefix: &str, name: &str) -> String {
    format!("{prefix}.svc.{name}")
}

pub(crate) fn who_subject(prefix: &str, name: &str) -> String {
    format!("{prefix}.who.{name}")
}

pub(crate) fn cancel_subject(prefix: &str, name: &str) -> String {
    format!("{prefix}.cancel.{name}")
}

pub(crate) fn announce_subject(prefix: &str, name: &str) -> String {
    format!("{prefix}.announce.{name}")
}

/// A failed NATS call as an [`Error`].
pub(crate) fn transport_error(
    what: String,
    source: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::new(ErrorCode::Unreachable)
        .with_context(what)
        .with_source(source)
}

/// Waits until the server has processed everything this client sent before:
/// a request to a subject nobody serves, which the server answers with "no
/// responders" once it got there.
pub(crate) async fn round_trip(client: &Client) -> Result<()> {
    let subject = client.new_inbox(); // nobody listens there
    let request = Request::new().timeout(Some(Duration::from_secs(10)));
    match client.send_request(subject, request).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == RequestErrorKind::NoResponders => Ok(()),
        Err(e) => Err(transport_error("nats: no answer from the server".into(), e)),
    }
}

/// Finds an instance of service `name`; with `wait`, keeps looking until one
/// appears (the caller puts a deadline on it).
pub(crate) async fn discover<C: Codec>(
    shared: Arc<Shared<C>>,
    name: String,
    wait: bool,
) -> Result<ServiceInfo> {
    let client = shared.client.clone();
    let who = who_subject(&shared.prefix, &name);
    let mut announcements = if wait {
        let subject = announce_subject(&shared.prefix, &name);
        let subscription = client
            .subscribe(subject.clone())
            .await
            .map_err(|e| transport_error(format!("nats: cannot subscribe to {subject}"), e))?;
        Some(subscription)
    } else {
        None
    };
    let mut pause = Duration::from_millis(20);
    loop {
        let request = Request::new().timeout(Some(Duration::from_secs(2)));
        match client.send_request(who.clone(), request).await {
            Ok(answer) => return shared.codec.decode::<ServiceInfo>(&answer.payload),
            Err(e)
                if matches!(
                    e.kind(),
                    RequestErrorKind::NoResponders | RequestErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(transport_error(format!("nats: cannot ask {who}"), e)),
        }
        let Some(announcements) = announcements.as_mut() else {
            return Err(Error::new(ErrorCode::UnknownService).with_context(format!(
                "nats: no instance of service {name:?} answers on {who}"
            )));
        };
        let sleep = std::pin::pin!(tokio::time::sleep(pause));
        if let Either::Left((Some(announcement), _)) = select(announcements.next(), sleep).await
            && let Ok(info) = shared.codec.decode::<ServiceInfo>(&announcement.payload)
        {
            return Ok(info);
        }
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

impl<C: Codec> Nats<C> {
    /// Finds an instance of service `name` (see [`Nats::service`]), waiting up
    /// to `wait` for one to appear (`Duration::ZERO`: ask once). Blocking: for
    /// a program's main thread and tests; an actor uses
    /// [`Nats::remote`] with [`Remote::wait`](super::Remote::wait) instead.
    ///
    /// Errors: [`ErrorCode::UnknownService`] if none answered in time,
    /// [`ErrorCode::InvalidArgument`] for a name that is not one subject
    /// token, [`ErrorCode::Unreachable`] if the connection failed.
    pub fn discover(&self, name: &str, wait: Duration) -> Result<ServiceInfo> {
        check_service_name(name)?;
        let shared = self.shared.clone();
        let owned = name.to_string();
        let found = self.block_on(async move {
            let search = discover(shared, owned, !wait.is_zero());
            match tokio::time::timeout(wait.max(Duration::from_secs(2)), search).await {
                Ok(found) => found,
                Err(_) => Err(Error::new(ErrorCode::UnknownService)),
            }
        })?;
        match found {
            Some(Ok(info)) => Ok(info),
            Some(Err(e)) if e.code() == ErrorCode::UnknownService => {
                Err(Error::new(ErrorCode::UnknownService).with_context(format!(
                    "nats: no instance of service {name:?} within {wait:?}"
                )))
            }
            Some(Err(e)) => Err(e),
            None => {
                Err(Error::new(ErrorCode::Unreachable)
                    .with_context("nats: the bridge thread stopped"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_subject_tokens() {
        assert!(is_token("calc-2_b"));
        assert!(!is_token(""));
        assert!(!is_token("a.b"));
        assert!(!is_token("a*"));
        assert!(!is_token("a b"));
        assert!(is_dotted("demo.Ping"));
        assert!(!is_dotted("demo..Ping"));
        assert!(!is_dotted("demo.>"));
        assert!(check_service_name("x y").is_err());
        assert_eq!(svc_subject("p", "calc", "demo.Sq"), "p.svc.calc.demo.Sq");
    }
}

//! Publish and subscribe across processes: [`Export`] publishes what is sent
//! to a local address, [`Import`] delivers a subject's messages to one.

use super::codec::{Codec, Json, Pack, Wire};
use super::connection::{Counters, Nats};
use super::names::{round_trip, transport_error};
use super::pump::{Ack, BRIDGE_RESOURCE, Handoff, Task, Window, pump};
use crate::actor::{Actor, ActorState};
use crate::address::Address;
use crate::context::Context;
use crate::error::{Error, ErrorCode, Result};
use bytes::Bytes;
use std::fmt;
use std::sync::Arc;

/// A message that could not cross the bridge, delivered as an ordinary
/// message to the bridged address (subscribe to `DeadLetter` there to see
/// them): bytes on an imported subject that do not decode as its type, or a
/// message an [`Export`] could not publish (buffer full, cannot encode).
/// Each is also counted in [`Stats::dead_letters`](super::Stats) and logged.
#[derive(Debug, Clone)]
pub struct DeadLetter {
    subject: String,
    payload: Bytes,
    error: Error,
}

impl DeadLetter {
    /// The subject it came on, or was to be published on.
    pub fn subject(&self) -> &str {
        &self.subject
    }
    /// Its bytes (empty if it could not even be encoded).
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }
    /// Why it did not cross: [`ErrorCode::Codec`], [`ErrorCode::BufferFull`], ...
    pub fn error(&self) -> &Error {
        &self.error
    }
}

/// The result of a bridge task that an actor's init waits for.
struct Ready(Result<()>);

/// Rejects subjects that cannot be published on (empty, blanks, wildcards).
fn check_publish_subject(subject: &str) -> Result<()> {
    let ok = !subject.is_empty()
        && subject
            .split('.')
            .all(|t| !t.is_empty() && t != "*" && t != ">")
        && !subject.chars().any(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(Error::new(ErrorCode::InvalidArgument)
            .with_context(format!("nats: cannot publish on subject {subject:?}")))
    }
}

/// Rejects subjects that cannot be subscribed to.
fn check_subscribe_subject(subject: &str) -> Result<()> {
    let tokens: Vec<&str> = subject.split('.').collect();
    let ok = !subject.chars().any(char::is_whitespace)
        && tokens.iter().all(|t| !t.is_empty())
        && tokens.iter().take(tokens.len() - 1).all(|t| *t != ">");
    if ok {
        Ok(())
    } else {
        Err(Error::new(ErrorCode::InvalidArgument)
            .with_context(format!("nats: cannot subscribe to subject {subject:?}")))
    }
}

type Route<C> = Box<dyn FnOnce(&mut Context<'_, Export<C>>, &Address) -> Result<()>>;

/// An actor that publishes on NATS the messages sent to a local address:
/// made by [`Nats::export`], configured with [`message`](Export::message)
/// (one subject per message type), spawned like any actor.
///
/// The address is the actor's own main address unless [`on`](Export::on)
/// names another address of its locality. Every local sender keeps its
/// order on the wire (one connection, one publisher). A message that cannot
/// be published (the buffer is full, it cannot be encoded) is dropped: it
/// comes back to the address as a [`DeadLetter`].
///
/// ```no_run
/// use commutator::nats::{Nats, Options, Wire};
/// use commutator::prelude::*;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Temperature(f32);
/// impl Wire for Temperature {
///     const NAME: &'static str = "demo.Temperature";
/// }
///
/// let nats = Nats::connect(Options::new("nats://127.0.0.1:4222"))?;
/// let mut system = System::new()?;
/// let root = system.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
/// let export = nats.export().message::<Temperature>("sensors.kitchen");
/// let kitchen = system.spawn(&root, export).finish()?;
/// system.send(&kitchen, Temperature(21.5))?; // published on sensors.kitchen
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Export<C: Codec = Json> {
    nats: Nats<C>,
    on: Option<Address>,
    routes: Vec<Route<C>>,
    /// `true` after a refusal, until a publish succeeds (one warning per outage).
    refusing: bool,
    /// Where payloads are encoded (a burst's share allocations).
    pack: Pack,
}

impl<C: Codec> fmt::Debug for Export<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Export")
            .field("on", &self.on)
            .finish_non_exhaustive()
    }
}

impl<C: Codec> Nats<C> {
    /// An actor that publishes messages sent to an address; see [`Export`].
    pub fn export(&self) -> Export<C> {
        Export {
            nats: self.clone(),
            on: None,
            routes: Vec::new(),
            refusing: false,
            pack: Pack::default(),
        }
    }

    /// An actor that delivers the messages of `subject` (wildcards allowed)
    /// to `to`, an address of the locality it is spawned on, as `M`; see
    /// [`Import`].
    pub fn import<M: Wire>(&self, subject: impl Into<String>, to: &Address) -> Import<C> {
        let forward: Forward<C> = Arc::new(
            |codec: &C,
             stats: &Counters,
             to: &Address,
             message: async_nats::Message,
             handoff: &mut Handoff| match codec.decode::<M>(&message.payload) {
                Ok(m) => handoff.send(to, m),
                Err(error) => {
                    let subject = message.subject.to_string();
                    Counters::add(&stats.dead_letters, 1);
                    tracing::warn!(
                        subject,
                        error = error.as_dyn_error(),
                        "nats: undecodable message, a dead letter"
                    );
                    let letter = DeadLetter {
                        subject,
                        payload: message.payload,
                        error,
                    };
                    handoff.send(to, letter)
                }
            },
        );
        Import {
            nats: self.clone(),
            subject: subject.into(),
            queue_group: None,
            to: to.clone(),
            forward,
            window: Arc::new(Window::default()),
            task: Task::default(),
        }
    }
}

impl<C: Codec> Export<C> {
    /// Publishes the messages of type `M` sent to the address on `subject`
    /// (no wildcards).
    pub fn message<M: Wire>(mut self, subject: impl Into<String>) -> Self {
        let subject = async_nats::Subject::from(subject.into());
        self.routes.push(Box::new(move |ctx, address| {
            check_publish_subject(&subject)?;
            let at = address.clone();
            ctx.subscribe_on(
                address,
                move |this: &mut Export<C>, m: &M, ctx: &mut Context<'_, Export<C>>| {
                    this.publish(&subject, m, &at, ctx);
                },
            )?;
            Ok(())
        }));
        self
    }

    /// Listens on `address` (an address of the locality it is spawned on)
    /// instead of its own main address.
    pub fn on(mut self, address: &Address) -> Self {
        self.on = Some(address.clone());
        self
    }

    fn publish<M: Wire>(
        &mut self,
        subject: &async_nats::Subject,
        m: &M,
        at: &Address,
        ctx: &mut Context<'_, Self>,
    ) {
        let shared = &self.nats.shared;
        let sent = self
            .pack
            .encode(&shared.codec, m)
            .and_then(|payload| shared.publish_on(subject, None, payload));
        match sent {
            Ok(()) => self.refusing = false,
            Err(error) => {
                let subject = subject.as_str();
                // The payload went with the refused publish: encoded again
                // for the dead letter (a refusal is the rare path).
                let payload = match error.code() {
                    ErrorCode::Codec => Bytes::new(),
                    _ => shared.codec.encode(m).unwrap_or_default(),
                };
                Counters::add(&shared.stats.dead_letters, 1);
                if !std::mem::replace(&mut self.refusing, true) {
                    tracing::warn!(
                        subject,
                        error = error.as_dyn_error(),
                        "nats: not published, a dead letter"
                    );
                }
                let letter = DeadLetter {
                    subject: subject.to_string(),
                    payload,
                    error,
                };
                ctx.send(at, letter);
            }
        }
    }
}

impl<C: Codec> Actor for Export<C> {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let address = self.on.clone().unwrap_or_else(|| ctx.address().clone());
        for route in std::mem::take(&mut self.routes) {
            if let Err(e) = route(ctx, &address) {
                ctx.fail(e);
                return;
            }
        }
    }
}

type Forward<C> =
    Arc<dyn Fn(&C, &Counters, &Address, async_nats::Message, &mut Handoff) -> bool + Send + Sync>;

/// An actor that subscribes to a NATS subject and delivers its messages to
/// a local address, as ordinary messages that every local subscriber of the
/// type there hears: made by [`Nats::import`], spawned like any actor on the
/// address's locality.
///
/// Its init finishes once the server has the subscription, so a message
/// published after that (on the same server; a cluster node learns of it a
/// moment later) arrives. Messages from one publisher arrive in the order
/// published. Bytes that do not decode arrive as a [`DeadLetter`] instead.
/// At most [`Options::window`](super::Options::window) messages are on their
/// way into the locality at a time. Shutting the actor down unsubscribes.
///
/// Errors (its init fails): [`ErrorCode::ForeignAddress`] if `to` is not of
/// its locality, [`ErrorCode::InvalidArgument`] for a subject that cannot be
/// subscribed to, [`ErrorCode::Unreachable`] if the server could not be
/// told.
pub struct Import<C: Codec = Json> {
    nats: Nats<C>,
    subject: String,
    queue_group: Option<String>,
    to: Address,
    forward: Forward<C>,
    window: Arc<Window>,
    task: Task,
}

impl<C: Codec> fmt::Debug for Import<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Import")
            .field("subject", &self.subject)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

impl<C: Codec> Import<C> {
    /// Joins a queue group: of all the subscribers in the group, one gets
    /// each message (load balancing), instead of every one.
    pub fn queue_group(mut self, group: impl Into<String>) -> Self {
        self.queue_group = Some(group.into());
        self
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) -> Result<()> {
        if self.to.locality_id() != ctx.address().locality_id() {
            return Err(Error::new(ErrorCode::ForeignAddress)
                .with_context(format!("nats: import to {} from another locality", self.to)));
        }
        check_subscribe_subject(&self.subject)?;
        let shared = self.nats.shared.clone();
        let (subject, group) = (self.subject.clone(), self.queue_group.clone());
        let (me, to, window, forward) = (
            ctx.address().clone(),
            self.to.clone(),
            self.window.clone(),
            self.forward.clone(),
        );
        let task = self.nats.shared.runtime.spawn(async move {
            let client = &shared.client;
            let subscribed = match group {
                Some(group) => client.queue_subscribe(subject.clone(), group).await,
                None => client.subscribe(subject.clone()).await,
            };
            let ready = match subscribed {
                Ok(subscription) => round_trip(client).await.map(|()| subscription),
                Err(e) => Err(transport_error(
                    format!("nats: cannot subscribe to {subject}"),
                    e,
                )),
            };
            let subscription = match ready {
                Ok(subscription) => subscription,
                Err(e) => {
                    let _ = me.send(Ready(Err(e)));
                    return;
                }
            };
            if me.send(Ready(Ok(()))).is_err() {
                return;
            }
            let stats = shared.stats.clone();
            let each = |message, handoff: &mut Handoff| {
                forward(&shared.codec, &shared.stats, &to, message, handoff)
            };
            pump(subscription, window, shared.window, me, stats, each).await;
        });
        self.task.set(task.abort_handle());
        Ok(())
    }
}

impl<C: Codec> Actor for Import<C> {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|this: &mut Self, ack: &Ack, _: &mut Context<'_, Self>| {
            this.window.ack(ack.0)
        });
        ctx.subscribe(|_: &mut Self, ready: &Ready, ctx: &mut Context<'_, Self>| {
            if ctx.state() >= ActorState::ShuttingDown {
                return;
            }
            let _ = ctx.release_resource(BRIDGE_RESOURCE);
            if let Err(e) = &ready.0 {
                ctx.fail(e.clone());
            }
        });
        ctx.acquire_resource(BRIDGE_RESOURCE);
        if let Err(e) = self.start(ctx) {
            let _ = ctx.release_resource(BRIDGE_RESOURCE);
            ctx.fail(e);
        }
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.task.abort();
        while ctx.resources_held(BRIDGE_RESOURCE) > 0 {
            let _ = ctx.release_resource(BRIDGE_RESOURCE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_checked() {
        assert!(check_publish_subject("a.b").is_ok());
        for bad in ["", "a..b", "a.*", "a.>", "a b", "."] {
            assert!(check_publish_subject(bad).is_err(), "{bad:?}");
        }
        assert!(check_subscribe_subject("a.*.c").is_ok());
        assert!(check_subscribe_subject("a.>").is_ok());
        for bad in ["", "a..b", "a.>.c", "a b"] {
            assert!(check_subscribe_subject(bad).is_err(), "{bad:?}");
        }
    }
}

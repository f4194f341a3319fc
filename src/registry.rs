//! The registry: an actor that maps names to addresses.
//!
//! A supervisor made with [`SupervisorConfig::with_registry`](crate::SupervisorConfig::with_registry)
//! spawns one as its first child, and its descendants use it through
//! [`Context::register_name`](crate::Context::register_name) and
//! [`Context::discover`](crate::Context::discover). It speaks plain requests,
//! so any actor may also talk to it directly.

use crate::actor::Actor;
use crate::address::Address;
use crate::context::Context;
use crate::error::{Error, ErrorCode};
use crate::request::{CancelRequest, Request, RequestMsg};
use std::collections::BTreeMap;

/// Registers `address` under `name`; fails with `AlreadyRegistered` if taken.
#[derive(Debug, Clone)]
pub struct Register {
    /// The name.
    pub name: String,
    /// The address to find under it.
    pub address: Address,
}

impl Request for Register {
    type Response = ();
}

/// Finds the address registered under `name`: fails with `UnknownService`,
/// or, with `wait`, answers when the name gets registered (a "promise").
#[derive(Debug, Clone)]
pub struct Discover {
    /// The name.
    pub name: String,
    /// Wait for the name instead of failing.
    pub wait: bool,
}

impl Request for Discover {
    type Response = Address;
}

/// Removes `name` if it is registered to `address` (a plain message, no reply).
#[derive(Debug, Clone)]
pub struct Deregister {
    /// The name.
    pub name: String,
    /// The address it must be registered to.
    pub address: Address,
}

/// The registry actor: a map from names to addresses, for one subtree.
///
/// A supervisor built with
/// [`SupervisorConfig::with_registry`](crate::SupervisorConfig::with_registry)
/// spawns one as its first child (named `registry`), and the supervisor's
/// descendants use it unless their builder names another
/// ([`Builder::registry`](crate::Builder::registry)). Actors register with
/// [`Builder::register_as`](crate::Builder::register_as) or
/// [`Context::register_name`](crate::Context::register_name) and look names
/// up with [`Context::discover`](crate::Context::discover); both hold the
/// actor's init until the registry has answered. A name is deregistered when
/// its actor shuts down. The registry speaks plain requests
/// ([`Register`], [`Discover`]) and one message ([`Deregister`]), so an actor
/// may also talk to it directly, or a registry may be spawned like any actor.
///
/// # Examples
///
/// The user is spawned before the service it needs, and waits for the name:
///
/// ```
/// use commutator::*;
///
/// /// A service, found by name.
/// struct Clock;
/// impl Actor for Clock {}
///
/// #[derive(Default)]
/// struct User {
///     clock: Option<Address>,
/// }
/// impl Actor for User {
///     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
///         // Init waits for the answer; `wait()`: until the name is registered.
///         ctx.discover("clock").wait().then(|me: &mut Self, clock, _| {
///             me.clock = Some(clock.clone());
///         });
///     }
///     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
///         assert_eq!(self.clock.as_ref().map(Address::actor_name), Some("clock"));
///         ctx.shutdown_supervisor();
///     }
/// }
///
/// let mut system = System::new()?;
/// let root = system
///     .spawn_root(Supervisor)
///     .supervisor(SupervisorConfig::default().with_registry())
///     .finish()?;
/// system.spawn(&root, User::default()).finish()?;
/// system.spawn(&root, Clock).name("clock").register_as("clock").finish()?;
/// system.run()?;
/// # Ok::<(), commutator::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct Registry {
    names: BTreeMap<String, Address>,
    promises: BTreeMap<String, Vec<RequestMsg<Discover>>>,
}

impl Actor for Registry {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_register);
        ctx.subscribe(Self::on_discover);
        ctx.subscribe(Self::on_deregister);
        ctx.subscribe(Self::on_cancel);
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        for (name, waiting) in std::mem::take(&mut self.promises) {
            for q in waiting {
                ctx.reply_error(&q, unknown(&name, "registry shut down"));
            }
        }
    }
}

fn unknown(name: &str, why: &str) -> Error {
    Error::new(ErrorCode::UnknownService).with_context(format!("{name}: {why}"))
}

impl Registry {
    fn on_register(&mut self, q: &RequestMsg<Register>, ctx: &mut Context<'_, Self>) {
        let Register { name, address } = q.payload();
        if let Some(existing) = self.names.get(name) {
            let error = Error::new(ErrorCode::AlreadyRegistered)
                .with_context(format!("{name} -> {existing}"));
            ctx.reply_error(q, error);
            return;
        }
        tracing::debug!(%name, %address, "registered");
        self.names.insert(name.clone(), address.clone());
        ctx.reply(q, ());
        for waiting in self.promises.remove(name).unwrap_or_default() {
            ctx.reply(&waiting, address.clone());
        }
    }

    fn on_discover(&mut self, q: &RequestMsg<Discover>, ctx: &mut Context<'_, Self>) {
        let Discover { name, wait } = q.payload();
        match self.names.get(name) {
            Some(address) => ctx.reply(q, address.clone()),
            None if *wait => self
                .promises
                .entry(name.clone())
                .or_default()
                .push(q.clone()),
            None => ctx.reply_error(q, unknown(name, "not registered")),
        }
    }

    fn on_deregister(&mut self, d: &Deregister, _: &mut Context<'_, Self>) {
        if self.names.get(&d.name) == Some(&d.address) {
            tracing::debug!(name = %d.name, "deregistered");
            self.names.remove(&d.name);
        }
    }

    fn on_cancel(&mut self, c: &CancelRequest<Discover>, _: &mut Context<'_, Self>) {
        for waiting in self.promises.values_mut() {
            waiting.retain(|q| q.id() != c.id() || q.reply_to() != c.reply_to());
        }
        self.promises.retain(|_, waiting| !waiting.is_empty());
    }
}

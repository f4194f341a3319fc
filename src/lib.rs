//! # commutator
//!
//! An event-loop friendly actor micro-framework on [mio], after the C++
//! framework [rotor](https://github.com/basiliscos/cpp-rotor).
//!
//! ## The main types
//!
//! - A [`Locality`] is a sequential execution context: every message of a
//!   locality is delivered one at a time, on one thread, so actors need no locks.
//!   A [`System`] runs one locality on a `mio::Poll` of its own; or you embed a
//!   `Locality` in the mio loop you already have.
//! - An [`Actor`] is user code; it runs inside a supervisor and reacts to
//!   messages through handlers it subscribes with its [`Context`].
//! - An [`Address`] is a delivery point made by a locality. Any message
//!   (`M: Send + 'static`) can be sent to any address, and any actor can
//!   subscribe to any message type on any address (pub/sub).
//! - A supervisor is an actor built with [`Builder::supervisor`]: it owns
//!   children and composes their lifecycles, so a whole tree becomes
//!   OPERATIONAL, or shuts down, with no code from the user.
//!
//! ## Example
//!
//! A pinger and a ponger under one supervisor. The ponger publishes `Pong` on
//! its own address, where the pinger subscribed (pub/sub).
//!
//! ```
//! use commutator::prelude::*;
//!
//! struct Ping;
//! struct Pong;
//!
//! #[derive(Default)]
//! struct Ponger {
//!     me: Option<Address>,
//! }
//! impl Actor for Ponger {
//!     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         self.me = Some(ctx.address().clone());
//!         ctx.subscribe(Self::on_ping);
//!     }
//! }
//! impl Ponger {
//!     fn on_ping(&mut self, _: &Ping, ctx: &mut Context<'_, Self>) {
//!         if let Some(me) = &self.me {
//!             ctx.send(me, Pong);
//!         }
//!     }
//! }
//!
//! struct Pinger {
//!     ponger: Address,
//!     left: u32,
//! }
//! impl Actor for Pinger {
//!     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         let ponger = self.ponger.clone();
//!         if let Err(e) = ctx.subscribe_on(&ponger, Self::on_pong) {
//!             ctx.fail(e);
//!         }
//!     }
//!     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.send(&self.ponger, Ping);
//!     }
//! }
//! impl Pinger {
//!     fn on_pong(&mut self, _: &Pong, ctx: &mut Context<'_, Self>) {
//!         self.left -= 1;
//!         if self.left == 0 {
//!             ctx.shutdown_supervisor(); // the root goes, so `run` returns
//!         } else {
//!             ctx.send(&self.ponger, Ping);
//!         }
//!     }
//! }
//!
//! let mut system = System::new()?;
//! let root = system.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
//! let ponger = system.spawn(&root, Ponger::default()).finish()?;
//! system.spawn(&root, Pinger { ponger, left: 1000 }).finish()?;
//! system.run()?; // Ok: the tree shut down normally
//! # Ok::<(), commutator::Error>(())
//! ```
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]

mod actor;
mod address;
mod arena;
mod builder;
mod context;
mod error;
pub mod inspect;
mod io;
mod lifecycle;
mod locality;
mod message;
mod plugin;
mod registry;
mod request;
mod spawn;
mod subscription;
mod supervisor;
mod system;
mod timer;

pub use actor::{Actor, ActorConfig, ActorState};
pub use address::Address;
pub use builder::{Builder, Elsewhere, Here};
pub use context::{Context, Discovery, SubscriptionId};
pub use error::{Error, ErrorCode, Result, SendError};
pub use io::{Io, IoGuard, IoId};
pub use locality::{
    DEFAULT_BUDGET, Locality, LocalityHandle, RESERVED_TOKENS, Stats, ViolationAction,
};
pub use plugin::{Plugin, Vote};
pub use registry::{Deregister, Discover, Register, Registry};
pub use request::{CancelRequest, Request, RequestId, RequestMsg, Response};
pub use supervisor::restart::RestartPolicy;
pub use supervisor::{InitFailurePolicy, Supervisor, SupervisorConfig};
pub use system::{DEFAULT_SPIN, SYSTEM_WAKER, System};
pub use timer::TimerId;

/// README.md's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Re-export of the mio version commutator uses, so your loop shares it.
pub use mio;

/// The names most programs need: `use commutator::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Actor, ActorState, Address, Context, Error, ErrorCode, Locality, Request, RequestId,
        RequestMsg, Response, Supervisor, SupervisorConfig, System, TimerId,
    };
}

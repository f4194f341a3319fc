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
//! ```
//! use commutator::prelude::*;
//!
//! struct Ping;
//! struct Pong;
//!
//! struct Ponger;
//! impl Actor for Ponger {
//!     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.subscribe(Self::on_ping);
//!     }
//! }
//! impl Ponger {
//!     // Publishes the answer on its own address, for whoever listens there.
//!     fn on_ping(&mut self, _: &Ping, ctx: &mut Context<'_, Self>) {
//!         let me = ctx.address().clone();
//!         ctx.send(&me, Pong);
//!     }
//! }
//!
//! struct Pinger { ponger: Address, left: u32 }
//! impl Actor for Pinger {
//!     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         let ponger = self.ponger.clone();
//!         ctx.subscribe_on(&ponger, Self::on_pong).expect("a live local address");
//!     }
//!     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.send(&self.ponger, Ping);
//!     }
//! }
//! impl Pinger {
//!     fn on_pong(&mut self, _: &Pong, ctx: &mut Context<'_, Self>) {
//!         self.left -= 1;
//!         if self.left == 0 {
//!             ctx.shutdown_supervisor();
//!         } else {
//!             ctx.send(&self.ponger, Ping);
//!         }
//!     }
//! }
//!
//! let mut system = System::new()?;
//! let root = system.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
//! let ponger = system.spawn(&root, Ponger).finish()?;
//! system.spawn(&root, Pinger { ponger, left: 3 }).finish()?;
//! system.run()?;
//! # Ok::<(), commutator::Error>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations, rust_2018_idioms, unreachable_pub)]

mod actor;
mod address;
mod arena;
mod builder;
mod context;
mod error;
pub mod inspect;
mod lifecycle;
mod locality;
mod message;
mod subscription;
mod supervisor;
mod system;
mod timer;

pub use actor::{Actor, ActorConfig, ActorState};
pub use address::Address;
pub use builder::Builder;
pub use context::{Context, SubscriptionId};
pub use error::{Error, ErrorCode, Result, SendError};
pub use locality::{Locality, Stats, DEFAULT_BUDGET, RESERVED_TOKENS};
pub use supervisor::{InitFailurePolicy, Supervisor, SupervisorConfig};
pub use system::{System, SYSTEM_WAKER};
pub use timer::TimerId;

/// Re-export of the mio version commutator uses, so your loop shares it.
pub use mio;

/// The names most programs need: `use commutator::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Actor, ActorState, Address, Context, Error, ErrorCode, Locality, Supervisor, SupervisorConfig, System,
        TimerId,
    };
}

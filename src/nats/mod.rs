//! Addresses across processes and machines, over a NATS server or cluster
//! (feature `nats`).
//!
//! A bridge, not a network stack: NATS carries commutator's messages,
//! requests and names between processes; async-nats is the client. One
//! [`Nats`] connection serves a process; four kinds of bridge actors, spawned
//! into the supervision tree like any actor, connect local addresses to it:
//!
//! | actor | made by | what it does |
//! |---|---|---|
//! | [`Export`] | [`Nats::export`] | publishes the messages sent to a local address on a subject |
//! | [`Import`] | [`Nats::import`] | delivers a subject's messages to a local address |
//! | [`Service`] | [`Nats::service`] | serves requests of other processes by asking a local actor, under a name |
//! | [`Remote`] | [`Nats::remote`] | a local stand-in for a service of another process: requests sent to it go there |
//!
//! What crosses the wire is a [`Wire`] type (`serde`, with a stable name),
//! encoded by a [`Codec`] ([`Json`] by default). The connection runs on a
//! bridge thread of its own (a small tokio runtime); it hands messages to
//! localities through their ordinary inbox, so a locality stays one thread.
//!
//! Core NATS delivers **at most once**: a message published while no
//! subscriber listens, or lost with a server that goes down, is gone. Order
//! is kept from one publisher to one subscriber. `docs/nats.md` (in the
//! repository) describes the subjects, the faults and what NATS does and does
//! not keep; `docs/guarantees-extended.md` lists each delivery semantic with its test.
//!
//! # Example
//!
//! A service in one process, a requester in another (here both in one, on two
//! connections); `examples/nats_ping_pong.rs` is the same across processes.
//!
//! ```no_run
//! use commutator::nats::{Nats, Options, Wire};
//! use commutator::prelude::*;
//! use serde::{Deserialize, Serialize};
//! use std::time::Duration;
//!
//! #[derive(Serialize, Deserialize)]
//! struct Square(u64);
//! impl Wire for Square {
//!     const NAME: &'static str = "demo.Square";
//! }
//! impl Request for Square {
//!     type Response = u64;
//! }
//!
//! struct Calculator;
//! impl Actor for Calculator {
//!     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.subscribe(|_: &mut Self, q: &RequestMsg<Square>, ctx: &mut Context<'_, Self>| {
//!             ctx.reply(q, q.payload().0 * q.payload().0)
//!         });
//!     }
//! }
//!
//! struct Asker {
//!     calculator: Address,
//! }
//! impl Actor for Asker {
//!     fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.subscribe(|_: &mut Self, r: &Response<Square>, ctx: &mut Context<'_, Self>| {
//!             assert_eq!(r.result().ok(), Some(&49));
//!             ctx.shutdown_supervisor();
//!         });
//!     }
//!     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.request(&self.calculator, Square(7), Duration::from_secs(5));
//!     }
//! }
//!
//! // The serving process.
//! let serving = Nats::connect(Options::new("nats://127.0.0.1:4222"))?;
//! let server = std::thread::spawn(move || -> commutator::Result<()> {
//!     let mut system = System::named("server")?;
//!     let root = system.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
//!     let calculator = system.spawn(&root, Calculator).finish()?;
//!     system.spawn(&root, serving.service("calc", &calculator).request::<Square>()).finish()?;
//!     system.run()
//! });
//!
//! // The asking process: the remote waits up to 10 s for "calc" to appear.
//! let asking = Nats::connect(Options::new("nats://127.0.0.1:4222"))?;
//! let mut system = System::named("client")?;
//! let root = system.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
//! let remote = asking.remote("calc").request::<Square>().wait(Duration::from_secs(10));
//! let calculator = system.spawn(&root, remote).finish()?;
//! system.spawn(&root, Asker { calculator }).finish()?;
//! system.run()?;
//! # drop(server);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bridge;
mod codec;
mod connection;
mod names;
mod options;
mod pubsub;
mod pump;
mod request;
mod service;
mod spin;

pub use codec::{Codec, Json, Wire, codec_error};
pub use connection::{Nats, Stats};
pub use names::ServiceInfo;
pub use options::{DEFAULT_BUFFER, DEFAULT_PREFIX, DEFAULT_WINDOW, Options};
pub use pubsub::{DeadLetter, Export, Import};
pub use request::Remote;
pub use service::{DEFAULT_SERVICE_TIMEOUT, Service};

//! # commutator
//!
//! An event-loop friendly actor micro-framework on [mio], after the C++
//! framework [rotor](https://github.com/basiliscos/cpp-rotor): sequential
//! localities, addresses with pub/sub, request/response with a timeout per
//! request, an asynchronous lifecycle voted on by plugins, and supervisor
//! trees written in code, on a loop of its own or on yours.
//!
//! New to commutator? The [tutorial](guide::tutorial) goes from `cargo new`
//! to two actors that find each other through the registry and talk with
//! requests that time out; `examples/tutorial.rs` is the finished program.
//! Coming from another framework: [from rotor](guide::coming_from_rotor),
//! [from actix or stakker](guide::coming_from_actix_or_stakker). The
//! [`guide`] holds every page of the repository's `docs/`.
//!
//! ## The main types and how they relate
//!
//! ```text
//!  System ─ owns ─► mio::Poll + Locality ◄─ LocalityHandle ◄─ other threads (spawn_on)
//!                              │ one message at a time
//!                              ▼
//!          root actor (a Supervisor) ─► children ─► grandchildren ...
//!                              │ every hook and handler gets a
//!                              ▼
//!   Context ─► send to an Address, subscribe, request, timers, spawn (Builder)
//! ```
//!
//! **Where actors run.**
//! - A [`Locality`] is a sequential execution context: the actors, addresses,
//!   subscriptions, timers and the one FIFO queue of one loop. It delivers one
//!   message at a time, on one thread, so actor state needs no locks. It is
//!   `!Send`: it stays on the thread that made it. Time is passed in: you
//!   call [`Locality::dispatch`] with `now`, and it tells you how long you may
//!   block ([`Locality::poll_timeout`]).
//! - A [`System`] is a `Locality` with a `mio::Poll` of its own:
//!   [`System::run`] is the whole loop, and returns the root's shutdown reason.
//! - A [`LocalityHandle`] (`Send + Sync`) lets a supervisor on one thread make
//!   children on another thread's locality ([`Context::spawn_on`]); while a
//!   handle lives, its locality keeps serving.
//!
//! **What actors are.**
//! - An [`Actor`] is your type. Its five hooks mark the lifecycle (NEW →
//!   INITIALIZING → INITIALIZED → OPERATIONAL → SHUTTING_DOWN → SHUT_DOWN);
//!   every one has a default, so `impl Actor for T {}` is a complete actor.
//! - A [`Context`] is what a hook or handler may do: send, subscribe, make
//!   addresses, start timers, send requests and reply, spawn children, link,
//!   use the registry, hold resources, shut down or fail. It lives only for
//!   the length of the call.
//! - A [`Builder`] configures one actor before it exists (name, timeouts,
//!   supervisor settings, registry name, restart policy, plugins);
//!   [`Builder::finish`] spawns it. Every `spawn*` method returns one.
//!
//! **Where messages go.**
//! - An [`Address`] is a delivery point made by a locality: every actor has
//!   a main one and may make more ([`Context::create_address`]). Any message
//!   (`M: Send + 'static`) can be sent to any address, and any actor of the
//!   locality may subscribe to any message type on any address (pub/sub);
//!   [`Context::subscribe_external`] reaches addresses of other localities.
//!   Addresses are `Send + Sync`, generational, and print the same readable
//!   name every run (`app/teller#4`).
//!
//! **Trees.**
//! - Any actor built with [`Builder::supervisor`] is a supervisor: it owns
//!   children and composes their lifecycles, so a whole tree becomes
//!   OPERATIONAL, or shuts down, without code of yours. [`Supervisor`] is one
//!   with no behaviour of its own, for inner nodes; [`SupervisorConfig`] says
//!   what happens when a child fails its init, whether children start
//!   together, and whether the supervisor keeps a registry.
//! - What a supervisor does when a child goes down is set on the child's
//!   builder: [`RestartPolicy`], delay, back-off, limit, escalation. A
//!   supervisor hears each child's init and shutdown, with its reason, in
//!   [`Actor::on_child_init`] and [`Actor::on_child_shutdown`].
//! - Any actor may watch another ([`Context::watch`]): each step of its
//!   lifecycle comes as a [`Watched`] message, on any locality or thread.
//!
//! **Requests.**
//! - A [`Request`] type names its response type. [`Context::request`] sends a
//!   [`RequestMsg<R>`](RequestMsg) to the server and arms a timer; the
//!   requester gets exactly one [`Response<R>`](Response): the reply, the
//!   server's error, a timeout, or a cancellation.
//!
//! **Actors on demand.**
//! - An [`EntitySet`] is a supervisor with a child per key: a message sent
//!   to the set for a key ([`Keyed`]) reaches that key's entity, made on
//!   its first message and passivated when idle. A [`Pool`] is N identical
//!   workers behind one address, here or on other localities, fed
//!   round-robin or to the least loaded. `docs/entities.md` has the design.
//!
//! **Names.**
//! - The [`Registry`] is an actor that maps names to addresses. A supervisor
//!   made with [`SupervisorConfig::with_registry`] starts one for its subtree;
//!   [`Builder::register_as`] registers an actor while it initializes, and
//!   [`Context::discover`] finds one (and can wait for it, and link to it).
//!
//! **The lifecycle, extended.**
//! - Built-in plugins (registry, link, resources, child manager) vote on when
//!   init and shutdown are done. A [`Plugin`] of yours adds a vote
//!   ([`Vote::Ready`], [`Vote::Pending`] or [`Vote::Failed`]) with
//!   [`Builder::plugin`].
//!
//! **I/O.**
//! - [`Context::register_io`] puts a mio source (a socket, a listener) on the
//!   locality's poll and returns an [`IoGuard`] that owns it and deregisters
//!   it when dropped; readiness arrives as [`Io`] messages on the actor's
//!   address.
//!
//! **Failures.**
//! - An [`Error`] is an [`ErrorCode`], a context (who or what) and the error
//!   that caused it (an `Error`, or any `std::error::Error`). Shutdown
//!   reasons, failed responses and refused calls are all `Error`s; `{}`
//!   prints one level, `{:#}` the chain one cause per line. Misuse of the
//!   API returns `Err`, it does not panic; a message that cannot be sent is
//!   handed back in a [`SendError`].
//!
//! [`prelude`] holds the names most programs need.
//!
//! ## A complete example
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
//!
//! ## Owned loop or embedded loop
//!
//! **Owned.** [`System`] makes a `mio::Poll`, registers its locality on it and
//! runs it: [`System::run`] returns when the root actors have shut down, as
//! in the example above. Actors put their sockets on its poll with
//! [`Context::register_io`]; the locality is at [`System::locality`].
//!
//! **Embedded.** A program that already owns a mio loop keeps it, and runs a
//! [`Locality`] inside it: [`register`](Locality::register) it once with a
//! token of yours (its one `mio::Waker`, woken by messages from other
//! threads), pass it the events it [`handles`](Locality::handles), call
//! [`dispatch`](Locality::dispatch) with the current time, and block no
//! longer than [`poll_timeout`](Locality::poll_timeout) says:
//!
//! ```
//! use commutator::mio::{Events, Poll, Token};
//! use commutator::prelude::*;
//! use std::time::Instant;
//!
//! struct Brief;
//! impl Actor for Brief {
//!     fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.shutdown_supervisor(); // done as soon as it starts
//!     }
//! }
//!
//! /// The locality's waker; your own sources use other tokens.
//! const WAKER: Token = Token(0);
//!
//! let mut poll = Poll::new()?;
//! let mut events = Events::with_capacity(64);
//! let mut locality = Locality::named("embedded");
//! locality.register(poll.registry(), WAKER)?;
//! let root = locality.spawn_root(Supervisor).supervisor(SupervisorConfig::default()).finish()?;
//! locality.spawn(&root, Brief).finish()?;
//!
//! while !locality.is_finished() {
//!     let timeout = locality.poll_timeout(Instant::now()); // None: wait for an event
//!     match poll.poll(&mut events, timeout) {
//!         Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
//!         polled => polled?,
//!     }
//!     for event in events.iter() {
//!         if locality.handles(event.token()) {
//!             locality.on_event(event);
//!         } // else: one of your own sources
//!     }
//!     locality.dispatch(Instant::now()); // mail from other threads, due timers, the queue
//! }
//! assert!(locality.exit_reason().is_none_or(Error::is_normal));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **The loop your program already has.** The [`backend`]s: with the
//! feature `tokio`, a `backend::tokio::TokioLocality` runs a locality as a
//! task on a current-thread runtime, beside your tasks; with `calloop`, a
//! `backend::calloop::LocalitySource` is a calloop event source beside your
//! sources. For any other loop (a GUI toolkit's, say),
//! the contract is [`Locality::dispatch`], [`Locality::poll_timeout`] and a
//! wake-up: a function of yours ([`Locality::set_waker`]) or, on unix, the
//! file descriptor of an [`embed::Driver`]; the [embedding
//! guide](guide::embedding) has the recipe.
//!
//! **Async libraries.** An actor calls one with
//! [`Context::spawn_future`]: the future's output comes back as a message on
//! the actor's address; the future goes when the actor does. On the tokio
//! backend it runs on tokio.
//!
//! In tests, skip the poll: a [`testing::Harness`] is a locality on a
//! manual clock, stepped and advanced by hand (timers fire without anyone
//! sleeping), with probes that collect what an address received; underneath
//! are [`Locality::run_until_idle`] and [`Locality::next_deadline`] (see the
//! example on [`Locality`]). The [embedding guide](guide::embedding) covers
//! every loop and several threads in detail.
//!
//! ## Features
//!
//! None is on by default.
//!
//! - `tokio`: `backend::tokio`, a locality as a tokio task (unix).
//! - `calloop`: `backend::calloop`, a locality as a calloop event source (unix).
//! - `nats`: `nats`, addresses across processes over a NATS server (the
//!   [NATS guide](guide::nats)).
//!
//! The docs on docs.rs are built with every feature; `cargo doc
//! --all-features` builds them so locally.
//!
//! ## Guarantees, in brief
//!
//! - **One at a time.** A locality runs one hook, handler or timer callback
//!   at a time, never re-entrantly: what a handler sends is queued and
//!   delivered after it returns.
//! - **Per-sender FIFO.** Messages from one sender to one address arrive in
//!   the order sent, within a locality and across localities and threads.
//! - **Delivery is not promised; its failures are counted.** A message that
//!   nobody is subscribed to when it arrives, or whose address is gone, is
//!   dropped and counted in [`Stats`]; a send to a finished locality is
//!   refused ([`Address::send`] hands the message back) or counted.
//! - **Bounded inboxes.** At most [`DEFAULT_INBOX_CAPACITY`] user messages
//!   from other threads and localities wait in a locality's inbox (settable
//!   per locality); beyond it a send is refused with `InboxFull` or counted,
//!   [`Address::send_blocking`] waits for room, and framework traffic
//!   (shutdowns, say) never waits: it is drained first.
//! - **Exactly one response per request**: the reply, the server's error, a
//!   timeout or a cancellation; late and duplicate replies are dropped and
//!   counted. A requester that shuts down cancels what it still waits for.
//! - **Trees compose.** A supervisor finishes its init after all its
//!   children, and its shutdown after all of theirs; a linked server outlives
//!   its clients.
//! - **Stale is stale.** Addresses, timers, requests and I/O tokens are
//!   generational: a stale one never reaches a newer actor or source. A
//!   cancelled timer never fires.
//! - **Failures are values.** Every end has a reason with its chain of
//!   causes; a shutdown that overruns its timeout is a contract violation,
//!   which stops the locality unless [`Locality::on_contract_violation`] says
//!   otherwise. A panic in user code (a handler, a hook, a timer, a factory)
//!   is caught and becomes a failure of that actor (`ErrorCode::Panicked`).
//!
//! The [guarantees page](guide::guarantees) states each one precisely, with
//! its limits.
//!
//! ## Inspection
//!
//! Set `COMMUTATOR_INSPECT_DELIVERY=1` and every locality made afterwards
//! prints one line per message it routes: its type, sender, destination and
//! outcome (delivered to whom, or why dropped); level `2` adds the
//! framework's own traffic (lifecycle, links, registry). In code,
//! [`Locality::inspect`] sets the level and [`Locality::inspect_with`] sends
//! the lines to a function of yours:
//!
//! ```
//! use commutator::prelude::*;
//! use std::{cell::RefCell, rc::Rc};
//!
//! struct Hello;
//! struct Deaf; // subscribes to nothing
//! impl Actor for Deaf {}
//!
//! let lines = Rc::new(RefCell::new(Vec::new()));
//! let sink = lines.clone();
//! let mut locality = Locality::named("demo");
//! locality.inspect_with(1, move |line| sink.borrow_mut().push(line.to_string()));
//! let deaf = locality.spawn_root(Deaf).name("deaf").finish()?;
//! locality.send(&deaf, Hello)?;
//! locality.run_until_idle(locality.now());
//! assert_eq!(lines.borrow()[0], "demo: Hello outside -> demo/deaf#1: dropped (no subscriber)");
//! assert_eq!(locality.stats().dropped_unsubscribed, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Lines go to `tracing` (target `commutator::delivery`) when a subscriber is
//! installed, else to stderr. [`Locality::stats`] counts deliveries and
//! drops, [`Locality::state_of`] tells an actor's state, and the lifecycle is
//! logged through `tracing`. The [inspection guide](guide::inspection)
//! explains how to read the lines.
//!
//! ## Further reading
//!
//! The [`guide`] (the repository's `docs/`): [tutorial](guide::tutorial),
//! [architecture](guide::architecture), [lifecycle](guide::lifecycle),
//! [embedding](guide::embedding), [guarantees](guide::guarantees),
//! [inspection](guide::inspection), [entities](guide::entities),
//! [benchmarks](guide::benchmarks),
//! [coming from rotor](guide::coming_from_rotor),
//! [coming from actix or stakker](guide::coming_from_actix_or_stakker).
//! Every file in `examples/` opens with what it shows and how to run it.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]

mod actor;
mod address;
mod arena;
pub mod backend;
mod builder;
mod context;
mod dead_letter;
pub mod embed;
mod entity;
mod error;
mod future;
pub mod guide;
pub mod inspect;
mod io;
mod lifecycle;
mod locality;
mod message;
mod names;
#[cfg(feature = "nats")]
#[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
pub mod nats;
mod plugin;
mod queue;
mod registry;
mod request;
mod routing;
mod spawn;
mod subscription;
mod supervisor;
mod system;
pub mod testing;
mod timer;

pub use actor::{Actor, ActorState, UnlinkAction};
pub use address::Address;
pub use builder::{Builder, Elsewhere, Here};
pub use context::{Context, Discovery, SubscriptionId};
pub use dead_letter::{DeadLetter, DeadLetterReason};
pub use entity::{
    EntityRef, EntityRouter, EntitySet, EntityStats, Keyed, Pool, PoolStats, PoolStrategy,
    StatsHandle,
};
pub use error::{Error, ErrorCode, Result, SendError};
pub use future::FutureId;
pub use io::{Io, IoGuard, IoId};
pub use locality::{
    DEFAULT_BUDGET, DEFAULT_INBOX_CAPACITY, Locality, LocalityHandle, MAX_INBOX_CAPACITY,
    RESERVED_TOKENS, Stats, ViolationAction,
};
pub use plugin::watch::{LifecycleEvent, WatchId, Watched};
pub use plugin::{Plugin, Vote};
pub use registry::{Deregister, Discover, Register, Registry};
pub use request::{CancelRequest, Request, RequestId, RequestMsg, Response};
pub use spawn::PendingChild;
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
        Actor, ActorState, Address, CancelRequest, Context, DeadLetter, EntitySet, Error,
        ErrorCode, FutureId, InitFailurePolicy, Io, IoGuard, Keyed, LifecycleEvent, Locality,
        LocalityHandle, Plugin, Pool, PoolStrategy, Request, RequestId, RequestMsg, Response,
        RestartPolicy, SubscriptionId, Supervisor, SupervisorConfig, System, TimerId, UnlinkAction,
        ViolationAction, Vote, WatchId, Watched,
    };
}

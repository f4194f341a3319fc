//! Backends: a [`Locality`](crate::Locality) inside the event loop a program
//! already has. Each is an optional feature:
//!
//! - `tokio`: `tokio::TokioLocality`, a locality as a task on a tokio
//!   current-thread runtime or `LocalSet`, beside the program's own tasks.
//! - `calloop`: `calloop::LocalitySource`, a locality as a calloop
//!   `EventSource`, beside the program's own sources.
//!
//! (Each module is here when its feature is on, on unix.)
//!
//! Both are built on [`embed::Driver`](crate::embed::Driver) (unix: they
//! watch its poll's file descriptor for the actors' I/O). For a loop not
//! listed here, the contract is in [`crate::embed`].

#[cfg(all(feature = "calloop", unix))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "calloop", unix))))]
pub mod calloop;
#[cfg(all(feature = "tokio", unix))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "tokio", unix))))]
pub mod tokio;

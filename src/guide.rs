//! The guide: the pages of the repository's `docs/` directory, here so that
//! they are one click away from the API (on docs.rs too). Each module below
//! is one page; it holds no code.
//!
//! The pages' snippets are not compiled as doctests (many are fragments of
//! one program); the examples in the API docs and in `examples/` are.

// The tutorial and embedding pages show `#[test]` functions as they
// belong in a user's test files.
#![allow(clippy::test_attr_in_doctest)]

/// From `cargo new` to two actors that find each other through the
/// registry and talk with requests that time out (`docs/tutorial.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/tutorial.md"))]
pub mod tutorial {}

/// Embedding a locality in a loop you own: mio, tokio, calloop, a GUI
/// loop (`docs/embedding.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/embedding.md"))]
pub mod embedding {}

/// Several localities on several threads, one supervisor tree across them
/// (`docs/threads.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/threads.md"))]
pub mod threads {}

/// What the crate promises, precisely, with its limits and the tests that
/// check each promise (`docs/guarantees.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/guarantees.md"))]
pub mod guarantees {}

/// The guarantees continued: across threads, I/O and embedding, entity
/// sets and pools, NATS (`docs/guarantees-extended.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/guarantees-extended.md"))]
pub mod guarantees_extended {}

/// The lifecycle of an actor, its hooks, plugins and supervision (`docs/lifecycle.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/lifecycle.md"))]
pub mod lifecycle {}

/// Reading delivery inspection lines (`docs/inspection.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/inspection.md"))]
pub mod inspection {}

/// Actors made on demand by key, and pools of workers (`docs/entities.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/entities.md"))]
pub mod entities {}

/// Addresses across processes over NATS, feature `nats` (`docs/nats.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/nats.md"))]
pub mod nats {}

/// How the crate is built inside (`docs/architecture.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/architecture.md"))]
pub mod architecture {}

/// Benchmarks against peer runtimes (`docs/benchmarks.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/benchmarks.md"))]
pub mod benchmarks {}

/// For rotor users (`docs/coming-from-rotor.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/coming-from-rotor.md"))]
pub mod coming_from_rotor {}

/// For actix and stakker users (`docs/coming-from-actix-or-stakker.md`).
#[cfg_attr(not(doctest), doc = include_str!("../docs/coming-from-actix-or-stakker.md"))]
pub mod coming_from_actix_or_stakker {}

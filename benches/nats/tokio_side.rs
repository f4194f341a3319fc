//! The `commutator-tokio` side of the bench target `nats` (features `nats`
//! and `tokio`): a locality that is a `TokioLocality` on a current-thread
//! runtime of its own thread, its connection made by `Nats::connect_async`
//! on that runtime (no bridge thread, no hand-off between threads).

use super::{LIMIT, Setup, Stopper, options, runtime};
use commutator::backend::tokio::TokioLocality;
use commutator::nats::Nats;
use commutator::prelude::*;
use std::sync::mpsc;

/// The tokio side's locality budget (`Locality::set_budget`).
const BUDGET: usize = 256;

/// A `TokioLocality` on its own thread, connected on its runtime; see `super::node`.
pub(crate) fn node<T: Send + 'static>(
    url: String,
    n: u64,
    setup: Setup<T>,
) -> (Address, T, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let run = async move {
            let nats = Nats::connect_async(options(&url, n)).await?;
            let mut app = TokioLocality::new(Locality::new())?;
            let locality = app.locality();
            // The connection's task runs between the locality's dispatches:
            // a small budget lets it send a burst while it is made, as
            // tokio's cooperative budget does for raw async-nats's tasks
            // (docs/nats.md). `BUDGET=65536` is the locality's default.
            let budget = std::env::var("BUDGET").ok().and_then(|b| b.parse().ok());
            locality.set_budget(budget.unwrap_or(BUDGET));
            let root = locality
                .spawn_root(Supervisor)
                .supervisor(SupervisorConfig::default())
                .finish()?;
            let stopper = locality.spawn(&root, Stopper).finish()?;
            let value = setup(nats, locality, &root)?;
            let _ = tx.send((stopper, value));
            app.run().await
        };
        if let Err(e) = runtime().block_on(run) {
            eprintln!("nats bench: a tokio node failed: {e:#}");
        }
    });
    let (stopper, value) = rx.recv_timeout(LIMIT).expect("the node was set up");
    (stopper, value, thread)
}

//! Pub/sub with the connection on the locality's own tokio runtime
//! (`Nats::connect_async`, features `nats` and `tokio`): a burst sent in one
//! handler is published whole. Inside a tokio task, tokio's cooperative
//! budget made async-nats's command channel say "not now" after 128 sends
//! in one poll, and the rest of the burst was refused as `BufferFull` with
//! the buffer nearly empty.
//!
//! Starts its own server on a free loopback port and runs under a deadline;
//! without nats-server it says "skipped: nats-server not found" and passes
//! (fails under `COMMUTATOR_REQUIRE_NATS=1`).
#![cfg(all(feature = "nats", feature = "tokio"))]

mod nats_support;

use commutator::backend::tokio::TokioLocality;
use commutator::nats::{Nats, Options};
use commutator::prelude::*;
use nats_support::actors::*;
use nats_support::*;
use std::sync::mpsc;

const BURST: u32 = 1_000;

/// Sends `BURST` notes to `to` in one hook: its `on_start` (the tree
/// starts once every sibling, the import too, has initialized: subscribed).
struct Burst {
    to: Address,
}

/// Stops its supervisor on `Stop`.
struct Stopper;
impl Actor for Stopper {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Stop, ctx: &mut Context<'_, Self>| {
            ctx.shutdown_supervisor()
        });
    }
}

impl Actor for Burst {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        for seq in 0..BURST {
            let note = Note {
                from: "burst".into(),
                seq,
            };
            ctx.send(&self.to, note);
        }
    }
}

#[test]
fn a_burst_published_from_a_locality_on_tokio_is_published_whole() {
    let test = "a_burst_published_from_a_locality_on_tokio_is_published_whole";
    with_server(test, &[], LIMIT, move |url| {
        let (notes_tx, notes) = mpsc::channel::<Note>();
        let (dead_tx, dead) = mpsc::channel();
        let (stats_tx, stats) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let options = Options::new(url).buffer(4 * BURST as usize);
                let nats = Nats::connect_async(options).await?;
                let mut app = TokioLocality::new(Locality::new())?;
                let locality = app.locality();
                let root = locality
                    .spawn_root(Supervisor)
                    .supervisor(SupervisorConfig::default())
                    .finish()?;
                let sink = Sink {
                    to: notes_tx,
                    dead: Some(dead_tx),
                };
                let sink = locality.spawn(&root, sink).finish()?;
                locality
                    .spawn(&root, nats.import::<Note>("test.burst", &sink))
                    .finish()?;
                let export = nats.export().message::<Note>("test.burst");
                let export = locality.spawn(&root, export).finish()?;
                locality.spawn(&root, Burst { to: export }).finish()?;
                let stopper = locality.spawn(&root, Stopper).finish()?;
                let _ = stats_tx.send((nats.clone(), stopper));
                app.run().await
            })
        });
        let (nats, stopper) = next(&stats, WAIT, "the node");
        let mut seen = Vec::new();
        while seen.len() < BURST as usize {
            match notes.recv_timeout(WAIT) {
                Ok(note) => seen.push(note.seq),
                Err(_) => panic!(
                    "{} of {BURST} notes arrived; {} dead letters; {:?}",
                    seen.len(),
                    dead.try_iter().count(),
                    nats.stats()
                ),
            }
        }
        assert_eq!(seen, (0..BURST).collect::<Vec<_>>(), "in order, none lost");
        assert_eq!(nats.stats().refused, 0);
        stopper.send(Stop).expect("the node runs");
        let ended = thread.join().expect("the node's thread");
        assert!(ended.is_ok(), "{ended:?}");
    });
}

//! Requests across processes, beyond the reply: a connection on the caller's
//! tokio runtime (`Nats::connect_async`), cancellations that reach the
//! service, and the requester's deadline carried to the service (feature
//! `nats`; the runtime tests also need feature `tokio`).
//!
//! Each test starts its own server on a free loopback port and runs under a
//! deadline; without nats-server a test says "skipped: nats-server not
//! found" and passes (fails under `COMMUTATOR_REQUIRE_NATS=1`). Run:
//! `cargo test --features nats,tokio --test nats_requests`.
#![cfg(feature = "nats")]

mod nats_support;

use commutator::nats::{Nats, Options};
use commutator::prelude::*;
use futures_util::FutureExt;
use nats_support::actors::*;
use nats_support::*;
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn connecting_on_the_callers_runtime_outside_any_runtime_is_a_clear_error() {
    let connecting = Nats::connect_async(Options::new("nats://127.0.0.1:1")).now_or_never();
    let error = connecting
        .expect("refused at once")
        .expect_err("no runtime");
    assert_eq!(error.code(), ErrorCode::NoRuntime, "{error:#}");
}

/// A `TokioLocality` on a current-thread runtime of its own thread, its
/// connection on that runtime: `setup` spawns under the root. Returns the
/// address that stops it (send it `Stop`) and the thread (the locality's end).
#[cfg(feature = "tokio")]
fn tokio_node(
    url: String,
    setup: impl FnOnce(Nats, &mut Locality, &Address) -> commutator::Result<()> + Send + 'static,
) -> (Address, std::thread::JoinHandle<commutator::Result<()>>) {
    use commutator::backend::tokio::TokioLocality;
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let nats = Nats::connect_async(Options::new(url)).await?;
            // Blocking calls would wait for this very thread: refused.
            let flush = nats.flush(Duration::from_secs(1)).expect_err("refused");
            assert_eq!(flush.code(), ErrorCode::InvalidArgument, "{flush:#}");
            let mut app = TokioLocality::new(Locality::new())?;
            let locality = app.locality();
            let root = locality
                .spawn_root(Supervisor)
                .supervisor(SupervisorConfig::default())
                .finish()?;
            let stopper = locality.spawn(&root, Stopper).finish()?;
            setup(nats, locality, &root)?;
            let _ = tx.send(stopper);
            app.run().await
        })
    });
    let stopper = rx.recv_timeout(LIMIT).expect("the node was set up");
    (stopper, thread)
}

/// Stops its supervisor on `Stop`.
#[cfg(feature = "tokio")]
struct Stopper;
#[cfg(feature = "tokio")]
impl Actor for Stopper {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Stop, ctx: &mut Context<'_, Self>| {
            ctx.shutdown_supervisor()
        });
    }
}

#[cfg(feature = "tokio")]
#[test]
fn localities_on_tokio_runtimes_serve_and_ask_with_their_connections_on_the_same_runtime() {
    let Some(bin) = nats_server(
        "localities_on_tokio_runtimes_serve_and_ask_with_their_connections_on_the_same_runtime",
    ) else {
        return;
    };
    let server = Server::start(&bin, &[]);
    let url = server.url();
    within(LIMIT, &[server], move || {
        let (stop_server, server_thread) = tokio_node(url.clone(), |nats, locality, root| {
            let calculator = locality.spawn(root, Calculator).finish()?;
            locality
                .spawn(root, nats.service("calc", &calculator).request::<Square>())
                .finish()?;
            Ok(())
        });
        let (tx, rx) = mpsc::channel();
        let plan = vec![(9, WAIT, false), (666, WAIT, false), (4, WAIT, false)];
        let (stop_client, client_thread) = tokio_node(url, move |nats, locality, root| {
            let remote = nats.remote("calc").request::<Square>().wait(WAIT);
            let remote = locality.spawn(root, remote).finish()?;
            locality
                .spawn(
                    root,
                    Asker {
                        remote,
                        plan,
                        out: tx,
                    },
                )
                .finish()?;
            Ok(())
        });
        let mut answers: Vec<Answer> = (0..3).map(|_| next(&rx, WAIT, "an answer")).collect();
        answers.sort_by_key(|a| a.0);
        assert_eq!(answers[0], (4, Ok(16)));
        assert_eq!(answers[1], (9, Ok(81)));
        let (n, Err((code, chain))) = &answers[2] else {
            panic!("666 is an error: {answers:?}");
        };
        assert_eq!((*n, *code), (666, ErrorCode::Failure), "{chain}");
        assert!(chain.contains("the devil's number"), "{chain}");
        for (stop, thread) in [(stop_client, client_thread), (stop_server, server_thread)] {
            stop.send(Stop).expect("stops");
            thread.join().expect("no panic").expect("a normal end");
        }
    });
}

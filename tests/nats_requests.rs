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
    with_server(
        "localities_on_tokio_runtimes_serve_and_ask_with_their_connections_on_the_same_runtime",
        &[],
        LIMIT,
        move |url| {
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
        },
    );
}

/// What the server behind a service saw: a request, or its cancellation.
#[derive(Debug, PartialEq)]
enum Seen {
    Asked(u64),
    Cancelled(u64),
}

/// Never answers; reports each request and each cancellation it sees.
struct Watcher {
    out: mpsc::Sender<Seen>,
    asked: std::collections::HashMap<RequestId, u64>,
}
impl Actor for Watcher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |this: &mut Self, q: &RequestMsg<Square>, _: &mut Context<'_, Self>| {
                this.asked.insert(q.id(), q.payload().0);
                let _ = this.out.send(Seen::Asked(q.payload().0));
            },
        );
        ctx.subscribe(
            |this: &mut Self, c: &CancelRequest<Square>, _: &mut Context<'_, Self>| {
                if let Some(n) = this.asked.remove(&c.id()) {
                    let _ = this.out.send(Seen::Cancelled(n));
                }
            },
        );
    }
}

/// Cancels the request it asked for `n` when told.
struct CancelNow(u64);

/// Asks on [`Ask`], cancels on [`CancelNow`], reports each response.
struct Canceller {
    remote: Address,
    out: mpsc::Sender<Answer>,
    ids: std::collections::HashMap<u64, RequestId>,
}
impl Actor for Canceller {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|this: &mut Self, ask: &Ask, ctx: &mut Context<'_, Self>| {
            let remote = this.remote.clone();
            let id = ctx.request(&remote, Square(ask.0), ask.1);
            this.ids.insert(ask.0, id);
        });
        ctx.subscribe(
            |this: &mut Self, cancel: &CancelNow, ctx: &mut Context<'_, Self>| {
                if let Some(id) = this.ids.remove(&cancel.0) {
                    assert!(ctx.cancel_request(id), "{} is still pending", cancel.0);
                }
            },
        );
        ctx.subscribe(
            |this: &mut Self, r: &Response<Square>, _: &mut Context<'_, Self>| {
                let result = r
                    .result()
                    .copied()
                    .map_err(|e| (e.code(), format!("{e:#}")));
                let _ = this.out.send((r.request().0, result));
            },
        );
    }
}

/// Blocks its locality's thread for the time it is told (after saying so).
struct Staller(mpsc::Sender<()>);
/// Tells a [`Staller`] to block its locality this long.
struct Stall(Duration);
impl Actor for Staller {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |this: &mut Self, stall: &Stall, _: &mut Context<'_, Self>| {
                let _ = this.0.send(());
                std::thread::sleep(stall.0);
            },
        );
    }
}

/// The nodes and addresses of [`watched`].
struct Watched {
    server: Node,
    client: Node,
    /// Asks and cancels on the client node.
    canceller: Address,
    /// Blocks the server node's locality.
    staller: Address,
    /// Says when the staller starts blocking.
    stalled: mpsc::Receiver<()>,
    seen: mpsc::Receiver<Seen>,
    answers: mpsc::Receiver<Answer>,
}

/// A node serving "calc" with a [`Watcher`] (and a [`Staller`]) on `nats`,
/// and a node asking it through a [`Canceller`] on `asking`.
fn watched(nats: &Nats, asking: &Nats) -> Watched {
    let (seen_tx, seen) = mpsc::channel();
    let (stalled_tx, stalled) = mpsc::channel();
    let serving = nats.clone();
    let (server, staller) = Node::start("server", move |system, root| {
        let watcher = Watcher {
            out: seen_tx,
            asked: Default::default(),
        };
        let watcher = system.spawn(root, watcher).finish()?;
        system
            .spawn(root, serving.service("calc", &watcher).request::<Square>())
            .finish()?;
        system.spawn(root, Staller(stalled_tx)).finish()
    });
    let (tx, answers) = mpsc::channel();
    let asking = asking.clone();
    let (client, canceller) = Node::start("client", move |system, root| {
        let remote = asking.remote("calc").request::<Square>().wait(WAIT);
        let remote = system.spawn(root, remote).finish()?;
        let canceller = Canceller {
            remote,
            out: tx,
            ids: Default::default(),
        };
        system.spawn(root, canceller).finish()
    });
    Watched {
        server,
        client,
        canceller,
        staller,
        stalled,
        seen,
        answers,
    }
}

#[test]
fn a_remote_request_cancelled_by_its_requester_is_cancelled_at_the_service_too() {
    with_server(
        "a_remote_request_cancelled_by_its_requester_is_cancelled_at_the_service_too",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let Watched {
                server,
                client,
                canceller,
                seen,
                answers,
                ..
            } = watched(&a, &b);
            canceller.send(Ask(5, LIMIT)).expect("asks");
            assert_eq!(next(&seen, WAIT, "the request"), Seen::Asked(5));
            canceller.send(CancelNow(5)).expect("cancels");
            let (n, result) = next(&answers, WAIT, "the response");
            assert_eq!((n, result.map_err(|e| e.0)), (5, Err(ErrorCode::Cancelled)));
            // The server behind the service sees it as a local cancellation.
            assert_eq!(next(&seen, WAIT, "the cancellation"), Seen::Cancelled(5));
            assert_eq!(b.stats().cancels_sent, 1);
            assert_eq!(a.stats().cancelled, 1);
            assert!(client.stop().is_ok());
            assert!(server.stop().is_ok());
        },
    );
}

#[test]
fn a_remote_request_that_times_out_at_its_requester_is_cancelled_at_the_service() {
    with_server(
        "a_remote_request_that_times_out_at_its_requester_is_cancelled_at_the_service",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let Watched {
                server,
                client,
                canceller,
                seen,
                answers,
                ..
            } = watched(&a, &b);
            canceller
                .send(Ask(8, Duration::from_secs(2)))
                .expect("asks");
            assert_eq!(next(&seen, WAIT, "the request"), Seen::Asked(8));
            let (n, result) = next(&answers, WAIT, "the response");
            assert_eq!(
                (n, result.map_err(|e| e.0)),
                (8, Err(ErrorCode::RequestTimeout))
            );
            assert_eq!(next(&seen, WAIT, "the cancellation"), Seen::Cancelled(8));
            assert!(client.stop().is_ok());
            assert!(server.stop().is_ok());
        },
    );
}

/// A service "calc" that is not commutator (raw async-nats): it answers
/// discovery, and each `test.Square` 300 ms after it came, whatever happened
/// meanwhile (it does not listen for cancellations). Ends when `stop` fires.
fn raw_slow_service(
    url: String,
    ready: mpsc::Sender<()>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    use futures_util::StreamExt;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let client = async_nats::connect(url).await.expect("connects");
        let mut who = client
            .subscribe("commutator.who.calc")
            .await
            .expect("subscribes");
        let mut requests = client
            .subscribe("commutator.svc.calc.test.Square")
            .await
            .expect("subscribes");
        client.flush().await.expect("flushed");
        let _ = ready.send(());
        let info = r#"{"name":"calc","types":["test.Square"],"instance":"raw"}"#;
        let serve = async {
            let mut both = futures_util::stream::select(who.by_ref(), requests.by_ref());
            while let Some(message) = both.next().await {
                let Some(reply) = message.reply else {
                    continue;
                };
                if message.subject.as_str() == "commutator.who.calc" {
                    let _ = client.publish(reply, info.into()).await;
                    continue;
                }
                let n: u64 = serde_json::from_slice(&message.payload).expect("a square");
                let client = client.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    let answer = format!(r#"{{"Ok":{}}}"#, n * n);
                    let _ = client.publish(reply, answer.into()).await;
                });
            }
        };
        let serve = std::pin::pin!(serve);
        futures_util::future::select(stop, serve).await;
    });
}

#[test]
fn a_late_reply_from_a_peer_that_ignores_cancellations_is_dropped() {
    with_server(
        "a_late_reply_from_a_peer_that_ignores_cancellations_is_dropped",
        &[],
        LIMIT,
        move |url| {
            let (ready_tx, ready) = mpsc::channel();
            let (stop, stopped) = tokio::sync::oneshot::channel();
            let raw = {
                let url = url.clone();
                std::thread::spawn(move || raw_slow_service(url, ready_tx, stopped))
            };
            next(&ready, WAIT, "the raw service");
            let b = connect(&url);
            let (tx, answers) = mpsc::channel();
            let asking = b.clone();
            let (client, prober) = Node::start("client", move |system, root| {
                let remote = asking.remote("calc").request::<Square>().wait(WAIT);
                let remote = system.spawn(root, remote).finish()?;
                system.spawn(root, Prober { remote, out: tx }).finish()
            });
            prober
                .send(Ask(7, Duration::from_millis(50)))
                .expect("asks");
            let (n, result) = next(&answers, WAIT, "the response");
            assert_eq!(
                (n, result.map_err(|e| e.0)),
                (7, Err(ErrorCode::RequestTimeout))
            );
            // The reply comes 300 ms after the request: late, dropped by the remote.
            let deadline = std::time::Instant::now() + WAIT;
            while b.stats().late_replies < 1 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the late reply never came"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(100));
            assert!(
                answers.try_recv().is_err(),
                "exactly one response per request"
            );
            assert!(client.stop().is_ok());
            let _ = stop.send(());
            raw.join().expect("the raw service ended");
        },
    );
}

#[test]
fn a_remote_request_whose_requester_gave_up_while_it_waited_is_not_served() {
    with_server(
        "a_remote_request_whose_requester_gave_up_while_it_waited_is_not_served",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let w = watched(&a, &b);
            // The service's locality is busy for a second; the request waits in
            // its inbox past the 200 ms its requester waits.
            w.staller
                .send(Stall(Duration::from_secs(1)))
                .expect("stalls");
            next(&w.stalled, WAIT, "the stall");
            w.canceller
                .send(Ask(5, Duration::from_millis(200)))
                .expect("asks");
            let (n, result) = next(&w.answers, WAIT, "the response");
            assert_eq!(
                (n, result.map_err(|e| e.0)),
                (5, Err(ErrorCode::RequestTimeout))
            );
            // When its turn comes it is dropped: the server never sees it, and
            // sees the next request first.
            w.canceller.send(Ask(6, WAIT)).expect("asks");
            assert_eq!(next(&w.seen, WAIT, "a request"), Seen::Asked(6));
            assert_eq!(a.stats().expired, 1);
            assert!(w.client.stop().is_ok());
            assert!(w.server.stop().is_ok());
        },
    );
}

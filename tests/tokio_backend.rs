//! The tokio backend (issue 16): a locality as a task on a current-thread
//! runtime, woken by its deadlines, by I/O readiness and by other threads,
//! beside the program's own tasks; misuse returns an `Error`.
#![cfg(all(feature = "tokio", unix))]

mod backends;

use backends::*;
use commutator::backend::tokio::TokioLocality;
use commutator::prelude::*;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs `locality` on a fresh current-thread runtime until it finishes.
fn run(locality: Locality) -> Result<(), Error> {
    let mut app = TokioLocality::new(locality).expect("a fresh locality");
    runtime().block_on(app.run())
}

#[test]
fn ping_pong_runs_to_the_end_on_tokio() {
    within(LIMIT, || {
        let (locality, hits) = ping_pong();
        run(locality).expect("a normal end");
        assert_eq!(hits.get(), 1000);
    });
}

#[test]
fn a_request_times_out_on_tokio_timers() {
    within(LIMIT, || {
        let (locality, got) = request_timeout();
        run(locality).expect("a normal end");
        assert_eq!(*got.borrow(), Some(ErrorCode::RequestTimeout));
    });
}

#[test]
fn an_actors_io_source_is_woken_by_tokios_reactor() {
    within(LIMIT, || {
        let (locality, read, client) = io_source();
        run(locality).expect("a normal end");
        client.join().expect("client");
        assert_eq!(&*read.borrow(), b"hello");
    });
}

#[test]
fn a_send_from_another_thread_wakes_the_idle_task() {
    within(LIMIT, || {
        let (locality, heard, _go, knocker) = cross_thread();
        run(locality).expect("a normal end");
        knocker.join().expect("knocker");
        assert_eq!(heard.get(), 7);
    });
}

#[test]
fn run_returns_the_roots_reason() {
    within(LIMIT, || {
        let err = run(failing_root()).expect_err("the root failed");
        assert_eq!(err.code(), ErrorCode::Failure);
        assert_eq!(err.to_string(), "actor failure (out of coffee)");
        let mut locality = Locality::named("brief");
        locality.spawn_root(Brief).finish().expect("brief");
        run(locality).expect("a normal end is Ok");
    });
}

/// The program's own tasks: a tokio listener accepts connections and hands
/// each (as a std stream) to an actor of the tree, which answers on it; a
/// tokio timer of the program's counts beside. The tree ends after two
/// connections; the program's tasks end with it.
#[test]
fn a_supervisor_tree_lives_beside_the_programs_own_tasks() {
    struct Conn(std::net::TcpStream);
    struct Greeter {
        served: Rc<Cell<u32>>,
    }
    impl Actor for Greeter {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, conn: &Conn, ctx: &mut Context<'_, Self>| {
                use std::io::Write;
                let mut stream = &conn.0;
                let _ = stream.set_nonblocking(false);
                let _ = stream.write_all(b"hi\n");
                me.served.set(me.served.get() + 1);
                if me.served.get() == 2 {
                    ctx.shutdown_supervisor();
                }
            });
        }
    }
    within(LIMIT, || {
        let rt = runtime();
        let local = tokio::task::LocalSet::new();
        let served = Rc::new(Cell::new(0));
        let ticks = Rc::new(Cell::new(0u32));
        let (mut locality, root) = tree("beside");
        let greeter = Greeter {
            served: served.clone(),
        };
        let greeter = locality.spawn(&root, greeter).finish().expect("greeter");
        let mut app = TokioLocality::new(locality).expect("app");
        let result = local.block_on(&rt, async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let at = listener.local_addr().expect("addr");
            // The program's own tasks, beside the locality's.
            let counter = ticks.clone();
            let ticker = tokio::task::spawn_local(async move {
                let mut interval = tokio::time::interval(Duration::from_millis(1));
                for _ in 0..3 {
                    interval.tick().await;
                    counter.set(counter.get() + 1);
                }
            });
            let acceptor = tokio::task::spawn_local(async move {
                for _ in 0..2 {
                    let (stream, _) = listener.accept().await.expect("accept");
                    let stream = stream.into_std().expect("std stream");
                    if greeter.send(Conn(stream)).is_err() {
                        break;
                    }
                }
            });
            let clients = std::thread::spawn(move || {
                use std::io::Read;
                let mut replies = Vec::new();
                for _ in 0..2 {
                    let mut s = std::net::TcpStream::connect(at).expect("connect");
                    let mut line = [0u8; 3];
                    s.read_exact(&mut line).expect("reply");
                    replies.push(line);
                }
                replies
            });
            let result = app.run().await;
            acceptor.await.expect("acceptor");
            ticker.await.expect("ticker");
            let replies = clients.join().expect("clients");
            assert_eq!(replies, [*b"hi\n", *b"hi\n"]);
            result
        });
        result.expect("a normal end");
        assert_eq!(served.get(), 2);
        assert_eq!(ticks.get(), 3);
    });
}

/// A future started by an actor runs on tokio: it sleeps on tokio's timer
/// and its output comes back as a message.
#[test]
fn a_burst_of_messages_leaves_room_for_the_runtimes_other_tasks() {
    // 20,000 messages one after the other, with the locality's default
    // budget (65,536 a dispatch): a poll of the task handles at most 4,096
    // of them, then yields, so a task beside it runs between the slices.
    struct Hop(u32);
    struct Relay {
        polls: Rc<Cell<u32>>,
        seen: Rc<Cell<Option<u32>>>,
    }
    impl Actor for Relay {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, hop: &Hop, ctx: &mut Context<'_, Self>| {
                if hop.0 == 0 {
                    me.seen.set(Some(me.polls.get()));
                    ctx.shutdown_supervisor();
                } else {
                    let me = ctx.address().clone();
                    ctx.send(&me, Hop(hop.0 - 1));
                }
            });
        }
    }
    within(LIMIT, || {
        let (mut locality, root) = tree("burst");
        let polls = Rc::new(Cell::new(0));
        let seen = Rc::new(Cell::new(None));
        let relay = Relay {
            polls: polls.clone(),
            seen: seen.clone(),
        };
        let relay = locality.spawn(&root, relay).finish().expect("relay");
        locality
            .send(&relay, Hop(20_000))
            .map_err(|e| e.error)
            .expect("kick");
        let mut app = TokioLocality::new(locality).expect("app");
        let local = tokio::task::LocalSet::new();
        let result = local.block_on(&runtime(), async {
            let ticker = tokio::task::spawn_local(async move {
                loop {
                    polls.set(polls.get() + 1);
                    tokio::task::yield_now().await;
                }
            });
            let result = app.run().await;
            ticker.abort();
            result
        });
        result.expect("a normal end");
        let seen = seen.get().expect("the last hop");
        assert!(
            seen >= 4,
            "the other task ran {seen} times during the burst"
        );
    });
}

#[test]
fn an_actors_future_runs_on_tokio() {
    struct Slept(u32);
    struct Napper {
        got: Rc<Cell<u32>>,
    }
    impl Actor for Napper {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, s: &Slept, ctx: &mut Context<'_, Self>| {
                me.got.set(s.0);
                ctx.shutdown();
            });
        }
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.spawn_future(async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                let handle = tokio::runtime::Handle::current(); // the runtime is there
                drop(handle);
                Slept(5)
            });
        }
    }
    within(LIMIT, || {
        let got = Rc::new(Cell::new(0));
        let mut locality = Locality::named("futures");
        let napper = Napper { got: got.clone() };
        locality.spawn_root(napper).finish().expect("napper");
        run(locality).expect("a normal end");
        assert_eq!(got.get(), 5);
    });
}

/// Dropping `run` midway leaves the locality where it was; a later `run`
/// (here on another runtime) goes on from there.
#[test]
fn run_is_cancel_safe_and_resumes_on_another_runtime() {
    within(LIMIT, || {
        let (locality, got) = request_timeout();
        let mut app = TokioLocality::new(locality).expect("app");
        let first = runtime()
            .block_on(async { tokio::time::timeout(Duration::from_millis(1), app.run()).await });
        assert!(first.is_err(), "the request's 20 ms timeout had not passed");
        assert_eq!(*got.borrow(), None);
        runtime().block_on(app.run()).expect("a normal end");
        assert_eq!(*got.borrow(), Some(ErrorCode::RequestTimeout));
    });
}

// ---------------- misuse ----------------

#[test]
fn run_outside_a_runtime_is_an_error() {
    let mut locality = Locality::named("lost");
    locality.spawn_root(Brief).finish().expect("brief");
    let mut app = TokioLocality::new(locality).expect("app");
    // Polled by hand, outside any runtime.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut run = std::pin::pin!(app.run());
    match run.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Err(e)) => assert_eq!(e.code(), ErrorCode::NoRuntime),
        other => panic!("expected NoRuntime, got {other:?}"),
    }
}

#[test]
fn run_on_a_runtime_without_timers_is_an_error() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("runtime");
    let mut locality = Locality::named("untimed");
    locality.spawn_root(Brief).finish().expect("brief");
    let mut app = TokioLocality::new(locality).expect("app");
    let err = rt.block_on(app.run()).expect_err("no timers");
    assert_eq!(err.code(), ErrorCode::NoRuntime);
    // The locality is intact: on a complete runtime it runs to its end.
    runtime().block_on(app.run()).expect("a normal end");
}

#[test]
fn a_locality_driven_by_another_loop_is_refused() {
    let poll = commutator::mio::Poll::new().expect("poll");
    let mut locality = Locality::named("taken");
    locality
        .register(poll.registry(), commutator::mio::Token(0))
        .expect("register");
    let err = TokioLocality::new(locality).expect_err("two loops");
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);

    let mut locality = Locality::named("waked");
    locality.set_waker(|| {}).expect("waker");
    let err = TokioLocality::new(locality).expect_err("two loops");
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);

    let mut app = TokioLocality::new(Locality::named("mine")).expect("app");
    let err = app.locality().set_waker(|| {}).expect_err("one loop");
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
}

#[test]
fn run_of_a_locality_with_nothing_to_run_is_an_error() {
    let mut app = TokioLocality::new(Locality::named("empty")).expect("app");
    let err = runtime().block_on(app.run()).expect_err("nothing to run");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}

#[test]
fn a_finished_locality_runs_to_its_result_at_once() {
    within(LIMIT, || {
        let mut app = TokioLocality::new(failing_root()).expect("app");
        let rt = runtime();
        let first = rt.block_on(app.run()).expect_err("failed");
        let again = rt.block_on(app.run()).expect_err("the same end");
        assert_eq!(first, again);
    });
}

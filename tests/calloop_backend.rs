//! The calloop backend (issue 16): a locality as a calloop event source,
//! woken by its deadlines (a calloop timer), by I/O readiness and by other
//! threads (a ping), beside the program's own sources; misuse returns an
//! `Error`.
#![cfg(all(feature = "calloop", unix))]

mod backends;

use backends::*;
use calloop::{Dispatcher, EventLoop};
use commutator::backend::calloop::LocalitySource;
use commutator::prelude::*;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// What the loop's data holds: the locality's result, once it has one.
type End = Option<Result<(), Error>>;

/// Runs `locality` as a source of a fresh loop until it reports its end.
fn run(locality: Locality) -> Result<(), Error> {
    let mut event_loop: EventLoop<'_, End> = EventLoop::try_new().expect("loop");
    let source = LocalitySource::new(locality).expect("a fresh locality");
    event_loop
        .handle()
        .insert_source(source, |result, _, end| *end = Some(result))
        .expect("insert");
    let mut end = None;
    while end.is_none() {
        event_loop.dispatch(None, &mut end).expect("dispatch");
    }
    end.expect("ended")
}

#[test]
fn ping_pong_runs_to_the_end_on_calloop() {
    within(LIMIT, || {
        let (locality, hits) = ping_pong();
        run(locality).expect("a normal end");
        assert_eq!(hits.get(), 1000);
    });
}

#[test]
fn a_request_times_out_on_calloop_timers() {
    within(LIMIT, || {
        let (locality, got) = request_timeout();
        run(locality).expect("a normal end");
        assert_eq!(*got.borrow(), Some(ErrorCode::RequestTimeout));
    });
}

#[test]
fn an_actors_io_source_wakes_the_calloop_loop() {
    within(LIMIT, || {
        let (locality, read, client) = io_source();
        run(locality).expect("a normal end");
        client.join().expect("client");
        assert_eq!(&*read.borrow(), b"hello");
    });
}

#[test]
fn a_send_from_another_thread_pings_the_sleeping_loop() {
    within(LIMIT, || {
        let (locality, heard, _go, knocker) = cross_thread();
        run(locality).expect("a normal end");
        knocker.join().expect("knocker");
        assert_eq!(heard.get(), 7);
    });
}

#[test]
fn the_source_reports_the_roots_reason_and_leaves_the_loop() {
    within(LIMIT, || {
        let err = run(failing_root()).expect_err("the root failed");
        assert_eq!(err.code(), ErrorCode::Failure);
        assert_eq!(err.to_string(), "actor failure (out of coffee)");
        let mut locality = Locality::named("brief");
        locality.spawn_root(Brief).finish().expect("brief");
        run(locality).expect("a normal end is Ok");
    });
}

/// The program's own sources beside the tree: a calloop timer of the
/// program's fires every millisecond and sends each tick into the tree; a
/// calloop channel carries what the tree's actor says back to the program.
/// The actor ends the tree after three ticks; the program removes its timer.
#[test]
fn a_supervisor_tree_lives_beside_the_programs_own_sources() {
    use calloop::channel::{Event, Sender, channel};
    use calloop::timer::{TimeoutAction, Timer};

    struct Tick(u32);
    struct Counter {
        out: Sender<u32>,
    }
    impl Actor for Counter {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, tick: &Tick, ctx: &mut Context<'_, Self>| {
                let _ = me.out.send(tick.0);
                if tick.0 == 3 {
                    ctx.shutdown_supervisor();
                }
            });
        }
    }
    #[derive(Default)]
    struct App {
        heard: Vec<u32>,
        end: End,
    }
    within(LIMIT, || {
        let mut event_loop: EventLoop<'_, App> = EventLoop::try_new().expect("loop");
        let handle = event_loop.handle();
        let (out, back) = channel::<u32>();
        let (mut locality, root) = tree("beside");
        let counter = locality
            .spawn(&root, Counter { out })
            .finish()
            .expect("counter");
        let source = LocalitySource::new(locality).expect("source");
        handle
            .insert_source(source, |result, _, app: &mut App| app.end = Some(result))
            .expect("insert");
        handle
            .insert_source(back, |event, _, app: &mut App| {
                if let Event::Msg(n) = event {
                    app.heard.push(n);
                }
            })
            .expect("channel");
        let sent = Rc::new(Cell::new(0u32));
        let ticks = sent.clone();
        handle
            .insert_source(
                Timer::from_duration(Duration::from_millis(1)),
                move |_, _, _| {
                    ticks.set(ticks.get() + 1);
                    match counter.send(Tick(ticks.get())) {
                        Ok(()) => TimeoutAction::ToDuration(Duration::from_millis(1)),
                        Err(_) => TimeoutAction::Drop, // the tree is gone
                    }
                },
            )
            .expect("timer");
        let mut app = App::default();
        while app.end.is_none() || app.heard.len() < 3 {
            event_loop.dispatch(None, &mut app).expect("dispatch");
        }
        assert_eq!(app.end, Some(Ok(())));
        assert_eq!(app.heard, [1, 2, 3]);
        assert!(sent.get() >= 3);
    });
}

/// A future started by an actor, woken from another thread: the wake pings
/// the loop, the locality polls the future, its output comes as a message.
#[test]
fn an_actors_future_woken_from_another_thread_pings_the_loop() {
    use std::sync::{Arc, Mutex};
    use std::task::{Poll, Waker};

    /// Ready once another thread has set the value.
    #[derive(Clone, Default)]
    struct Later(Arc<Mutex<(Option<u32>, Option<Waker>)>>);
    impl std::future::Future for Later {
        type Output = u32;
        fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<u32> {
            let mut state = self.0.lock().unwrap();
            match state.0 {
                Some(v) => Poll::Ready(v),
                None => {
                    state.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        }
    }
    struct Waits {
        later: Option<Later>,
        got: Rc<Cell<u32>>,
    }
    impl Actor for Waits {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, v: &u32, ctx: &mut Context<'_, Self>| {
                me.got.set(*v);
                ctx.shutdown();
            });
        }
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            if let Some(later) = self.later.take() {
                ctx.spawn_future(later);
            }
        }
    }
    within(LIMIT, || {
        let later = Later::default();
        let setter = later.clone();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let waker = {
                let mut state = setter.0.lock().unwrap();
                state.0 = Some(11);
                state.1.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        });
        let got = Rc::new(Cell::new(0));
        let mut locality = Locality::named("later");
        let waits = Waits {
            later: Some(later),
            got: got.clone(),
        };
        locality.spawn_root(waits).finish().expect("waits");
        run(locality).expect("a normal end");
        thread.join().expect("setter");
        assert_eq!(got.get(), 11);
    });
}

// ---------------- misuse ----------------

/// One source in two loops (a `Dispatcher` can be registered twice): the
/// second insertion fails with a clear error, and the first loop runs on.
#[test]
fn a_locality_in_two_loops_is_refused() {
    within(LIMIT, || {
        let mut locality = Locality::named("twice");
        locality.spawn_root(Brief).finish().expect("brief");
        let source = LocalitySource::new(locality).expect("source");
        let dispatcher = Dispatcher::new(source, |result, _, end: &mut End| *end = Some(result));
        let mut first: EventLoop<'_, End> = EventLoop::try_new().expect("loop");
        let second: EventLoop<'_, End> = EventLoop::try_new().expect("loop");
        first
            .handle()
            .register_dispatcher(dispatcher.clone())
            .expect("the first loop");
        let err = second
            .handle()
            .register_dispatcher(dispatcher.clone())
            .expect_err("a second loop");
        let text = err.to_string();
        assert!(text.contains("already registered on a poll"), "{text}");
        assert!(text.contains("one loop per locality"), "{text}");
        let mut end = None;
        while end.is_none() {
            first.dispatch(None, &mut end).expect("dispatch");
        }
        assert_eq!(end, Some(Ok(())));
    });
}

#[test]
fn a_locality_driven_by_another_loop_is_refused() {
    let poll = commutator::mio::Poll::new().expect("poll");
    let mut locality = Locality::named("taken");
    locality
        .register(poll.registry(), commutator::mio::Token(0))
        .expect("register");
    let err = LocalitySource::new(locality).expect_err("two loops");
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);

    let mut source = LocalitySource::new(Locality::named("mine")).expect("source");
    let err = source
        .locality()
        .register(poll.registry(), commutator::mio::Token(1))
        .expect_err("one loop");
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
}

/// Work the program gives the locality between dispatches (a message sent
/// through the dispatcher) is done before the loop sleeps.
#[test]
fn work_given_between_dispatches_is_done_before_the_loop_sleeps() {
    struct Hello;
    struct Listener {
        heard: Rc<Cell<bool>>,
    }
    impl Actor for Listener {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, _: &Hello, ctx: &mut Context<'_, Self>| {
                me.heard.set(true);
                ctx.shutdown();
            });
        }
    }
    within(LIMIT, || {
        let heard = Rc::new(Cell::new(false));
        let mut locality = Locality::named("given");
        let listener = Listener {
            heard: heard.clone(),
        };
        let listener = locality.spawn_root(listener).finish().expect("listener");
        let source = LocalitySource::new(locality).expect("source");
        let dispatcher = Dispatcher::new(source, |result, _, end: &mut End| *end = Some(result));
        let mut event_loop: EventLoop<'_, End> = EventLoop::try_new().expect("loop");
        event_loop
            .handle()
            .register_dispatcher(dispatcher.clone())
            .expect("insert");
        let mut end = None;
        // Until the listener runs and waits (no timer: it would sleep forever).
        event_loop
            .dispatch(Duration::ZERO, &mut end)
            .expect("dispatch");
        dispatcher
            .as_source_mut()
            .locality()
            .send(&listener, Hello)
            .map_err(|e| e.error)
            .expect("send");
        while end.is_none() {
            event_loop.dispatch(None, &mut end).expect("dispatch");
        }
        assert!(heard.get());
    });
}

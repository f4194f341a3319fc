//! Futures as messages (issue 16, case 4): an actor starts a future, its
//! output comes back as a message on the actor's address; the locality
//! polls it, woken through its inbox; it is dropped unfinished when the
//! actor shuts down or cancels it; a panic in it fails the actor.

use commutator::prelude::*;
use commutator::testing::Harness;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Poll, Waker};
use std::time::Duration;

/// Runs `test` on a thread of its own and fails if it takes longer than `limit`.
fn within(limit: Duration, test: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match finished.recv_timeout(limit) {
        Ok(()) => thread.join().expect("the test thread"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no end within {limit:?}: a hang"),
    }
}

/// A future that is ready once someone calls `set` (from any thread).
#[derive(Clone, Default)]
struct Later(Arc<Mutex<(Option<u32>, Option<Waker>)>>);

impl Later {
    fn set(&self, value: u32) {
        let waker = {
            let mut state = self.0.lock().unwrap();
            state.0 = Some(value);
            state.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Future for Later {
    type Output = Got;
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Got> {
        let mut state = self.0.lock().unwrap();
        match state.0 {
            Some(v) => Poll::Ready(Got(v)),
            None => {
                state.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// What the futures of these tests produce.
#[derive(Clone, Debug, PartialEq)]
struct Got(u32);

/// Sets a flag when dropped (to see a future dropped unfinished).
struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Starts the future it is given when it starts; records what comes back.
struct Starter<F> {
    future: Option<F>,
    got: Rc<RefCell<Vec<u32>>>,
    id: Rc<Cell<Option<FutureId>>>,
}

impl<F> Starter<F> {
    fn new(future: F) -> Starter<F> {
        Starter {
            future: Some(future),
            got: Rc::default(),
            id: Rc::default(),
        }
    }
}

impl<F: Future<Output = Got> + 'static> Actor for Starter<F> {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, got: &Got, _: &mut Context<'_, Self>| {
            me.got.borrow_mut().push(got.0);
        });
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(future) = self.future.take() {
            self.id.set(Some(ctx.spawn_future(future)));
        }
    }
}

#[test]
fn a_futures_output_comes_back_as_a_message_on_the_actors_address() {
    let mut t = Harness::named("f");
    let watched = Starter::new(async { Got(42) });
    let got = watched.got.clone();
    let actor = t.spawn_root(watched).finish().unwrap();
    let seen = t.watch::<Got>(&actor).unwrap();
    t.run_until_idle();
    assert_eq!(*got.borrow(), [42]);
    assert_eq!(seen.take(), [Got(42)], "on the actor's own address");
    assert_eq!(t.stats().futures, 0, "finished futures are forgotten");
}

#[test]
fn a_future_woken_from_another_thread_wakes_the_locality_through_its_waker() {
    let woken = Arc::new(AtomicUsize::new(0));
    let counter = woken.clone();
    let mut locality = Locality::named("woken");
    locality
        .set_waker(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let mut t = Harness::with_locality(locality);
    let later = Later::default();
    let starter = Starter::new(later.clone());
    let got = starter.got.clone();
    t.spawn_root(starter).finish().unwrap();
    t.run_until_idle();
    assert_eq!(t.stats().futures, 1);
    let before = woken.load(Ordering::SeqCst);
    std::thread::spawn(move || later.set(9)).join().unwrap();
    assert!(
        woken.load(Ordering::SeqCst) > before,
        "the wake reached the loop's waker"
    );
    assert!(t.has_pending(), "a dispatch is due");
    assert!(
        got.borrow().is_empty(),
        "nothing runs until the loop dispatches"
    );
    t.run_until_idle();
    assert_eq!(*got.borrow(), [9]);
}

#[test]
fn a_future_on_a_system_is_woken_from_another_thread() {
    within(Duration::from_secs(20), || {
        let later = Later::default();
        let setter = later.clone();
        struct Once<F>(Option<F>);
        impl<F: Future<Output = Got> + 'static> Actor for Once<F> {
            fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
                ctx.subscribe(|_: &mut Self, got: &Got, ctx: &mut Context<'_, Self>| {
                    assert_eq!(got.0, 3);
                    ctx.shutdown();
                });
            }
            fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
                if let Some(f) = self.0.take() {
                    ctx.spawn_future(f);
                }
            }
        }
        let mut system = System::named("sys").unwrap();
        system.spawn_root(Once(Some(later))).finish().unwrap();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            setter.set(3);
        });
        system.run().expect("a normal end");
        thread.join().unwrap();
    });
}

#[test]
fn a_future_is_dropped_unfinished_when_its_actor_shuts_down() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(dropped.clone());
    let never = async move {
        let _flag = flag;
        std::future::pending::<()>().await;
        Got(0)
    };
    let mut t = Harness::named("f");
    let root = t
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let starter = Starter::new(never);
    let actor = t.spawn(&root, starter).finish().unwrap();
    t.run_until_idle();
    assert_eq!(t.stats().futures, 1);
    assert!(!dropped.load(Ordering::SeqCst));
    t.shutdown(&actor).unwrap();
    t.run_until_idle();
    assert_eq!(t.state_of(&actor), None, "the actor is gone");
    assert!(dropped.load(Ordering::SeqCst), "its future went with it");
    assert_eq!(t.stats().futures, 0);
}

#[test]
fn a_cancelled_futures_output_never_comes() {
    struct Canceller {
        later: Later,
        got: Rc<RefCell<Vec<u32>>>,
    }
    impl Actor for Canceller {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, got: &Got, _: &mut Context<'_, Self>| {
                me.got.borrow_mut().push(got.0);
            });
        }
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            let id = ctx.spawn_future(self.later.clone());
            assert_eq!(ctx.futures(), 1);
            assert!(ctx.cancel_future(id));
            assert!(!ctx.cancel_future(id), "cancelling again is a no-op");
            assert_eq!(ctx.futures(), 0);
            ctx.spawn_future(async { Got(1) }); // another one still comes
        }
    }
    let later = Later::default();
    let got = Rc::new(RefCell::new(Vec::new()));
    let mut t = Harness::named("f");
    let canceller = Canceller {
        later: later.clone(),
        got: got.clone(),
    };
    t.spawn_root(canceller).finish().unwrap();
    t.run_until_idle();
    later.set(5);
    t.run_until_idle();
    assert_eq!(*got.borrow(), [1]);
}

#[test]
fn an_actor_cannot_cancel_another_actors_future() {
    struct Thief {
        target: Rc<Cell<Option<FutureId>>>,
        result: Rc<Cell<Option<bool>>>,
    }
    impl Actor for Thief {
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            if let Some(id) = self.target.get() {
                self.result.set(Some(ctx.cancel_future(id)));
            }
        }
    }
    let mut t = Harness::named("f");
    let root = t
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let owner = Starter::new(Later::default());
    let id = owner.id.clone();
    t.spawn(&root, owner).finish().unwrap();
    t.run_until_idle();
    let result = Rc::new(Cell::new(None));
    let thief = Thief {
        target: id,
        result: result.clone(),
    };
    t.spawn(&root, thief).finish().unwrap();
    t.run_until_idle();
    assert_eq!(result.get(), Some(false));
    assert_eq!(t.stats().futures, 1, "the owner's future runs on");
}

#[test]
fn a_panic_in_a_future_fails_its_actor() {
    let mut t = Harness::named("f");
    let boom = async {
        if true {
            panic!("boom in a future");
        }
        Got(0)
    };
    t.spawn_root(Starter::new(boom)).finish().unwrap();
    t.run_until_idle();
    assert!(t.is_finished());
    let reason = t.exit_reason().expect("a reason");
    assert_eq!(reason.code(), ErrorCode::Panicked);
    assert!(reason.to_string().contains("boom in a future"), "{reason}");
}

#[test]
fn spawn_future_in_shutdown_finish_starts_nothing() {
    struct Late(Rc<Cell<Option<FutureId>>>);
    impl Actor for Late {
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.shutdown();
        }
        fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
            self.0.set(Some(ctx.spawn_future(async { Got(1) })));
        }
    }
    let id = Rc::new(Cell::new(None));
    let mut t = Harness::named("f");
    t.spawn_root(Late(id.clone())).finish().unwrap();
    t.run_until_idle();
    assert_eq!(id.get(), Some(FutureId::NONE));
    assert!(id.get().unwrap().is_none());
    assert!(t.is_finished());
    assert_eq!(t.stats().futures, 0);
}

/// A future that wakes itself on every poll and never ends must not keep
/// the locality from its other work: each dispatch polls it once.
#[test]
fn a_future_that_wakes_itself_forever_does_not_starve_the_locality() {
    struct Spin(Arc<AtomicUsize>);
    impl Future for Spin {
        type Output = Got;
        fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Got> {
            self.0.fetch_add(1, Ordering::SeqCst);
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    struct Tick;
    struct Ticker(Rc<Cell<u32>>);
    impl Actor for Ticker {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, _: &Tick, ctx: &mut Context<'_, Self>| {
                me.0.set(me.0.get() + 1);
                let me = ctx.address().clone();
                ctx.send(&me, Tick);
            });
        }
    }
    within(Duration::from_secs(20), || {
        let polls = Arc::new(AtomicUsize::new(0));
        let mut t = Harness::named("f");
        let root = t
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        t.spawn(&root, Starter::new(Spin(polls.clone())))
            .finish()
            .unwrap();
        let ticks = Rc::new(Cell::new(0));
        let ticker = t.spawn(&root, Ticker(ticks.clone())).finish().unwrap();
        t.set_budget(100);
        for _ in 0..10 {
            t.step(); // bring the tree up
        }
        t.send(&ticker, Tick).unwrap();
        for _ in 0..20 {
            let now = t.now();
            t.dispatch(now); // returns: the budget bounds it
        }
        assert!(ticks.get() > 100, "the other actor ran: {}", ticks.get());
        assert!(
            polls.load(Ordering::SeqCst) >= 20,
            "the future was polled each dispatch"
        );
        assert!(t.has_pending());
    });
}

/// Regression: with a budget of one (`Harness::step`), two futures woken at
/// once overran the budget, and the dispatch loop's arithmetic underflowed
/// (a panic in debug builds). Each step now polls at most one, and the
/// other stays pending.
#[test]
fn stepping_polls_one_woken_future_at_a_time() {
    struct Two(Rc<RefCell<Vec<u32>>>);
    impl Actor for Two {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, got: &Got, _: &mut Context<'_, Self>| {
                me.0.borrow_mut().push(got.0);
            });
        }
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.spawn_future(std::future::pending::<Got>()); // polled first, never ready
            ctx.spawn_future(async { Got(2) });
        }
    }
    let got = Rc::new(RefCell::new(Vec::new()));
    let mut t = Harness::named("f");
    t.spawn_root(Two(got.clone())).finish().unwrap();
    let mut steps = 0;
    // `has_pending` must say so while a woken future waits: a loop would
    // otherwise go to sleep on it.
    while t.has_pending() {
        assert!(t.step() <= 1, "one item per step");
        steps += 1;
        assert!(steps < 100, "no end");
    }
    assert_eq!(*got.borrow(), [2]);
    assert_eq!(t.stats().futures, 1, "the pending one");
}

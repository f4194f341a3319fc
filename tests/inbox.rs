//! The cross-thread inbox: bounded for user messages (issue 14, case 4:
//! a thread flooding a slow locality grew it without limit, and a shutdown
//! waited behind the backlog), never full for framework traffic, with
//! blocking and timed sends for producer threads.
//!
//! The first two tests are the regressions: each failed before the
//! fix. Everything that could hang runs under `within` (a watchdog).

use commutator::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

/// Runs `f` on a thread of its own; fails the test if it takes more than
/// 60 seconds (a hang) instead of stalling the run.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    let worker = thread::spawn(move || {
        let result = f();
        let _ = done.send(());
        result
    });
    match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the test hung"),
    }
}

/// Dispatches every locality, in turn, until none has work left.
fn settle(ls: &mut [&mut Locality]) {
    for _ in 0..50 {
        for l in ls.iter_mut() {
            let now = l.now();
            l.run_until_idle(now);
        }
    }
}

#[derive(Debug, PartialEq)]
struct Item(u64);

/// Records the numbers it hears.
struct Sink {
    heard: Rc<RefCell<Vec<u64>>>,
}

impl Actor for Sink {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, item: &Item, _: &mut Context<'_, Self>| {
            me.heard.borrow_mut().push(item.0);
        });
    }
}

/// A locality with a `Sink` root, brought up; the sink's record.
fn sink_on(name: &str) -> (Locality, Address, Rc<RefCell<Vec<u64>>>) {
    let mut l = Locality::named(name);
    let heard = Rc::new(RefCell::new(Vec::new()));
    let sink = l
        .spawn_root(Sink {
            heard: heard.clone(),
        })
        .name("sink")
        .finish()
        .unwrap();
    let now = l.now();
    l.run_until_idle(now);
    (l, sink, heard)
}

/// Sends until the inbox refuses; how many were accepted.
fn fill(to: &Address) -> u64 {
    let mut n = 0;
    while to.send(Item(n)).is_ok() {
        n += 1;
    }
    n
}

/// Regression (issue 14, case 4): a thread flooding a locality that does not
/// keep up grew its inbox without limit. Now the inbox takes its capacity
/// and hands the rest back; once drained, it takes more.
#[test]
fn a_thread_flooding_a_locality_fills_its_inbox_to_the_capacity_and_no_further() {
    within(|| {
        let (mut l, sink, heard) = sink_on("slow");
        let to = sink.clone();
        let flooder = thread::spawn(move || {
            let mut accepted = 0u64;
            for n in 0..4 * DEFAULT_INBOX_CAPACITY as u64 {
                match to.send(Item(n)) {
                    Ok(()) => accepted += 1,
                    Err(refused) => {
                        return (accepted, Some((refused.error.code(), refused.message)));
                    }
                }
            }
            (accepted, None)
        });
        let (accepted, refused) = flooder.join().unwrap();
        assert_eq!(accepted, DEFAULT_INBOX_CAPACITY as u64, "bounded");
        assert_eq!(refused, Some((ErrorCode::InboxFull, Item(accepted))));
        assert_eq!(l.stats().inbox, DEFAULT_INBOX_CAPACITY);
        let now = l.now();
        l.run_until_idle(now);
        assert_eq!(*heard.borrow(), (0..accepted).collect::<Vec<_>>());
        assert_eq!(l.stats().inbox, 0);
        assert!(sink.send(Item(accepted)).is_ok(), "room again once drained");
    });
}

/// A child on another locality that counts what it hears before its shutdown.
struct Slow {
    heard: u64,
    log: Arc<Mutex<Vec<String>>>,
    me: Arc<Mutex<Option<Address>>>,
}

impl Actor for Slow {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        *self.me.lock().unwrap() = Some(ctx.address().clone());
        ctx.subscribe(|me: &mut Self, _: &Item, _: &mut Context<'_, Self>| me.heard += 1);
    }
    fn shutdown_start(&mut self, _: &mut Context<'_, Self>) {
        let line = format!("shutdown started after {} items", self.heard);
        self.log.lock().unwrap().push(line);
    }
}

/// Regression (issue 14, case 4): a shutdown waited behind the whole backlog
/// of user messages in the inbox. Now framework traffic is drained first.
#[test]
fn a_shutdown_request_overtakes_a_backlog_of_user_messages() {
    let mut l0 = Locality::named("top");
    let mut l1 = Locality::named("slow");
    let root = l0
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let me = Arc::new(Mutex::new(None));
    let (log2, me2) = (log.clone(), me.clone());
    let h1 = l1.handle();
    l0.spawn_on(&h1, &root, move || Slow {
        heard: 0,
        log: log2.clone(),
        me: me2.clone(),
    })
    .finish()
    .unwrap();
    drop(h1);
    settle(&mut [&mut l0, &mut l1]);
    let child = me.lock().unwrap().clone().expect("the child runs");
    for n in 0..5_000 {
        child.send(Item(n)).unwrap();
    }
    // The root's shutdown asks the child (on L1) to shut down, behind the flood.
    l0.shutdown(&root).unwrap();
    settle(&mut [&mut l0, &mut l1]);
    assert!(l0.is_finished());
    assert_eq!(
        *log.lock().unwrap(),
        ["shutdown started after 0 items"],
        "the shutdown came before the backlog"
    );
    assert!(
        l1.stats().dropped_stale > 0,
        "the backlog went to a gone actor"
    );
}

#[test]
fn a_full_inbox_hands_the_message_back_with_inbox_full() {
    let (mut l, sink, heard) = sink_on("small");
    l.set_inbox_capacity(2).unwrap();
    assert_eq!(l.inbox_capacity(), 2);
    assert_eq!(fill(&sink), 2);
    let refused = sink.send(Item(7)).unwrap_err();
    assert_eq!(refused.error.code(), ErrorCode::InboxFull);
    assert_eq!(refused.message, Item(7));
    assert!(
        refused.error.to_string().contains("small"),
        "{}",
        refused.error
    );
    // From another locality's loop code: the same.
    let mut other = Locality::named("other");
    let refused = other.send(&sink, Item(8)).unwrap_err();
    assert_eq!(
        (refused.error.code(), refused.message),
        (ErrorCode::InboxFull, Item(8))
    );
    let now = l.now();
    l.run_until_idle(now);
    assert_eq!(*heard.borrow(), [0, 1]);
    assert!(sink.send(Item(2)).is_ok());
}

/// Sends one `Item` with `send` and one with `try_send` to `to`; logs how `try_send` went.
struct Pusher {
    to: Address,
    log: Rc<RefCell<Vec<String>>>,
}

struct Push;

impl Actor for Pusher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, _: &Push, ctx: &mut Context<'_, Self>| {
            ctx.send(&me.to, Item(100));
            let line = match ctx.try_send(&me.to, Item(101)) {
                Ok(()) => "accepted".to_string(),
                Err(e) => format!("{} {:?}", e.error.code(), e.message),
            };
            me.log.borrow_mut().push(line);
        });
    }
}

#[test]
fn an_actor_send_to_a_full_inbox_is_dropped_and_counted_and_try_send_hands_it_back() {
    let (mut l1, sink, heard) = sink_on("full");
    l1.set_inbox_capacity(1).unwrap();
    let mut l0 = Locality::named("pushing");
    let log = Rc::new(RefCell::new(Vec::new()));
    let lines = Rc::new(RefCell::new(Vec::new()));
    let seen = lines.clone();
    l0.inspect_with(1, move |line| seen.borrow_mut().push(line.to_string()));
    let pusher = l0
        .spawn_root(Pusher {
            to: sink.clone(),
            log: log.clone(),
        })
        .finish()
        .unwrap();
    assert_eq!(fill(&sink), 1);
    l0.send(&pusher, Push).unwrap();
    let now = l0.now();
    l0.run_until_idle(now);
    assert_eq!(*log.borrow(), ["inbox full Item(101)"]);
    assert_eq!(l0.stats().dropped_full, 1, "send dropped and counted");
    assert_eq!(l0.stats().dropped_closed, 0);
    let dropped = lines
        .borrow()
        .iter()
        .any(|l| l.contains("dropped (inbox full)"));
    assert!(dropped, "{:?}", lines.borrow());
    // Room again for both.
    let now = l1.now();
    l1.run_until_idle(now);
    l1.set_inbox_capacity(2).unwrap();
    l0.send(&pusher, Push).unwrap();
    let now = l0.now();
    l0.run_until_idle(now);
    let now = l1.now();
    l1.run_until_idle(now);
    assert_eq!(*heard.borrow(), [0, 100, 101]);
    assert_eq!(log.borrow().last().unwrap(), "accepted");
}

#[test]
fn a_blocking_send_waits_until_the_locality_drains_and_keeps_the_order() {
    within(|| {
        const COUNT: u64 = 2_000;
        let (mut l, sink, heard) = sink_on("drain");
        l.set_inbox_capacity(1).unwrap();
        let to = sink.clone();
        let producer = thread::spawn(move || {
            for n in 0..COUNT {
                to.send_blocking(Item(n)).map_err(|e| e.error)?;
            }
            Ok::<(), Error>(())
        });
        while heard.borrow().len() < COUNT as usize && !producer.is_finished() {
            let now = l.now();
            l.run_until_idle(now);
            thread::yield_now();
        }
        assert_eq!(producer.join().unwrap(), Ok(()));
        let now = l.now();
        l.run_until_idle(now);
        assert_eq!(*heard.borrow(), (0..COUNT).collect::<Vec<_>>());
    });
}

#[test]
fn a_blocking_send_returns_locality_finished_when_the_locality_goes_while_it_waits() {
    within(|| {
        let (mut l, sink, _) = sink_on("ends");
        l.set_inbox_capacity(1).unwrap();
        assert_eq!(fill(&sink), 1);
        let (started, waiting) = mpsc::channel();
        let to = sink.clone();
        let producer = thread::spawn(move || {
            started.send(()).unwrap();
            to.send_blocking(Item(9))
                .map_err(|e| (e.error.code(), e.message))
        });
        waiting.recv().unwrap();
        drop(l);
        assert_eq!(
            producer.join().unwrap(),
            Err((ErrorCode::LocalityFinished, Item(9)))
        );
        let refused = sink.send_blocking(Item(10)).unwrap_err();
        assert_eq!(refused.error.code(), ErrorCode::LocalityFinished);
    });
}

#[test]
fn a_timed_send_gives_up_with_inbox_full_when_nothing_drains() {
    within(|| {
        let (mut l, sink, heard) = sink_on("stuck");
        l.set_inbox_capacity(1).unwrap();
        assert_eq!(fill(&sink), 1);
        let to = sink.clone();
        let producer = thread::spawn(move || {
            to.send_timeout(Item(5), Duration::from_millis(20))
                .map_err(|e| (e.error.code(), e.message))
        });
        assert_eq!(
            producer.join().unwrap(),
            Err((ErrorCode::InboxFull, Item(5)))
        );
        let now = l.now();
        l.run_until_idle(now);
        assert_eq!(*heard.borrow(), [0]);
        // With room, it goes at once, whatever the timeout.
        let to = sink.clone();
        let producer = thread::spawn(move || to.send_timeout(Item(6), Duration::MAX).is_ok());
        assert!(producer.join().unwrap());
    });
}

#[test]
fn a_thread_that_runs_a_locality_never_waits_for_a_full_inbox() {
    within(|| {
        // This thread holds `l`: waiting here for `l` to drain would never end.
        let (mut l, sink, _) = sink_on("self");
        l.set_inbox_capacity(1).unwrap();
        assert_eq!(fill(&sink), 1);
        let refused = sink.send_blocking(Item(1)).unwrap_err();
        assert_eq!(
            (refused.error.code(), refused.message),
            (ErrorCode::InboxFull, Item(1))
        );
        let refused = sink.send_timeout(Item(2), Duration::MAX).unwrap_err();
        assert_eq!(refused.error.code(), ErrorCode::InboxFull);
        // Another locality of this thread: the same.
        let (mut other, other_sink, _) = sink_on("self2");
        other.set_inbox_capacity(1).unwrap();
        assert_eq!(fill(&other_sink), 1);
        let refused = other_sink.send_blocking(Item(3)).unwrap_err();
        assert_eq!(refused.error.code(), ErrorCode::InboxFull);
    });
}

#[test]
fn an_inbox_capacity_of_zero_is_refused_and_changes_nothing() {
    let mut l = Locality::named("zero");
    let err = l.set_inbox_capacity(0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(l.inbox_capacity(), DEFAULT_INBOX_CAPACITY);
    let mut system = System::named("zero-system").unwrap();
    let err = system.set_inbox_capacity(0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(system.locality().inbox_capacity(), DEFAULT_INBOX_CAPACITY);
    // Too large is taken as the largest.
    l.set_inbox_capacity(usize::MAX).unwrap();
    assert_eq!(l.inbox_capacity(), MAX_INBOX_CAPACITY);
}

struct Ask;
impl Request for Ask {
    type Response = u64;
}

struct Answers;
impl Actor for Answers {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Ask>, ctx: &mut Context<'_, Self>| {
                ctx.reply(q, 42);
            },
        );
    }
}

/// Asks `server` once it starts; logs the answer and its own end.
struct Asker {
    server: Address,
    log: Arc<Mutex<Vec<String>>>,
}

impl Actor for Asker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, r: &Response<Ask>, _: &mut Context<'_, Self>| {
                me.log
                    .lock()
                    .unwrap()
                    .push(format!("answer {:?}", r.result()));
            },
        );
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log.lock().unwrap().push("started".into());
        let server = self.server.clone();
        ctx.request(&server, Ask, Duration::from_secs(3600));
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.log.lock().unwrap().push("down".into());
    }
}

#[test]
fn framework_traffic_and_replies_get_through_a_full_inbox() {
    let (mut l1, sink, _) = sink_on("full");
    l1.set_inbox_capacity(1).unwrap();
    let h1 = l1.handle();
    let mut l0 = Locality::named("top");
    let root = l0
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let server = l0.spawn(&root, Answers).finish().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = log.clone();
    // Everything L0 posts to L1 meets a full inbox: the spawn request, the
    // start, the reply and the shutdown.
    fill(&sink);
    l0.spawn_on(&h1, &root, move || Asker {
        server: server.clone(),
        log: log2.clone(),
    })
    .finish()
    .unwrap();
    drop(h1);
    for _ in 0..50 {
        let now = l1.now();
        l1.run_until_idle(now);
        fill(&sink);
        let now = l0.now();
        l0.run_until_idle(now);
    }
    assert_eq!(*log.lock().unwrap(), ["started", "answer Ok(42)"]);
    l0.shutdown(&root).unwrap();
    for _ in 0..50 {
        fill(&sink);
        let now = l0.now();
        l0.run_until_idle(now);
        let now = l1.now();
        l1.run_until_idle(now);
    }
    assert!(l0.is_finished());
    assert_eq!(log.lock().unwrap().last().unwrap(), "down");
    let stats = l0.stats();
    assert_eq!((stats.dropped_full, stats.dropped_closed), (0, 0));
}

struct Idle;
impl Actor for Idle {}

/// Links to `server` during its init.
struct Linker {
    server: Address,
}

impl Actor for Linker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let server = self.server.clone();
        ctx.link(&server).expect("not linked yet");
    }
}

#[test]
fn a_link_request_left_in_the_inbox_of_a_closing_locality_is_answered() {
    let mut l1 = Locality::named("server-side");
    let server = l1.spawn_root(Idle).finish().unwrap();
    let now = l1.now();
    l1.run_until_idle(now);
    let mut l0 = Locality::named("client-side");
    l0.spawn_root(Linker { server }).finish().unwrap();
    let now = l0.now();
    l0.run_until_idle(now);
    // The link request waits in L1's inbox when L1 goes.
    drop(l1);
    l0.run_until_idle(now);
    assert!(
        l0.is_finished(),
        "the client does not wait for an answer forever"
    );
    let reason = l0.exit_reason().expect("the link failed");
    let codes: Vec<_> = reason.chain().map(Error::code).collect();
    assert!(codes.contains(&ErrorCode::LocalityFinished), "{reason}");
}

#[test]
fn a_spawn_request_left_in_the_inbox_of_a_closing_locality_is_answered() {
    let mut l0 = Locality::named("parent-side");
    let root = l0
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let l1 = Locality::named("child-side");
    let h1 = l1.handle();
    l0.spawn_on(&h1, &root, || Idle).finish().unwrap();
    drop(h1);
    // The spawn request waits in L1's inbox when L1 goes.
    drop(l1);
    let now = l0.now();
    l0.run_until_idle(now);
    let _ = l0.shutdown(&root);
    l0.run_until_idle(now);
    assert!(
        l0.is_finished(),
        "the supervisor does not wait for the child forever"
    );
}

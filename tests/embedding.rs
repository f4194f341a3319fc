//! A locality embedded in a user's own mio loop, beside the user's sources.

mod common;

use common::{Clock, Log, root_on_l0};
use commutator::mio::net::TcpListener;
use commutator::mio::{Events, Interest, Poll, Token};
use commutator::{Actor, Context, Locality};
use std::time::Duration;

const LOCALITY: Token = Token(7);
const LISTENER: Token = Token(1);

/// Generous, so a slow machine never fails the test; never asserted on.
const POLL_LIMIT: Duration = Duration::from_secs(5);

struct Msg(u32);

/// Logs every `Msg`.
struct Sink {
    log: Log,
}

impl Actor for Sink {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_msg);
    }
}

impl Sink {
    fn on_msg(&mut self, msg: &Msg, _: &mut Context<'_, Self>) {
        self.log.push(format!("msg {}", msg.0));
    }
}

/// Polls until an event with `token` arrives; every token seen is returned.
fn poll_until(poll: &mut Poll, events: &mut Events, token: Token) -> Vec<Token> {
    let mut seen = Vec::new();
    for _ in 0..10 {
        poll.poll(events, Some(POLL_LIMIT)).expect("poll");
        seen.extend(events.iter().map(|e| e.token()));
        if seen.contains(&token) {
            return seen;
        }
    }
    panic!("no event for {token:?} after 10 polls; saw {seen:?}");
}

#[test]
fn the_locality_handles_only_its_own_token_beside_a_user_listener() {
    let mut poll = Poll::new().unwrap();
    let mut events = Events::with_capacity(16);
    let (mut locality, _root) = root_on_l0();
    locality.register(poll.registry(), LOCALITY).unwrap();
    let mut listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .unwrap();

    assert!(locality.handles(LOCALITY));
    assert!(!locality.handles(LISTENER));
    assert!(!locality.handles(Token(0)));

    // A real event on the user's token is not the locality's.
    let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let seen = poll_until(&mut poll, &mut events, LISTENER);
    assert!(
        !seen.contains(&LOCALITY),
        "nothing was sent to the locality: {seen:?}"
    );
    for event in events.iter() {
        assert_eq!(locality.handles(event.token()), event.token() == LOCALITY);
    }
    let (_stream, _) = listener.accept().expect("the connection is ready");
}

#[test]
fn a_send_from_another_thread_wakes_the_poll() {
    let clock = Clock::new();
    let log = Log::new();
    let mut poll = Poll::new().unwrap();
    let mut events = Events::with_capacity(16);
    let (mut locality, root) = root_on_l0();
    locality.register(poll.registry(), LOCALITY).unwrap();
    let mut listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .unwrap();
    let sink = locality
        .spawn(&root, Sink { log: log.clone() })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    assert!(!locality.has_pending());
    assert_eq!(
        locality.poll_timeout(clock.at(0)),
        None,
        "only an outside event can bring work"
    );

    let sender = std::thread::spawn(move || sink.send(Msg(42)).expect("the locality is running"));
    let seen = poll_until(&mut poll, &mut events, LOCALITY);
    sender.join().unwrap();
    assert!(!seen.contains(&LISTENER));
    for event in events.iter() {
        if locality.handles(event.token()) {
            locality.on_event(event);
        }
    }
    assert!(locality.has_pending());
    locality.dispatch(clock.at(0));

    assert_eq!(log.lines(), ["msg 42"]);
    assert!(!locality.has_pending());
}

/// Starts one timer of `after` when it starts.
struct Alarm {
    log: Log,
    clock: Clock,
    after: Duration,
}

impl Actor for Alarm {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(self.after, |a: &mut Alarm, ctx, _| {
            a.log.push(format!("alarm@{}", a.clock.ms(ctx.now())));
        });
    }
}

#[test]
fn dispatch_on_a_manual_clock_fires_timers_only_once_the_clock_passes_their_deadline() {
    let clock = Clock::new();
    let log = Log::new();
    let mut poll = Poll::new().unwrap();
    let mut events = Events::with_capacity(16);
    let (mut locality, root) = root_on_l0();
    locality.register(poll.registry(), LOCALITY).unwrap();
    let alarm = Alarm {
        log: log.clone(),
        clock,
        after: Duration::from_millis(100),
    };
    locality.spawn(&root, alarm).finish().unwrap();

    // One turn of the user's loop: poll without blocking (the wait the locality
    // asks for is not spent; the manual clock stands for it), then dispatch.
    let mut turn = |locality: &mut Locality, ms: u64| {
        poll.poll(&mut events, Some(Duration::ZERO)).unwrap();
        locality.dispatch(clock.at(ms))
    };
    turn(&mut locality, 0);
    assert_eq!(
        locality.poll_timeout(clock.at(0)),
        Some(Duration::from_millis(100))
    );
    turn(&mut locality, 60);
    assert_eq!(
        locality.poll_timeout(clock.at(60)),
        Some(Duration::from_millis(40))
    );
    turn(&mut locality, 99);
    assert!(log.is_empty());
    assert_eq!(turn(&mut locality, 100), 1);
    assert_eq!(log.lines(), ["alarm@100"]);
    assert_eq!(locality.poll_timeout(clock.at(100)), None);
}

#[test]
fn a_budget_of_one_makes_dispatch_return_after_one_item_with_work_pending() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let sink = locality
        .spawn(&root, Sink { log: log.clone() })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    for n in 0..3 {
        locality.send(&sink, Msg(n)).unwrap();
    }

    locality.set_budget(1);
    assert_eq!(locality.dispatch(clock.at(0)), 1);
    assert!(locality.has_pending());
    assert_eq!(locality.poll_timeout(clock.at(0)), Some(Duration::ZERO));
    assert_eq!(log.lines(), ["msg 0"]);

    assert_eq!(locality.dispatch(clock.at(0)), 1);
    assert_eq!(locality.dispatch(clock.at(0)), 1);
    assert!(!locality.has_pending());
    assert_eq!(locality.dispatch(clock.at(0)), 0);
    assert_eq!(log.lines(), ["msg 0", "msg 1", "msg 2"]);
}

#[test]
fn a_budget_bounds_the_due_timers_one_dispatch_fires() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    for _ in 0..3 {
        let alarm = Alarm {
            log: log.clone(),
            clock,
            after: Duration::from_millis(10),
        };
        locality.spawn(&root, alarm).finish().unwrap();
    }
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.stats().timers, 3);

    locality.set_budget(2);
    assert_eq!(locality.dispatch(clock.at(10)), 2);
    assert!(locality.has_pending());
    assert_eq!(locality.dispatch(clock.at(10)), 1);
    assert!(!locality.has_pending());
    assert_eq!(log.len(), 3);
}

#[test]
fn messages_sent_before_the_locality_is_registered_are_dispatched() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let sink = locality
        .spawn(&root, Sink { log: log.clone() })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    std::thread::spawn(move || sink.send(Msg(1)).unwrap())
        .join()
        .unwrap();

    let poll = Poll::new().unwrap();
    locality.register(poll.registry(), LOCALITY).unwrap();
    assert!(locality.has_pending());
    locality.dispatch(clock.at(0));
    assert_eq!(log.lines(), ["msg 1"]);
    // The locality first: a poll closed before it stays claimed, and a
    // test running beside this one could get its descriptor for its poll.
    drop(locality);
    drop(poll);
}

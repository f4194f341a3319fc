//! Actor I/O: mio sources registered by actors, readiness as messages, guards
//! that deregister, and init held by a connecting socket.

mod common;

use common::{Log, Slot};
use commutator::mio::net::{TcpListener, TcpStream};
use commutator::mio::{Events, Interest, Poll, Token};
use commutator::*;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const WAKER: Token = Token(0);

/// A locality on a poll of the test's, with a root supervisor.
fn on_poll() -> (Poll, Locality, Address) {
    let poll = Poll::new().unwrap();
    let mut l = Locality::named("L0");
    l.register(poll.registry(), WAKER).unwrap();
    let root = l
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    (poll, l, root)
}

/// Polls and dispatches until `done` or a generous deadline (not a timing assert).
fn run_until(poll: &mut Poll, l: &mut Locality, done: impl Fn(&Locality) -> bool) {
    let mut events = Events::with_capacity(64);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done(l) {
        assert!(Instant::now() < deadline, "stuck");
        l.dispatch(Instant::now());
        if done(l) {
            break;
        }
        poll.poll(&mut events, Some(Duration::from_millis(50)))
            .unwrap();
        for event in events.iter() {
            if l.handles(event.token()) {
                l.on_event(event);
            }
        }
    }
}

fn listener() -> (TcpListener, SocketAddr) {
    let socket = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let address = socket.local_addr().unwrap();
    (socket, address)
}

/// Registers a listener; logs each readiness; drops its guard on `Drop`.
struct Watcher {
    socket: Option<TcpListener>,
    guard: Option<IoGuard<TcpListener>>,
    id: Slot<IoId>,
    log: Log,
}

struct DropGuard;

impl Actor for Watcher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, io: &Io, _: &mut Context<'_, Self>| {
            let accepted = me
                .guard
                .as_mut()
                .map(|g| g.accept().is_ok())
                .unwrap_or(false);
            me.log.push(format!(
                "readable={} same id={} accepted={accepted}",
                io.is_readable(),
                io.id() == me.id.get()
            ));
        });
        ctx.subscribe(|me: &mut Self, _: &DropGuard, _: &mut Context<'_, Self>| me.guard = None);
        let guard = ctx
            .register_io(self.socket.take().unwrap(), Interest::READABLE)
            .unwrap();
        self.id.set(guard.id());
        self.guard = Some(guard);
    }
}

#[test]
fn readiness_arrives_as_a_message_to_the_actor() {
    let (mut poll, mut l, root) = on_poll();
    let (socket, address) = listener();
    let log = Log::new();
    let watcher = Watcher {
        socket: Some(socket),
        guard: None,
        id: Slot::new(),
        log: log.clone(),
    };
    l.spawn(&root, watcher).finish().unwrap();
    l.run_until_idle(Instant::now());
    assert_eq!(l.stats().io, 1);
    let _client = std::net::TcpStream::connect(address).unwrap();
    run_until(&mut poll, &mut l, |_| !log.is_empty());
    assert_eq!(log.lines(), ["readable=true same id=true accepted=true"]);
}

#[test]
fn dropping_the_guard_or_shutting_down_deregisters_the_source() {
    let (mut poll, mut l, root) = on_poll();
    let log = Log::new();
    let (socket, _) = listener();
    let watcher = Watcher {
        socket: Some(socket),
        guard: None,
        id: Slot::new(),
        log: log.clone(),
    };
    let a = l.spawn(&root, watcher).finish().unwrap();
    let (socket, _) = listener();
    let watcher = Watcher {
        socket: Some(socket),
        guard: None,
        id: Slot::new(),
        log: log.clone(),
    };
    let b = l.spawn(&root, watcher).finish().unwrap();
    l.run_until_idle(Instant::now());
    assert_eq!(l.stats().io, 2);
    l.send(&a, DropGuard).unwrap();
    l.run_until_idle(Instant::now());
    assert_eq!(l.stats().io, 1, "the dropped guard deregistered its source");
    l.shutdown(&b).unwrap();
    run_until(&mut poll, &mut l, |l| l.state_of(&b).is_none());
    assert_eq!(l.stats().io, 0, "the actor's source went with it");
}

#[test]
fn io_needs_a_locality_on_a_poll() {
    let mut l = Locality::named("L0");
    let seen = Slot::new();
    let s = seen.clone();
    struct Eager(Slot<ErrorCode>);
    impl Actor for Eager {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            let (socket, _) = listener();
            if let Err(e) = ctx.register_io(socket, Interest::READABLE) {
                self.0.set(e.code());
            }
        }
    }
    l.spawn_root(Eager(s)).finish().unwrap();
    l.run_until_idle(Instant::now());
    assert_eq!(seen.get(), ErrorCode::NotRegistered);
    assert_eq!(l.stats().io, 0);
}

/// Connects in `init_start`, holding init (a resource) until connected.
struct Dialer {
    server: SocketAddr,
    stream: Option<IoGuard<TcpStream>>,
    log: Log,
}

const CONNECTING: u32 = 1;

impl Actor for Dialer {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, io: &Io, ctx: &mut Context<'_, Self>| {
            if io.is_writable() && ctx.resources_held(CONNECTING) > 0 {
                let connected = me
                    .stream
                    .as_ref()
                    .map(|s| s.peer_addr().is_ok())
                    .unwrap_or(false);
                me.log.push(format!("connected={connected}"));
                ctx.release_resource(CONNECTING).unwrap();
            }
        });
        let stream = TcpStream::connect(self.server).unwrap();
        self.stream = Some(ctx.register_io(stream, Interest::WRITABLE).unwrap());
        ctx.acquire_resource(CONNECTING);
    }
    fn init_finish(&mut self, _: &mut Context<'_, Self>) {
        self.log.push("init_finish");
    }
}

#[test]
fn a_socket_opened_during_init_holds_init_until_it_is_connected() {
    let (mut poll, mut l, root) = on_poll();
    let (_server, address) = listener();
    let log = Log::new();
    let dialer = l
        .spawn(
            &root,
            Dialer {
                server: address,
                stream: None,
                log: log.clone(),
            },
        )
        .finish()
        .unwrap();
    l.run_until_idle(Instant::now());
    run_until(&mut poll, &mut l, |l| {
        l.state_of(&dialer) == Some(ActorState::Operational)
    });
    assert_eq!(log.lines(), ["connected=true", "init_finish"]);
}

#[test]
fn a_second_locality_on_the_same_poll_is_refused() {
    // mio allows one waker per poll; one locality per poll it is.
    let poll = Poll::new().unwrap();
    let mut a = Locality::named("A");
    let mut b = Locality::named("B");
    a.register(poll.registry(), Token(1)).unwrap();
    let e = b.register(poll.registry(), Token(2)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::AlreadyRegisteredOnPoll);
    drop(a);
    let other = Poll::new().unwrap();
    b.register(other.registry(), Token(2)).unwrap();
}

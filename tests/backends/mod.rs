//! Scenarios shared by the backend tests (`tests/tokio_backend.rs`,
//! `tests/calloop_backend.rs`): each builds a locality whose run must end
//! by itself, and says what it should have seen. They run on real time, in
//! milliseconds; no test asserts how long anything took.

#![allow(dead_code, unreachable_pub)]

use commutator::mio::Interest;
use commutator::mio::net::TcpListener;
use commutator::prelude::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

/// Runs `test` on a thread of its own and fails if it takes longer than `limit`.
pub fn within(limit: Duration, test: impl FnOnce() + Send + 'static) {
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

/// The watchdog's limit for one scenario.
pub const LIMIT: Duration = Duration::from_secs(20);

/// A root supervisor named `root` on a new locality.
pub fn tree(name: &str) -> (Locality, Address) {
    let mut locality = Locality::named(name);
    let root = locality
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("root");
    (locality, root)
}

// ---------------- ping-pong ----------------

pub struct Ball(pub u32);

/// Returns the ball until it has crossed `left` times, then ends the tree.
pub struct Player {
    pub other: Option<Address>,
    pub hits: Rc<Cell<u32>>,
}

impl Actor for Player {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_ball);
        ctx.subscribe(
            |me: &mut Self, other: &Address, ctx: &mut Context<'_, Self>| {
                me.other = Some(other.clone());
                ctx.send(other, Ball(1000));
            },
        );
    }
}

impl Player {
    fn on_ball(&mut self, ball: &Ball, ctx: &mut Context<'_, Self>) {
        self.hits.set(self.hits.get() + 1);
        match &self.other {
            Some(other) if ball.0 > 1 => ctx.send(other, Ball(ball.0 - 1)),
            _ => ctx.shutdown_supervisor(),
        }
    }
}

/// Two players under a root; they exchange 1,000 balls, then the tree ends.
pub fn ping_pong() -> (Locality, Rc<Cell<u32>>) {
    let (mut locality, root) = tree("pingpong");
    let hits = Rc::new(Cell::new(0));
    let a = Player {
        other: None,
        hits: hits.clone(),
    };
    let a = locality.spawn(&root, a).finish().expect("a");
    let b = Player {
        other: Some(a.clone()),
        hits: hits.clone(),
    };
    let b = locality.spawn(&root, b).finish().expect("b");
    locality.send(&a, b).map_err(|e| e.error).expect("kick");
    (locality, hits)
}

// ---------------- a request that times out ----------------

pub struct Question;
impl Request for Question {
    type Response = u32;
}

/// Hears questions, never answers.
pub struct Mute;
impl Actor for Mute {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &RequestMsg<Question>, _: &mut Context<'_, Self>| {});
    }
}

/// Asks the mute server, with a 20 ms timeout; keeps the response's code.
pub struct Asker {
    pub server: Address,
    pub got: Rc<RefCell<Option<ErrorCode>>>,
}
impl Actor for Asker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, r: &Response<Question>, ctx: &mut Context<'_, Self>| {
                *me.got.borrow_mut() = r.result().err().map(Error::code);
                ctx.shutdown_supervisor();
            },
        );
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.request(&self.server, Question, Duration::from_millis(20));
    }
}

/// The tree ends when the request has timed out: on the backend's timers,
/// since nothing else happens meanwhile.
pub fn request_timeout() -> (Locality, Rc<RefCell<Option<ErrorCode>>>) {
    let (mut locality, root) = tree("timeout");
    let server = locality.spawn(&root, Mute).finish().expect("mute");
    let got = Rc::new(RefCell::new(None));
    let asker = Asker {
        server,
        got: got.clone(),
    };
    locality.spawn(&root, asker).finish().expect("asker");
    (locality, got)
}

// ---------------- an I/O source ----------------

/// Owns a listener; accepts one connection, reads a line from it, ends the tree.
pub struct Door {
    pub listener: Option<TcpListener>,
    pub guard: Option<IoGuard<TcpListener>>,
    pub stream: Option<IoGuard<commutator::mio::net::TcpStream>>,
    pub read: Rc<RefCell<Vec<u8>>>,
}

impl Actor for Door {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_io);
        if let Some(listener) = self.listener.take() {
            match ctx.register_io(listener, Interest::READABLE) {
                Ok(guard) => self.guard = Some(guard),
                Err(e) => ctx.fail(e),
            }
        }
    }
}

impl Door {
    fn on_io(&mut self, io: &Io, ctx: &mut Context<'_, Self>) {
        use std::io::Read;
        if self.guard.as_ref().is_some_and(|g| g.id() == io.id()) {
            let Some(listener) = self.guard.as_mut() else {
                return;
            };
            if let Ok((stream, _)) = listener.accept() {
                match ctx.register_io(stream, Interest::READABLE) {
                    Ok(guard) => self.stream = Some(guard),
                    Err(e) => ctx.fail(e),
                }
            }
            return;
        }
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let mut buf = [0u8; 64];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.read.borrow_mut().extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => return ctx.fail(Error::io(e)),
            }
        }
        ctx.shutdown_supervisor(); // the peer closed: done
    }
}

/// A door on a fresh port, and a thread that connects and writes `hello`
/// once the loop runs. Returns what the door read.
pub fn io_source() -> (Locality, Rc<RefCell<Vec<u8>>>, std::thread::JoinHandle<()>) {
    let (mut locality, root) = tree("io");
    let listener = TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let at = listener.local_addr().expect("local addr");
    let read = Rc::new(RefCell::new(Vec::new()));
    let door = Door {
        listener: Some(listener),
        guard: None,
        stream: None,
        read: read.clone(),
    };
    locality.spawn(&root, door).finish().expect("door");
    let client = std::thread::spawn(move || {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(at).expect("connect");
        stream.write_all(b"hello").expect("write");
    });
    (locality, read, client)
}

// ---------------- a send from another thread ----------------

pub struct Knock(pub u32);

/// Waits, with no timer, for a knock from another thread; then ends the tree.
pub struct Waiter {
    pub heard: Rc<Cell<u32>>,
}
impl Actor for Waiter {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, knock: &Knock, ctx: &mut Context<'_, Self>| {
                me.heard.set(knock.0);
                ctx.shutdown_supervisor();
            },
        );
    }
}

/// The waiter, and a thread that knocks once it is told the loop is idle
/// (send on the returned channel). Nothing else can wake the loop.
pub fn cross_thread() -> (
    Locality,
    Rc<Cell<u32>>,
    mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let (mut locality, root) = tree("cross");
    let heard = Rc::new(Cell::new(0));
    let waiter = Waiter {
        heard: heard.clone(),
    };
    let waiter = locality.spawn(&root, waiter).finish().expect("waiter");
    let (go, wait) = mpsc::channel::<()>();
    let knocker = std::thread::spawn(move || {
        let _ = wait.recv_timeout(Duration::from_millis(50));
        waiter.send(Knock(7)).map_err(|e| e.error).expect("knock");
    });
    (locality, heard, go, knocker)
}

// ---------------- a clean shutdown with a reason ----------------

/// Fails as soon as it starts: the root (a supervisor) escalates, the tree ends.
pub struct Quitter;
impl Actor for Quitter {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::from_millis(5), |_, ctx, _| {
            ctx.fail(Error::failure("out of coffee"));
        });
    }
}

/// A root that fails 5 ms after it starts: the run returns its reason.
pub fn failing_root() -> Locality {
    let mut locality = Locality::named("failing");
    locality.spawn_root(Quitter).finish().expect("quitter");
    locality
}

/// A root that shuts down normally after 5 ms.
pub struct Brief;
impl Actor for Brief {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::from_millis(5), |_, ctx, _| ctx.shutdown());
    }
}

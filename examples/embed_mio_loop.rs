//! A `Locality` embedded in a `mio::Poll` loop that the program owns.
//!
//! The loop serves a TCP listener of its own (token `LISTENER`): it accepts
//! each connection, writes a greeting line and closes it. Beside it, a
//! locality registered on the same poll (waker token `WAKER`) runs a root
//! supervisor with two actors: a `Ticker` whose timer fires every 100 ms and
//! sends `Tick(n)` to a `Counter`, which shuts the supervisor down after five
//! ticks. A client thread connects three times, reads the greetings, then sends
//! a message into the locality with `Address::send`, which wakes the loop from
//! the other thread. The loop waits at most `Locality::poll_timeout`, and ends
//! when `Locality::is_finished`.
//!
//! Run it with `cargo run --example embed_mio_loop`. It exits by itself after
//! about half a second, printing one line per event: the connections served,
//! the client's message, the five ticks and the locality's exit reason.

use commutator::mio::net::TcpListener;
use commutator::mio::{Events, Interest, Poll, Token};
use commutator::prelude::*;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

/// The loop's own source.
const LISTENER: Token = Token(0);
/// The locality's waker; any token below `commutator::RESERVED_TOKENS` will do.
const WAKER: Token = Token(1);
const PERIOD: Duration = Duration::from_millis(100);
const TICKS: u32 = 5;
const CONNECTIONS: usize = 3;

/// Ticker → Counter.
struct Tick(u32);
/// Client thread → Counter, through `Address::send`.
struct FromClient(String);

struct Ticker {
    counter: Address,
    sent: u32,
}

impl Actor for Ticker {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(PERIOD, Self::on_timer);
    }
}

impl Ticker {
    /// Timers fire once: re-arming in the callback makes a periodic one.
    fn on_timer(&mut self, ctx: &mut Context<'_, Self>, _: TimerId) {
        self.sent += 1;
        ctx.send(&self.counter, Tick(self.sent));
        ctx.start_timer(PERIOD, Self::on_timer);
    }
}

#[derive(Default)]
struct Counter {
    ticks: u32,
}

impl Actor for Counter {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_tick);
        ctx.subscribe(Self::on_client);
    }
}

impl Counter {
    fn on_tick(&mut self, &Tick(n): &Tick, ctx: &mut Context<'_, Self>) {
        self.ticks += 1;
        if self.ticks < TICKS {
            println!("counter: tick {n}");
        } else {
            println!("counter: tick {n}, the last one: shutting the supervisor down");
            ctx.shutdown_supervisor();
        }
    }

    fn on_client(&mut self, FromClient(text): &FromClient, _: &mut Context<'_, Self>) {
        println!("counter: message from the client thread: {text}");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(64);

    let mut listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let listen_addr = listener.local_addr()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;

    let mut locality = Locality::named("embed");
    locality.register(poll.registry(), WAKER)?;
    let root = locality
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()?;
    let counter = locality
        .spawn(&root, Counter::default())
        .name("counter")
        .finish()?;
    let ticker = Ticker {
        counter: counter.clone(),
        sent: 0,
    };
    locality.spawn(&root, ticker).name("ticker").finish()?;
    println!("loop: listening on {listen_addr}, locality waker on {WAKER:?}");

    let client = thread::spawn(move || run_client(listen_addr, &counter));

    let mut served = 0;
    while !locality.is_finished() {
        // Zero while the locality has work queued; `None` (no timeout) if only
        // an outside event can bring it work.
        let timeout = locality.poll_timeout(Instant::now());
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e.into());
        }
        for event in events.iter() {
            if locality.handles(event.token()) {
                locality.on_event(event);
            } else if event.token() == LISTENER {
                serve(&listener, &mut served)?;
            }
        }
        // Cross-thread mail, due timers, then the queue.
        locality.dispatch(Instant::now());
    }

    let reason = locality
        .exit_reason()
        .map_or_else(|| "none".to_string(), |reason| format!("{reason:#}"));
    println!(
        "loop: locality finished after {:.2} s: {reason} ({} messages delivered)",
        started.elapsed().as_secs_f64(),
        locality.stats().delivered,
    );
    client.join().map_err(|_| "the client thread panicked")??;
    Ok(())
}

/// Accepts every pending connection, greets it and closes it.
fn serve(listener: &TcpListener, served: &mut usize) -> io::Result<()> {
    loop {
        let (mut stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        };
        *served += 1;
        // The socket is non-blocking, but a fresh one takes a short line at
        // once; a real server would register it for WRITABLE and write then.
        let greeting = format!("hello #{served} from the user's mio loop\n");
        match stream.write_all(greeting.as_bytes()) {
            Ok(()) => println!("loop: served connection #{served} from {peer}"),
            Err(e) => println!("loop: connection #{served} from {peer} failed: {e}"),
        }
        // Dropping `stream` closes the connection: the client reads to EOF.
    }
}

/// The other thread: reads a few greetings, then reports to the counter.
fn run_client(server: SocketAddr, counter: &Address) -> io::Result<()> {
    let mut last = String::new();
    for _ in 0..CONNECTIONS {
        let mut stream = TcpStream::connect(server)?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        last.clear();
        stream.read_to_string(&mut last)?;
    }
    let report = format!(
        "read {CONNECTIONS} greetings, the last one {:?}",
        last.trim_end()
    );
    // Goes through the locality's inbox and wakes the loop with its waker.
    counter
        .send(FromClient(report))
        .map_err(|e| io::Error::other(e.error))
}

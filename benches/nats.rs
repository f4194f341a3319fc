//! The bench target `nats` (feature `nats`): the NATS bridge beside raw
//! async-nats, on the same nats-server, in the same run.
//!
//! `cargo bench --features nats --bench nats [-- <workload>...]` prints, per
//! workload, `async-nats <workload> <count> <seconds> <rate_per_sec>`, then
//! the same for `commutator` (a bridge thread) and, with feature `tokio`,
//! `commutator-tokio` (the connection on the locality's own runtime):
//!
//! - `nats_pubsub`: a burst of `Note`s published on one connection and
//!   received on another; from the first publish to the last delivery.
//!   commutator: an actor sends them to an `Export`, an `Import` delivers them
//!   to an actor of another locality. async-nats: one task publishes, another
//!   reads the subscription. Both encode and decode with serde_json, and both
//!   have room for the whole burst (buffer and subscription capacity), so
//!   nothing is dropped.
//! - `nats_request`: requests one at a time (round trips per second).
//!   commutator: an actor asks a `Remote`; a `Service` in another locality, on
//!   another connection, asks a local actor that answers. async-nats:
//!   `Client::request` against a task that answers each message.
//! - `nats_request_100`: the same with 100 requests in flight.
//!
//! The server is `COMMUTATOR_NATS_URL`, or a nats-server
//! (`COMMUTATOR_NATS_SERVER`, else from the `PATH`) started here on a free
//! loopback port (none found: one "skipped" line, or a failure under
//! `COMMUTATOR_REQUIRE_NATS=1`). Without `--bench` (as under
//! `cargo test --all-targets`) the counts are divided by 1,000 (a smoke run);
//! `COMMUTATOR_BENCH_DIV=<n>` sets the divisor, `REPS=<n>` repeats each
//! workload, `ONLY=commutator` (or `ONLY=async-nats`) runs one side (for
//! profiling).

use commutator::nats::{Nats, Options, Wire};
use commutator::prelude::*;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[cfg(feature = "tokio")]
#[path = "nats/tokio_side.rs"]
mod tokio_side;

const N_PUBSUB: u64 = 200_000;
const N_REQUEST: u64 = 20_000;
const N_REQUEST_100: u64 = 100_000;
const LIMIT: Duration = Duration::from_secs(300);

#[derive(Serialize, Deserialize)]
struct Note {
    seq: u64,
    text: String,
}
impl Wire for Note {
    const NAME: &'static str = "bench.Note";
}

#[derive(Serialize, Deserialize)]
struct Square(u64);
impl Wire for Square {
    const NAME: &'static str = "bench.Square";
}
impl Request for Square {
    type Response = u64;
}

fn note(seq: u64) -> Note {
    Note {
        seq,
        text: "hello over nats".into(),
    }
}

fn report(who: &str, workload: &str, count: u64, secs: f64) {
    let rate = if secs > 0.0 { count as f64 / secs } else { 0.0 };
    println!("{who} {workload} {count} {secs:.6} {rate:.0}");
}

// ---------------- a locality on a thread ----------------

struct Stop;
struct Stopper;
impl Actor for Stopper {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Stop, ctx: &mut Context<'_, Self>| {
            ctx.shutdown_supervisor()
        });
    }
}

/// Where a side of a workload runs: a `System` on a thread with its
/// connection's bridge thread (`commutator`), or a `TokioLocality` with its
/// connection on the same runtime (`commutator-tokio`).
#[derive(Clone, Copy)]
enum Side {
    Bridge,
    #[cfg(feature = "tokio")]
    Tokio,
}

/// What a node's `setup` gets: its connection, its locality and its root;
/// it spawns under the root and returns what the bench needs.
type Setup<T> = Box<dyn FnOnce(Nats, &mut Locality, &Address) -> commutator::Result<T> + Send>;

/// A node on a thread of its own, on `side`, connected to `url` with room
/// for `n` messages. Returns its stopper, what `setup` returned, and the thread.
fn node<T: Send + 'static>(
    side: Side,
    url: &str,
    n: u64,
    setup: impl FnOnce(Nats, &mut Locality, &Address) -> commutator::Result<T> + Send + 'static,
) -> (Address, T, std::thread::JoinHandle<()>) {
    let setup: Setup<T> = Box::new(setup);
    match side {
        Side::Bridge => bridge_node(url.to_string(), n, setup),
        #[cfg(feature = "tokio")]
        Side::Tokio => tokio_side::node(url.to_string(), n, setup),
    }
}

/// A `System` on a thread, its connection on a bridge thread.
fn bridge_node<T: Send + 'static>(
    url: String,
    n: u64,
    setup: Setup<T>,
) -> (Address, T, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let run = || -> commutator::Result<()> {
            let nats = Nats::connect(options(&url, n))?;
            let mut system = System::new()?;
            if let Some(spin) = std::env::var("SPIN_US").ok().and_then(|s| s.parse().ok()) {
                system.set_spin(Duration::from_micros(spin));
            }
            let root = system
                .spawn_root(Supervisor)
                .supervisor(SupervisorConfig::default())
                .finish()?;
            let stopper = system.spawn(&root, Stopper).finish()?;
            let value = setup(nats, system.locality(), &root)?;
            let _ = tx.send((stopper, value));
            system.run()
        };
        if let Err(e) = run() {
            eprintln!("nats bench: a node failed: {e:#}");
        }
    });
    let (stopper, value) = rx.recv_timeout(LIMIT).expect("the node was set up");
    (stopper, value, thread)
}

/// Says "ready" when the tree has started (every bridge actor's init done).
struct Ready(mpsc::Sender<()>);
impl Actor for Ready {
    fn on_start(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.0.send(());
    }
}

// ---------------- pub/sub ----------------

struct Go;
struct More;

/// Sends `n` notes to `to` on `Go`, a thousand per turn.
struct Producer {
    to: Address,
    n: u64,
    sent: u64,
    started: mpsc::Sender<Instant>,
}
impl Actor for Producer {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|this: &mut Self, _: &Go, ctx: &mut Context<'_, Self>| {
            let _ = this.started.send(Instant::now());
            this.more(ctx);
        });
        ctx.subscribe(|this: &mut Self, _: &More, ctx: &mut Context<'_, Self>| this.more(ctx));
    }
}
impl Producer {
    fn more(&mut self, ctx: &mut Context<'_, Self>) {
        let end = (self.sent + 1_000).min(self.n);
        for seq in self.sent..end {
            ctx.send(&self.to, note(seq));
        }
        self.sent = end;
        if self.sent < self.n {
            let me = ctx.address().clone();
            ctx.send(&me, More);
        }
    }
}

/// Counts notes; reports the instant of the `n`-th.
struct Counter {
    n: u64,
    seen: u64,
    done: mpsc::Sender<Instant>,
}
impl Actor for Counter {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|this: &mut Self, _: &Note, _: &mut Context<'_, Self>| {
            this.seen += 1;
            if this.seen == this.n {
                let _ = this.done.send(Instant::now());
            }
        });
    }
}

fn options(url: &str, n: u64) -> Options {
    let room = usize::try_from(n)
        .unwrap_or(usize::MAX)
        .saturating_add(1_024);
    Options::new(url).buffer(room).subscription_capacity(room)
}

fn commutator_pubsub(side: Side, url: &str, n: u64) -> f64 {
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let ready_b = ready_tx.clone();
    let (stop_b, (), thread_b) = node(side, url, n, move |b, locality, root| {
        let counter = Counter {
            n,
            seen: 0,
            done: done_tx,
        };
        let counter = locality.spawn(root, counter).finish()?;
        locality
            .spawn(root, b.import::<Note>("bench.pubsub", &counter))
            .finish()?;
        locality.spawn(root, Ready(ready_b)).finish()?;
        Ok(())
    });
    let (started_tx, started) = mpsc::channel();
    let (stop_a, producer, thread_a) = node(side, url, n, move |a, locality, root| {
        let export = locality
            .spawn(root, a.export().message::<Note>("bench.pubsub"))
            .finish()?;
        locality.spawn(root, Ready(ready_tx)).finish()?;
        let producer = Producer {
            to: export,
            n,
            sent: 0,
            started: started_tx,
        };
        locality.spawn(root, producer).finish()
    });
    for _ in 0..2 {
        ready.recv_timeout(LIMIT).expect("ready");
    }
    producer.send(Go).expect("go");
    let start = started.recv_timeout(LIMIT).expect("started");
    let end = done.recv_timeout(LIMIT).expect("every note arrived");
    for (stop, thread) in [(stop_a, thread_a), (stop_b, thread_b)] {
        let _ = stop.send(Stop);
        let _ = thread.join();
    }
    end.duration_since(start).as_secs_f64()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

async fn raw_client(url: &str, n: u64) -> async_nats::Client {
    let room = usize::try_from(n)
        .unwrap_or(usize::MAX)
        .saturating_add(1_024);
    async_nats::ConnectOptions::new()
        .subscription_capacity(room)
        .request_timeout(Some(Duration::from_secs(60)))
        .connect(url)
        .await
        .expect("raw connects")
}

/// Waits until the server has what the client sent (a request nobody answers).
async fn raw_round_trip(client: &async_nats::Client) {
    let _ = client.request(client.new_inbox(), "".into()).await;
}

fn raw_pubsub(url: &str, n: u64) -> f64 {
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let url_b = url.to_string();
    let receiver = std::thread::spawn(move || {
        runtime().block_on(async move {
            let client = raw_client(&url_b, n).await;
            let mut subscription = client.subscribe("raw.pubsub").await.expect("subscribes");
            raw_round_trip(&client).await;
            let _ = ready_tx.send(());
            let mut seen = 0;
            while let Some(message) = subscription.next().await {
                let _: Note = serde_json::from_slice(&message.payload).expect("a note");
                seen += 1;
                if seen == n {
                    let _ = done_tx.send(Instant::now());
                    return;
                }
            }
        });
    });
    ready.recv_timeout(LIMIT).expect("ready");
    let url_a = url.to_string();
    let (started_tx, started) = mpsc::channel();
    let publisher = std::thread::spawn(move || {
        runtime().block_on(async move {
            let client = raw_client(&url_a, n).await;
            let _ = started_tx.send(Instant::now());
            for seq in 0..n {
                let payload = serde_json::to_vec(&note(seq)).expect("encodes");
                client
                    .publish("raw.pubsub", payload.into())
                    .await
                    .expect("published");
            }
            client.flush().await.expect("flushed");
        });
    });
    let start = started.recv_timeout(LIMIT).expect("started");
    let end = done.recv_timeout(LIMIT).expect("every note arrived");
    let _ = publisher.join();
    let _ = receiver.join();
    end.duration_since(start).as_secs_f64()
}

// ---------------- requests ----------------

struct Calculator;
impl Actor for Calculator {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Square>, ctx: &mut Context<'_, Self>| {
                ctx.reply(q, q.payload().0 * q.payload().0)
            },
        );
    }
}

/// Keeps `in_flight` requests going until `n` are answered.
struct Requester {
    remote: Address,
    n: u64,
    in_flight: u64,
    sent: u64,
    answered: u64,
    start: Option<Instant>,
    done: mpsc::Sender<Duration>,
}
impl Actor for Requester {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|this: &mut Self, _: &Go, ctx: &mut Context<'_, Self>| {
            this.start = Some(Instant::now());
            for _ in 0..this.in_flight.min(this.n) {
                this.ask(ctx);
            }
        });
        ctx.subscribe(
            |this: &mut Self, r: &Response<Square>, ctx: &mut Context<'_, Self>| {
                assert_eq!(
                    r.result().ok(),
                    Some(&(r.request().0 * r.request().0)),
                    "{r:?}"
                );
                this.answered += 1;
                if this.sent < this.n {
                    this.ask(ctx);
                } else if this.answered == this.n
                    && let Some(start) = this.start
                {
                    let _ = this.done.send(start.elapsed());
                }
            },
        );
    }
}
impl Requester {
    fn ask(&mut self, ctx: &mut Context<'_, Self>) {
        self.sent += 1;
        ctx.request(&self.remote, Square(self.sent), Duration::from_secs(60));
    }
}

fn commutator_request(side: Side, url: &str, n: u64, in_flight: u64) -> f64 {
    let (stop_b, (), thread_b) = node(side, url, n, move |b, locality, root| {
        let calculator = locality.spawn(root, Calculator).finish()?;
        locality
            .spawn(root, b.service("bench", &calculator).request::<Square>())
            .finish()?;
        Ok(())
    });
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let (stop_a, requester, thread_a) = node(side, url, n, move |a, locality, root| {
        let remote = a
            .remote("bench")
            .request::<Square>()
            .wait(Duration::from_secs(30));
        let remote = locality.spawn(root, remote).finish()?;
        locality.spawn(root, Ready(ready_tx)).finish()?;
        let requester = Requester {
            remote,
            n,
            in_flight,
            sent: 0,
            answered: 0,
            start: None,
            done: done_tx,
        };
        locality.spawn(root, requester).finish()
    });
    ready.recv_timeout(LIMIT).expect("ready");
    requester.send(Go).expect("go");
    let took = done.recv_timeout(LIMIT).expect("every request answered");
    for (stop, thread) in [(stop_a, thread_a), (stop_b, thread_b)] {
        let _ = stop.send(Stop);
        let _ = thread.join();
    }
    took.as_secs_f64()
}

fn raw_request(url: &str, n: u64, in_flight: u64) -> f64 {
    let (ready_tx, ready) = mpsc::channel();
    let (stop_tx, stop) = tokio::sync::oneshot::channel::<()>();
    let url_b = url.to_string();
    let responder = std::thread::spawn(move || {
        runtime().block_on(async move {
            let client = raw_client(&url_b, n).await;
            let mut requests = client.subscribe("raw.svc").await.expect("subscribes");
            raw_round_trip(&client).await;
            let _ = ready_tx.send(());
            let serve = async {
                while let Some(message) = requests.next().await {
                    let Square(x) = serde_json::from_slice(&message.payload).expect("a square");
                    let answer = serde_json::to_vec(&(x * x)).expect("encodes");
                    if let Some(reply) = message.reply {
                        client
                            .publish(reply, answer.into())
                            .await
                            .expect("answered");
                    }
                }
            };
            let stop = std::pin::pin!(stop);
            let serve = std::pin::pin!(serve);
            futures_util::future::select(stop, serve).await;
        });
    });
    ready.recv_timeout(LIMIT).expect("ready");
    let url_a = url.to_string();
    let took = std::thread::spawn(move || {
        runtime().block_on(async move {
            let client = raw_client(&url_a, n).await;
            let start = Instant::now();
            let asks = futures_util::stream::iter(1..=n).map(|x| {
                let client = client.clone();
                async move {
                    let payload = serde_json::to_vec(&Square(x)).expect("encodes");
                    let answer = client
                        .request("raw.svc", payload.into())
                        .await
                        .expect("answered");
                    let squared: u64 = serde_json::from_slice(&answer.payload).expect("a number");
                    assert_eq!(squared, x * x);
                }
            });
            asks.buffer_unordered(usize::try_from(in_flight).unwrap_or(1))
                .count()
                .await;
            start.elapsed()
        })
    })
    .join()
    .expect("the requester ran");
    let _ = stop_tx.send(());
    let _ = responder.join();
    took.as_secs_f64()
}

// ---------------- the server and main ----------------

/// A nats-server on a free loopback port, killed on drop.
struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server() -> Option<(String, Server)> {
    let binary = std::env::var_os("COMMUTATOR_NATS_SERVER")
        .map(std::path::PathBuf::from)
        .into_iter()
        .chain(
            std::env::var_os("PATH")
                .into_iter()
                .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
                .map(|dir| dir.join("nats-server")),
        )
        .chain(["/usr/sbin/nats-server", "/usr/local/sbin/nats-server"].map(Into::into))
        .take(if std::env::var_os("COMMUTATOR_NATS_SERVER").is_some() {
            1
        } else {
            usize::MAX
        })
        .find(|p: &std::path::PathBuf| p.is_file())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new(binary)
        .args(["-a", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some((format!("nats://127.0.0.1:{port}"), server))
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let div: u64 = std::env::var("COMMUTATOR_BENCH_DIV")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(if bench { 1 } else { 1000 })
        .max(1);
    let reps: u32 = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let (url, _server) = match std::env::var("COMMUTATOR_NATS_URL") {
        Ok(url) => (url, None),
        Err(_) => match start_server() {
            Some((url, server)) => (url, Some(server)),
            None if std::env::var("COMMUTATOR_REQUIRE_NATS").is_ok_and(|v| v == "1") => {
                panic!("nats bench: nats-server not found and COMMUTATOR_REQUIRE_NATS=1")
            }
            None => {
                println!("skipped: nats-server not found (nats bench)");
                return;
            }
        },
    };
    let run = |name: &str| filter.is_empty() || filter.iter().any(|f| name == f);
    let only = std::env::var("ONLY").unwrap_or_default();
    let side = |who: &str| only.is_empty() || only == who;
    for _ in 0..reps {
        if run("nats_pubsub") {
            let n = (N_PUBSUB / div).max(10);
            if side("async-nats") {
                report("async-nats", "nats_pubsub", n, raw_pubsub(&url, n));
            }
            if side("commutator") {
                let took = commutator_pubsub(Side::Bridge, &url, n);
                report("commutator", "nats_pubsub", n, took);
            }
            #[cfg(feature = "tokio")]
            if side("commutator-tokio") {
                let took = commutator_pubsub(Side::Tokio, &url, n);
                report("commutator-tokio", "nats_pubsub", n, took);
            }
        }
        for (name, count, in_flight) in [
            ("nats_request", N_REQUEST, 1),
            ("nats_request_100", N_REQUEST_100, 100),
        ] {
            if run(name) {
                let n = (count / div).max(10);
                if side("async-nats") {
                    report("async-nats", name, n, raw_request(&url, n, in_flight));
                }
                if side("commutator") {
                    let took = commutator_request(Side::Bridge, &url, n, in_flight);
                    report("commutator", name, n, took);
                }
                #[cfg(feature = "tokio")]
                if side("commutator-tokio") {
                    let took = commutator_request(Side::Tokio, &url, n, in_flight);
                    report("commutator-tokio", name, n, took);
                }
            }
        }
    }
}

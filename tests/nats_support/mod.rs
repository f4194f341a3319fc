//! Real nats-server processes for the NATS tests: started on free loopback
//! ports, killed when dropped (so a failing test leaves none behind), and a
//! deadline around every test so that none can hang CI.
//!
//! `COMMUTATOR_NATS_SERVER=<path>` names the binary (else it is looked for on
//! the `PATH` and in `/usr/sbin`). Without one a test prints one line,
//! `skipped: nats-server not found (<test>)`, straight to the terminal
//! (not through the test harness's capture) and passes; with
//! `COMMUTATOR_REQUIRE_NATS=1` (CI) it fails instead.

#![allow(dead_code, unreachable_pub)]

pub mod actors;

use commutator::prelude::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The nats-server binary (`COMMUTATOR_NATS_SERVER`, else found on the
/// `PATH` or in the usual places), or `None` (after saying so) when the test
/// should be skipped.
pub fn nats_server(test: &str) -> Option<PathBuf> {
    let found = match std::env::var_os("COMMUTATOR_NATS_SERVER") {
        Some(path) => Some(PathBuf::from(path)).filter(|p| p.is_file()),
        None => search_path(),
    };
    if found.is_none() {
        if std::env::var("COMMUTATOR_REQUIRE_NATS").is_ok_and(|v| v == "1") {
            panic!("nats-server not found and COMMUTATOR_REQUIRE_NATS=1 ({test})");
        }
        // Straight to stderr: `eprintln!` would be captured and hidden for a passing test.
        let line = format!("skipped: nats-server not found ({test})\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
    found
}

/// `nats-server` on the `PATH`, or in the directories Debian and others use.
fn search_path() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .chain(["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"].map(PathBuf::from))
        .map(|dir| dir.join("nats-server"))
        .find(|p| p.is_file())
}

/// A port nobody listens on now (the kernel's choice; the server binds it a moment later).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One nats-server process on 127.0.0.1; killed on drop.
pub struct Server {
    binary: PathBuf,
    pub port: u16,
    pub monitor: u16,
    args: Vec<String>,
    child: Mutex<Option<Child>>,
}

impl Server {
    /// Starts a server with extra `args` (auth, TLS, cluster) and waits until it serves.
    pub fn start(binary: &Path, args: &[String]) -> Arc<Server> {
        let server = Arc::new(Server {
            binary: binary.to_path_buf(),
            port: free_port(),
            monitor: free_port(),
            args: args.to_vec(),
            child: Mutex::new(None),
        });
        server.restart();
        server
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// (Re)starts the process on the same ports, and waits until it accepts clients.
    pub fn restart(&self) {
        self.kill();
        let mut command = Command::new(&self.binary);
        command
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-m",
                &self.monitor.to_string(),
            ])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(if std::env::var_os("NATS_SERVER_LOG").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        let child = command.spawn().expect("nats-server starts");
        *self.child.lock().unwrap() = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut line = String::new();
                if BufReader::new(stream).read_line(&mut line).is_ok() && line.starts_with("INFO") {
                    return;
                }
            }
            if let Some(status) = self
                .child
                .lock()
                .unwrap()
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "nats-server on port {} exited at start: {status}",
                    self.port
                );
            }
            assert!(
                Instant::now() < deadline,
                "nats-server on port {} did not start",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the process (SIGKILL: no goodbye to its clients) and reaps it.
    pub fn kill(&self) {
        if let Some(mut child) = self.child.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A page of the monitoring endpoint (`/routez`, `/connz`), as text.
    pub fn monitor(&self, path: &str) -> String {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.monitor)) else {
            return String::new();
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
        let mut page = String::new();
        if stream.write_all(request.as_bytes()).is_ok() {
            let _ = stream.read_to_string(&mut page);
        }
        page
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A cluster of `n` servers with routes between every pair; returns once
/// every node sees the others.
pub fn cluster(binary: &Path, n: usize) -> Vec<Arc<Server>> {
    let route_ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let routes = route_ports
        .iter()
        .map(|p| format!("nats://127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let servers: Vec<Arc<Server>> = route_ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let args = vec![
                "--name".to_string(),
                format!("node{i}"),
                "--cluster_name".to_string(),
                "commutator-test".to_string(),
                "--cluster".to_string(),
                format!("nats://127.0.0.1:{port}"),
                "--routes".to_string(),
                routes.clone(),
            ];
            Server::start(binary, &args)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    let wanted = format!("\"num_routes\": {}", n - 1);
    while !servers
        .iter()
        .all(|s| s.monitor("/routez").contains(&wanted))
    {
        assert!(
            Instant::now() < deadline,
            "the cluster's routes did not come up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    servers
}

/// Runs `body` on a thread of its own and fails the test if it does not end
/// within `limit`; then the servers are killed first, so nothing is left
/// running even though the body's thread is stuck.
pub fn within<T: Send + 'static>(
    limit: Duration,
    servers: &[Arc<Server>],
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let _ = tx.send(body());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => {
            let _ = thread.join();
            value
        }
        Err(RecvTimeoutError::Disconnected) => {
            // The body panicked: show its panic.
            match thread.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => unreachable!("the body sent nothing and did not panic"),
            }
        }
        Err(RecvTimeoutError::Timeout) => {
            for server in servers {
                server.kill();
            }
            panic!("the test did not finish within {limit:?}");
        }
    }
}

/// The setup every test shares: finds nats-server (or skips, saying so),
/// starts a server of the test's own with extra `args`, and runs `body`
/// with its URL under `limit` (a hang kills the server and fails the test).
/// Each call starts its own server, so tests never depend on each other.
pub fn with_server(
    test: &str,
    args: &[String],
    limit: Duration,
    body: impl FnOnce(String) + Send + 'static,
) {
    let Some(bin) = nats_server(test) else {
        return;
    };
    let server = Server::start(&bin, args);
    let url = server.url();
    within(limit, &[server], move || body(url));
}

/// Waits for the next value, at most `limit`.
pub fn next<T>(rx: &Receiver<T>, limit: Duration, what: &str) -> T {
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("no {what} within {limit:?}"))
}

/// Asks a node to stop.
pub struct Stop;

/// A system on a thread of its own: a root supervisor (with a registry) and
/// whatever `setup` spawns under it; `stop` ends it.
pub struct Node {
    root: Address,
    thread: Option<std::thread::JoinHandle<commutator::Result<()>>>,
}

/// Shuts the root down on [`Stop`]; says when the tree has started.
struct Stopper {
    started: mpsc::Sender<()>,
}
impl Actor for Stopper {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Stop, ctx: &mut Context<'_, Self>| {
            ctx.shutdown_supervisor()
        });
    }
    fn on_start(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.started.send(());
    }
}

impl Node {
    /// Starts a node; `setup` spawns its actors under the root and returns what
    /// the test needs (addresses, typically). Returns once the whole tree has
    /// started (every bridge actor's init is done).
    pub fn start<T: Send + 'static>(
        name: &str,
        setup: impl FnOnce(&mut System, &Address) -> commutator::Result<T> + Send + 'static,
    ) -> (Node, T) {
        let (node, value, started) = Node::spawn(name, setup);
        started
            .recv_timeout(Duration::from_secs(30))
            .expect("the node's tree started");
        (node, value)
    }

    /// Like [`start`](Node::start), but returns before the tree has started,
    /// with the receiver that says when it has.
    pub fn spawn<T: Send + 'static>(
        name: &str,
        setup: impl FnOnce(&mut System, &Address) -> commutator::Result<T> + Send + 'static,
    ) -> (Node, T, mpsc::Receiver<()>) {
        let (started_tx, started) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        let name = name.to_string();
        let thread = std::thread::spawn(move || {
            let mut system = System::named(name)?;
            let root = system
                .spawn_root(Supervisor)
                .supervisor(SupervisorConfig::default().with_registry())
                .finish()?;
            let stopper = system
                .spawn(
                    &root,
                    Stopper {
                        started: started_tx,
                    },
                )
                .finish()?;
            match setup(&mut system, &root) {
                Ok(value) => {
                    let _ = tx.send(Ok((stopper, value)));
                }
                Err(e) => {
                    let _ = tx.send(Err(e.clone()));
                    return Err(e);
                }
            }
            system.run()
        });
        let (stopper, value) = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the node was set up")
            .expect("the node's setup worked");
        (
            Node {
                root: stopper,
                thread: Some(thread),
            },
            value,
            started,
        )
    }

    /// Stops the node and returns how its root ended.
    pub fn stop(mut self) -> commutator::Result<()> {
        let _ = self.root.send(Stop);
        self.join()
    }

    /// Waits for the node to end by itself.
    pub fn join(&mut self) -> commutator::Result<()> {
        self.thread
            .take()
            .map(|t| t.join().expect("the node's thread did not panic"))
            .unwrap_or(Ok(()))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.root.send(Stop);
        }
    }
}

//! A TCP echo server: one actor per connection, under the listener, which is
//! a supervisor; all I/O goes through the locality's mio poll.
//!
//! `cargo run --example echo_server` serves on 127.0.0.1:7007 until stopped
//! (try `nc 127.0.0.1 7007`). `cargo run --example echo_server -- --selftest`
//! serves on a free port, connects 100 clients from another thread, checks
//! every echoed byte, shuts the server down through its address, and prints
//! a summary.

use commutator::mio::Interest;
use commutator::mio::net::{TcpListener, TcpStream};
use commutator::prelude::*;
use commutator::{Io, IoGuard};
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

/// Accepts connections and makes one `Connection` child for each.
struct Listener {
    socket: Option<TcpListener>,
    guard: Option<IoGuard<TcpListener>>,
    accepted: usize,
}

impl Actor for Listener {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_io);
        let Some(socket) = self.socket.take() else {
            return;
        };
        match ctx.register_io(socket, Interest::READABLE) {
            Ok(guard) => self.guard = Some(guard),
            Err(e) => ctx.fail(e),
        }
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        println!("listener: accepted {} connections, closed", self.accepted);
    }
}

impl Listener {
    fn on_io(&mut self, _: &Io, ctx: &mut Context<'_, Self>) {
        let Some(listener) = self.guard.as_mut() else {
            return;
        };
        loop {
            match listener.accept() {
                Ok((stream, _peer)) => {
                    self.accepted += 1;
                    let connection = Connection {
                        stream: Some(stream),
                        guard: None,
                        pending: Vec::new(),
                    };
                    if let Err(e) = ctx.spawn(connection).name("connection").finish() {
                        return ctx.fail(e);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => return ctx.fail(Error::io(e)),
            }
        }
    }
}

/// Echoes what it reads; ends when the peer closes.
struct Connection {
    stream: Option<TcpStream>,
    guard: Option<IoGuard<TcpStream>>,
    pending: Vec<u8>,
}

impl Actor for Connection {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, _: &Io, ctx: &mut Context<'_, Self>| me.pump(ctx));
        let Some(stream) = self.stream.take() else {
            return;
        };
        match ctx.register_io(stream, Interest::READABLE | Interest::WRITABLE) {
            Ok(guard) => self.guard = Some(guard),
            Err(e) => ctx.fail(e),
        }
    }
}

impl Connection {
    /// Writes what is pending, then reads, until the socket would block.
    fn pump(&mut self, ctx: &mut Context<'_, Self>) {
        let Some(stream) = self.guard.as_mut() else {
            return;
        };
        let mut buffer = [0u8; 16 * 1024];
        loop {
            while !self.pending.is_empty() {
                match stream.write(&self.pending) {
                    Ok(n) => drop(self.pending.drain(..n)),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return, // wait until writable
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return ctx.fail(Error::io(e)),
                }
            }
            match stream.read(&mut buffer) {
                Ok(0) => return ctx.shutdown(), // the peer is done
                Ok(n) => self.pending.extend_from_slice(&buffer[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return ctx.fail(Error::io(e)),
            }
        }
    }
}

/// Asks the root to shut down (sent from the self-test thread).
struct Stop;

/// The root: shuts the tree down on `Stop`.
struct Root;

impl Actor for Root {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Stop, ctx: &mut Context<'_, Self>| ctx.shutdown());
    }
}

const CLIENTS: usize = 100;
const BYTES_PER_CLIENT: usize = 64 * 1024;

/// 100 clients at once, each sending its own pattern and checking the echo.
fn selftest(server: SocketAddr) -> Result<usize, String> {
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            std::thread::spawn(move || -> Result<usize, String> {
                let mut socket = std::net::TcpStream::connect(server).map_err(|e| e.to_string())?;
                socket
                    .set_read_timeout(Some(Duration::from_secs(30)))
                    .map_err(|e| e.to_string())?;
                let sent: Vec<u8> = (0..BYTES_PER_CLIENT)
                    .map(|n| (n * 31 + i * 7) as u8)
                    .collect();
                let mut echoed = vec![0u8; sent.len()];
                let mut writer = socket.try_clone().map_err(|e| e.to_string())?;
                let data = sent.clone();
                let write = std::thread::spawn(move || writer.write_all(&data));
                socket
                    .read_exact(&mut echoed)
                    .map_err(|e| format!("client {i}: {e}"))?;
                write
                    .join()
                    .map_err(|_| "writer panicked".to_string())?
                    .map_err(|e| e.to_string())?;
                if echoed != sent {
                    return Err(format!("client {i}: the echo differs"));
                }
                Ok(echoed.len())
            })
        })
        .collect();
    let mut total = 0;
    for client in clients {
        total += client.join().map_err(|_| "client panicked".to_string())??;
    }
    Ok(total)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let test = std::env::args().any(|a| a == "--selftest");
    let port = if test { 0 } else { 7007 };
    let socket = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
    let server = socket.local_addr()?;
    println!("echo server on {server}");

    let mut system = System::named("echo")?;
    let root = system
        .spawn_root(Root)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()?;
    let listener = Listener {
        socket: Some(socket),
        guard: None,
        accepted: 0,
    };
    system
        .spawn(&root, listener)
        .name("listener")
        .supervisor(SupervisorConfig::default())
        .finish()?;

    let tester = test.then(|| {
        let root = root.clone();
        std::thread::spawn(move || {
            let result = selftest(server);
            let _ = root.send(Stop); // whatever happened, stop the server
            result
        })
    });
    system.run()?;
    if let Some(tester) = tester {
        let bytes = tester.join().map_err(|_| "the self-test panicked")??;
        println!(
            "selftest: {CLIENTS} clients, {bytes} bytes echoed and checked, server shut down cleanly"
        );
    }
    Ok(())
}

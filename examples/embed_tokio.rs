//! A supervisor tree on a tokio runtime, beside the program's own tasks.
//!
//! The program owns a tokio `TcpListener` and accepts connections in a task
//! of its own; it hands each connection (as a std stream) to the `front`
//! actor of a supervisor tree that runs as a tokio task
//! (`commutator::backend::tokio::TokioLocality`). The front spawns a
//! `session` actor per connection, which puts the socket on the locality's
//! poll (watched by tokio's reactor) and answers each line: it starts a
//! future on tokio (a stand-in for a database query: a `tokio::time::sleep`)
//! and writes the answer when the future's output comes back as a message.
//! The line `shutdown` shuts the whole tree down; `run` returns, and the
//! program stops accepting and exits.
//!
//! Run it with `cargo run --example embed_tokio --features tokio` and talk
//! to it with `nc 127.0.0.1 7878` (try `hello`, then `shutdown`); or with
//! `-- --selftest`, which binds a free port, runs two clients on a thread
//! of their own, checks their answers, and ends by itself (CI runs this).

use commutator::backend::tokio::TokioLocality;
use commutator::mio::Interest;
use commutator::mio::net::TcpStream;
use commutator::prelude::*;
use std::io::{self, BufRead, Read, Write};
use std::time::Duration;

/// From the program's acceptor to the front: a new connection.
struct Accepted(std::net::TcpStream);
/// From a session to the front: someone asked for the end.
struct ShutdownAsked;
/// A session's future is done: the answer to one line.
struct Answer(String);

/// Spawns a session per connection; ends the tree when asked.
struct Front;

impl Actor for Front {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, conn: &Accepted, ctx: &mut Context<'_, Self>| {
                let stream = match conn.0.try_clone().and_then(|s| {
                    s.set_nonblocking(true)?;
                    Ok(TcpStream::from_std(s))
                }) {
                    Ok(stream) => stream,
                    Err(e) => return eprintln!("front: cannot take the connection: {e}"),
                };
                let front = ctx.address().clone();
                let session = Session {
                    stream: Some(stream),
                    io: None,
                    front,
                    pending: Vec::new(),
                };
                if let Err(e) = ctx.spawn(session).name("session").finish() {
                    eprintln!("front: cannot start a session: {e}");
                }
            },
        );
        ctx.subscribe(
            |_: &mut Self, _: &ShutdownAsked, ctx: &mut Context<'_, Self>| {
                println!("front: shutdown asked, the tree goes");
                ctx.shutdown_supervisor();
            },
        );
    }
}

/// One connection: reads lines, answers each through a future on tokio.
struct Session {
    stream: Option<TcpStream>,
    io: Option<IoGuard<TcpStream>>,
    front: Address,
    /// Bytes read and not yet a whole line.
    pending: Vec<u8>,
}

impl Actor for Session {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_io);
        ctx.subscribe(Self::on_answer);
        if let Some(stream) = self.stream.take() {
            match ctx.register_io(stream, Interest::READABLE) {
                Ok(guard) => self.io = Some(guard),
                Err(e) => ctx.fail(e),
            }
        }
    }
}

impl Session {
    fn on_io(&mut self, _: &Io, ctx: &mut Context<'_, Self>) {
        let Some(stream) = self.io.as_mut() else {
            return;
        };
        let mut buf = [0u8; 512];
        let mut closed = false;
        loop {
            match stream.read(&mut buf) {
                Ok(0) => {
                    closed = true; // the peer is gone, after what it sent
                    break;
                }
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return ctx.fail(Error::io(e)),
            }
        }
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line).trim().to_string();
            if line == "shutdown" {
                let front = self.front.clone();
                ctx.send(&front, ShutdownAsked);
                continue;
            }
            // An async call (a database, an HTTP client...): a future on tokio.
            ctx.spawn_future(async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                Answer(line.to_uppercase())
            });
        }
        if closed {
            ctx.shutdown();
        }
    }

    fn on_answer(&mut self, answer: &Answer, ctx: &mut Context<'_, Self>) {
        let Some(stream) = self.io.as_mut() else {
            return;
        };
        // Short answers on a fresh socket: the write does not block here.
        if let Err(e) = stream.write_all(format!("{}\n", answer.0).as_bytes()) {
            ctx.fail(Error::io(e));
        }
    }
}

/// Two clients, one after the other: each sends lines and checks the
/// answers; the second asks for the shutdown.
fn clients(at: std::net::SocketAddr) -> io::Result<()> {
    for (n, lines) in [["hello", "tokio"], ["bye", "shutdown"]].iter().enumerate() {
        let mut stream = std::net::TcpStream::connect(at)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut reader = io::BufReader::new(stream.try_clone()?);
        for line in lines {
            writeln!(stream, "{line}")?;
            if *line == "shutdown" {
                break;
            }
            let mut answer = String::new();
            reader.read_line(&mut answer)?;
            assert_eq!(answer.trim(), line.to_uppercase(), "client {n}");
            println!("client {n}: {line} -> {}", answer.trim());
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let selftest = std::env::args().any(|a| a == "--selftest");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let bind = if selftest {
            "127.0.0.1:0"
        } else {
            "127.0.0.1:7878"
        };
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let at = listener.local_addr()?;
        println!("listening on {at}");

        let mut app = TokioLocality::new(Locality::named("app"))?;
        let root = app
            .locality()
            .spawn_root(Supervisor)
            .name("root")
            .supervisor(SupervisorConfig::default())
            .finish()?;
        let front = app
            .locality()
            .spawn(&root, Front)
            .name("front")
            .supervisor(SupervisorConfig::default())
            .finish()?;

        // The program's own task: accept, and hand each connection over.
        let acceptor = tokio::task::spawn_local(async move {
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        eprintln!("accept: {e}");
                        continue;
                    }
                };
                let Ok(stream) = stream.into_std() else {
                    continue;
                };
                if front.send(Accepted(stream)).is_err() {
                    break; // the tree has finished
                }
            }
        });
        let clients = selftest.then(|| std::thread::spawn(move || clients(at)));

        let result = app.run().await; // until the tree has shut down
        acceptor.abort(); // stop accepting: the tree is gone
        let _ = acceptor.await;
        if let Some(clients) = clients {
            clients.join().map_err(|_| "the clients panicked")??;
        }
        println!("the tree has shut down: {result:?}");
        result?;
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}

//! The NATS bridge when servers fail (feature `nats`): a cluster node killed,
//! a server restarted, the buffer full while disconnected, and TLS.
//!
//! Real nats-server processes on free loopback ports, killed at the end;
//! every test under a deadline; "skipped: nats-server not found" without one
//! (a failure under `COMMUTATOR_REQUIRE_NATS=1`).
//! Run: `cargo test --features nats --test nats_faults`.
#![cfg(feature = "nats")]

mod nats_support;

use commutator::nats::{Nats, Options};
use commutator::prelude::*;
use nats_support::actors::*;
use nats_support::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Waits until `ok()` holds, at most `WAIT`.
fn until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !ok() {
        assert!(Instant::now() < deadline, "not within {WAIT:?}: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pieces of a conversation between two connections: notes exported on
/// `a` and imported on `b`, and requests from a remote on `a` to "calc" on `b`.
struct Conversation {
    export: Address,
    notes: mpsc::Receiver<Note>,
    prober: Address,
    answers: mpsc::Receiver<Answer>,
    nodes: Vec<Node>,
    seq: u32,
    asked: u64,
}

impl Conversation {
    fn start(a: &Nats, b: &Nats) -> Conversation {
        let server = calc_node(b);
        let (tx, notes) = mpsc::channel();
        let importer = b.clone();
        let (receiver, ()) = Node::start("receiver", move |system, root| {
            let sink = system
                .spawn(root, Sink::<Note> { to: tx, dead: None })
                .finish()?;
            system
                .spawn(root, importer.import::<Note>("test.faults", &sink))
                .finish()?;
            Ok(())
        });
        let (answers_tx, answers) = mpsc::channel();
        let nats = a.clone();
        let (sender, (export, prober)) = Node::start("sender", move |system, root| {
            let export = system
                .spawn(root, nats.export().message::<Note>("test.faults"))
                .finish()?;
            let remote = nats.remote("calc").request::<Square>().wait(WAIT);
            let remote = system.spawn(root, remote).finish()?;
            let prober = Prober {
                remote,
                out: answers_tx,
            };
            Ok((export, system.spawn(root, prober).finish()?))
        });
        Conversation {
            export,
            notes,
            prober,
            answers,
            nodes: vec![server, receiver, sender],
            seq: 0,
            asked: 0,
        }
    }

    /// Sends notes (one every 20 ms) until one sent from now on arrives.
    fn note_gets_through(&mut self) {
        let first = self.seq;
        let deadline = Instant::now() + WAIT;
        loop {
            assert!(
                Instant::now() < deadline,
                "no note got through within {WAIT:?}"
            );
            let note = Note {
                from: "a".into(),
                seq: self.seq,
            };
            self.seq += 1;
            self.export.send(note).expect("the sender runs");
            if let Ok(note) = self.notes.recv_timeout(Duration::from_millis(20))
                && note.seq >= first
            {
                return;
            }
        }
    }

    /// Asks (one request at a time, 1 s each) until one asked from now on is answered.
    fn request_gets_through(&mut self) {
        let deadline = Instant::now() + WAIT;
        loop {
            assert!(
                Instant::now() < deadline,
                "no request got through within {WAIT:?}"
            );
            self.asked += 1;
            let n = self.asked;
            self.prober
                .send(Ask(n, Duration::from_secs(1)))
                .expect("the sender runs");
            let answer = loop {
                let answer = next(&self.answers, WAIT, "answer");
                if answer.0 == n {
                    break answer;
                }
            };
            if answer.1 == Ok(n * n) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(self) {
        for node in self.nodes {
            assert!(node.stop().is_ok());
        }
    }
}

#[test]
fn killing_the_cluster_node_of_a_connection_keeps_the_conversation_going_through_another() {
    let Some(bin) = nats_server(
        "killing_the_cluster_node_of_a_connection_keeps_the_conversation_going_through_another",
    ) else {
        return;
    };
    let nodes = cluster(&bin, 3);
    let urls: Vec<String> = nodes.iter().map(|n| n.url()).collect();
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let servers = nodes.clone();
    within(LIMIT, &nodes, move || {
        // `a` knows only node 0: it learns the others from the cluster.
        let a = connect(&urls[0]);
        let b = connect(&urls[2]);
        assert_eq!(a.server_port(), ports[0]);
        let mut talk = Conversation::start(&a, &b);
        talk.note_gets_through();
        talk.request_gets_through();
        servers[0].kill();
        // The first reconnection attempt is immediate: count, do not watch, the outage.
        until("a notices", || a.stats().disconnects >= 1);
        until("a fails over to another node", || a.is_connected());
        assert_ne!(a.server_port(), ports[0]);
        talk.note_gets_through();
        talk.request_gets_through();
        assert_eq!(a.stats().reconnects, 1);
        talk.stop();
    });
}

#[test]
fn a_restarted_server_is_reconnected_and_the_conversation_resumes() {
    let Some(bin) = nats_server("a_restarted_server_is_reconnected_and_the_conversation_resumes")
    else {
        return;
    };
    let server = Server::start(&bin, &[]);
    let url = server.url();
    let same = server.clone();
    within(LIMIT, &[server], move || {
        let (a, b) = (connect(&url), connect(&url));
        let mut talk = Conversation::start(&a, &b);
        talk.note_gets_through();
        talk.request_gets_through();
        same.kill();
        until("both notice", || {
            a.stats().disconnects >= 1 && b.stats().disconnects >= 1
        });
        same.restart();
        until("both reconnect", || a.is_connected() && b.is_connected());
        talk.note_gets_through();
        talk.request_gets_through();
        assert!(a.stats().reconnects >= 1 && b.stats().reconnects >= 1);
        talk.stop();
    });
}

#[test]
fn while_disconnected_messages_are_buffered_up_to_the_bound_then_refused() {
    let Some(bin) =
        nats_server("while_disconnected_messages_are_buffered_up_to_the_bound_then_refused")
    else {
        return;
    };
    let server = Server::start(&bin, &[]);
    let url = server.url();
    let same = server.clone();
    within(LIMIT, &[server], move || {
        let a = Nats::connect(
            Options::new(&url)
                .buffer(8)
                .reconnect_delay(Duration::from_millis(50)),
        )
        .expect("connects");
        let b = connect(&url);
        let (tx, notes) = mpsc::channel();
        let (dead_tx, dead) = mpsc::channel();
        let importer = b.clone();
        let (receiver, ()) = Node::start("receiver", move |system, root| {
            let sink = system
                .spawn(root, Sink::<Note> { to: tx, dead: None })
                .finish()?;
            system
                .spawn(root, importer.import::<Note>("test.buffer", &sink))
                .finish()?;
            Ok(())
        });
        let exporter = a.clone();
        let (sender, export) = Node::start("sender", move |system, root| {
            let sink = system
                .spawn(
                    root,
                    Sink::<Note> {
                        to: mpsc::channel().0,
                        dead: Some(dead_tx),
                    },
                )
                .finish()?;
            let export = exporter.export().on(&sink).message::<Note>("test.buffer");
            system.spawn(root, export).finish()?;
            Ok(sink)
        });
        same.kill();
        until("a notices", || {
            a.stats().disconnects >= 1 && !a.is_connected()
        });
        let note = |seq| Note {
            from: "a".into(),
            seq,
        };
        for seq in 0..8 {
            a.publish("test.buffer", &note(seq)).expect("buffered");
        }
        let full = a
            .publish("test.buffer", &note(8))
            .expect_err("the buffer is full");
        assert_eq!(full.code(), ErrorCode::BufferFull);
        assert!(full.to_string().contains("disconnected"), "{full}");
        // Through the export: the message comes back as a dead letter.
        export.send(note(9)).expect("the sender runs");
        let letter = next(&dead, WAIT, "dead letter");
        assert_eq!(
            (letter.subject(), letter.error().code()),
            ("test.buffer", ErrorCode::BufferFull)
        );
        assert_eq!(a.stats().refused, 2);
        same.restart();
        until("both reconnect", || a.is_connected() && b.is_connected());
        // What was buffered is sent now; whether b has resubscribed by then is
        // a race (at most once), so only what is published from now on counts.
        let deadline = Instant::now() + WAIT;
        let mut seq = 100;
        loop {
            assert!(
                Instant::now() < deadline,
                "nothing got through after the restart"
            );
            // The client says "connected" a moment before it has sent what it buffered.
            if let Err(e) = a.publish("test.buffer", &note(seq)) {
                assert_eq!(e.code(), ErrorCode::BufferFull, "{e:#}");
            }
            seq += 1;
            if notes
                .recv_timeout(Duration::from_millis(20))
                .is_ok_and(|n| n.seq >= 100)
            {
                break;
            }
        }
        assert!(sender.stop().is_ok());
        assert!(receiver.stop().is_ok());
    });
}

/// Makes a certificate authority and a server certificate for 127.0.0.1 with
/// the openssl command, in a directory of its own; `None` without openssl.
fn certificates(test: &str) -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("commutator-tls-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    std::fs::write(
        dir.join("ext"),
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .ok()?;
    let steps: [Vec<&str>; 3] = [
        [
            &["req", "-x509"][..],
            &ec,
            &[
                "-keyout",
                "ca-key.pem",
                "-out",
                "ca.pem",
                "-days",
                "1",
                "-subj",
                "/CN=commutator test CA",
            ],
        ]
        .concat(),
        [
            &["req"][..],
            &ec,
            &[
                "-keyout",
                "server-key.pem",
                "-out",
                "server.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
        vec![
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "1",
            "-extfile",
            "ext",
        ],
    ];
    for args in steps {
        let made = Command::new("openssl")
            .args(&args)
            .current_dir(&dir)
            .output()
            .ok()?;
        if !made.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        }
    }
    Some(dir)
}

fn path(dir: &Path, file: &str) -> String {
    dir.join(file).to_string_lossy().into_owned()
}

#[test]
fn a_tls_server_is_reached_with_its_authority_and_refused_without() {
    let test = "a_tls_server_is_reached_with_its_authority_and_refused_without";
    let Some(bin) = nats_server(test) else {
        return;
    };
    let Some(dir) = certificates(test) else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "skipped: openssl not found or failed ({test})"
        );
        return;
    };
    let args = [
        "--tls",
        "--tlscert",
        &path(&dir, "server.pem"),
        "--tlskey",
        &path(&dir, "server-key.pem"),
    ];
    let server = Server::start(&bin, &args.map(String::from));
    let url = server.url();
    let ca = dir.join("ca.pem");
    within(LIMIT, &[server], move || {
        let refused =
            Nats::connect(Options::new(&url).require_tls(true)).expect_err("an unknown authority");
        assert_eq!(refused.code(), ErrorCode::Unreachable, "{refused:#}");
        let nats = Nats::connect(Options::new(&url).root_certificate(&ca)).expect("trusted");
        assert!(nats.is_connected());
        let info = nats
            .discover("nobody", Duration::ZERO)
            .expect_err("a request over TLS");
        assert_eq!(info.code(), ErrorCode::UnknownService);
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_service_that_goes_answers_what_it_served_and_then_is_unknown() {
    with_server(
        "a_service_that_goes_answers_what_it_served_and_then_is_unknown",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let mut talk = Conversation::start(&a, &b);
            talk.request_gets_through();
            // 13 is never answered by the calculator; 5, asked after it on the same
            // connection, is: once 5 is answered, the service is serving 13.
            let long = Duration::from_secs(30);
            talk.prober.send(Ask(13, long)).expect("the sender runs");
            talk.prober.send(Ask(5, long)).expect("the sender runs");
            assert_eq!(next(&talk.answers, WAIT, "answer"), (5, Ok(25)));
            let serving = talk.nodes.remove(0);
            assert!(serving.stop().is_ok());
            let (n, answer) = next(&talk.answers, WAIT, "answer");
            let (code, chain) = answer.expect_err("13 was not answered");
            assert_eq!((n, code), (13, ErrorCode::Unreachable), "{chain}");
            assert!(chain.contains("shut down"), "{chain}");
            // Its subscription goes a moment later: until then a request may still
            // be taken and dropped (it times out).
            let deadline = Instant::now() + WAIT;
            loop {
                assert!(Instant::now() < deadline, "never UnknownService");
                talk.asked += 1;
                let n = talk.asked;
                talk.prober
                    .send(Ask(n, Duration::from_secs(1)))
                    .expect("the sender runs");
                let answer = next(&talk.answers, WAIT, "answer");
                assert_eq!(answer.0, n);
                match answer.1 {
                    Err((ErrorCode::UnknownService, chain)) => {
                        assert!(chain.contains("calc"), "{chain}");
                        break;
                    }
                    Err((ErrorCode::RequestTimeout | ErrorCode::Unreachable, _)) => {}
                    other => panic!("{other:?}"),
                }
            }
            talk.stop();
        },
    );
}

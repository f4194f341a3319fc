//! The NATS bridge against real nats-server processes (feature `nats`):
//! pub/sub, requests, names, faults and security across connections.
//!
//! Each test starts its own servers on free loopback ports and kills them at
//! its end; each runs under a deadline. Without nats-server a test says
//! "skipped: nats-server not found" and passes (fails under
//! `COMMUTATOR_REQUIRE_NATS=1`). Run: `cargo test --features nats --test nats`.
#![cfg(feature = "nats")]

mod nats_support;

use commutator::nats::{DeadLetter, Nats, Options};
use commutator::prelude::*;
use nats_support::actors::*;
use nats_support::*;
use std::sync::mpsc;
use std::time::Duration;

/// Starts a node whose asker sends `plan` to the remote "calc" on `nats`
/// (returns before the remote has found the service).
fn asker_node(
    nats: &Nats,
    plan: Vec<(u64, Duration, bool)>,
    wait: Option<Duration>,
) -> (Node, mpsc::Receiver<Answer>) {
    let nats = nats.clone();
    let (tx, rx) = mpsc::channel();
    let (node, (), _started) = Node::spawn("client", move |system, root| {
        let mut remote = nats.remote("calc").request::<Square>();
        if let Some(wait) = wait {
            remote = remote.wait(wait);
        }
        let remote = system.spawn(root, remote).finish()?;
        system
            .spawn(
                root,
                Asker {
                    remote,
                    plan,
                    out: tx,
                },
            )
            .finish()?;
        Ok(())
    });
    (node, rx)
}

#[test]
fn messages_published_on_one_connection_reach_a_locality_on_another_in_order() {
    with_server(
        "messages_published_on_one_connection_reach_a_locality_on_another_in_order",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let (tx, rx) = mpsc::channel();
            let (receiver, ()) = Node::start("receiver", move |system, root| {
                let sink = system
                    .spawn(root, Sink::<Note> { to: tx, dead: None })
                    .finish()?;
                system
                    .spawn(root, b.import::<Note>("test.notes", &sink))
                    .finish()?;
                Ok(())
            });
            let (sender, export) = Node::start("sender", move |system, root| {
                system
                    .spawn(root, a.export().message::<Note>("test.notes"))
                    .finish()
            });
            for seq in 0..500 {
                export
                    .send(Note {
                        from: "a".into(),
                        seq,
                    })
                    .expect("the sender's locality runs");
            }
            for seq in 0..500 {
                let note = next(&rx, WAIT, "note");
                assert_eq!(
                    note,
                    Note {
                        from: "a".into(),
                        seq
                    },
                    "in the order sent"
                );
            }
            assert!(sender.stop().is_ok());
            assert!(receiver.stop().is_ok());
        },
    );
}

#[test]
fn a_malformed_payload_on_a_bridged_subject_is_a_dead_letter_and_the_receiver_goes_on() {
    with_server(
        "a_malformed_payload_on_a_bridged_subject_is_a_dead_letter_and_the_receiver_goes_on",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let (tx, rx) = mpsc::channel();
            let (dead_tx, dead_rx) = mpsc::channel();
            let importer = b.clone();
            let (receiver, ()) = Node::start("receiver", move |system, root| {
                let sink = system
                    .spawn(
                        root,
                        Sink::<Note> {
                            to: tx,
                            dead: Some(dead_tx),
                        },
                    )
                    .finish()?;
                system
                    .spawn(root, importer.import::<Note>("test.notes", &sink))
                    .finish()?;
                Ok(())
            });
            a.publish_bytes("test.notes", &b"{not json"[..])
                .expect("published");
            a.publish_bytes("test.notes", &b"{\"from\": 3}"[..])
                .expect("published");
            a.publish(
                "test.notes",
                &Note {
                    from: "a".into(),
                    seq: 1,
                },
            )
            .expect("published");
            let letter: DeadLetter = next(&dead_rx, WAIT, "dead letter");
            assert_eq!(letter.subject(), "test.notes");
            assert_eq!(letter.payload(), b"{not json");
            assert_eq!(letter.error().code(), ErrorCode::Codec);
            assert_eq!(
                next(&dead_rx, WAIT, "dead letter").error().code(),
                ErrorCode::Codec
            );
            assert_eq!(
                next(&rx, WAIT, "note"),
                Note {
                    from: "a".into(),
                    seq: 1
                }
            );
            assert_eq!(b.stats().dead_letters, 2);
            assert!(receiver.stop().is_ok(), "the receiver did not crash");
        },
    );
}

#[test]
fn a_message_published_before_anyone_subscribes_is_lost_at_most_once() {
    with_server(
        "a_message_published_before_anyone_subscribes_is_lost_at_most_once",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            a.publish(
                "test.early",
                &Note {
                    from: "a".into(),
                    seq: 0,
                },
            )
            .expect("published");
            a.flush(WAIT).expect("written to the server");
            let (tx, rx) = mpsc::channel();
            let (receiver, ()) = Node::start("receiver", move |system, root| {
                let sink = system
                    .spawn(root, Sink::<Note> { to: tx, dead: None })
                    .finish()?;
                system
                    .spawn(root, b.import::<Note>("test.early", &sink))
                    .finish()?;
                Ok(())
            });
            a.publish(
                "test.early",
                &Note {
                    from: "a".into(),
                    seq: 1,
                },
            )
            .expect("published");
            assert_eq!(
                next(&rx, WAIT, "note").seq,
                1,
                "#0 had nobody to go to: gone"
            );
            assert!(receiver.stop().is_ok());
        },
    );
}

#[test]
fn a_slow_subscriber_makes_nats_drop_messages_instead_of_its_locality_growing() {
    with_server(
        "a_slow_subscriber_makes_nats_drop_messages_instead_of_its_locality_growing",
        &[],
        LIMIT,
        move |url| {
            let a = connect(&url);
            let options = Options::new(&url).window(8).subscription_capacity(64);
            let b = Nats::connect(options).expect("connects");
            let (tx, rx) = mpsc::channel();
            let importer = b.clone();
            let (receiver, ()) = Node::start("receiver", move |system, root| {
                let slow = system.spawn(root, Slow { to: tx }).finish()?;
                system
                    .spawn(root, importer.import::<Note>("test.flood", &slow))
                    .finish()?;
                Ok(())
            });
            // A steady stream the bridge could pass on in full (20 at a time, far
            // below the 64 the subscription holds), to a locality that cannot
            // keep up: the window stops the bridge, so NATS drops.
            for seq in 0..2_000 {
                a.publish(
                    "test.flood",
                    &Note {
                        from: "a".into(),
                        seq,
                    },
                )
                .expect("published");
                if seq % 20 == 19 {
                    a.flush(WAIT).expect("written to the server");
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            let deadline = std::time::Instant::now() + WAIT;
            while b.stats().slow_consumer == 0 {
                assert!(std::time::Instant::now() < deadline, "nothing was dropped");
                std::thread::sleep(Duration::from_millis(10));
            }
            // The locality goes on: what it got is in order, and less than was sent.
            let mut last = None;
            while let Ok(seq) = rx.recv_timeout(Duration::from_millis(500)) {
                assert!(last < Some(seq), "in order");
                last = Some(seq);
            }
            assert!(
                last.is_some() && b.stats().received < 2_000,
                "{:?}",
                b.stats()
            );
            assert!(receiver.stop().is_ok());
        },
    );
}

/// Takes a millisecond per note (the locality cannot keep up with a flood).
struct Slow {
    to: mpsc::Sender<u32>,
}
impl Actor for Slow {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|this: &mut Self, note: &Note, _: &mut Context<'_, Self>| {
            std::thread::sleep(Duration::from_millis(1));
            let _ = this.to.send(note.seq);
        });
    }
}

#[test]
fn a_remote_request_gets_the_reply_or_the_servers_error_with_its_causes() {
    with_server(
        "a_remote_request_gets_the_reply_or_the_servers_error_with_its_causes",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let server = calc_node(&a);
            let second = Duration::from_secs(10);
            let (client, rx) = asker_node(&b, vec![(3, second, false), (666, second, false)], None);
            let mut answers = vec![next(&rx, WAIT, "answer"), next(&rx, WAIT, "answer")];
            answers.sort_by_key(|a| a.0);
            assert_eq!(answers[0], (3, Ok(9)));
            let (n, Err((code, chain))) = &answers[1] else {
                panic!("666 is an error: {answers:?}");
            };
            assert_eq!((*n, *code), (666, ErrorCode::Failure));
            assert_eq!(
                chain,
                "actor failure (no devils)\n  <- invalid argument (the devil's number)"
            );
            assert!(client.stop().is_ok());
            assert!(server.stop().is_ok());
        },
    );
}

#[test]
fn a_remote_request_times_out_on_the_local_clock_and_ends_at_the_service_too() {
    with_server(
        "a_remote_request_times_out_on_the_local_clock_and_ends_at_the_service_too",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let server = calc_node(&a);
            let short = Duration::from_millis(50);
            let plan = vec![
                (13, short, false),
                (7, short, false),
                (5, Duration::from_secs(10), true),
            ];
            let (client, rx) = asker_node(&b, plan, None);
            let mut answers: Vec<Answer> = (0..3).map(|_| next(&rx, WAIT, "answer")).collect();
            answers.sort_by_key(|a| a.0);
            let codes: Vec<(u64, Option<ErrorCode>)> = answers
                .iter()
                .map(|(n, r)| (*n, r.as_ref().err().map(|e| e.0)))
                .collect();
            assert_eq!(
                codes,
                [
                    (5, Some(ErrorCode::Cancelled)),
                    (7, Some(ErrorCode::RequestTimeout)),
                    (13, Some(ErrorCode::RequestTimeout)),
                ]
            );
            // 13 and 7 (whose reply would come 300 ms after it was asked) end at
            // the service too, unanswered: at their requester's deadline, which
            // travels with them, or by their cancellation (as may 5, unless its
            // answer came first: then that answer is late, and dropped).
            // tests/nats_requests.rs drops the late reply of a service that
            // ignores both.
            let deadline = std::time::Instant::now() + WAIT;
            while a.stats().cancelled + a.stats().expired < 2 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the cancellations never reached the service"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(100));
            assert!(rx.try_recv().is_err(), "exactly one response per request");
            assert!(client.stop().is_ok());
            assert!(server.stop().is_ok());
        },
    );
}

#[test]
fn a_service_is_discovered_from_another_connection_and_a_discovery_can_wait_for_it() {
    with_server(
        "a_service_is_discovered_from_another_connection_and_a_discovery_can_wait_for_it",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let missing = b
                .discover("calc", Duration::ZERO)
                .expect_err("nobody serves calc yet");
            assert_eq!(missing.code(), ErrorCode::UnknownService);
            // The requester starts first and waits for the service to appear.
            let (client, rx) =
                asker_node(&b, vec![(4, Duration::from_secs(10), false)], Some(WAIT));
            std::thread::sleep(Duration::from_millis(200));
            // The name is published through the server's local registry.
            let nats = a.clone();
            let (server, ()) = Node::start("server", move |system, root| {
                system
                    .spawn(root, Calculator)
                    .register_as("calc")
                    .finish()?;
                system
                    .spawn(root, nats.service_registered("calc").request::<Square>())
                    .finish()?;
                Ok(())
            });
            assert_eq!(next(&rx, WAIT, "answer"), (4, Ok(16)));
            let info = b.discover("calc", Duration::ZERO).expect("found now");
            assert_eq!(info.name, "calc");
            assert_eq!(info.types, ["test.Square"]);
            assert!(info.instance.starts_with("server/"), "{}", info.instance);
            assert!(client.stop().is_ok());
            assert!(server.stop().is_ok());
        },
    );
}

#[test]
fn a_remote_service_nobody_serves_fails_its_init_with_unknown_service() {
    with_server(
        "a_remote_service_nobody_serves_fails_its_init_with_unknown_service",
        &[],
        LIMIT,
        move |url| {
            let b = connect(&url);
            for wait in [None, Some(Duration::from_millis(200))] {
                let (mut client, _rx) = asker_node(&b, vec![], wait);
                let reason = client.join().expect_err("the tree fails");
                assert!(
                    reason
                        .chain()
                        .any(|e| e.code() == ErrorCode::UnknownService),
                    "{reason:#}"
                );
            }
        },
    );
}

#[test]
fn a_server_that_cannot_be_reached_at_start_is_a_clear_error() {
    let port = free_port();
    let options =
        Options::new(format!("nats://127.0.0.1:{port}")).connect_timeout(Duration::from_secs(5));
    let error = Nats::connect(options).expect_err("nobody listens there");
    assert_eq!(error.code(), ErrorCode::Unreachable);
    assert!(
        error.to_string().contains(&format!("127.0.0.1:{port}")),
        "{error}"
    );
}

#[test]
fn wrong_credentials_are_refused_with_a_clear_error() {
    let Some(bin) = nats_server("wrong_credentials_are_refused_with_a_clear_error") else {
        return;
    };
    let users = Server::start(
        &bin,
        &[
            "--user".into(),
            "alice".into(),
            "--pass".into(),
            "right".into(),
        ],
    );
    let tokens = Server::start(&bin, &["--auth".into(), "s3cret".into()]);
    let (users_url, tokens_url) = (users.url(), tokens.url());
    within(LIMIT, &[users, tokens], move || {
        let refused = |options: Options| {
            let error = Nats::connect(options).expect_err("refused");
            assert_eq!(error.code(), ErrorCode::Unauthorized, "{error:#}");
            assert!(
                !format!("{error:#}").contains("wrong"),
                "no password in errors: {error:#}"
            );
        };
        refused(Options::new(&users_url).user_and_password("alice", "wrong"));
        refused(Options::new(&users_url));
        refused(Options::new(&tokens_url).token("wrong"));
        let alice = Nats::connect(Options::new(&users_url).user_and_password("alice", "right"))
            .expect("right password");
        assert!(alice.is_connected());
        let url_with_password = users_url.replace("nats://", "nats://alice:right@");
        Nats::connect(Options::new(url_with_password)).expect("credentials in the URL");
        Nats::connect(Options::new(&tokens_url).token("s3cret")).expect("right token");
    });
}

/// The example's executable, built by cargo (already built by
/// `cargo test --all-targets`, which builds the examples; else built now, in
/// the test's own target directory and profile).
fn example_executable(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("<target>/<profile>/deps/<test>");
    let target_dir = profile_dir.parent().expect("<target>/<profile>");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "--features", "nats", "--example", name])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--target-dir",
        ])
        .arg(target_dir);
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        command.arg("--release");
    }
    // Cargo gives this test the variables of a crate being built (package
    // name, manifest dir, ...); build scripts of dependencies watch some of
    // them, so passing them on would rebuild those dependencies every time.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let for_crates = key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_MANIFEST_")
            || [
                "CARGO_CRATE_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_BIN_NAME",
                "OUT_DIR",
            ]
            .contains(&key.as_ref());
        if for_crates {
            command.env_remove(key.as_ref());
        }
    }
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo build --example {name} failed"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let executable = stdout
        .lines()
        .filter(|line| {
            line.contains("\"reason\":\"compiler-artifact\"")
                && line.contains(&format!("\"name\":\"{name}\""))
        })
        .find_map(|line| {
            let (_, rest) = line.split_once("\"executable\":\"")?;
            rest.split_once('"').map(|(path, _)| path.to_string())
        })
        .expect("cargo names the example's executable");
    executable.into()
}

/// A child process, killed if still running when dropped.
struct Process(std::process::Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Process {
    /// Waits for it to end (at most `limit`) and returns its stdout, if it succeeded.
    fn output(mut self, limit: Duration) -> Option<String> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            match self.0.try_wait().expect("the process can be waited for") {
                Some(status) => {
                    let mut out = String::new();
                    use std::io::Read;
                    let _ = self.0.stdout.take()?.read_to_string(&mut out);
                    return status.success().then_some(out);
                }
                None if std::time::Instant::now() > deadline => return None,
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

#[test]
fn two_processes_exchange_requests_through_the_example() {
    let test = "two_processes_exchange_requests_through_the_example";
    with_server(test, &[], Duration::from_secs(600), move |url| {
        let example = example_executable("nats_ping_pong");
        let run = |role: &str| {
            let child = std::process::Command::new(&example)
                .args([role, "--url", &url, "--count", "3"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("the example starts");
            Process(child)
        };
        // ping first: it waits for pong to appear.
        let ping = run("ping");
        let pong = run("pong");
        let pinged = ping.output(LIMIT).expect("ping ends well");
        let ponged = pong.output(LIMIT).expect("pong ends well");
        assert!(pinged.ends_with("ping: 3 pongs\n"), "{pinged}");
        assert_eq!(pinged.matches("ping: pong #").count(), 3, "{pinged}");
        assert!(ponged.ends_with("pong: served 3 pings\n"), "{ponged}");
    });
}

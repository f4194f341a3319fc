//! The loop-agnostic embedding contract (issue 16, case 1): a waker
//! function of the loop's, called from other threads; on unix, a
//! `Driver`'s file descriptor that becomes readable for wake-ups and I/O;
//! one loop per locality, refused with an `Error` otherwise.

use commutator::embed::Driver;
use commutator::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs `test` on a thread of its own and fails if it takes longer than `limit`.
fn within(limit: Duration, test: impl FnOnce() + Send + 'static) {
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

struct Hello;

/// Ends the tree when it hears `Hello`.
struct Greeted;
impl Actor for Greeted {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Hello, ctx: &mut Context<'_, Self>| ctx.shutdown());
    }
}

/// A GUI-like loop: it sleeps on a channel (its "event queue") until the
/// waker posts to it, or until the locality's next deadline.
#[test]
fn a_loop_woken_by_a_waker_function_runs_a_locality_to_its_end() {
    within(Duration::from_secs(20), || {
        let (events, queue) = mpsc::channel::<&'static str>();
        let mut locality = Locality::named("gui");
        let proxy = events.clone();
        locality
            .set_waker(move || {
                let _ = proxy.send("wake");
            })
            .unwrap();
        let greeted = locality.spawn_root(Greeted).finish().unwrap();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            greeted.send(Hello).map_err(|e| e.error).unwrap();
        });
        let mut wakes = 0;
        loop {
            locality.dispatch(Instant::now());
            if locality.is_finished() {
                break;
            }
            match locality.poll_timeout(Instant::now()) {
                Some(timeout) => {
                    if queue.recv_timeout(timeout).is_ok() {
                        wakes += 1;
                    }
                }
                None => {
                    queue.recv().unwrap();
                    wakes += 1;
                }
            }
        }
        sender.join().unwrap();
        assert!(wakes >= 1);
        assert!(locality.exit_reason().is_none_or(Error::is_normal));
    });
}

#[test]
fn the_waker_is_called_once_per_batch_of_posts_between_dispatches() {
    let woken = Arc::new(AtomicUsize::new(0));
    let counter = woken.clone();
    let mut locality = Locality::named("batch");
    locality
        .set_waker(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let greeted = locality.spawn_root(Greeted).finish().unwrap();
    locality.run_until_idle(locality.now());
    let to = greeted.clone();
    std::thread::spawn(move || {
        for _ in 0..10 {
            to.send(Hello).map_err(|e| e.error).unwrap();
        }
    })
    .join()
    .unwrap();
    assert_eq!(woken.load(Ordering::SeqCst), 1, "ten posts, one wake-up");
    locality.run_until_idle(locality.now());
    assert!(locality.is_finished());
}

#[test]
fn a_panicking_waker_is_caught_and_the_message_still_arrives() {
    let mut locality = Locality::named("panicky");
    locality.set_waker(|| panic!("the waker broke")).unwrap();
    let greeted = locality.spawn_root(Greeted).finish().unwrap();
    locality.run_until_idle(locality.now());
    let sent = std::thread::spawn(move || greeted.send(Hello).map_err(|e| e.error))
        .join()
        .expect("the sender did not panic");
    sent.unwrap();
    locality.run_until_idle(locality.now());
    assert!(locality.is_finished());
}

#[test]
fn one_loop_per_locality() {
    let poll = commutator::mio::Poll::new().unwrap();
    // register, then a waker
    let mut a = Locality::named("a");
    a.register(poll.registry(), commutator::mio::Token(0))
        .unwrap();
    assert!(a.is_driven());
    let err = a.set_waker(|| {}).unwrap_err();
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
    assert!(err.to_string().contains("one loop per locality"), "{err}");
    // a waker, then register, then a second waker, then a driver
    let other = commutator::mio::Poll::new().unwrap();
    let mut b = Locality::named("b");
    assert!(!b.is_driven());
    b.set_waker(|| {}).unwrap();
    let err = b
        .register(other.registry(), commutator::mio::Token(0))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
    assert_eq!(
        b.set_waker(|| {}).unwrap_err().code(),
        ErrorCode::AlreadyRegisteredOnPoll
    );
    let err = Driver::new(b).unwrap_err();
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
    // a driver's locality on another poll
    let mut driver = Driver::new(Locality::named("c")).unwrap();
    let err = driver
        .locality()
        .register(other.registry(), commutator::mio::Token(1))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
    // `other` is still free for a locality of its own
    Locality::named("d")
        .register(other.registry(), commutator::mio::Token(2))
        .unwrap();
}

#[test]
fn a_locality_on_a_waker_alone_has_no_poll_for_io() {
    struct Listener(Option<commutator::mio::net::TcpListener>);
    impl Actor for Listener {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            if let Some(l) = self.0.take()
                && let Err(e) = ctx.register_io(l, commutator::mio::Interest::READABLE)
            {
                ctx.fail(e);
            }
        }
    }
    let listener = commutator::mio::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut locality = Locality::named("noio");
    locality.set_waker(|| {}).unwrap();
    locality
        .spawn_root(Listener(Some(listener)))
        .finish()
        .unwrap();
    locality.run_until_idle(locality.now());
    let reason = locality.exit_reason().expect("failed");
    assert_eq!(reason.root_cause().code(), ErrorCode::NotRegistered);
}

#[cfg(unix)]
mod fd {
    use super::*;
    use commutator::mio::unix::SourceFd;
    use commutator::mio::{Events, Interest, Poll, Token};
    use std::os::fd::AsRawFd;

    /// The loop of these tests: a mio poll of its own (as any fd-watching
    /// loop), watching the driver's descriptor, level-triggered in effect:
    /// it dispatches on each readiness and at the driver's timeout.
    fn run_on_fd(driver: &mut Driver) -> usize {
        let mut outer = Poll::new().unwrap();
        let fd = driver.as_raw_fd();
        outer
            .registry()
            .register(&mut SourceFd(&fd), Token(7), Interest::READABLE)
            .unwrap();
        let mut events = Events::with_capacity(8);
        let mut readable = 0;
        loop {
            driver.dispatch(Instant::now()).unwrap();
            if driver.is_finished() {
                return readable;
            }
            let timeout = driver.poll_timeout(Instant::now());
            outer.poll(&mut events, timeout).unwrap();
            readable += events.iter().count();
        }
    }

    #[test]
    fn a_send_from_another_thread_makes_the_drivers_descriptor_readable() {
        within(Duration::from_secs(20), || {
            let mut driver = Driver::new(Locality::named("fd")).unwrap();
            assert!(driver.wakes_through_fd());
            let greeted = driver.locality().spawn_root(Greeted).finish().unwrap();
            let sender = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                greeted.send(Hello).map_err(|e| e.error).unwrap();
            });
            let readable = run_on_fd(&mut driver);
            sender.join().unwrap();
            assert!(readable >= 1, "woken through the descriptor");
            driver.result().unwrap();
        });
    }

    #[test]
    fn an_actors_io_readiness_comes_through_the_drivers_descriptor() {
        use std::io::Read;
        struct Reader {
            stream: Option<commutator::mio::net::TcpStream>,
            guard: Option<IoGuard<commutator::mio::net::TcpStream>>,
            got: Vec<u8>,
        }
        impl Actor for Reader {
            fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
                ctx.subscribe(|me: &mut Self, _: &Io, ctx: &mut Context<'_, Self>| {
                    let Some(stream) = me.guard.as_mut() else {
                        return;
                    };
                    let mut buf = [0u8; 16];
                    loop {
                        match stream.read(&mut buf) {
                            Ok(0) => {
                                assert_eq!(me.got, b"ping");
                                return ctx.shutdown();
                            }
                            Ok(n) => me.got.extend_from_slice(&buf[..n]),
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                            Err(e) => return ctx.fail(Error::io(e)),
                        }
                    }
                });
                if let Some(s) = self.stream.take() {
                    match ctx.register_io(s, Interest::READABLE) {
                        Ok(g) => self.guard = Some(g),
                        Err(e) => ctx.fail(e),
                    }
                }
            }
        }
        within(Duration::from_secs(20), || {
            use std::io::Write;
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, _) = listener.accept().unwrap();
            server.set_nonblocking(true).unwrap();
            let stream = commutator::mio::net::TcpStream::from_std(server);
            let wake = Arc::new(AtomicUsize::new(0));
            let counter = wake.clone();
            // Woken by a function for messages; I/O still through the descriptor.
            let mut driver = Driver::with_waker(Locality::named("io"), move || {
                counter.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
            assert!(!driver.wakes_through_fd());
            let reader = Reader {
                stream: Some(stream),
                guard: None,
                got: Vec::new(),
            };
            driver.locality().spawn_root(reader).finish().unwrap();
            let writer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                client.write_all(b"ping").unwrap();
            });
            let readable = run_on_fd(&mut driver);
            writer.join().unwrap();
            assert!(readable >= 1);
            driver.result().unwrap();
        });
    }
}

//! `Error` follows the conventions of `std::error::Error` (issue 14):
//! `Display` prints one level, `source()` returns the cause, `{:#}` the
//! whole chain; a cause may be an error of any type; a chain of any length
//! drops, prints and compares without recursion.

use commutator::{Error, ErrorCode};
use std::error::Error as StdError;
use std::fmt;
use std::sync::mpsc;
use std::time::Duration;

fn three_levels() -> Error {
    Error::new(ErrorCode::FailureEscalation)
        .with_context("L0/root#1")
        .caused_by(
            Error::new(ErrorCode::InitFailed)
                .with_context("L0/db#2")
                .caused_by(Error::failure("disk full")),
        )
}

/// What a program that reports an error the usual way prints: the error,
/// then each of its sources.
fn report(e: &dyn StdError) -> Vec<String> {
    let mut lines = vec![e.to_string()];
    let mut next = e.source();
    while let Some(cause) = next {
        lines.push(cause.to_string());
        next = cause.source();
    }
    lines
}

#[test]
fn a_standard_report_loop_prints_each_cause_once() {
    let e = three_levels();
    assert_eq!(
        report(&e),
        [
            "failure escalation (L0/root#1)",
            "init failed (L0/db#2)",
            "actor failure (disk full)"
        ]
    );
}

#[test]
fn display_prints_one_level_and_the_alternate_form_the_whole_chain() {
    let e = three_levels();
    assert_eq!(e.to_string(), "failure escalation (L0/root#1)");
    let chain = "failure escalation (L0/root#1)\n  <- init failed (L0/db#2)\n  <- actor failure (disk full)";
    assert_eq!(format!("{e:#}"), chain);
    assert_eq!(format!("{e:?}"), chain, "what `main` prints: the chain");
    assert_eq!(Error::new(ErrorCode::Normal).to_string(), "normal shutdown");
}

#[test]
fn an_io_error_stays_the_source() {
    let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "peer went away");
    let e = Error::from(io);
    assert_eq!(e.code(), ErrorCode::Io);
    let source = e.source().expect("the io::Error");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("an io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionReset);
    assert_eq!(format!("{e:#}"), "I/O error\n  <- peer went away");
}

/// An error of another crate, with a source of its own.
#[derive(Debug)]
struct Outer(std::num::ParseIntError);
impl fmt::Display for Outer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("bad config")
    }
}
impl StdError for Outer {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn any_error_can_be_the_cause_and_the_chain_goes_on_through_it() {
    let parse = "x".parse::<u16>().unwrap_err();
    let e = Error::new(ErrorCode::InitFailed)
        .with_context("L0/db#2")
        .with_source(Outer(parse));
    let top = Error::new(ErrorCode::ChildInitFailed).caused_by(e);

    // `chain` walks the `Error` links and stops at the foreign cause.
    let codes: Vec<_> = top.chain().map(Error::code).collect();
    assert_eq!(codes, [ErrorCode::ChildInitFailed, ErrorCode::InitFailed]);
    assert_eq!(top.root_cause().code(), ErrorCode::InitFailed);
    assert!(top.root_cause().cause().is_none());
    // `sources` and `{:#}` go on through it and its own source.
    let texts: Vec<_> = top.sources().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        [
            "child init failed",
            "init failed (L0/db#2)",
            "bad config",
            "invalid digit found in string"
        ]
    );
    assert_eq!(
        format!("{top:#}"),
        "child init failed\n  <- init failed (L0/db#2)\n  <- bad config\n  <- invalid digit found in string"
    );
    assert!(top.root_cause().source().unwrap().is::<Outer>());
    // A boxed error is taken as it is.
    let boxed: Box<dyn StdError + Send + Sync> = "not a number".into();
    let e = Error::new(ErrorCode::InvalidArgument).with_source(boxed);
    assert_eq!(format!("{e:#}"), "invalid argument\n  <- not a number");
}

#[test]
fn an_error_given_as_a_source_is_an_error_link() {
    let e = Error::new(ErrorCode::ChildDown).with_source(Error::failure("boom"));
    assert_eq!(e.cause(), Some(&Error::failure("boom")));
    assert_eq!(e.chain().count(), 2);
    assert_eq!(
        e,
        Error::new(ErrorCode::ChildDown).caused_by(Error::failure("boom"))
    );
}

#[test]
fn errors_with_a_foreign_cause_are_equal_only_when_they_share_it() {
    let io = || std::io::Error::other("gone");
    let a = Error::from(io());
    assert_eq!(a, a.clone(), "a clone shares the cause");
    let wrapped = |e: &Error| Error::new(ErrorCode::ChildDown).caused_by(e.clone());
    assert_eq!(wrapped(&a), wrapped(&a));
    assert_ne!(a, Error::from(io()), "io::Error has no equality of its own");
    assert_ne!(a, Error::new(ErrorCode::Io));
}

/// Runs `f` on a thread with a 2 MiB stack, under a watchdog.
fn on_a_small_stack(f: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            f();
            let _ = done.send(());
        })
        .unwrap();
    match finished.recv_timeout(Duration::from_secs(120)) {
        Ok(()) => thread.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(thread.join().expect_err("it ended without reporting"))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no end in two minutes"),
    }
}

fn chain_of(n: usize) -> Error {
    let mut e = Error::failure("the bottom");
    for i in 1..n {
        e = Error::new(ErrorCode::FailureEscalation)
            .with_context(format!("s{i}"))
            .caused_by(e);
    }
    e
}

/// Counts what is written, keeps nothing.
struct Count(usize);
impl fmt::Write for Count {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.matches('\n').count();
        Ok(())
    }
}

#[test]
fn a_million_deep_chain_drops_prints_and_compares_on_a_small_stack() {
    on_a_small_stack(|| {
        const N: usize = 1_000_000;
        let (a, b) = (chain_of(N), chain_of(N));
        assert!(a == b, "equal level by level");
        let mut lines = Count(0);
        fmt::write(&mut lines, format_args!("{a:#}")).unwrap();
        assert_eq!(lines.0, N - 1);
        assert_eq!(a.chain().count(), N);
        let shared = a.cause().unwrap().clone();
        drop(a);
        assert_eq!(shared.chain().count(), N - 1, "a clone keeps its part");
        drop(shared);
        drop(b);
    });
}

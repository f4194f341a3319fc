//! Property-based reliability tests: random supervisor trees with random
//! faults, run to their end, checked against the library's invariants (see
//! `scenario/check.rs` and `scenario/check/`): every actor ends SHUT_DOWN
//! exactly once, children before their supervisor and linked clients before
//! their servers; every request gets exactly one response; per-sender FIFO;
//! nothing leaks; the root's exit reason carries the injected cause.
//!
//! - CI runs a bounded number of generated scenarios (`CI_CASES`), each from
//!   a random seed; a failure prints the seed and the scenario.
//! - `COMMUTATOR_SEED=<seed> cargo test --test properties -- --nocapture`
//!   replays one scenario (add `COMMUTATOR_THREADS=2` or `3` for one of the
//!   thread runs) and prints it with its whole log.
//! - `COMMUTATOR_SOAK=100000 cargo test --release --test properties -- --nocapture soak`
//!   runs that many scenarios and prints `soak: N scenarios, F failures`,
//!   with every failing seed (`COMMUTATOR_SOAK_BASE` fixes the first seed).
//! - `COMMUTATOR_SOAK_THREADS=1000 cargo test --release --test properties -- --nocapture threads`
//!   is the thread soak: the two thread tests run that many scenarios each
//!   instead of `THREAD_CASES` (the `soak` test does not read this variable).
//!
//! Scenarios on one thread use a manual clock, so a seed replays exactly;
//! the thread runs use the real clock (scaled down) and replay the scenario,
//! not the interleaving.

mod scenario;

use commutator::ErrorCode;
use proptest::prelude::*;
use scenario::check::{check, report};
use scenario::node::Ev;
use scenario::run::{Outcome, run_manual, run_threads};
use scenario::{Action, Init, Scenario, Script};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Generated scenarios per CI run (single thread, manual clock).
const CI_CASES: u32 = 2000;
/// Generated scenarios per CI run on two and on three threads.
const THREAD_CASES: u32 = 40;
/// Localities of a single-thread scenario: 1 to this many.
const MAX_LOCALITIES: usize = 3;

/// One scenario millisecond on threads.
const THREAD_SCALE: Duration = Duration::from_micros(100);
const WATCHDOG: Duration = Duration::from_secs(20);
const DEADLINE: Duration = Duration::from_secs(40);

fn seed_from_env(var: &str) -> Option<u64> {
    let text = std::env::var(var).ok()?;
    let text = text.trim();
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{var}={text} is not a number")))
}

/// Runs `scenario`; `Err` carries the report (the broken invariants, the
/// scenario and the log), or the panic message if something panicked.
fn verify(scenario: &Scenario, threads: bool) -> Result<Outcome, String> {
    let run = catch_unwind(AssertUnwindSafe(|| {
        if threads {
            run_threads(scenario, THREAD_SCALE, WATCHDOG, DEADLINE)
        } else {
            run_manual(scenario)
        }
    }));
    let outcome = match run {
        Ok(outcome) => outcome,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Err(format!("panicked: {what}\n{scenario}"));
        }
    };
    let problems = check(&outcome);
    if problems.is_empty() {
        Ok(outcome)
    } else {
        Err(report(&outcome, &problems))
    }
}

fn replay_hint(seed: u64, threads: Option<usize>) -> String {
    match threads {
        Some(k) => format!(
            "replay: COMMUTATOR_SEED={seed:#x} COMMUTATOR_THREADS={k} cargo test --test properties -- --nocapture replay"
        ),
        None => format!(
            "replay: COMMUTATOR_SEED={seed:#x} cargo test --test properties -- --nocapture replay"
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: CI_CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_scenarios_keep_every_invariant(seed in any::<u64>().no_shrink()) {
        let scenario = Scenario::generate(seed, MAX_LOCALITIES);
        if let Err(report) = verify(&scenario, false) {
            prop_assert!(false, "seed {seed:#x} failed\n{}\n{report}", replay_hint(seed, None));
        }
    }

    #[test]
    fn a_scenario_without_faults_ends_normally_and_frees_everything(seed in any::<u64>().no_shrink()) {
        let scenario = Scenario::generate(seed, MAX_LOCALITIES).without_faults();
        prop_assert!(scenario.is_faultless());
        // The checker holds a scenario without faults to a normal end.
        if let Err(report) = verify(&scenario, false) {
            prop_assert!(
                false,
                "seed {seed:#x} without faults failed\n{} COMMUTATOR_WITHOUT_FAULTS=1\n{report}",
                replay_hint(seed, None)
            );
        }
    }
}

/// Addresses of the instances of each node, from the log.
fn addresses(outcome: &Outcome, node: usize) -> Vec<String> {
    let uids: Vec<usize> = outcome
        .events
        .iter()
        .filter_map(|e| match e.ev {
            Ev::Made { uid, node: n, .. } if n == node => Some(uid),
            _ => None,
        })
        .collect();
    outcome
        .events
        .iter()
        .filter_map(|e| match &e.ev {
            Ev::InitStart { uid, addr } if uids.contains(uid) => Some(addr.clone()),
            _ => None,
        })
        .collect()
}

fn path_localities() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..3usize, 2..=6)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// A crash at the bottom of a path of escalating supervisors ends the
    /// root with one `FailureEscalation` per supervisor, each naming it, and
    /// the injected failure at the bottom of the chain.
    #[test]
    fn an_escalated_crash_reaches_the_root_with_one_link_per_supervisor(
        localities in path_localities(),
        crash_at in 0..50u64,
    ) {
        let leaf = Script { actions: vec![(crash_at, Action::Crash)], ..Script::quiet() };
        let scenario = Scenario::path(&localities, leaf, true, 200);
        let outcome = verify(&scenario, false).map_err(TestCaseError::fail)?;
        let exit = outcome.exit.clone().expect("the root went down");
        let chain: Vec<_> = exit.chain().collect();
        let depth = localities.len() - 1;
        prop_assert_eq!(chain.len(), depth + 1, "{:#}", exit);
        for (level, link) in chain.iter().enumerate().take(depth) {
            prop_assert_eq!(link.code(), ErrorCode::FailureEscalation);
            let supervisor = addresses(&outcome, level);
            prop_assert_eq!(link.context(), Some(supervisor[0].as_str()));
        }
        let cause = chain[depth];
        prop_assert_eq!(cause.code(), ErrorCode::Failure);
        prop_assert!(cause.context().is_some_and(|c| c.ends_with("crash")), "{:#}", cause);
    }

    /// A failed init at the bottom of a path of supervisors that shut down
    /// on a child's init failure (the default) fails every init up to the
    /// root: `ChildInitFailed` per supervisor, then the child's `InitFailed`.
    #[test]
    fn a_failed_init_fails_every_supervisor_up_to_the_root(
        localities in path_localities(),
        late in prop::option::of(1..40u64),
    ) {
        let init = late.map_or(Init::Fail, Init::FailAfter);
        let leaf = Script { init, ..Script::quiet() };
        let scenario = Scenario::path(&localities, leaf, false, 200);
        let outcome = verify(&scenario, false).map_err(TestCaseError::fail)?;
        let exit = outcome.exit.clone().expect("the root went down");
        let chain: Vec<_> = exit.chain().collect();
        let depth = localities.len() - 1;
        prop_assert_eq!(chain.len(), depth + 2, "{:#}", exit);
        for (level, link) in chain.iter().enumerate().take(depth) {
            prop_assert_eq!(link.code(), ErrorCode::ChildInitFailed);
            let supervisor = addresses(&outcome, level);
            prop_assert_eq!(link.context(), Some(supervisor[0].as_str()));
        }
        prop_assert_eq!(chain[depth].code(), ErrorCode::InitFailed);
        let leaf = addresses(&outcome, depth);
        prop_assert_eq!(chain[depth].context(), Some(leaf[0].as_str()));
        prop_assert_eq!(chain[depth + 1].code(), ErrorCode::Failure);
    }
}

/// The thread runs: `THREAD_CASES` scenarios on `k` threads (or
/// `COMMUTATOR_SOAK_THREADS` of them; or the one of `COMMUTATOR_SEED` when
/// `COMMUTATOR_THREADS=k`).
fn on_threads(k: usize) {
    let seeds: Vec<u64> = match (
        seed_from_env("COMMUTATOR_SEED"),
        seed_from_env("COMMUTATOR_THREADS"),
    ) {
        (Some(seed), Some(t)) if t as usize == k => vec![seed],
        (Some(_), _) => return,
        _ => {
            let base = seed_from_env("COMMUTATOR_SOAK_BASE").unwrap_or_else(random_seed);
            let cases = seed_from_env("COMMUTATOR_SOAK_THREADS").unwrap_or(THREAD_CASES as u64);
            (0..cases).map(|i| base.wrapping_add(i)).collect()
        }
    };
    let started = Instant::now();
    let mut failures = Vec::new();
    for &seed in &seeds {
        let scenario = Scenario::generate_on(seed, k);
        if let Err(report) = verify(&scenario, true) {
            println!(
                "---- seed {seed:#x} on {k} threads failed\n{}\n{report}",
                replay_hint(seed, Some(k))
            );
            failures.push(seed);
        }
    }
    if seeds.len() > THREAD_CASES as usize {
        println!(
            "soak: {} scenarios on {k} threads, {} failures ({:.1?})",
            seeds.len(),
            failures.len(),
            started.elapsed()
        );
    }
    assert!(
        failures.is_empty(),
        "seeds {failures:#x?} failed on {k} threads (reports above)"
    );
}

#[test]
fn generated_scenarios_keep_every_invariant_on_two_threads() {
    on_threads(2);
}

#[test]
fn generated_scenarios_keep_every_invariant_on_three_threads() {
    on_threads(3);
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(Instant::now())
}

/// `COMMUTATOR_SEED=<seed>`: replays one scenario and prints it with its log
/// (`COMMUTATOR_WITHOUT_FAULTS=1`: its variant without faults, as in
/// `a_scenario_without_faults_ends_normally_and_frees_everything`).
#[test]
fn replay() {
    let Some(seed) = seed_from_env("COMMUTATOR_SEED") else {
        return;
    };
    let threads = seed_from_env("COMMUTATOR_THREADS").map(|k| k as usize);
    let mut scenario = match threads {
        Some(k) => Scenario::generate_on(seed, k),
        None => Scenario::generate(seed, MAX_LOCALITIES),
    };
    if std::env::var_os("COMMUTATOR_WITHOUT_FAULTS").is_some() {
        scenario = scenario.without_faults();
    }
    match verify(&scenario, threads.is_some()) {
        Ok(outcome) => {
            println!("{}", report(&outcome, &[]));
            println!("seed {seed:#x}: every invariant holds");
        }
        Err(report) => panic!("seed {seed:#x} failed\n{report}"),
    }
}

/// What a batch of scenarios exercised, so that a soak run shows it tested
/// something: counts of scenarios in which each thing happened.
#[derive(Default)]
struct Coverage {
    counts: std::collections::BTreeMap<&'static str, u64>,
}

impl Coverage {
    fn add(&mut self, outcome: &Outcome) {
        let mut seen = std::collections::BTreeSet::new();
        let mut initialized = std::collections::BTreeSet::new();
        for e in &outcome.events {
            let what = match &e.ev {
                Ev::InitFinish { uid } => {
                    initialized.insert(*uid);
                    continue;
                }
                Ev::ShutdownStart { uid } if !initialized.contains(uid) => "a shutdown during init",
                Ev::Made { index, .. } if *index > 0 => "a restart",
                Ev::Failed { .. } => "an injected failure",
                Ev::Linked { .. } => "a link",
                Ev::Listening { .. } => "an external subscription",
                Ev::Cancel {
                    cancelled: true, ..
                } => "a cancelled request",
                Ev::Answered { result: Ok(_), .. } => "a reply",
                Ev::Answered { result: Err(e), .. } if e.code() == ErrorCode::RequestTimeout => {
                    "a request timeout"
                }
                Ev::Unanswered { .. } => "a requester gone before its response",
                Ev::Reason { reason, .. } if reason.code() == ErrorCode::UnlinkRequested => {
                    "an unlink"
                }
                Ev::Reason { reason, .. } if reason.code() == ErrorCode::Panicked => {
                    "a caught panic"
                }
                Ev::Reason { reason, .. } if reason.code() == ErrorCode::InitTimeout => {
                    "an init timeout"
                }
                Ev::Reason { reason, .. } if reason.code() == ErrorCode::FailureEscalation => {
                    "an escalation"
                }
                Ev::Reason { reason, .. }
                    if reason.chain().any(|e| e.code() == ErrorCode::RestartLimit) =>
                {
                    "a restart limit reached"
                }
                Ev::Contract { .. } => "a contract violation",
                _ => continue,
            };
            seen.insert(what);
        }
        if outcome.exit.as_ref().is_some_and(|e| !e.is_normal()) {
            seen.insert("a root that failed");
        }
        if outcome.localities.iter().any(|l| l.stats.dropped_stale > 0) {
            seen.insert("a message to a dead address");
        }
        if outcome.localities.len() > 1 {
            seen.insert("several localities");
        }
        for what in seen {
            *self.counts.entry(what).or_default() += 1;
        }
    }
}

/// `COMMUTATOR_SOAK=<n>`: runs `n` generated scenarios (on every core) and
/// prints how many failed, with each failing seed.
#[test]
fn soak() {
    let Some(n) = seed_from_env("COMMUTATOR_SOAK") else {
        return;
    };
    let base = seed_from_env("COMMUTATOR_SOAK_BASE").unwrap_or_else(random_seed);
    let started = Instant::now();
    let next = AtomicU64::new(0);
    let failures: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    let coverage = Mutex::new(Coverage::default());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let seed = base.wrapping_add(i);
                    let scenario = Scenario::generate(seed, MAX_LOCALITIES);
                    match verify(&scenario, false) {
                        Ok(outcome) => coverage.lock().unwrap().add(&outcome),
                        Err(report) => failures.lock().unwrap().push((seed, report)),
                    }
                    if (i + 1).is_multiple_of(10_000) {
                        println!(
                            "soak: {} scenarios so far ({:.0?})",
                            i + 1,
                            started.elapsed()
                        );
                    }
                }
            });
        }
    });
    for (what, count) in &coverage.into_inner().unwrap().counts {
        println!("soak: {count:>7} scenarios with {what}");
    }
    let mut failures = failures.into_inner().unwrap();
    failures.sort_by_key(|(seed, _)| *seed);
    for (seed, report) in failures.iter().take(3) {
        println!(
            "---- seed {seed:#x}\n{}\n{report}",
            replay_hint(*seed, None)
        );
    }
    for (seed, report) in &failures {
        let first = report.lines().nth(1).unwrap_or("").trim();
        println!("failing seed {seed:#x}: {first}");
    }
    println!(
        "soak: {n} scenarios, {} failures (seeds {base:#x} + 0..{n}, {:.1?})",
        failures.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} of {n} scenarios failed",
        failures.len()
    );
}

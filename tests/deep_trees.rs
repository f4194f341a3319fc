//! Deep trees (issue 14): a chain of 10,000 supervisors, each the only child
//! of the one above, inits, starts, fails and shuts down on a thread with a
//! 2 MiB stack in a debug build. Nothing walks the tree or a cause chain by
//! recursion: before the fix, dropping the root's 10,000-deep reason
//! overflowed the stack.
//!
//! Each scenario runs on a thread of its own under a watchdog, so a
//! regression fails the test (a stack overflow aborts the process) instead
//! of hanging CI.

use commutator::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Supervisors in the chain, the root included.
const DEPTH: usize = 10_000;
/// The default stack of a spawned thread.
const STACK: usize = 2 << 20;
/// Far more than a debug build needs (about a second).
const WATCHDOG: Duration = Duration::from_secs(120);

/// Runs `scenario` on a thread with a 2 MiB stack; fails if it panics or
/// does not end within the watchdog's time.
fn on_a_small_stack(scenario: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("deep tree".into())
        .stack_size(STACK)
        .spawn(move || {
            scenario();
            let _ = done.send(());
        })
        .unwrap();
    match finished.recv_timeout(WATCHDOG) {
        Ok(()) => thread.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let panic = thread.join().expect_err("it ended without reporting");
            std::panic::resume_unwind(panic)
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the scenario did not end in {WATCHDOG:?}"),
    }
}

/// A message that makes the worker fail.
struct Fail;

/// The worker at the bottom of the chain.
struct Worker;
impl Actor for Worker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Fail, ctx: &mut Context<'_, Self>| {
            ctx.fail(Error::failure("the bottom broke"));
        });
    }
}

/// A locality with a root supervisor, `DEPTH - 1` supervisors below it, each
/// the only child of the one above and escalating failures, and a worker
/// (also escalating) at the bottom. Returns the root and the worker.
fn deep_tree(l: &mut Locality) -> (Address, Address) {
    let root = l
        .spawn_root(Supervisor)
        .name("s0")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let mut parent = root.clone();
    for level in 1..DEPTH {
        parent = l
            .spawn(&parent, Supervisor)
            .name(format!("s{level}"))
            .supervisor(SupervisorConfig::default())
            .escalate_failure()
            .finish()
            .unwrap();
    }
    let worker = l
        .spawn(&parent, Worker)
        .name("worker")
        .escalate_failure()
        .finish()
        .unwrap();
    (root, worker)
}

fn run(l: &mut Locality, at: Instant) {
    l.run_until_idle(at);
}

#[test]
fn a_deep_tree_inits_starts_and_shuts_down_on_a_small_stack() {
    on_a_small_stack(|| {
        let mut l = Locality::named("L0");
        let t0 = l.now();
        let (root, worker) = deep_tree(&mut l);
        run(&mut l, t0);
        assert_eq!(l.state_of(&root), Some(ActorState::Operational));
        assert_eq!(l.state_of(&worker), Some(ActorState::Operational));
        assert_eq!(l.stats().actors, DEPTH + 1);

        l.shutdown(&root).unwrap();
        run(&mut l, t0);
        assert!(l.is_finished());
        assert!(l.exit_reason().is_some_and(Error::is_normal));
        let s = l.stats();
        assert_eq!((s.actors, s.addresses, s.subscriptions), (0, 0, 0));
    });
}

#[test]
fn a_failure_at_the_bottom_of_a_deep_tree_reaches_the_root_and_drops_on_a_small_stack() {
    on_a_small_stack(|| {
        let mut l = Locality::named("L0");
        let t0 = l.now();
        let (root, worker) = deep_tree(&mut l);
        run(&mut l, t0);
        assert_eq!(l.state_of(&root), Some(ActorState::Operational));

        l.send(&worker, Fail).unwrap();
        run(&mut l, t0);
        assert!(l.is_finished());
        let reason = l.exit_reason().expect("the root's reason").clone();
        assert_eq!(reason.chain().count(), DEPTH + 1, "one link per supervisor");
        assert_eq!(reason.code(), ErrorCode::FailureEscalation);
        assert_eq!(reason.root_cause().context(), Some("the bottom broke"));

        assert_eq!(reason.to_string(), "failure escalation (L0/s0#1)");
        let chain = format!("{reason:#}");
        assert_eq!(chain.lines().count(), DEPTH + 1);
        assert!(chain.ends_with("\n  <- actor failure (the bottom broke)"));
        assert_eq!(format!("{reason:?}"), chain);
        assert_eq!(reason, reason.clone());

        // The locality holds one owner of the chain, `reason` the other:
        // both go, the last one unlinks the whole chain.
        drop(l);
        drop(reason);
    });
}

#[test]
fn a_locality_dropped_with_a_deep_tree_still_running_frees_it_on_a_small_stack() {
    on_a_small_stack(|| {
        let mut l = Locality::named("L0");
        let t0 = l.now();
        let (_, worker) = deep_tree(&mut l);
        run(&mut l, t0);
        assert_eq!(l.state_of(&worker), Some(ActorState::Operational));
        drop(l);
    });
}

/// A supervisor that grows the chain below itself in its init: `left` more
/// levels, then the worker (registered as "bottom" in the root's registry,
/// which every level inherits).
struct Level {
    left: usize,
}
impl Actor for Level {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let spawned = if self.left == 0 {
            ctx.spawn(Worker)
                .name("worker")
                .register_as("bottom")
                .escalate_failure()
                .finish()
        } else {
            ctx.spawn(Level {
                left: self.left - 1,
            })
            .name(format!("s{}", DEPTH - self.left))
            .supervisor(SupervisorConfig::default())
            .escalate_failure()
            .finish()
        };
        if let Err(e) = spawned {
            ctx.fail(e);
        }
    }
}

/// Beside the chain, under the root: links to the worker at the bottom, so
/// the link check walks the worker's 10,000 ancestors; keeps its address.
struct Watcher {
    found: Rc<RefCell<Option<Address>>>,
}
impl Actor for Watcher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.discover("bottom")
            .wait()
            .link()
            .then(|me, worker, _| *me.found.borrow_mut() = Some(worker.clone()));
    }
}

#[test]
fn a_deep_tree_grown_from_the_inside_with_a_registry_and_a_link_fails_on_a_small_stack() {
    on_a_small_stack(|| {
        let mut l = Locality::named("L0");
        let t0 = l.now();
        let root = l
            .spawn_root(Level { left: DEPTH - 1 })
            .name("s0")
            .supervisor(SupervisorConfig::default().with_registry())
            .finish()
            .unwrap();
        let found = Rc::new(RefCell::new(None));
        let watcher = Watcher {
            found: found.clone(),
        };
        let watcher = l.spawn(&root, watcher).name("watcher").finish().unwrap();
        run(&mut l, t0);
        assert_eq!(l.state_of(&root), Some(ActorState::Operational));
        assert_eq!(l.state_of(&watcher), Some(ActorState::Operational));
        // the chain, the worker, the registry and the watcher
        assert_eq!(l.stats().actors, DEPTH + 3);
        let worker = found
            .borrow_mut()
            .take()
            .expect("the watcher found the worker");
        assert_eq!(l.state_of(&worker), Some(ActorState::Operational));

        l.send(&worker, Fail).unwrap();
        run(&mut l, t0);
        assert!(l.is_finished());
        let reason = l.exit_reason().expect("the root's reason");
        assert_eq!(reason.chain().count(), DEPTH + 1, "one link per supervisor");
        assert_eq!(reason.root_cause().context(), Some("the bottom broke"));
        assert_eq!(l.stats().actors, 0);
    });
}

/// A leaf that does nothing.
struct Leaf;
impl Actor for Leaf {}

#[test]
fn a_deep_tree_with_leaves_at_every_level_starts_them_and_stops_them_directly_on_a_small_stack() {
    // Each supervisor's first child is a leaf, its second the next
    // supervisor: when the chain shuts down, every level asks its leaf by
    // a direct call (nothing waits in the queue then) and the leaf reports
    // down the same way. Later, a second leaf under every operational
    // supervisor confirms its init and is started by direct calls. None of
    // these calls may nest with the depth of the chain.
    on_a_small_stack(|| {
        let mut l = Locality::named("L0");
        let t0 = l.now();
        let root = l
            .spawn_root(Supervisor)
            .name("s0")
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let mut supervisors = vec![root.clone()];
        for level in 1..DEPTH {
            let parent = supervisors.last().unwrap().clone();
            l.spawn(&parent, Leaf).name("first").finish().unwrap();
            let next = l
                .spawn(&parent, Supervisor)
                .name(format!("s{level}"))
                .supervisor(SupervisorConfig::default())
                .finish()
                .unwrap();
            supervisors.push(next);
        }
        run(&mut l, t0);
        assert_eq!(l.state_of(&root), Some(ActorState::Operational));
        assert_eq!(l.stats().actors, 2 * DEPTH - 1);

        let second: Vec<Address> = supervisors
            .iter()
            .map(|s| l.spawn(s, Leaf).name("second").finish().unwrap())
            .collect();
        run(&mut l, t0);
        for leaf in &second {
            assert_eq!(l.state_of(leaf), Some(ActorState::Operational));
        }
        assert_eq!(l.stats().actors, 3 * DEPTH - 1);

        l.shutdown(&root).unwrap();
        run(&mut l, t0);
        assert!(l.is_finished());
        assert!(l.exit_reason().is_some_and(Error::is_normal));
        let s = l.stats();
        assert_eq!((s.actors, s.addresses, s.subscriptions), (0, 0, 0));
    });
}

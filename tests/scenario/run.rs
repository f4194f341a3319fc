//! Running a scenario to its end: every locality on one thread with a manual
//! clock (deterministic: a seed replays exactly), or each on a thread of its
//! own as a `System` on the real clock, bounded by a watchdog and a deadline.

use super::node::{Env, Ev, Event, Node, configure};
use super::{OnViolation, Scenario};
use commutator::{Actor, Context, Error, Locality, LocalityHandle, Stats, System, ViolationAction};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How one locality ended.
#[derive(Clone, Debug)]
pub struct LocalityEnd {
    pub name: String,
    pub stats: Stats,
    pub finished: bool,
}

/// Everything the invariants are checked on.
pub struct Outcome {
    pub env: Arc<Env>,
    pub events: Vec<Event>,
    /// How many events were logged before the localities were dropped.
    pub before_drop: usize,
    pub localities: Vec<LocalityEnd>,
    /// L0's `exit_reason()`.
    pub exit: Option<Error>,
    /// The driver's own complaint: stuck, too long, hung.
    pub stuck: Option<String>,
}

/// A manual clock may run this far before the run counts as endless.
const HORIZON: Duration = Duration::from_secs(3600);
/// Dispatch rounds before the run counts as endless.
const MAX_ROUNDS: usize = 200_000;

fn violation_handler(env: &Arc<Env>, l: &mut Locality) {
    let env = env.clone();
    let action = match env.scenario.on_violation {
        OnViolation::Stop => ViolationAction::Stop,
        OnViolation::Continue => ViolationAction::Continue,
    };
    l.on_contract_violation(move |error| {
        env.log(
            None,
            Ev::Contract {
                error: error.clone(),
            },
        );
        action
    });
}

/// Runs the scenario with every locality on this thread, on a manual clock
/// that jumps from one timer deadline to the next.
pub fn run_manual(scenario: &Scenario) -> Outcome {
    super::quiet_injected_panics();
    let t0 = Instant::now();
    let env = Env::new(scenario.clone(), Duration::from_millis(1), true, t0);
    let mut ls: Vec<Locality> = (0..scenario.localities)
        .map(|i| Locality::named(format!("L{i}")))
        .collect();
    for l in &mut ls {
        violation_handler(&env, l);
    }
    if scenario.localities > 1 {
        env.set_handles(ls.iter().map(|l| Some(l.handle())).collect());
    }
    let root = Node::new(env.clone(), 0, None);
    configure(ls[0].spawn_root(root), &scenario.nodes[0], &env)
        .finish()
        .expect("a fresh locality accepts the root");

    let mut stuck = None;
    let mut now = t0;
    let mut rounds = 0;
    // Every locality dispatches once at each new time (to see its due timers).
    let mut first = true;
    'run: loop {
        loop {
            let mut busy = false;
            for l in &mut ls {
                if first || l.has_pending() {
                    l.run_until_idle(now);
                    busy = true;
                }
            }
            first = false;
            rounds += 1;
            if rounds > MAX_ROUNDS {
                stuck = Some(format!("still busy after {MAX_ROUNDS} dispatch rounds"));
                break 'run;
            }
            if !busy {
                break;
            }
        }
        if ls.iter().all(Locality::is_finished) {
            break;
        }
        let next = ls
            .iter()
            .filter(|l| !l.is_finished())
            .filter_map(Locality::next_deadline)
            .min();
        match next {
            None => {
                let states: Vec<String> = ls
                    .iter()
                    .map(|l| format!("{}: finished={} {:?}", l.name(), l.is_finished(), l.stats()))
                    .collect();
                stuck = Some(format!(
                    "stuck at {}ms: nothing to do and no timer pending, yet not finished\n  {}",
                    env.since(now),
                    states.join("\n  ")
                ));
                break;
            }
            Some(t) if t.duration_since(t0) > HORIZON => {
                stuck = Some(format!("still running after {HORIZON:?} of manual time"));
                break;
            }
            Some(t) => {
                now = now.max(t);
                first = true;
            }
        }
    }
    let localities = ls
        .iter()
        .map(|l| LocalityEnd {
            name: l.name().to_string(),
            stats: l.stats(),
            finished: l.is_finished(),
        })
        .collect();
    let exit = ls[0].exit_reason().cloned();
    let before_drop = env.events().len();
    drop(ls);
    Outcome {
        events: env.events(),
        env,
        before_drop,
        localities,
        exit,
        stuck,
    }
}

/// Fails (and so ends the tree, escalating) if the run is not over by then.
struct Watchdog(Duration);

impl Actor for Watchdog {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(self.0, |_, ctx, _| {
            ctx.fail(Error::failure("watchdog: the run is stuck"))
        });
    }
}

/// Runs the scenario with each locality a `System` on a thread of its own,
/// on the real clock (`scale` per scenario millisecond). The root has a
/// watchdog child that fails after `watchdog`; the run is given up (and
/// reported stuck) after `deadline`.
pub fn run_threads(
    scenario: &Scenario,
    scale: Duration,
    watchdog: Duration,
    deadline: Duration,
) -> Outcome {
    super::quiet_injected_panics();
    let env = Env::new(scenario.clone(), scale, false, Instant::now());
    let k = scenario.localities;
    let (handle_tx, handle_rx) = mpsc::channel::<(usize, LocalityHandle)>();
    let (end_tx, end_rx) = mpsc::channel::<(usize, LocalityEnd, Option<Error>)>();
    let (root_tx, root_rx) = mpsc::channel::<()>();
    let mut root_rx = Some(root_rx);
    let mut threads = Vec::new();
    for i in 0..k {
        let (env, handle_tx, end_tx) = (env.clone(), handle_tx.clone(), end_tx.clone());
        let root_rx = if i == 0 { root_rx.take() } else { None };
        let thread = thread::Builder::new()
            .name(format!("L{i}"))
            .spawn(move || {
                let mut system = System::named(format!("L{i}")).expect("a system");
                violation_handler(&env, system.locality());
                if k > 1 {
                    let _ = handle_tx.send((i, system.handle()));
                }
                drop(handle_tx);
                if let Some(root_rx) = root_rx {
                    root_rx.recv().expect("the test has the handles");
                    let root = Node::new(env.clone(), 0, None);
                    let root = configure(system.spawn_root(root), &env.scenario.nodes[0], &env)
                        .finish()
                        .expect("a fresh system accepts the root");
                    system
                        .spawn(&root, Watchdog(watchdog))
                        .name("watchdog")
                        .escalate_failure()
                        .finish()
                        .expect("the root takes a watchdog");
                }
                let _ = system.run();
                let end = LocalityEnd {
                    name: format!("L{i}"),
                    stats: system.stats(),
                    finished: system.locality().is_finished(),
                };
                let exit = system.locality().exit_reason().cloned();
                drop(system);
                let _ = end_tx.send((i, end, exit));
            })
            .expect("a thread");
        threads.push(thread);
    }
    drop((handle_tx, end_tx));
    let until = Instant::now() + deadline;
    let mut handles: Vec<Option<LocalityHandle>> = (0..k).map(|_| None).collect();
    let mut stuck = None;
    if k > 1 {
        for _ in 0..k {
            match handle_rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok((i, h)) => handles[i] = Some(h),
                Err(_) => stuck = Some("a locality did not start".to_string()),
            }
        }
    }
    env.set_handles(handles);
    let _ = root_tx.send(());
    let mut ends: Vec<Option<LocalityEnd>> = (0..k).map(|_| None).collect();
    let mut exit = None;
    for _ in 0..k {
        match end_rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok((i, end, e)) => {
                if i == 0 {
                    exit = e;
                }
                ends[i] = Some(end);
            }
            Err(_) => {
                let missing: Vec<String> = ends
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.is_none())
                    .map(|(i, _)| format!("L{i}"))
                    .collect();
                stuck = Some(format!(
                    "hung: {} not finished after {deadline:?}",
                    missing.join(", ")
                ));
                break;
            }
        }
    }
    if stuck.is_none() {
        for t in threads {
            let _ = t.join();
        }
    }
    let localities = ends
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            e.unwrap_or(LocalityEnd {
                name: format!("L{i}"),
                stats: Stats::default(),
                finished: false,
            })
        })
        .collect();
    let events = env.events();
    Outcome {
        before_drop: events.len(),
        events,
        env,
        localities,
        exit,
        stuck,
    }
}

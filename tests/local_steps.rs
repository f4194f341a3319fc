//! Lifecycle steps between a leaf and its supervisor on the same locality
//! (issue 13, "Spawning"): a leaf under an operational supervisor starts in
//! the dispatch step of its init, and a supervisor's leaves shut down in the
//! step of its own shutdown request, by direct calls instead of framework
//! messages, without changing what anyone sees: hook order, messages queued
//! before, a leaf's last message to its supervisor, and the inspection
//! lines at level 2.

mod common;

use common::{Clock, Log, short};
use commutator::{Actor, ActorState, Address, Context, Locality, SupervisorConfig};

/// Logs its hooks as `name#n hook [STATE]`, and every `Ping` and `LastWord`
/// it hears; with `last_word`, sends one to its supervisor in
/// `shutdown_finish`.
#[derive(Clone)]
struct Probe {
    log: Log,
    last_word: bool,
}

/// Heard by a `Probe`.
struct Ping;

/// What a `Probe` with `last_word` sends its supervisor as it finishes.
struct LastWord;

impl Probe {
    fn new(log: &Log) -> Probe {
        Probe {
            log: log.clone(),
            last_word: false,
        }
    }

    fn trace(&self, ctx: &Context<'_, Self>, what: &str) {
        self.log
            .push(format!("{} {what} [{}]", short(ctx.address()), ctx.state()));
    }
}

impl Actor for Probe {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "init_start");
        ctx.subscribe(|me: &mut Self, _: &Ping, ctx: &mut Context<'_, Self>| me.trace(ctx, "ping"));
        ctx.subscribe(|me: &mut Self, _: &LastWord, ctx: &mut Context<'_, Self>| {
            me.trace(ctx, "last word")
        });
    }
    fn init_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "init_finish");
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "on_start");
    }
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "shutdown_start");
    }
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "shutdown_finish");
        if self.last_word
            && let Some(supervisor) = ctx.supervisor().cloned()
        {
            ctx.send(&supervisor, LastWord);
        }
    }
}

/// An operational root `root#1` (a `Probe`) on `L0`.
fn operational_root(clock: &Clock, log: &Log) -> (Locality, Address) {
    let mut l = Locality::named("L0");
    let address = l
        .spawn_root(Probe::new(log))
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    log.take();
    (l, address)
}

#[test]
fn a_leaf_under_an_operational_supervisor_starts_in_the_dispatch_step_of_its_init() {
    let (clock, log) = (Clock::new(), Log::new());
    let (mut l, root) = operational_root(&clock, &log);
    let a = l.spawn(&root, Probe::new(&log)).name("a").finish().unwrap();
    let b = l.spawn(&root, Probe::new(&log)).name("b").finish().unwrap();
    l.set_budget(1);

    assert_eq!(l.dispatch(clock.at(0)), 1, "one step: a's Init");
    assert_eq!(l.state_of(&a), Some(ActorState::Operational));
    assert_eq!(l.dispatch(clock.at(0)), 1, "one step: b's Init");
    assert_eq!(l.state_of(&b), Some(ActorState::Operational));
    assert!(!l.has_pending(), "no InitConfirm, no Start left");
    assert_eq!(
        log.lines(),
        [
            "a#2 init_start [INITIALIZING]",
            "a#2 init_finish [INITIALIZED]",
            "a#2 on_start [OPERATIONAL]",
            "b#3 init_start [INITIALIZING]",
            "b#3 init_finish [INITIALIZED]",
            "b#3 on_start [OPERATIONAL]",
        ]
    );
}

#[test]
fn a_supervisor_shuts_its_leaves_down_in_the_dispatch_step_of_its_own_request() {
    let (clock, log) = (Clock::new(), Log::new());
    let (mut l, root) = operational_root(&clock, &log);
    for name in ["a", "b"] {
        l.spawn(&root, Probe::new(&log))
            .name(name)
            .finish()
            .unwrap();
    }
    l.run_until_idle(clock.at(0));
    log.take();
    l.shutdown(&root).unwrap();
    l.set_budget(1);

    assert_eq!(l.dispatch(clock.at(0)), 1, "one step: the root's request");
    assert!(l.is_finished(), "no ShutdownRequest, no ChildDown left");
    assert_eq!(
        log.lines(),
        [
            "root#1 shutdown_start [SHUTTING_DOWN]",
            "a#2 shutdown_start [SHUTTING_DOWN]",
            "a#2 shutdown_finish [SHUT_DOWN]",
            "b#3 shutdown_start [SHUTTING_DOWN]",
            "b#3 shutdown_finish [SHUT_DOWN]",
            "root#1 shutdown_finish [SHUT_DOWN]",
        ]
    );
}

/// A root that spawns two `Probe` leaves and pings them as it starts to
/// shut down.
struct Pinger {
    log: Log,
    leaves: Vec<Address>,
}

impl Actor for Pinger {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        for name in ["a", "b"] {
            let leaf = ctx.spawn(Probe::new(&self.log)).name(name).finish();
            self.leaves.push(leaf.expect("a supervisor spawns"));
        }
    }
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log.push("root#1 shutdown_start");
        for leaf in &self.leaves {
            ctx.send(leaf, Ping);
        }
    }
}

#[test]
fn a_message_queued_for_a_leaf_reaches_it_before_it_is_asked_to_shut_down() {
    // The pings wait in the queue when the root asks its leaves to go: so
    // it asks them by messages, behind the pings.
    let (clock, log) = (Clock::new(), Log::new());
    let mut l = Locality::named("L0");
    let pinger = Pinger {
        log: log.clone(),
        leaves: Vec::new(),
    };
    let root = l
        .spawn_root(pinger)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    log.take();
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(0));

    assert!(l.is_finished());
    assert_eq!(
        log.lines(),
        [
            "root#1 shutdown_start",
            "a#2 ping [OPERATIONAL]",
            "b#3 ping [OPERATIONAL]",
            "a#2 shutdown_start [SHUTTING_DOWN]",
            "a#2 shutdown_finish [SHUT_DOWN]",
            "b#3 shutdown_start [SHUTTING_DOWN]",
            "b#3 shutdown_finish [SHUT_DOWN]",
        ]
    );
}

#[test]
fn a_leafs_last_message_to_its_supervisor_arrives_before_the_supervisor_finishes() {
    let (clock, log) = (Clock::new(), Log::new());
    let (mut l, root) = operational_root(&clock, &log);
    let leaf = Probe {
        last_word: true,
        ..Probe::new(&log)
    };
    l.spawn(&root, leaf).name("leaf").finish().unwrap();
    l.run_until_idle(clock.at(0));
    log.take();
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(0));

    assert!(l.is_finished());
    assert_eq!(
        log.lines(),
        [
            "root#1 shutdown_start [SHUTTING_DOWN]",
            "leaf#2 shutdown_start [SHUTTING_DOWN]",
            "leaf#2 shutdown_finish [SHUT_DOWN]",
            "root#1 last word [SHUTTING_DOWN]",
            "root#1 shutdown_finish [SHUT_DOWN]",
        ]
    );
}

#[test]
fn level_two_inspection_shows_each_direct_step_as_the_message_it_stands_for() {
    let (clock, log) = (Clock::new(), Log::new());
    let (mut l, root) = operational_root(&clock, &log);
    let lines = Log::new();
    let sink = lines.clone();
    l.inspect_with(2, move |line| sink.push(line));
    l.spawn(&root, Probe::new(&log))
        .name("leaf")
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    l.shutdown(&root).unwrap();
    l.run_until_idle(clock.at(0));

    assert!(l.is_finished());
    assert_eq!(
        lines.lines(),
        [
            "L0: [Init] -> L0/leaf#2",
            "L0: [InitConfirm] L0/leaf#2 -> L0/root#1",
            "L0: [Start] -> L0/leaf#2",
            "L0: [ShutdownRequest(normal shutdown)] -> L0/root#1",
            "L0: [ShutdownRequest(supervisor shutdown)] -> L0/leaf#2",
            "L0: [ChildDown(supervisor shutdown)] L0/leaf#2 -> L0/root#1",
        ]
    );
}

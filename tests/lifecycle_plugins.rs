//! The actor lifecycle: plugins vote on init and on shutdown, in order, and
//! a pending or failed vote holds or ends the actor.

mod common;

use common::lifecycle::Nudge;
use common::{Clock, Log};
use commutator::{ActorState, Context, Error, Plugin, Vote};

/// A user plugin that votes as its shared switch says, and logs every vote.
#[derive(Clone)]
struct Gate {
    name: &'static str,
    open: std::rc::Rc<std::cell::Cell<bool>>,
    fail: bool,
    log: Log,
}

impl Plugin<common::Scripted> for Gate {
    fn name(&self) -> &'static str {
        self.name
    }
    fn init_vote(
        &mut self,
        _: &mut common::Scripted,
        _: &mut Context<'_, common::Scripted>,
    ) -> Vote {
        self.log.push(format!("{} init_vote", self.name));
        match (self.open.get(), self.fail) {
            (true, true) => Vote::Failed(Error::failure(self.name)),
            (true, false) => Vote::Ready,
            (false, _) => Vote::Pending,
        }
    }
    fn shutdown_vote(
        &mut self,
        _: &mut common::Scripted,
        _: &mut Context<'_, common::Scripted>,
    ) -> Vote {
        self.log.push(format!("{} shutdown_vote", self.name));
        if self.open.get() {
            Vote::Ready
        } else {
            Vote::Pending
        }
    }
}

fn gated(log: &Log) -> common::Scripted {
    common::Scripted::new("gated", log).on_init(|_, ctx| {
        ctx.subscribe(
            |_: &mut common::Scripted, _: &Nudge, ctx: &mut Context<'_, common::Scripted>| {
                ctx.continue_lifecycle();
            },
        );
    })
}

fn switch(on: bool) -> std::rc::Rc<std::cell::Cell<bool>> {
    std::rc::Rc::new(std::cell::Cell::new(on))
}

#[test]
fn plugins_vote_on_init_in_order_and_pending_holds_the_actor() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = common::root_on_l0();
    let (a, b) = (switch(false), switch(false));
    let gate = |name, open: &std::rc::Rc<std::cell::Cell<bool>>| Gate {
        name,
        open: open.clone(),
        fail: false,
        log: log.clone(),
    };
    let actor = l
        .spawn(&root, gated(&log))
        .plugin(gate("first", &a))
        .plugin(gate("second", &b))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(l.state_of(&actor), Some(ActorState::Initializing));
    assert_eq!(
        log.take(),
        ["gated init_start", "first init_vote"],
        "the second is not polled yet"
    );
    b.set(true);
    l.send(&actor, Nudge).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        log.take(),
        ["first init_vote"],
        "still the first that holds"
    );
    a.set(true);
    l.send(&actor, Nudge).unwrap();
    l.run_until_idle(clock.at(2));
    assert_eq!(
        log.take()[..3],
        ["first init_vote", "second init_vote", "gated init_finish"]
    );
    assert_eq!(l.state_of(&actor), Some(ActorState::Operational));
}

#[test]
fn a_failed_vote_shuts_the_actor_down_with_the_error_as_its_reason() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = common::root_on_l0();
    let gate = Gate {
        name: "broken",
        open: switch(true),
        fail: true,
        log: log.clone(),
    };
    l.spawn(&root, gated(&log))
        .name("gated")
        .plugin(gate)
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert!(l.is_finished());
    assert_eq!(
        format!("{:#}", l.exit_reason().unwrap()),
        "child init failed (L0/root#1)\n  <- init failed (L0/gated#2)\n  <- actor failure (broken)"
    );
}

#[test]
fn plugins_vote_on_shutdown_in_reverse_order() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut l, root) = common::root_on_l0();
    let (a, b) = (switch(true), switch(true));
    let gate = |name, open: &std::rc::Rc<std::cell::Cell<bool>>| Gate {
        name,
        open: open.clone(),
        fail: false,
        log: log.clone(),
    };
    let actor = l
        .spawn(&root, gated(&log))
        .plugin(gate("first", &a))
        .plugin(gate("second", &b))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    a.set(false);
    log.take();
    l.shutdown(&actor).unwrap();
    l.run_until_idle(clock.at(1));
    assert_eq!(
        log.take(),
        [
            "gated shutdown_start",
            "second shutdown_vote",
            "first shutdown_vote"
        ]
    );
    assert_eq!(l.state_of(&actor), Some(ActorState::ShuttingDown));
    a.set(true);
    l.send(&actor, Nudge).unwrap(); // subscriptions live until shutdown finishes
    l.run_until_idle(clock.at(2));
    assert_eq!(
        log.take(),
        ["first shutdown_vote", "gated shutdown_finish"],
        "the second is not polled again"
    );
    assert_eq!(l.state_of(&actor), None);
}

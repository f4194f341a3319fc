//! A lifecycle hook an actor type leaves to the trait's default is found
//! on its first call and not called again for that type (issue 13, w4):
//! what runs with the hook (user plugins, names to register) and every
//! hook the type overrides still run, for every instance, in order.

use commutator::{Actor, Context, Locality, Plugin, Supervisor, SupervisorConfig, Vote};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

type Log = Rc<RefCell<Vec<String>>>;

fn run(locality: &mut Locality) {
    let now: Instant = locality.now();
    locality.run_until_idle(now);
}

fn root(locality: &mut Locality, config: SupervisorConfig) -> commutator::Address {
    locality
        .spawn_root(Supervisor)
        .supervisor(config)
        .finish()
        .expect("root")
}

/// Overrides no hook.
struct Plain;
impl Actor for Plain {}

/// A plugin that logs its hooks.
#[derive(Clone)]
struct Logged(Log);
impl Plugin<Plain> for Logged {
    fn name(&self) -> &'static str {
        "logged"
    }
    fn init_start(&mut self, _: &mut Plain, _: &mut Context<'_, Plain>) {
        self.0.borrow_mut().push("init_start".into());
    }
    fn init_vote(&mut self, _: &mut Plain, _: &mut Context<'_, Plain>) -> Vote {
        self.0.borrow_mut().push("init_vote".into());
        Vote::Ready
    }
    fn shutdown_start(&mut self, _: &mut Plain, _: &mut Context<'_, Plain>) {
        self.0.borrow_mut().push("shutdown_start".into());
    }
}

#[test]
fn the_plugins_of_an_actor_whose_hooks_are_defaults_still_run() {
    let mut locality = Locality::new();
    let root = root(&mut locality, SupervisorConfig::default().with_registry());
    // The first instances teach the locality that `Plain`'s hooks are defaults.
    for _ in 0..3 {
        locality.spawn(&root, Plain).finish().expect("plain");
    }
    run(&mut locality);
    let log = Log::default();
    let with_plugin = locality
        .spawn(&root, Plain)
        .plugin(Logged(log.clone()))
        .register_as("plain")
        .finish()
        .expect("with a plugin");
    run(&mut locality);
    assert_eq!(*log.borrow(), ["init_start", "init_vote"]);
    locality.shutdown(&with_plugin).expect("shutdown");
    run(&mut locality);
    assert_eq!(*log.borrow(), ["init_start", "init_vote", "shutdown_start"]);
}

/// Overrides `init_start` and `shutdown_finish`; its `init_start` calls
/// its own `init_finish`, which is the trait's default.
struct Counting(Log);
impl Actor for Counting {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.0.borrow_mut().push("init_start".into());
        self.init_finish(ctx); // the default: it does nothing
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.0.borrow_mut().push("shutdown_finish".into());
    }
}

#[test]
fn an_overridden_hook_runs_for_every_instance_even_if_it_calls_a_default_one() {
    let mut locality = Locality::new();
    let root = root(&mut locality, SupervisorConfig::default());
    let log = Log::default();
    let mut children = Vec::new();
    for _ in 0..3 {
        let child = locality
            .spawn(&root, Counting(log.clone()))
            .finish()
            .expect("child");
        children.push(child);
        run(&mut locality);
    }
    assert_eq!(*log.borrow(), ["init_start"; 3]);
    for child in &children {
        locality.shutdown(child).expect("shutdown");
        run(&mut locality);
    }
    let expected: Vec<&str> = [["init_start"; 3], ["shutdown_finish"; 3]].concat();
    assert_eq!(*log.borrow(), expected);
}

/// Overrides `on_start` only: each of many instances starts, in spawn order.
struct Starter(Log, usize);
impl Actor for Starter {
    fn on_start(&mut self, _: &mut Context<'_, Self>) {
        self.0.borrow_mut().push(self.1.to_string());
    }
}

#[test]
fn every_instance_of_a_type_with_some_default_hooks_starts_in_order() {
    let mut locality = Locality::new();
    let root = root(&mut locality, SupervisorConfig::default());
    let log = Log::default();
    for i in 0..100 {
        locality
            .spawn(&root, Starter(log.clone(), i))
            .finish()
            .expect("child");
    }
    run(&mut locality);
    let expected: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    assert_eq!(*log.borrow(), expected);
    locality.shutdown(&root).expect("shutdown");
    run(&mut locality);
    assert!(locality.is_finished());
}

/// Overrides `on_start` and `shutdown_finish`; logs both.
struct Late(Log, usize);
impl Actor for Late {
    fn on_start(&mut self, _: &mut Context<'_, Self>) {
        self.0.borrow_mut().push(format!("start {}", self.1));
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.0.borrow_mut().push(format!("finish {}", self.1));
    }
}

#[test]
fn an_instance_made_after_its_types_hooks_are_known_runs_its_overridden_ones() {
    // The first instance's life teaches the locality which hooks `Late`
    // overrides; a later instance knows that from its spawn, and still
    // runs both overridden hooks (skipping only the defaults).
    let mut locality = Locality::new();
    let root = root(&mut locality, SupervisorConfig::default());
    let log = Log::default();
    for i in 0..2 {
        let child = locality
            .spawn(&root, Late(log.clone(), i))
            .finish()
            .expect("child");
        run(&mut locality);
        locality.shutdown(&child).expect("shutdown");
        run(&mut locality);
    }
    assert_eq!(
        *log.borrow(),
        ["start 0", "finish 0", "start 1", "finish 1"]
    );
    locality.shutdown(&root).expect("shutdown");
    run(&mut locality);
    assert!(locality.is_finished());
}

#[test]
fn instances_made_before_their_types_hooks_are_known_run_their_overridden_ones() {
    // All made before any runs a hook: each learns what its type's hooks
    // are from the first one's life (a record the cells share), and still
    // runs both overridden hooks, in order.
    let mut locality = Locality::new();
    let root = root(&mut locality, SupervisorConfig::default());
    let log = Log::default();
    let children: Vec<_> = (0..3)
        .map(|i| {
            locality
                .spawn(&root, Late(log.clone(), i))
                .finish()
                .expect("child")
        })
        .collect();
    run(&mut locality);
    for child in &children {
        locality.shutdown(child).expect("shutdown");
        run(&mut locality);
    }
    assert_eq!(
        *log.borrow(),
        [
            "start 0", "start 1", "start 2", "finish 0", "finish 1", "finish 2"
        ]
    );
    locality.shutdown(&root).expect("shutdown");
    run(&mut locality);
    assert!(locality.is_finished());
}

//! A plain actor (its type's name, no identity) costs one allocation when
//! spawned, its cell: its address allocates nothing of its own (issue 13;
//! it was two, the address behind an `Arc`). Counted by a global allocator,
//! on this test's thread only.

mod counting;

use commutator::prelude::*;
use counting::allocations;
use std::time::Instant;

#[global_allocator]
static COUNTING: counting::Counting = counting::Counting;

struct Plain;
impl Actor for Plain {}

/// A generic actor: its name is made once per type, not per spawn.
struct Generic<T>(Option<T>);
impl<T: 'static> Actor for Generic<T> {}

/// Allocations per actor for `n` more spawns (each run through its init
/// and start) of what `spawn` makes, after `n` of them warmed the tables.
fn per_spawn(n: u64, spawn: impl FnMut(&mut System, &Address)) -> f64 {
    per_spawn_under(SupervisorConfig::default(), n, spawn)
}

/// As `per_spawn`, under a root supervisor made with `config`.
fn per_spawn_under(
    config: SupervisorConfig,
    n: u64,
    mut spawn: impl FnMut(&mut System, &Address),
) -> f64 {
    let mut system = System::named("counted").expect("system");
    let root = system
        .spawn_root(Plain)
        .supervisor(config)
        .finish()
        .expect("root");
    for _ in 0..n {
        spawn(&mut system, &root);
    }
    system.locality().run_until_idle(Instant::now());
    let before = allocations();
    for _ in 0..n {
        spawn(&mut system, &root);
    }
    system.locality().run_until_idle(Instant::now());
    (allocations() - before) as f64 / n as f64
}

#[test]
fn a_plain_spawn_allocates_once() {
    let plain = per_spawn(2_000, |system, root| {
        system.spawn(root, Plain).finish().expect("spawn");
    });
    // One for the actor's cell, and the tables' amortized growth.
    assert!(plain < 1.1, "{plain} allocations per plain actor");
    let generic = per_spawn(2_000, |system, root| {
        system
            .spawn(root, Generic::<u8>(None))
            .finish()
            .expect("spawn");
    });
    assert!(generic < 1.1, "{generic} allocations per generic actor");
    let named = per_spawn(2_000, |system, root| {
        system
            .spawn(root, Plain)
            .name("literal")
            .finish()
            .expect("spawn");
    });
    assert!(
        named < 1.1,
        "{named} allocations per actor named by a literal"
    );
}

#[test]
fn a_spawn_under_a_registry_shares_it() {
    // The registry a child inherits is its supervisor's, shared: no
    // allocation of its own.
    let config = SupervisorConfig::default().with_registry();
    let under = per_spawn_under(config, 2_000, |system, root| {
        system.spawn(root, Plain).finish().expect("spawn");
    });
    assert!(
        under < 1.1,
        "{under} allocations per actor under a registry"
    );
}

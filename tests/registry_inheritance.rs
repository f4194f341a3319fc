//! Which registry an actor uses (issue 13, w4, session 8: a cell keeps no
//! copy of the registry it inherits, it is found from its supervisor when
//! asked): the same answers as when every actor kept one from its spawn.
//! An actor uses the registry given on its builder; else the one it made
//! as a supervisor `with_registry`; else its supervisor's registry for its
//! descendants, else its supervisor's own, and so on up the tree. The
//! registry child of a supervisor made `with_registry` uses what the
//! supervisor used before it (it is made first).

mod common;

use common::{Clock, Idle};
use commutator::Builder;
use commutator::prelude::*;

/// A supervisor that does nothing.
struct Sup;
impl Actor for Sup {}

fn supervisor<'l>(l: &'l mut Locality, parent: &Address) -> Builder<'l, Sup> {
    l.spawn(parent, Sup).supervisor(SupervisorConfig::default())
}

/// A locality whose root supervisor made a registry (`with_registry`).
fn root_with_registry() -> (Locality, Address) {
    let mut l = Locality::named("L0");
    let root = l
        .spawn_root(Sup)
        .name("root")
        .supervisor(SupervisorConfig::default().with_registry())
        .finish()
        .unwrap();
    (l, root)
}

#[test]
fn an_actor_uses_the_registry_it_inherits_given_or_made_as_before() {
    let clock = Clock::new();
    let (mut l, root) = root_with_registry();
    let outer = l.registry_of(&root).expect("made with_registry");
    // Inherited up the tree, through a supervisor without a registry.
    let middle = supervisor(&mut l, &root).name("middle").finish().unwrap();
    let leaf = l.spawn(&middle, Idle).finish().unwrap();
    let named = l.spawn(&middle, Idle).name("named").finish().unwrap();
    // A supervisor with a registry of its own for its descendants.
    let inner_sup = supervisor(&mut l, &middle)
        .name("inner")
        .supervisor(SupervisorConfig::default().with_registry())
        .finish()
        .unwrap();
    let inner = l.registry_of(&inner_sup).expect("made with_registry");
    let under_inner = l.spawn(&inner_sup, Idle).finish().unwrap();
    // Given on the builder: for the actor, and inherited by its children.
    let given_sup = supervisor(&mut l, &inner_sup)
        .name("given")
        .registry(&outer)
        .finish()
        .unwrap();
    let under_given = l.spawn(&given_sup, Idle).finish().unwrap();
    // Given and made: it uses the one given, its children the one it made.
    let both = supervisor(&mut l, &root)
        .name("both")
        .registry(&inner)
        .supervisor(SupervisorConfig::default().with_registry())
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    let made_by_both = l
        .spawn(&both, Idle)
        .finish()
        .map(|child| l.registry_of(&child).expect("inherited"))
        .unwrap();
    assert_ne!(made_by_both, inner);
    assert_ne!(made_by_both, outer);
    l.run_until_idle(clock.at(0));

    let of = |a: &Address| l.registry_of(a);
    assert_eq!(of(&middle).as_ref(), Some(&outer));
    assert_eq!(of(&leaf).as_ref(), Some(&outer));
    assert_eq!(of(&named).as_ref(), Some(&outer));
    assert_eq!(of(&under_inner).as_ref(), Some(&inner));
    // The inner registry itself (made before its supervisor had one) uses
    // what the supervisor used then: the outer one.
    assert_eq!(of(&inner).as_ref(), Some(&outer));
    assert_eq!(of(&given_sup).as_ref(), Some(&outer));
    assert_eq!(of(&under_given).as_ref(), Some(&outer));
    // `registry_of` a supervisor names the one it keeps for its children.
    assert_eq!(of(&both).as_ref(), Some(&made_by_both));
    for a in [&leaf, &under_inner, &under_given, &middle] {
        assert_eq!(l.state_of(a), Some(ActorState::Operational), "{a}");
    }
}

/// Registers itself under a name, and says which registry it uses.
struct Named(&'static str, common::Slot<Option<Address>>);
impl Actor for Named {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.1.set(ctx.registry().cloned());
        ctx.register_name(self.0);
    }
}

/// Discovers a name; logs what it found.
struct Finder(&'static str, common::Log);
impl Actor for Finder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let (found, failed) = (self.1.clone(), self.1.clone());
        let name = self.0;
        ctx.discover(name)
            .on_error(move |_: &mut Self, error, _| {
                failed.push(format!("{name}: {:?}", error.code()))
            })
            .then(move |_: &mut Self, address, _| {
                found.push(format!("{name}: {}", common::short(address)))
            });
    }
}

#[test]
fn a_grandchild_registers_and_discovers_in_the_registry_it_inherits() {
    let clock = Clock::new();
    let (mut l, root) = root_with_registry();
    let registry = l.registry_of(&root).unwrap();
    let middle = supervisor(&mut l, &root).finish().unwrap();
    let seen = common::Slot::new();
    let named = l
        .spawn(&middle, Named("service", seen.clone()))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(seen.get(), Some(registry));
    let log = common::Log::new();
    l.spawn(&middle, Finder("service", log.clone()))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(
        log.take(),
        vec![format!("service: {}", common::short(&named))]
    );
    // Its name goes with it (deregistered from the registry it inherits).
    l.shutdown(&named).unwrap();
    l.run_until_idle(clock.at(0));
    l.spawn(&middle, Finder("service", log.clone()))
        .finish()
        .unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(log.take(), vec!["service: UnknownService"]);
}

/// An entity: says which registry it uses.
struct Member(common::Log);
impl Actor for Member {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let registry = ctx.registry().map(common::short);
        self.0
            .push(format!("{}: {registry:?}", common::short(ctx.address())));
    }
}

/// Routed to a member by its key.
struct Hi;

#[test]
fn an_entity_set_made_a_supervisor_at_its_init_passes_its_registry_on() {
    let clock = Clock::new();
    let log = common::Log::new();
    let (mut l, root) = root_with_registry();
    let registry = common::short(&l.registry_of(&root).unwrap());
    let members = log.clone();
    let set = commutator::EntitySet::new(move |_: &u32| Member(members.clone())).route::<Hi>();
    let set = l.spawn(&root, set).name("set").finish().unwrap();
    l.run_until_idle(clock.at(0));
    l.send(&set, commutator::Keyed::new(7u32, Hi)).unwrap();
    l.run_until_idle(clock.at(0));
    assert_eq!(
        l.registry_of(&set).map(|r| common::short(&r)),
        Some(registry.clone())
    );
    let lines = log.take();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(&format!(": Some({registry:?})")),
        "{lines:?}"
    );
}

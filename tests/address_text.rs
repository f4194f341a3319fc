//! An address reads the same whatever it is made of (issue 13, the address
//! without an allocation of its own): `locality/actor#n`, plus `:identity`,
//! for the type's name, a `&'static` name, an owned name and identities,
//! from other threads, and after the actor is gone.

use commutator::prelude::*;
use std::collections::HashSet;
use std::sync::mpsc;
use std::time::Duration;

struct Worker;
impl Actor for Worker {}

/// A generic actor: its default name is made, not borrowed.
struct Holder<T>(std::marker::PhantomData<T>);
impl<T: 'static> Actor for Holder<T> {}

/// Makes an identity labelled `label` at init and hands it out.
struct Owner {
    label: String,
    out: mpsc::Sender<Address>,
}
impl Actor for Owner {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let identity = ctx.create_address(self.label.clone()).expect("identity");
        self.out.send(identity).expect("test waits");
    }
}

#[test]
fn addresses_read_as_locality_actor_number_and_identity() {
    let mut system = System::named("app").expect("system");
    let root = system
        .spawn_root(Worker)
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("root");
    let plain = system.spawn(&root, Worker).finish().expect("plain");
    let literal = system
        .spawn(&root, Worker)
        .name("inbox")
        .finish()
        .expect("literal");
    let owned = system
        .spawn(&root, Worker)
        .name(format!("worker-{}", 7))
        .finish()
        .expect("owned");
    let generic = system
        .spawn(&root, Holder::<Vec<u8>>(std::marker::PhantomData))
        .finish()
        .expect("generic");
    let (tx, rx) = mpsc::channel();
    let owner = system
        .spawn(
            &root,
            Owner {
                label: "replies".into(),
                out: tx.clone(),
            },
        )
        .name("desk")
        .finish()
        .expect("owner");
    let plain_owner = system
        .spawn(
            &root,
            Owner {
                label: "side".into(),
                out: tx,
            },
        )
        .finish()
        .expect("plain owner");
    system.locality().run_until_idle(std::time::Instant::now());
    let identities: Vec<Address> = rx.try_iter().collect();

    assert_eq!(root.to_string(), "app/Worker#1");
    assert_eq!(plain.to_string(), "app/Worker#2");
    assert_eq!(literal.to_string(), "app/inbox#3");
    assert_eq!(owned.to_string(), "app/worker-7#4");
    assert_eq!(generic.to_string(), "app/Holder<Vec<u8>>#5");
    assert_eq!(owner.to_string(), "app/desk#6");
    assert_eq!(plain_owner.to_string(), "app/Owner#7");
    let texts: Vec<String> = identities.iter().map(ToString::to_string).collect();
    assert_eq!(texts, ["app/desk#6:replies", "app/Owner#7:side"]);
    assert_eq!(format!("{plain:?}"), "Address(app/Worker#2)");
    assert_eq!(plain.actor_name(), "Worker");
    assert_eq!(owned.actor_name(), "worker-7");
    assert_eq!(identities[1].actor_name(), "Owner");

    // Equal by place, not by name: clones are equal, distinct actors are not.
    let all = [
        &root,
        &plain,
        &literal,
        &owned,
        &generic,
        &owner,
        &plain_owner,
    ];
    // Clippy flags `Address` as a mutable key (its locality's shared part
    // has atomics), but `Hash` and `Eq` only read the locality and the key.
    #[allow(clippy::mutable_key_type)]
    let set: HashSet<Address> = all.iter().map(|a| (*a).clone()).collect();
    assert_eq!(set.len(), all.len());
    assert!(set.contains(&plain.clone()));
    assert_ne!(identities[1], plain_owner);

    // From another thread, the same text.
    let moved = (plain.clone(), identities[0].clone(), owned.clone());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(format!("{} {} {}", moved.0, moved.1, moved.2));
    });
    let there = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the thread answers");
    assert_eq!(there, "app/Worker#2 app/desk#6:replies app/worker-7#4");

    // After the actors are gone, and the locality with them, stale
    // addresses still read the same.
    system.shutdown(&root).expect("shutdown");
    system.locality().run_until_idle(std::time::Instant::now());
    assert_eq!(system.state_of(&plain), None);
    assert_eq!(plain.to_string(), "app/Worker#2");
    drop(system);
    assert_eq!(plain.to_string(), "app/Worker#2");
    assert_eq!(identities[0].to_string(), "app/desk#6:replies");
    assert_eq!(generic.to_string(), "app/Holder<Vec<u8>>#5");
}

#[test]
fn many_actors_with_owned_names_each_keep_their_own_also_after_others_are_gone() {
    // Owned names take labels made in batches: more actors than a batch,
    // names shorter and longer than a label's room, some actors gone
    // while new ones are made.
    let mut system = System::named("app").expect("system");
    let root = system
        .spawn_root(Worker)
        .supervisor(SupervisorConfig::default());
    let root = root.finish().expect("root");
    let name = |i: usize| match i % 3 {
        0 => format!("w{i}"),
        1 => format!("worker-with-a-name-longer-than-thirty-two-bytes-{i}"),
        _ => format!("devices/device-{i}"),
    };
    let spawn = |system: &mut System, i: usize| {
        let builder = system.spawn(&root, Worker).name(name(i));
        builder.finish().expect("spawn")
    };
    let first: Vec<Address> = (0..100).map(|i| spawn(&mut system, i)).collect();
    system.locality().run_until_idle(std::time::Instant::now());
    for done in first.iter().step_by(2) {
        system.shutdown(done).expect("shutdown");
    }
    system.locality().run_until_idle(std::time::Instant::now());
    let second: Vec<Address> = (100..200).map(|i| spawn(&mut system, i)).collect();
    system.locality().run_until_idle(std::time::Instant::now());
    for (i, address) in first.iter().chain(&second).enumerate() {
        assert_eq!(address.actor_name(), name(i));
        assert_eq!(address.to_string(), format!("app/{}#{}", name(i), i + 2));
    }
    for (i, address) in first.iter().enumerate() {
        let expected = (i % 2 == 1).then_some(ActorState::Operational);
        assert_eq!(system.state_of(address), expected, "{address}");
    }
    assert_eq!(system.state_of(&second[99]), Some(ActorState::Operational));
}

#[test]
fn an_address_stays_small() {
    // A pointer, a key and a packed name and number.
    assert!(std::mem::size_of::<Address>() <= 24);
    assert_eq!(
        std::mem::size_of::<Option<Address>>(),
        std::mem::size_of::<Address>()
    );
}

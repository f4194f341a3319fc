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
fn an_address_stays_small() {
    // A pointer, a key and a packed name and number.
    assert!(std::mem::size_of::<Address>() <= 24);
    assert_eq!(
        std::mem::size_of::<Option<Address>>(),
        std::mem::size_of::<Address>()
    );
}

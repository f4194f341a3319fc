//! The far address keys `spawn_on` reserves on the child's locality are
//! given back: when the child is not made (its factory panicked, its
//! locality closed first) and when its address goes; a reused index has a
//! new generation, so an old address never reaches the newer child.

use super::Locality;
use crate::routing::{FAR, is_far};
use crate::{Actor, Address, ErrorCode, Supervisor, SupervisorConfig};

struct Idle;
impl Actor for Idle {}

fn step(localities: &mut [&mut Locality]) {
    for _ in 0..10 {
        for l in localities.iter_mut() {
            let now = l.now();
            l.run_until_idle(now);
        }
    }
}

fn reserved(address: &Address) -> usize {
    address.locality().reserved_keys()
}

#[test]
fn a_reserved_key_is_given_back_when_the_child_is_not_made_or_goes() {
    let mut l0 = Locality::named("L0");
    let root = l0
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    step(&mut [&mut l0]); // operational: a failed child goes alone
    let mut l1 = Locality::named("L1");
    let h1 = l1.handle();
    let made = l0.spawn_on(&h1, &root, || Idle).finish().unwrap();
    let refused = l0
        .spawn_on(&h1, &root, || -> Idle { panic!("refused") })
        .finish()
        .unwrap();
    assert!(is_far(made.key()) && is_far(refused.key()));
    assert_eq!(reserved(&made), 2);
    step(&mut [&mut l0, &mut l1]);
    assert_eq!(reserved(&made), 1, "the refused spawn's key is back");
    assert!(l1.state_of(&made).is_some());
    assert!(l1.state_of(&refused).is_none());
    // Over and over: the same index, never a new one.
    for _ in 0..100 {
        let again = l0
            .spawn_on(&h1, &root, || -> Idle { panic!("refused") })
            .finish()
            .unwrap();
        assert_eq!(again.key().idx(), refused.key().idx());
        assert_ne!(again.key(), refused.key(), "a new generation");
        step(&mut [&mut l0, &mut l1]);
    }
    assert_eq!(reserved(&made), 1);
    assert_eq!(l1.stats().addresses, 1);
    // The child goes: its key is back; the next child reuses its index,
    // and the old address does not reach it.
    l0.shutdown(&root).unwrap();
    let root = l0
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    step(&mut [&mut l0, &mut l1]);
    assert_eq!(reserved(&made), 0);
    assert_eq!(l1.stats().addresses, 0);
    let next = l0.spawn_on(&h1, &root, || Idle).finish().unwrap();
    step(&mut [&mut l0, &mut l1]);
    assert_eq!(next.key().idx() - FAR, made.key().idx() - FAR);
    assert!(l1.state_of(&next).is_some());
    assert!(l1.state_of(&made).is_none(), "the old address stays gone");
    drop(h1);
}

#[test]
fn a_spawn_request_refused_by_a_closing_locality_gives_its_key_back() {
    let mut l0 = Locality::named("L0");
    let root = l0
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let l1 = Locality::named("L1");
    let h1 = l1.handle();
    let far = l0.spawn_on(&h1, &root, || Idle).finish().unwrap();
    assert_eq!(reserved(&far), 1);
    drop(h1);
    drop(l1); // the request is refused unopened
    assert_eq!(reserved(&far), 0);
    // And a finished locality reserves nothing.
    let h1 = LocalityHandleOf(&far).get();
    let error = l0.spawn_on(&h1, &root, || Idle).finish().unwrap_err();
    assert_eq!(error.code(), ErrorCode::LocalityFinished);
    assert_eq!(reserved(&far), 0);
}

/// A handle on the locality of an address (its locality is gone: only for
/// a spawn that must be refused).
struct LocalityHandleOf<'a>(&'a Address);
impl LocalityHandleOf<'_> {
    fn get(&self) -> super::LocalityHandle {
        super::LocalityHandle::new(self.0.locality().clone())
    }
}

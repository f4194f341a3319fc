//! Compile-time guarantees of the public types.

use commutator::{Address, Context, Locality, LocalityHandle, Supervisor, System};
use std::fmt::{Debug, Display};
use std::hash::Hash;

fn assert_bounds<T: Send + Sync + Clone + Eq + Hash + Debug + Display + 'static>() {}

/// `<T as NotSend<_>>::check` resolves only if `T` is `!Send`: for a `Send`
/// type both impls apply and the call is ambiguous, which fails to compile.
trait NotSend<Marker> {
    fn check() {}
}

impl<T: ?Sized> NotSend<()> for T {}

struct IsSend;

impl<T: ?Sized + Send> NotSend<IsSend> for T {}

// Fail to compile if one of these ever becomes `Send`: they stay on their thread.
const _: fn() = <Locality as NotSend<_>>::check;
const _: fn() = <System as NotSend<_>>::check;
const _: fn() = <Context<'static, Supervisor> as NotSend<_>>::check;

fn assert_send_sync<T: Send + Sync + Clone + Debug + 'static>() {}

#[test]
fn an_address_is_send_sync_clone_eq_hash_debug_and_display() {
    assert_bounds::<Address>();
}

#[test]
fn a_locality_handle_is_send_and_sync() {
    assert_send_sync::<LocalityHandle>();
}

#[test]
fn a_pending_child_and_watch_events_cross_threads() {
    assert_send_sync::<commutator::PendingChild>();
    assert_send_sync::<commutator::Watched>();
    assert_send_sync::<commutator::WatchId>();
}

#[test]
fn a_locality_is_not_send() {
    // Checked at compile time by the `const` above; this names it in the report.
    <Locality as NotSend<_>>::check();
}

#[test]
fn addresses_compare_and_hash_by_identity() {
    use commutator::{Supervisor, SupervisorConfig};
    use std::collections::HashSet;

    let mut a = Locality::named("L0");
    let mut b = Locality::named("L0");
    let root_a = a
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let root_b = b
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let leaf = a.spawn(&root_a, Supervisor).name("root").finish().unwrap();

    // Same text, different localities or actors: different addresses.
    assert_eq!(root_a.to_string(), root_b.to_string());
    assert_ne!(root_a, root_b);
    assert_ne!(root_a, leaf);
    assert_eq!(root_a.clone(), root_a);
    // Clippy flags `Address` as a mutable key (its locality's inbox is behind
    // a Mutex), but `Hash` and `Eq` only read the locality id and the key.
    #[allow(clippy::mutable_key_type)]
    let set: HashSet<Address> = [root_a.clone(), root_a.clone(), root_b, leaf]
        .into_iter()
        .collect();
    assert_eq!(set.len(), 3);
    assert_eq!(format!("{root_a:?}"), "Address(L0/root#1)");
}

//! Compile-time guarantees of the public types.

use commutator::{Address, Locality};
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

// Fails to compile if `Locality` ever becomes `Send`.
const _: fn() = <Locality as NotSend<_>>::check;

#[test]
fn an_address_is_send_sync_clone_eq_hash_debug_and_display() {
    assert_bounds::<Address>();
}

#[test]
fn a_locality_is_not_send() {
    // Checked at compile time by the `const` above; this names it in the report.
    <Locality as NotSend<_>>::check();
}

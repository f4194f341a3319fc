//! The sizes of the records every actor and request pays for.

use std::mem::size_of;

/// Every actor pays for these: they must not grow back unnoticed
/// (docs/benchmarks.md, "Memory").
#[test]
fn per_actor_records_stay_small() {
    // With the arena's generation, a cell's entry is one cache line
    // (64 bytes: the registry it inherits is found, not kept).
    assert!(
        size_of::<crate::actor::ActorCell>() <= 56,
        "{}",
        size_of::<crate::actor::ActorCell>()
    );
    // A local parent link is a key, not an address.
    assert!(size_of::<Option<crate::actor::CellParent>>() <= 12);
    // A supervisor's record of each child (its supervision apart),
    // in a slab entry (`slab` puts its tag in the record's niche).
    assert!(
        size_of::<Result<crate::supervisor::ChildRecord, usize>>() <= 32,
        "{}",
        size_of::<Result<crate::supervisor::ChildRecord, usize>>()
    );
    assert!(
        size_of::<crate::address::Address>() <= 24,
        "{}",
        size_of::<crate::address::Address>()
    );
    // Every framework message is this big in the queue: the rare ones
    // with two addresses box them.
    assert!(
        size_of::<crate::lifecycle::SystemMsg>() <= 48,
        "{}",
        size_of::<crate::lifecycle::SystemMsg>()
    );
    assert_eq!(
        size_of::<crate::error::Error>(),
        16,
        "an error is a code and one pointer"
    );
    assert_eq!(size_of::<Option<crate::error::Error>>(), 16);
}

/// A pending request's timer record is written on every request's
/// start and read on its end (docs/benchmarks.md, w3).
#[test]
fn a_pending_request_record_stays_small() {
    let size = size_of::<crate::timer::Record<crate::request::PendingRequest>>();
    assert!(size <= 72, "{size}");
}

//! A supervisor's shutdown asking its children to go: each child not
//! already going is marked in its record, then asked, in slot order.

use super::{ChildId, ChildState, stop_known_child, sup_mut};
use crate::arena::Key;
use crate::error::{Error, ErrorCode};
use crate::locality::Core;

/// Asks every child that is not already shutting down to shut down; a child
/// waiting for its restart is let go at once. (A child whose remote spawn is
/// under way is asked when it reports in.)
pub(crate) fn shutdown_children(core: &mut Core, me: Key) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    // The requests may go as direct calls unless the supervisor has
    // linked clients to ask next (theirs would have come after).
    let direct = cell.plugins_ref().is_none_or(|p| p.clients.is_empty());
    let Some(sup) = cell.supervisor.as_deref_mut() else {
        return;
    };
    let mut to_stop = 0usize;
    let mut timers = Vec::new();
    // Once per supervisor: every child is visited, and the children still
    // initializing are counted again on the way (restarting ones are dropped).
    let mut initializing = 0;
    sup.held.clear();
    let supervised = &mut sup.supervised;
    sup.children.retain(|slot, record| {
        match record.state {
            ChildState::ShuttingDown => {}
            ChildState::Restarting => {
                timers.extend(supervised.remove(&slot).and_then(|s| s.timer));
                return false;
            }
            _ => {
                record.state = ChildState::ShuttingDown;
                if record.address.is_some() {
                    record.stop_pending = true;
                    to_stop += 1;
                }
            }
        }
        initializing += usize::from(record.initializing);
        true
    });
    sup.initializing = initializing;
    for timer in timers {
        core.cancel_timer(timer);
    }
    // The children marked above, asked in slot order, a batch at a time
    // (read with one look at the supervisor). A record may go meanwhile
    // (its child is gone) and a slot be reused by a new record (never
    // marked): a child is asked once, as the caller read it (as before,
    // when every id was read first).
    let mut from = 0;
    let mut batch = [(0, ChildId::new(0, Key::NONE)); STOP_BATCH];
    while to_stop > 0 {
        let n = next_to_stop(core, me, &mut from, &mut batch);
        if n == 0 {
            return;
        }
        to_stop = to_stop.saturating_sub(n);
        for &(slot, child) in &batch[..n] {
            let reason = Error::new(ErrorCode::SupervisorShutdown);
            stop_known_child(core, me, slot, child, reason, direct);
        }
    }
}

/// How many children [`shutdown_children`] reads at a time.
const STOP_BATCH: usize = 32;

/// Fills `batch` with the next children of supervisor `me`, from slot
/// `from` on, that its shutdown marked to be asked to stop (their slots
/// and ids, unmarked); how many. `from` moves past the last one read.
#[inline]
fn next_to_stop(
    core: &mut Core,
    me: Key,
    from: &mut usize,
    batch: &mut [(usize, ChildId); STOP_BATCH],
) -> usize {
    let Some(sup) = sup_mut(core, me) else {
        return 0;
    };
    let end = sup.children.capacity();
    let mut n = 0;
    while n < STOP_BATCH && *from < end {
        let slot = *from;
        *from += 1;
        if let Some(record) = sup.children.get_mut(slot).filter(|r| r.stop_pending) {
            record.stop_pending = false;
            if let Some(address) = &record.address {
                batch[n] = (slot, ChildId::of(address));
                n += 1;
            }
        }
    }
    n
}

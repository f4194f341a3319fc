//! The queue's look-ahead into the routing table (`queue::LookAhead`).

use super::Routes;
use crate::arena::Key;

/// Addresses this close (in index) to the last one looked ahead at are
/// not looked at ([`Routes::look_ahead`]).
const NEAR: u32 = 4;

impl<T, H> Routes<T, H> {
    /// Brings in, ahead of a delivery to `address`, what it will read: the
    /// address's slot (read here) and its first channel's first
    /// subscription's record (prefetched). `false` (look no further at the
    /// entries waiting: `queue::LookAhead`) for an address next to the
    /// last one looked at: deliveries that walk the table in order have
    /// the processor's own prefetchers, and looking would only cost them.
    #[inline(always)]
    pub(crate) fn look_ahead(&self, address: Key) -> bool {
        let last = self.looked.replace(address.idx);
        if address.idx.wrapping_sub(last).wrapping_add(NEAR) <= 2 * NEAR {
            return false;
        }
        if let Some(slot) = self.slots.get(address) {
            self.subs.prefetch(slot.first.first);
        }
        true
    }
}

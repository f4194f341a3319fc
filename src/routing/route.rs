//! The route a handler keeps for its sends ([`Route`]), and its check;
//! the queue's look-ahead into the table.

use super::{ALONE, Kept, Routes};
use crate::arena::Key;

/// Addresses this close (in index) to the last one looked ahead at are
/// not looked at (`Routes::look_ahead`).
const NEAR: u32 = 4;

/// The route a handler keeps for its sends (`Core::send_routed`): the first
/// subscription found for the (address, type) of a send, and that address.
///
/// A send to another address is told apart by one compare with `dest`,
/// and then only the route's liveness is checked (its record's generation,
/// one line that stays in the cache): a handler that sends to many
/// addresses in turn (a feeder of 100,000 entities) pays little for a route
/// it cannot use. A dead route (its subscription or its address gone) is
/// learned again for the address of the send that finds it so, as before.
/// A send to `dest` itself needs no compare of the record's address: the
/// subscription is live, so its address is, and it is `dest` (a key is
/// never reused with its generation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    sub: Key,
    dest: Key,
}

impl Route {
    /// No route: the first send learns one.
    pub(crate) const NONE: Route = Route {
        sub: Key::NONE,
        dest: Key::NONE,
    };

    /// The route `sub` (or `Key::NONE`) found for a send to `dest`.
    #[inline]
    pub(crate) fn new(sub: Key, dest: Key) -> Route {
        Route { sub, dest }
    }

    /// The subscription of the route.
    #[inline(always)]
    pub(crate) fn sub(self) -> Key {
        self.sub
    }
}

impl<T, H> Routes<T, H> {
    /// Whether a route kept from an earlier [`first_of`](Self::first_of)
    /// holds for a message to `address` of a type tagged `tag`
    /// ([`type_tag`](super::type_tag)): for another address, `Elsewhere`
    /// if the route is live, else `Gone` (learn it again); for its own,
    /// `Holds` if it is live and for such a type.
    #[inline(always)]
    pub(crate) fn check_route(&self, route: &Route, address: Key, tag: u32) -> Kept {
        if route.dest != address {
            return match self.subs.get(route.sub) {
                Some(_) => Kept::Elsewhere,
                None => Kept::Gone,
            };
        }
        match self.subs.get_with_mark(route.sub) {
            Some((mark, _)) if mark & !ALONE == tag => Kept::Holds,
            Some(_) => Kept::Elsewhere,
            None => Kept::Gone,
        }
    }

    /// Brings in, ahead of a delivery to `address`, what it will read: the
    /// address's slot (read here) and its first channel's first
    /// subscription's record (prefetched). `false` (look no further in
    /// this burst: `queue::LookAhead`) for an address next to the last one
    /// looked at: deliveries that walk the table in order have the
    /// processor's own prefetchers, and looking would only cost them.
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

    /// Whether the subscription `sub` is live, on `address`, and for a type
    /// tagged `tag` (a subscription keeps its address and type for life).
    #[cfg(test)]
    pub(crate) fn check_sub(&self, sub: Key, address: Key, tag: u32) -> Kept {
        match self.subs.get_with_mark(sub) {
            Some((mark, s)) if mark & !ALONE == tag && s.address == address => Kept::Holds,
            Some(_) => Kept::Elsewhere,
            None => Kept::Gone,
        }
    }
}

//! The route a handler keeps for its sends ([`Route`]), and its check.

use super::{ALONE, Kept, Routes};
use crate::arena::Key;

/// Sends elsewhere after which a kept route is checked to be live (and
/// learned again, for the address of that send, if it is not).
pub(crate) const CHECK_AFTER: u32 = 64;

/// The route a handler keeps for its sends (`Core::send_routed`): the first
/// subscription found for the (address, type) of a send, the index of that
/// address, and how many sends to another address it outlives.
///
/// A send to another address (another index) is told apart by one compare
/// with `dest`, without reading the subscription's record: a handler that
/// sends to many addresses in turn (a feeder of 100,000 entities) pays
/// almost nothing for a route it cannot use. Each such send spends one of
/// the route's `budget`; when none is left, the route's record is read:
/// live, the route stays (and its budget is full again); gone (its address
/// removed, or its subscription), the route is learned again for the
/// address at hand. So a dead route is not kept for ever: it gives way
/// after at most [`CHECK_AFTER`] sends elsewhere (at once, on a send to
/// its own index). Learning a route reads the address's slot, which a send
/// elsewhere does not: a feeder that learned a route for each address in
/// turn would wait on a miss at its sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    sub: Key,
    dest: u32,
    budget: u32,
}

impl Route {
    /// No route: the first send learns one.
    pub(crate) const NONE: Route = Route {
        sub: Key::NONE,
        dest: u32::MAX,
        budget: 0,
    };

    /// The route `sub` (or `Key::NONE`) found for a send to `dest`.
    #[inline]
    pub(crate) fn new(sub: Key, dest: Key) -> Route {
        Route {
            sub,
            dest: dest.idx,
            budget: CHECK_AFTER,
        }
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
    /// ([`type_tag`](super::type_tag)): a send to another address index
    /// spends one of the route's budget (`Kept::Elsewhere`), or, with none
    /// left, checks that the route is live (`Kept::Gone` if not: learn it
    /// again); a send to its index is
    /// checked in full ([`check_sub`](Self::check_sub)). Never `Holds` for
    /// a route that would not hold: the index is a filter only.
    #[inline(always)]
    pub(crate) fn check_route(&self, route: &mut Route, address: Key, tag: u32) -> Kept {
        if route.dest != address.idx {
            if route.budget == 0 {
                return self.recheck(route);
            }
            route.budget -= 1;
            return Kept::Elsewhere;
        }
        self.check_sub(route.sub, address, tag)
    }

    /// A route's budget is spent: kept if its subscription is live.
    #[cold]
    #[inline(never)]
    fn recheck(&self, route: &mut Route) -> Kept {
        if self.subs.get(route.sub).is_none() {
            return Kept::Gone;
        }
        route.budget = CHECK_AFTER;
        Kept::Elsewhere
    }

    /// Whether the subscription `sub` is live, on `address`, and for a type
    /// tagged `tag` (a subscription keeps its address and type for life).
    #[inline(always)]
    pub(crate) fn check_sub(&self, sub: Key, address: Key, tag: u32) -> Kept {
        match self.subs.get_with_mark(sub) {
            Some((mark, s)) if mark & !ALONE == tag && s.address == address => Kept::Holds,
            Some(_) => Kept::Elsewhere,
            None => Kept::Gone,
        }
    }
}

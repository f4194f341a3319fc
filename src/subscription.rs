//! Pub/sub in a locality: subscribing handlers in the routing table, and
//! routing one message to them.
//!
//! The table ([`Routes`](crate::routing::Routes)) says who hears a message;
//! here each handler is taken out and called, and puts itself back when it
//! returns, so that it may subscribe and unsubscribe while it runs. A handler reaches its actor
//! directly (it holds the actor's typed cell), so a delivery needs no lookup
//! of the actor and no downcast of it.
//!
//! Panics: a single subscriber's handler runs inside the dispatch loop's
//! panic boundary (one per batch, see `Locality::dispatch`), which knows
//! whose handler ran from [`Core::running`]. Several subscribers share one
//! boundary per message, resumed after a panic, so a panicking subscriber
//! never keeps the others from hearing the message. The handler that
//! panicked is dropped by the unwind: its actor fails, and until it is gone,
//! messages for that subscription are counted as dropped.

use crate::address::Address;
use crate::arena::{Key, remove_key};
use crate::dead_letter::DeadLetterReason;
use crate::locality::Core;
use crate::queue::Lent;
use crate::routing::{Found, Removed};
use std::any::TypeId;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A subscribed handler, with its message type erased.
pub(crate) trait Handler {
    /// Handles `message` (a `&M` of the type subscribed to), then puts
    /// itself back as the handler of `sub`, taken out of the routing table
    /// for the call ([`Routes::put_handler`](crate::routing::Routes::put_handler)).
    /// The handler does the putting back, not its caller: the caller then
    /// keeps nothing across the call (fewer registers saved per delivery).
    fn call(self: Box<Self>, core: &mut Core, sub: Key, message: Lent<'_>);
}

/// A handler as the routing table keeps it.
pub(crate) type BoxedHandler = Box<dyn Handler>;

/// What the locality keeps per address besides its subscriptions.
pub(crate) struct AddressInfo {
    pub(crate) owner: Key,
    pub(crate) address: Address,
}

/// Subscribes a handler of `actor` for `M` on the local address `address`;
/// `None` if the address (or the actor) is gone.
pub(crate) fn subscribe<M: 'static>(
    core: &mut Core,
    address: Key,
    actor: Key,
    handler: BoxedHandler,
) -> Option<Key> {
    // `Key::NONE` as the actor: a forwarder to another locality, owned by nobody here.
    if !(actor.is_none() || core.actors.contains(actor)) {
        return None;
    }
    let sub = core
        .routes
        .subscribe(address, TypeId::of::<M>(), actor, handler)?;
    // An actor's subscriptions on its own addresses go with them; only the
    // ones elsewhere need to be remembered.
    let own = core.routes.address(address).map(|a| a.owner) == Some(actor);
    if !own && let Some(cell) = core.actors.get_mut(actor) {
        cell.rare().foreign_subscriptions.push(sub);
    }
    Some(sub)
}

/// Removes a subscription; `None` if it was already gone.
pub(crate) fn unsubscribe(core: &mut Core, sub: Key) -> Option<Removed> {
    let removed = core.routes.unsubscribe(sub)?;
    forget(core, removed);
    Some(removed)
}

/// The subscription is gone: its owner no longer needs to remember it.
fn forget(core: &mut Core, removed: Removed) {
    if let Some(rare) = core
        .actors
        .get_mut(removed.owner)
        .and_then(|c| c.rare.as_deref_mut())
    {
        remove_key(&mut rare.foreign_subscriptions, removed.sub);
    }
}

/// Removes an address and every subscription on it, whoever made them;
/// the address, if it was there.
pub(crate) fn remove_address(core: &mut Core, address: Key) -> Option<Address> {
    if let Some(info) = core.routes.remove_unsubscribed(address) {
        forget_address(core, address, &info);
        return Some(info.address);
    }
    let (info, removed) = core.routes.remove_address(address)?;
    if crate::routing::is_far(address) {
        // Reserved by `spawn_on` on another thread: its key may be reused.
        core.shared.release_key(address);
    }
    forget_address(core, address, &info);
    for r in removed {
        if r.owner != info.owner {
            forget(core, r);
        }
    }
    Some(info.address)
}

/// Remembers a removed address for inspection lines and dead letters
/// about it later, if either is on.
#[inline]
fn forget_address(core: &mut Core, address: Key, info: &AddressInfo) {
    if core.inspect.level > 0 || core.dead_letters.is_some() {
        core.inspect.forget(address, info.address.to_string());
    }
}

/// What comes after a message's delivery, set while it is routed (so the
/// common case, nothing, costs one check).
pub(crate) enum Next {
    /// Nothing: it was delivered.
    Done,
    /// A handler forwards it to the address, as the actor (`Key`).
    Forward(Address, Key),
    /// Nobody heard it.
    Dropped(DeadLetterReason),
    /// The handler it was given takes another type: route it.
    Reroute,
}

/// The handler of the one subscription to `M` on `dest`, taken out to be
/// called (it puts itself back), if that is all a delivery there needs
/// (inspection off); counted as delivered. `None`: go the long way
/// ([`route_slow`]).
///
/// Found by `M`'s [`type_tag`](crate::routing::type_tag), without a lookup
/// of `M`'s exact tag: the handler may be another type's that shares that
/// tag. Every handler checks the message's type before anything
/// (`Lent::get`) and, given another type's, says `Next::Reroute`: the
/// caller then takes the delivery back and routes the message the long
/// way, by its exact type ([`route`], `UserEnvelope::after`).
#[inline(always)]
pub(crate) fn single<M: 'static>(core: &mut Core, dest: Key) -> Option<(Key, BoxedHandler)> {
    if core.inspect.level == 0
        && let Found::One(sub) = core
            .routes
            .find_tagged(dest, crate::routing::type_tag(TypeId::of::<M>()))
        && let Some(handler) = core.routes.take_handler(sub)
    {
        core.stats.delivered += 1;
        return Some((sub, handler));
    }
    None
}

/// Delivers one message to the handlers of its type on `dest`.
///
/// The common case (one subscriber, inspection off) is inlined into the
/// caller ([`single`]); everything else is in [`route_slow`].
#[inline(always)]
pub(crate) fn route<M: 'static>(core: &mut Core, dest: Key, sender: Key, message: &M) {
    if let Some((sub, handler)) = single::<M>(core, dest) {
        handler.call(core, sub, Lent::new(message));
        if matches!(core.next, Next::Reroute) {
            reroute(core, dest, sender, message);
        }
        return;
    }
    route_slow(core, dest, sender, message);
}

/// The handler [`single`] found was another type's (sharing `M`'s tag):
/// the delivery is taken back, and the message routed by its exact type.
#[cold]
#[inline(never)]
fn reroute<M: 'static>(core: &mut Core, dest: Key, sender: Key, message: &M) {
    core.next = Next::Done;
    core.stats.delivered -= 1;
    route_slow(core, dest, sender, message);
}

/// [`route`] past its common case (which [`single`] found not to apply),
/// by `M`'s exact type.
#[inline(never)]
pub(crate) fn route_slow<M: 'static>(core: &mut Core, dest: Key, sender: Key, message: &M) {
    let tag = core.routes.tag_of(TypeId::of::<M>());
    match core.routes.find_tagged(dest, tag) {
        Found::One(sub) => {
            core.stats.delivered += 1;
            if core.inspect.level > 0 {
                inspect_routed::<M>(core, dest, sender, &[sub], message);
            }
            if !call(core, sub, message) {
                // Its handler was lost to a panic: the actor is failing.
                core.stats.dropped_unsubscribed += 1;
                let why = crate::inspect::Drop::NoSubscriber;
                crate::inspect::dropped::<M>(core, dest, sender, why, message);
                core.next = Next::Dropped(DeadLetterReason::NoSubscriber);
            }
        }
        Found::Many => {
            let subs = core.routes.subscribers_tagged(dest, tag);
            core.stats.delivered += 1;
            if core.inspect.level > 0 {
                inspect_routed::<M>(core, dest, sender, &subs, message);
            }
            // One panic boundary for all of them, resumed after a panic.
            let mut next = 0;
            while next < subs.len() {
                let run = catch_unwind(AssertUnwindSafe(|| {
                    while let Some(&sub) = subs.get(next) {
                        next += 1;
                        call(core, sub, message);
                    }
                }));
                if let Err(payload) = run {
                    core.handler_panicked(payload);
                }
            }
        }
        Found::NoSubscriber => {
            core.stats.dropped_unsubscribed += 1;
            let why = crate::inspect::Drop::NoSubscriber;
            crate::inspect::dropped::<M>(core, dest, sender, why, message);
            core.next = Next::Dropped(DeadLetterReason::NoSubscriber);
        }
        Found::Stale => {
            core.stats.dropped_stale += 1;
            crate::inspect::dropped::<M>(core, dest, sender, crate::inspect::Drop::Stale, message);
            core.next = Next::Dropped(DeadLetterReason::StaleAddress);
        }
    }
}

/// Calls the handler of `sub`; `false` if it is not there (unsubscribed by
/// an earlier handler of this message, or lost to a panic).
#[inline(always)]
fn call<M: 'static>(core: &mut Core, sub: Key, message: &M) -> bool {
    let Some(handler) = core.routes.take_handler(sub) else {
        return false;
    };
    handler.call(core, sub, Lent::new(message));
    true
}

#[cold]
fn inspect_routed<M: 'static>(core: &mut Core, dest: Key, sender: Key, subs: &[Key], message: &M) {
    if crate::inspect::shows::<M>(core) {
        let actors: Vec<Key> = subs.iter().filter_map(|&s| core.routes.owner(s)).collect();
        crate::inspect::routed::<M>(core, dest, sender, actors.into_iter(), message);
    }
}

/// A handler of a plain function, owned by no actor (a forwarder).
pub(crate) struct FnHandler<M, F> {
    f: F,
    _message: std::marker::PhantomData<fn(&M)>,
}

impl<M, F> FnHandler<M, F> {
    pub(crate) fn new(f: F) -> Self {
        FnHandler {
            f,
            _message: std::marker::PhantomData,
        }
    }
}

impl<M: 'static, F: Fn(&mut Core, &M) + 'static> Handler for FnHandler<M, F> {
    fn call(self: Box<Self>, core: &mut Core, sub: Key, message: Lent<'_>) {
        match message.get::<M>() {
            Some(message) => (self.f)(core, message),
            None => core.next = Next::Reroute,
        }
        core.routes.put_handler(sub, self);
    }
}

#[cfg(test)]
mod tests;

//! Requests an [`EntitySet`](super::EntitySet) routed: remembered until
//! answered, so that a `CancelRequest` reaches the instance that has the
//! request, or drops it while it is held.

use super::EntitySet;
use super::pending::Pending;
use crate::actor::Actor;
use crate::arena::Key;
use crate::context::Context;
use crate::entity::deliver_now;
use crate::request::{Answered, CancelRequest, Request, RequestId};
use std::fmt::Display;
use std::hash::Hash;

/// A request routed to the entity of `key`: held for it (`at` is
/// `Key::NONE`), or delivered to its instance at address key `at`.
pub(super) struct Asking<K> {
    pub(super) key: K,
    pub(super) at: Key,
}

impl<K, E> EntitySet<K, E>
where
    K: Clone + Eq + Hash + Display + 'static,
    E: Actor,
{
    /// A request the set routed was answered: forget it.
    pub(super) fn on_answered(&mut self, answered: &Answered, _: &mut Context<'_, Self>) {
        self.asked.remove(&answered.0);
    }

    /// A request the set routed ended without a reply: the instance that
    /// has it is told; one still held is dropped.
    pub(super) fn on_cancel<R: Request>(
        &mut self,
        cancel: &CancelRequest<R>,
        ctx: &mut Context<'_, Self>,
    ) {
        let Some(asking) = self.asked.remove(&cancel.id) else {
            return;
        };
        let Some(idx) = self.table.find(&asking.key) else {
            return; // its entity is gone, and the request with it
        };
        if asking.at == Key::NONE {
            let e = self.table.get_mut(idx);
            if Pending::remove(&mut e.pending, |h| h.request_id() == Some(cancel.id)) {
                self.buffered -= 1;
                self.publish();
            }
            return;
        }
        let e = self.table.get(idx);
        if e.dest != asking.at {
            return; // the instance that had it is gone
        }
        let address = e.address.clone();
        let passed = CancelRequest::<R> {
            id: cancel.id,
            reply_to: cancel.reply_to.clone(),
            _request: std::marker::PhantomData,
        };
        if let Some(dest) = self.live_at(idx, ctx.core) {
            deliver_now(ctx.core, ctx.me, dest, &passed);
        } else if let Some(address) = address {
            ctx.send(&address, passed); // shutting down: it may still care
        }
    }

    /// A held request was delivered to the instance at `dest`.
    pub(super) fn delivered(&mut self, id: Option<RequestId>, dest: Key) {
        if let Some(asking) = id.and_then(|id| self.asked.get_mut(&id)) {
            asking.at = dest;
        }
    }
}

//! [`ActorHandler`]: a subscription's handler for an actor, the piece a
//! delivery calls.

use super::{Actor, ActorRc};
use crate::arena::Key;
use crate::context::Context;
use crate::locality::Core;
use crate::queue::Lent;
use crate::subscription::Handler;
use std::marker::PhantomData;

/// A handler of actor `A` for messages `M`: holds the actor's typed cell, so
/// a delivery reaches the actor without a lookup or a downcast.
pub(crate) struct ActorHandler<A: Actor, M, F> {
    actor: ActorRc<A>,
    /// The owner's key as one word (`Key::to_word`): read by one load and
    /// written to `Core::running` by one store (a key's two halves stored
    /// apart and read back whole stall the load).
    me: u64,
    /// The route of this handler's last send, kept for the next
    /// (`Core::send_routed`), as one word (`Key::to_word`).
    route: u64,
    f: F,
    _message: PhantomData<fn(&M)>,
}

impl<A: Actor, M, F> ActorHandler<A, M, F> {
    pub(crate) fn new(actor: ActorRc<A>, me: Key, f: F) -> Self {
        ActorHandler {
            actor,
            me: me.to_word(),
            route: Key::NONE.to_word(),
            f,
            _message: PhantomData,
        }
    }
}

impl<A, M, F> Handler for ActorHandler<A, M, F>
where
    A: Actor,
    M: 'static,
    F: Fn(&mut A, &M, &mut Context<'_, A>) + 'static,
{
    #[inline]
    fn call(mut self: Box<Self>, core: &mut Core, sub: Key, message: Lent<'_>) {
        let this = &mut *self;
        match message.get::<M>() {
            // A busy actor is never re-entered.
            Some(message) => {
                if let Ok(mut b) = this.actor.try_borrow_mut() {
                    // The dispatch loop's panic boundary reads who was running.
                    core.running = this.me;
                    let me = Key::from_word(this.me);
                    let ctx = &mut Context::with_route(core, me, &mut this.route);
                    (this.f)(&mut b.actor, message, ctx);
                    core.running = Key::NONE.to_word();
                }
            }
            None => core.next = crate::subscription::Next::Reroute,
        }
        core.routes.put_handler(sub, self);
    }
}

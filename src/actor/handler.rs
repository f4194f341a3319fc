//! [`ActorHandler`]: what a subscription of an actor does with a message,
//! the piece a delivery calls.

use super::{Actor, ActorBox};
use crate::arena::Key;
use crate::context::Context;
use crate::locality::Core;
use crate::subscription::{Handler, Subscriber, Taken};
use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;

/// The handler function `F` of actor `A` for messages `M`. The actor's cell
/// and the route are in the subscription's record ([`Subscriber`]), not
/// here: a delivery reaches the actor from the record in one load, and for
/// the usual `F` (a function or a closure that captures nothing) this is
/// zero-sized, so its box allocates nothing.
pub(crate) struct ActorHandler<A: Actor, M, F> {
    f: F,
    _types: PhantomData<fn(&mut A, &M)>,
}

impl<A: Actor, M, F> ActorHandler<A, M, F> {
    pub(crate) fn new(f: F) -> Self {
        ActorHandler {
            f,
            _types: PhantomData,
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
    fn call(self: Box<Self>, core: &mut Core, taken: Taken<'_>) {
        let Taken {
            actor,
            sub,
            me,
            route,
            message,
        } = taken;
        let (me, mut route) = (Key::from_word(me), Key::from_word(route));
        // The record of an actor's handler holds its cell: typed again by
        // a type compare (as an owned `Rc`, so that the cell's place in
        // its allocation is known without the erased type's alignment).
        let actor = match actor.map(Rc::downcast::<RefCell<ActorBox<A>>>) {
            Some(Ok(cell)) => {
                match message.get::<M>() {
                    Some(message) => {
                        // A busy actor is never re-entered.
                        if let Ok(mut b) = cell.try_borrow_mut() {
                            // The dispatch loop's panic boundary reads who was running.
                            core.running = me;
                            let ctx = &mut Context::with_route(core, me, &mut route);
                            (self.f)(&mut b.actor, message, ctx);
                            core.running = Key::NONE;
                        }
                    }
                    None => core.next = crate::subscription::Next::Reroute,
                }
                Some(cell as Rc<dyn Any>)
            }
            Some(Err(other)) => Some(other),
            None => None,
        };
        let route = route.to_word();
        core.routes
            .put_handler_with(Key::from_word(sub), || Subscriber {
                actor,
                route,
                f: self,
            });
    }
}

//! Messages: the envelope a user message travels in, and type names for
//! inspection.

use crate::address::Address;
use crate::arena::Key;
use crate::locality::Core;
use crate::locality::shared::Remote;
use crate::queue::{Envelope, Lent};
use crate::routing::Kept;
use crate::subscription::Next;

/// A user message on its way to an address of this locality.
pub(crate) struct UserEnvelope<M> {
    pub(crate) dest: Key,
    /// The sending actor, or `Key::NONE` when sent from outside an actor.
    pub(crate) sender: Key,
    pub(crate) message: M,
}

impl<M: Send + 'static> Envelope<Core> for UserEnvelope<M> {
    const HINTS: bool = true;

    /// The destination, for the queue's look-ahead (`Routes::look_ahead`).
    #[inline(always)]
    fn hint(&self) -> u64 {
        self.dest.to_word()
    }

    #[inline(always)]
    fn deliver(self, core: &mut Core) {
        // Sends to many addresses come as user messages: look ahead at
        // the next ones (`Queue::look_ahead`).
        crate::queue::Queue::look_ahead(core);
        // The common case (one subscriber, inspection off) here; the rest
        // out of line, so that this path saves few registers.
        let Some((sub, handler)) = crate::subscription::single::<M>(core, self.dest) else {
            return self.deliver_slow(core);
        };
        handler.call(core, sub, Lent::new(&self.message));
        if !matches!(core.next, Next::Done) {
            self.after(core);
        }
    }
}

/// A user message sent by a handler to an address of this locality, with
/// the route the handler kept (`Core::send_routed`): the first
/// subscription to `M` there, or `Key::NONE`. The delivery takes that
/// subscription's handler straight from its record, without the address
/// slot and the channel, if it is still the only subscription of its
/// channel and for `M`'s tag
/// ([`Routes::take_route`](crate::routing::Routes::take_route)): then
/// routing now would find it too. Otherwise (several subscribers, a
/// subscription made or removed meanwhile, the address gone, inspection
/// on) the message is routed at its delivery as a [`UserEnvelope`] is:
/// who hears a message is decided when it is delivered, as always.
///
/// Its keys are kept as single words (`Key` is two `u32`s), so that each
/// is written by one store and read back by one load: a load that spans
/// two recent stores waits until they reach the cache (see the queue's
/// `read_by_words`), and a delivery follows its send at once.
pub(crate) struct ResolvedEnvelope<M> {
    sub: u64,
    dest: u64,
    sender: u64,
    message: M,
}

impl<M> ResolvedEnvelope<M> {
    /// `message` from `sender` to `dest`, whose subscription to `M` was
    /// `sub` at the send (or `Key::NONE`).
    #[inline(always)]
    pub(crate) fn new(sub: Key, dest: Key, sender: Key, message: M) -> Self {
        ResolvedEnvelope {
            sub: sub.to_word(),
            dest: dest.to_word(),
            sender: sender.to_word(),
            message,
        }
    }

    #[inline(always)]
    fn unresolved(self) -> UserEnvelope<M> {
        UserEnvelope {
            dest: Key::from_word(self.dest),
            sender: Key::from_word(self.sender),
            message: self.message,
        }
    }
}

impl<M: Send + 'static> Envelope<Core> for ResolvedEnvelope<M> {
    #[inline(always)]
    fn deliver(self, core: &mut Core) {
        self.deliver_looking::<false>(core);
    }
}

impl<M: Send + 'static> ResolvedEnvelope<M> {
    /// The delivery, after a look ahead at the next entries if `LOOK`
    /// (a message among sends to many addresses, as a `UserEnvelope`'s:
    /// an `EntityRef`'s).
    #[inline(always)]
    pub(crate) fn deliver_looking<const LOOK: bool>(self, core: &mut Core) {
        if LOOK {
            crate::queue::Queue::look_ahead(core);
        }
        let sub = Key::from_word(self.sub);
        if core.inspect.level == 0
            && let Some(handler) = core
                .routes
                .take_route(sub, crate::routing::type_tag(std::any::TypeId::of::<M>()))
        {
            core.stats.delivered += 1;
            handler.call(core, sub, Lent::new(&self.message));
            if !matches!(core.next, Next::Done) {
                self.unresolved().after(core);
            }
            return;
        }
        self.unresolved().deliver_slow(core);
    }
}

impl<M: Send + 'static> UserEnvelope<M> {
    #[inline(never)]
    fn deliver_slow(self, core: &mut Core) {
        crate::subscription::route_slow(core, self.dest, self.sender, &self.message);
        if !matches!(core.next, Next::Done) {
            self.after(core);
        }
    }

    /// A handler forwarded the message, or nobody heard it.
    #[cold]
    #[inline(never)]
    fn after(self, core: &mut Core) {
        match std::mem::replace(&mut core.next, Next::Done) {
            // Moved on, not copied; `by` (the forwarder) is its new sender.
            Next::Forward(to, by) => core.send(&to, by, self.message),
            // The route kept at the send was for another type with the
            // same tag (`Routes::take_route`): routed now.
            Next::Reroute => {
                core.stats.delivered -= 1;
                self.deliver_slow(core);
            }
            Next::Dropped(reason) if crate::dead_letter::wanted::<M>(core) => {
                let destination = crate::inspect::address_name(core, self.dest);
                crate::dead_letter::post(core, destination, self.sender, reason, self.message);
            }
            _ => {}
        }
    }
}

impl Core {
    /// [`send`](Core::send) from a handler that keeps the route of its
    /// last send in `route`: the first subscription of the (address, type)
    /// found then, used again while it is still on that address (for `M`
    /// or not: see `Routes::check_route`), and put in the envelope (see
    /// `ResolvedEnvelope`, whose delivery checks it again, with `M`'s tag). The route comes out of the handler's own
    /// memory, not out of the address's slot and channel, so the delivery
    /// that follows waits on fewer loads (w1: 1.25x the messages per
    /// second; docs/benchmarks.md).
    #[inline(always)]
    pub(crate) fn send_routed<M: Send + 'static>(
        &mut self,
        to: &Address,
        sender: Key,
        message: M,
        route: &mut u64,
    ) {
        if to.is_of(&self.shared) {
            let dest = to.key();
            // The route stays one word (`Key::to_word`) from the handler
            // to the envelope: split into halves, the two would be joined
            // again for the store.
            let sub = *route;
            // The common case makes no call (the rest is out of line, a
            // full queue too), so that the handler keeps nothing across
            // one and saves fewer registers.
            match self.routes.check_route(Key::from_word(sub), dest) {
                Kept::Holds if self.queue.has_room::<ResolvedEnvelope<M>>() => {
                    let envelope =
                        ResolvedEnvelope::new(Key::from_word(sub), dest, sender, message);
                    self.queue.push(envelope);
                }
                // The handler sends elsewhere too: its route stays, and
                // this message is routed at its delivery, as any.
                Kept::Elsewhere if self.queue.has_room::<UserEnvelope<M>>() => {
                    self.queue.push(UserEnvelope {
                        dest,
                        sender,
                        message,
                    });
                }
                _ => self.send_unrouted(dest, sender, message, route),
            }
        } else {
            self.send_remote(to, sender, message);
        }
    }

    /// The rest of `send_routed`: a full queue, a route for another
    /// address, or none (or a gone one). It checks the route again rather
    /// than take `send_routed`'s answer as an argument: passing it costs
    /// the common case an instruction (w1 138 → 139, w2 114 → 115).
    #[cold]
    #[inline(never)]
    fn send_unrouted<M: Send + 'static>(
        &mut self,
        dest: Key,
        sender: Key,
        message: M,
        route: &mut u64,
    ) {
        let sub = match self.routes.check_route(Key::from_word(*route), dest) {
            Kept::Holds => Key::from_word(*route),
            // The handler sends elsewhere too: its route stays, and
            // this message is routed at its delivery, as any.
            Kept::Elsewhere => {
                return self.queue.push(UserEnvelope {
                    dest,
                    sender,
                    message,
                });
            }
            Kept::Gone => {
                let sub = self.routes.first_of(dest, std::any::TypeId::of::<M>());
                *route = sub.to_word();
                sub
            }
        };
        self.queue
            .push(ResolvedEnvelope::new(sub, dest, sender, message));
    }
}

/// The queue's look-ahead: a user message's hint is its destination's key
/// (`UserEnvelope`, and an `EntityRef`'s message), whose routing slot and
/// first subscription's record are brought in before its delivery
/// (`Routes::look_ahead`).
impl crate::queue::LookAhead for Core {
    #[inline(always)]
    fn look_ahead(&self, hint: u64) -> bool {
        self.routes.look_ahead(Key::from_word(hint))
    }
}

impl<M: Send + 'static> Remote for UserEnvelope<M> {
    fn localize(self: Box<Self>, core: &mut Core) {
        core.enqueue(*self);
    }
}

/// A short, stable name for a payload type: the path without module prefixes
/// (`commutator::request::Response<app::Balance>` becomes `Response<Balance>`).
pub(crate) fn short_type_name<M: ?Sized>() -> String {
    let full = std::any::type_name::<M>();
    let mut out = String::with_capacity(full.len());
    let mut segment_start = 0;
    for (i, c) in full.char_indices() {
        if matches!(c, '<' | '>' | ',' | ' ' | '(' | ')' | '[' | ']' | '&' | ';') {
            out.push_str(last_segment(&full[segment_start..i]));
            out.push(c);
            segment_start = i + c.len_utf8();
        }
    }
    out.push_str(last_segment(&full[segment_start..]));
    out
}

fn last_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Actor, Context, Locality, Supervisor, SupervisorConfig};
    use std::any::TypeId;
    use std::cell::RefCell;
    use std::rc::Rc;

    struct Note;
    struct Other;

    /// Logs the `Note`s and `Other`s it hears.
    struct Both(Rc<RefCell<Vec<&'static str>>>);

    impl Actor for Both {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|me: &mut Self, _: &Note, _: &mut Context<'_, Self>| {
                me.0.borrow_mut().push("note");
            });
            ctx.subscribe(|me: &mut Self, _: &Other, _: &mut Context<'_, Self>| {
                me.0.borrow_mut().push("other");
            });
        }
    }

    #[test]
    fn a_route_kept_for_another_type_with_the_same_tag_is_routed_again_at_delivery() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut l = Locality::named("L0");
        let root = l
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let both = l.spawn(&root, Both(log.clone())).finish().unwrap();
        let now = l.now();
        l.run_until_idle(now);
        let core = l.core_mut();
        let dest = both.key();
        // The `Note` subscription, marked as if `Note` and `Other` shared a
        // tag; an `Other` sent on that route.
        let note = core.routes.first_of(dest, TypeId::of::<Note>());
        let other_tag = crate::routing::type_tag(TypeId::of::<Other>());
        core.routes.retag(note, other_tag);
        let before = core.stats.delivered;
        core.enqueue(ResolvedEnvelope::new(note, dest, Key::NONE, Other));
        l.run_until_idle(now);
        assert_eq!(*log.borrow(), ["other"], "the `Note` handler is not called");
        assert_eq!(l.stats().delivered - before, 1, "counted once");
    }

    #[test]
    fn short_names_drop_module_paths() {
        assert_eq!(short_type_name::<u32>(), "u32");
        assert_eq!(short_type_name::<Vec<String>>(), "Vec<String>");
        assert_eq!(
            short_type_name::<Option<(u8, std::time::Duration)>>(),
            "Option<(u8, Duration)>"
        );
    }
}

//! Pub/sub: which handlers hear a message type on an address, and routing one
//! message to them.
//!
//! Each address slot holds one *channel* per subscribed message type: a
//! copy-on-write list of handlers. Delivery keeps a cheap handle on the list it
//! started with, so handlers may subscribe and unsubscribe while it runs; an
//! unsubscribed handler is skipped even for the message being delivered.

use crate::address::Address;
use crate::arena::{Key, remove_key};
use crate::locality::Core;
use smallvec::SmallVec;
use std::any::{Any, TypeId};
use std::rc::Rc;

/// An erased handler: called with the locality, the subscribing actor and the message.
pub(crate) type HandlerFn<M> = Rc<dyn Fn(&mut Core, Key, &M)>;

pub(crate) struct Handler<M> {
    sub: Key,
    actor: Key,
    f: HandlerFn<M>,
}

impl<M> Clone for Handler<M> {
    fn clone(&self) -> Self {
        Handler {
            sub: self.sub,
            actor: self.actor,
            f: self.f.clone(),
        }
    }
}

type HandlerList<M> = SmallVec<[Handler<M>; 1]>;

/// A handler list with its message type erased.
pub(crate) trait ErasedList: Any {
    fn copy(&self) -> Rc<dyn ErasedList>;
    /// Removes a subscription; `true` if the list is now empty.
    fn remove(&mut self, sub: Key) -> bool;
    fn subscriptions(&self) -> SmallVec<[Key; 4]>;
}

impl<M: 'static> ErasedList for HandlerList<M> {
    fn copy(&self) -> Rc<dyn ErasedList> {
        Rc::new(self.clone())
    }
    fn remove(&mut self, sub: Key) -> bool {
        self.retain(|h| h.sub != sub);
        self.is_empty()
    }
    fn subscriptions(&self) -> SmallVec<[Key; 4]> {
        self.iter().map(|h| h.sub).collect()
    }
}

/// The handlers of one message type on one address.
pub(crate) struct Channel {
    pub(crate) type_id: TypeId,
    pub(crate) list: Rc<dyn ErasedList>,
}

/// One address of this locality.
pub(crate) struct AddressSlot {
    pub(crate) owner: Key,
    pub(crate) address: Address,
    pub(crate) channels: SmallVec<[Channel; 1]>,
}

/// Where a subscription lives, so it can be undone.
pub(crate) struct SubscriptionRecord {
    pub(crate) address: Key,
    pub(crate) type_id: TypeId,
    pub(crate) actor: Key,
}

/// Adds a handler of `actor` for `M` on the local address `address`.
pub(crate) fn subscribe<M: 'static>(
    core: &mut Core,
    address: Key,
    actor: Key,
    f: HandlerFn<M>,
) -> Option<Key> {
    // `Key::NONE` as the actor: a forwarder to another locality, owned by nobody here.
    if !core.addresses.contains(address) || !(actor.is_none() || core.actors.contains(actor)) {
        return None;
    }
    let type_id = TypeId::of::<M>();
    let sub = core.subscriptions.insert(SubscriptionRecord {
        address,
        type_id,
        actor,
    });
    let handler = Handler { sub, actor, f };
    let slot = core.addresses.get_mut(address)?;
    match slot.channels.iter_mut().find(|c| c.type_id == type_id) {
        Some(channel) => typed_mut::<M>(make_mut(&mut channel.list)).push(handler),
        None => {
            let mut list = HandlerList::<M>::new();
            list.push(handler);
            slot.channels.push(Channel {
                type_id,
                list: Rc::new(list),
            });
        }
    }
    if let Some(cell) = core.actors.get_mut(actor) {
        cell.subscriptions.push(sub);
    }
    Some(sub)
}

/// The list, copied first if a delivery still holds it (copy-on-write).
fn make_mut(list: &mut Rc<dyn ErasedList>) -> &mut dyn ErasedList {
    if Rc::get_mut(list).is_none() {
        *list = list.copy();
    }
    Rc::get_mut(list).expect("a fresh copy is unique")
}

fn typed_mut<M: 'static>(list: &mut dyn ErasedList) -> &mut HandlerList<M> {
    (list as &mut dyn Any)
        .downcast_mut::<HandlerList<M>>()
        .expect("channel holds handlers of its own type")
}

/// Removes a subscription; `None` if it was already gone.
pub(crate) fn unsubscribe(core: &mut Core, sub: Key) -> Option<SubscriptionRecord> {
    let record = core.subscriptions.remove(sub)?;
    if let Some(slot) = core.addresses.get_mut(record.address)
        && let Some(pos) = slot
            .channels
            .iter()
            .position(|c| c.type_id == record.type_id)
        && make_mut(&mut slot.channels[pos].list).remove(sub)
    {
        slot.channels.remove(pos);
    }
    if let Some(cell) = core.actors.get_mut(record.actor) {
        remove_key(&mut cell.subscriptions, sub);
    }
    Some(record)
}

/// Removes an address and every subscription on it, whoever made them.
pub(crate) fn remove_address(core: &mut Core, address: Key) {
    let Some(slot) = core.addresses.remove(address) else {
        return;
    };
    if core.inspect.level > 0 {
        core.inspect.forget(address, slot.address.to_string());
    }
    for channel in &slot.channels {
        for sub in channel.list.subscriptions() {
            if let Some(record) = core.subscriptions.remove(sub)
                && let Some(cell) = core.actors.get_mut(record.actor)
            {
                remove_key(&mut cell.subscriptions, sub);
            }
        }
    }
}

/// Delivers one message to the handlers of its type on `dest`.
pub(crate) fn route<M: 'static>(core: &mut Core, dest: Key, sender: Key, message: &M) {
    let list = match core.addresses.get(dest) {
        None => {
            core.stats.dropped_stale += 1;
            crate::inspect::dropped::<M>(core, dest, sender, crate::inspect::Drop::Stale);
            return;
        }
        Some(slot) => match slot
            .channels
            .iter()
            .find(|c| c.type_id == TypeId::of::<M>())
        {
            None => {
                core.stats.dropped_unsubscribed += 1;
                crate::inspect::dropped::<M>(
                    core,
                    dest,
                    sender,
                    crate::inspect::Drop::NoSubscriber,
                );
                return;
            }
            Some(channel) => channel.list.clone(),
        },
    };
    let handlers = (&*list as &dyn Any)
        .downcast_ref::<HandlerList<M>>()
        .expect("channel holds handlers of its own type");
    if core.inspect.level > 0 && crate::inspect::shows::<M>(core) {
        crate::inspect::routed::<M>(core, dest, sender, handlers.iter().map(|h| h.actor));
    }
    for h in handlers {
        if core.subscriptions.contains(h.sub) {
            (h.f)(core, h.actor, message);
        }
    }
    core.stats.delivered += 1;
}

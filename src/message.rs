//! The locality's one FIFO queue, without a box per message.
//!
//! Every queued item is an *envelope* of some type `E` (a user message, a
//! reply, framework traffic). Envelopes of one type wait in their own
//! `VecDeque<E>`; the FIFO order across all types is kept by one `order` queue
//! of `(deliver::<E>, slot)` pairs. Popping the order queue calls the
//! monomorphized `deliver::<E>`, which pops the oldest `E` and delivers it. So
//! payloads are stored unboxed, buffers are reused, and steady-state delivery
//! allocates nothing.

use crate::arena::Key;
use crate::locality::Core;
use crate::locality::shared::Remote;
use std::any::{Any, TypeId};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// A queued item that knows how to deliver itself.
pub(crate) trait Deliver: Sized + 'static {
    fn deliver(self, core: &mut Core);
}

/// A user message on its way to an address of this locality.
pub(crate) struct UserEnvelope<M> {
    pub(crate) dest: Key,
    /// The sending actor, or `Key::NONE` when sent from outside an actor.
    pub(crate) sender: Key,
    pub(crate) message: M,
}

impl<M: 'static> Deliver for UserEnvelope<M> {
    fn deliver(self, core: &mut Core) {
        crate::subscription::route(core, self.dest, self.sender, &self.message);
    }
}

impl<M: Send + 'static> Remote for UserEnvelope<M> {
    fn localize(self: Box<Self>, core: &mut Core) {
        core.enqueue(*self);
    }
}

type DeliverFn = fn(&mut Core, u32);

/// Entries of the slot cache: a direct-mapped cache in front of `slots`.
const CACHE: usize = 16;

/// A type never queued, marking empty cache entries.
enum Vacant {}

/// The FIFO queue of a locality.
pub(crate) struct Queue {
    /// Recently used envelope types and their slots (most pushes hit here).
    cache: [(TypeId, u32); CACHE],
    slots: HashMap<TypeId, u32, BuildHasherDefault<TypeIdHasher>>,
    typed: Vec<Box<dyn Any>>,
    order: VecDeque<(DeliverFn, u32)>,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            cache: [(TypeId::of::<Vacant>(), 0); CACHE],
            slots: HashMap::default(),
            typed: Vec::new(),
            order: VecDeque::new(),
        }
    }
}

impl Queue {
    /// The slot of envelope type `E`, made on first use.
    #[inline]
    fn slot_of<E: Deliver>(&mut self) -> u32 {
        let id = TypeId::of::<E>();
        let mut hasher = TypeIdHasher::default();
        std::hash::Hash::hash(&id, &mut hasher);
        let line = (hasher.finish().wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 60) as usize % CACHE;
        if self.cache[line].0 == id {
            return self.cache[line].1;
        }
        let slot = match self.slots.get(&id) {
            Some(&slot) => slot,
            None => {
                let slot = self.typed.len() as u32;
                self.typed.push(Box::new(VecDeque::<E>::new()));
                self.slots.insert(id, slot);
                slot
            }
        };
        self.cache[line] = (id, slot);
        slot
    }

    /// Appends an envelope at the back of the FIFO.
    pub(crate) fn push<E: Deliver>(&mut self, envelope: E) {
        let slot = self.slot_of::<E>();
        typed::<E>(&mut self.typed[slot as usize]).push_back(envelope);
        self.order.push_back((deliver_next::<E>, slot));
    }

    /// Pops the oldest entry: the function that delivers it and its slot.
    pub(crate) fn pop(&mut self) -> Option<(DeliverFn, u32)> {
        self.order.pop_front()
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Drops every queued envelope (used when a locality is torn down).
    pub(crate) fn clear(&mut self) {
        *self = Queue::default();
    }
}

fn typed<E: 'static>(queue: &mut Box<dyn Any>) -> &mut VecDeque<E> {
    queue
        .downcast_mut::<VecDeque<E>>()
        .expect("queue slot holds its own envelope type")
}

fn deliver_next<E: Deliver>(core: &mut Core, slot: u32) {
    let envelope = typed::<E>(&mut core.queue.typed[slot as usize]).pop_front();
    if let Some(envelope) = envelope {
        envelope.deliver(core);
    }
}

/// `TypeId` is already a hash: fold its bits instead of hashing them again.
#[derive(Default)]
pub(crate) struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
    fn write_u128(&mut self, n: u128) {
        self.0 ^= (n as u64) ^ ((n >> 64) as u64);
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

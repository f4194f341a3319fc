//! What the queue asks of its envelopes ([`Envelope`]) and of a context
//! that looks ahead in it ([`LookAhead`]): the queue's interface, apart
//! from its `unsafe` storage.

/// Something queued that knows how to deliver itself to a context `C`.
pub(crate) trait Envelope<C>: Sized + 'static {
    /// Delivers the envelope (consumed).
    fn deliver(self, ctx: &mut C);

    /// Whether [`hint`](Envelope::hint) has something to say: then the
    /// queue hands it to the context some entries before this envelope's
    /// delivery ([`LookAhead`]).
    const HINTS: bool = false;

    /// A word that tells the context what this envelope's delivery will
    /// read (a destination's key, say), read while it waits in the queue.
    #[inline(always)]
    fn hint(&self) -> u64 {
        0
    }
}

/// The context a queue delivers to, which owns the queue: a delivery
/// finds it there (the entry that ends a wrapped ring's back stretch
/// sends the reader to the start, and delivers the entry there).
pub(crate) trait Owner: Sized + 'static {
    /// The queue this context owns.
    fn queue(&mut self) -> &mut super::Queue<Self>;
}

/// A context that looks ahead in its queue: [`Queue::look_ahead`](super::Queue::look_ahead) (which
/// a delivery calls) gives it the [`hint`](Envelope::hint) of an entry [`LOOK_AHEAD`] entries (of
/// three words) or fewer before that entry's delivery, once per entry, so
/// that it can prefetch what the delivery will read. It gets a shared
/// reference: it cannot change the queue.
pub(crate) trait LookAhead {
    /// The hint of an entry that waits behind the next to be delivered;
    /// `false` to be given none of the other entries waiting now (the
    /// context sees no use in it: entries whose deliveries walk its memory
    /// in order, say, which the processor prefetches), only of those
    /// pushed later.
    fn look_ahead(&self, hint: u64) -> bool;
}

/// How far [`Queue::run_next`](super::Queue::run_next) looks ahead: entries of three words (a
/// header and two keys: a user message of no more than 8 bytes' payload);
/// larger ones count for more.
pub(crate) const LOOK_AHEAD: usize = 8;

/// An envelope aligned to more than a word, stored as a box.
pub(super) struct Boxed<E>(pub(super) Box<E>);

impl<C, E: Envelope<C>> Envelope<C> for Boxed<E> {
    fn deliver(self, ctx: &mut C) {
        (*self.0).deliver(ctx);
    }
}

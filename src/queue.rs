//! The locality's FIFO: one flat queue of type-erased envelopes, stored inline.
//!
//! Every entry is a header word (a pointer to a static table of functions for
//! its type: deliver, drop, size) followed by the envelope itself, in one
//! buffer of 8-byte words. Nothing is boxed per entry and the buffer is
//! reused, so a steady stream of messages allocates nothing. An envelope
//! aligned to more than 8 bytes is boxed (one allocation) and its box stored
//! instead.
//!
//! The buffer is a ring: `push` writes at `write`, `run_next` takes the
//! entry at `read`. An entry is never split at the buffer's end: when one
//! does not fit there, the writer goes back to the start if the reader has
//! left room before itself (the ring is then *wrapped*: the entries run
//! from `read` to `end`, then from the start to `write`), else the buffer
//! grows (to twice its size at least, reallocated: the entries stay where
//! they are, and a wrapped ring's entries at the start are copied to
//! follow the others). A wrapped ring's entries from `read` end with a
//! `Wrap` entry, whose delivery sends the reader to the start: the reader
//! has no check of its own to make. So waiting entries are copied only
//! when the buffer grows or gives memory back, however long the queue
//! stays busy. When the queue is found empty, both cursors go back to the
//! start. After a burst, a buffer whose last use (since it was last found
//! empty) took less than a quarter of it gives half of it back, when it is
//! found empty; and one that never empties gives half back when the writer
//! would go back to the start, if its use since it last did took less than
//! an eighth of it and it has not grown since it was last found empty
//! (`room.rs`).
//!
//! This is the crate's only `unsafe` module. The invariants:
//!
//! - **(layout)** The waiting words are `read..write` when the ring is not
//!   wrapped (`end == UNWRAPPED`, `read <= write`); when it is
//!   (`write < read <= end < buf.len()`), they are `read..end`, then a
//!   `Wrap` entry at `end`, then `0..write`. They are a sequence of
//!   entries, none crossing the end of a stretch. Each starts with a
//!   `&'static VTable<C>` made for its envelope type `E`, followed by
//!   `VTable::words - 1` words holding an initialized `E`, with
//!   `align_of::<E>() <= 8`. Other words hold nothing. `limit` is below
//!   `buf.len()` (the last word is kept for a `Wrap` entry), and, wrapped,
//!   below `read`: a push that ends at `limit` or before stays clear of
//!   both.
//! - **(ownership)** An entry's envelope is owned by the queue until the
//!   cursor moves past it; the cursor moves *before* the envelope is read
//!   out (to be delivered or dropped), so a panic while delivering or dropping
//!   never leaves an entry that would be read or dropped twice.
//! - **(no raw pointer across user code)** A pointer into the buffer is made,
//!   used to move the envelope out, and forgotten before the envelope's
//!   `deliver` (the only way to reach user code or the owner of the queue)
//!   runs; so the delivery may push (and grow or move the buffer) freely.
//! - **(look-ahead)** If `ahead >= read`, it is the start of an entry of
//!   the reader's stretch or that stretch's end (`write`, or wrapped,
//!   `end`): it moves by whole entries from `read`, goes back to the start
//!   with the reader, and moves with the words when the buffer grows. Hints are read in place from entries past the front, through a
//!   shared reference, while nothing else runs: the context is given the
//!   hint (a copy) after the read, and only `&C`.
//! - **(lent)** A [`Lent`] is a `&'a M` with its type erased: it records
//!   `TypeId::of::<M>()` beside the pointer and gives the reference back only
//!   as that same `M`, for no longer than `'a`.

#![allow(unsafe_code)]

use std::any::TypeId;
use std::marker::PhantomData;
use std::mem::{MaybeUninit, align_of, size_of};

mod envelope;
mod room;
use envelope::Boxed;
pub(crate) use envelope::{Envelope, LOOK_AHEAD, LookAhead, Owner};
use room::Wrap;

/// A message lent to its handlers, its type erased: a `&'a M` that can be
/// had back only as a `&'a M`. Like `&dyn Any`, but the check is a compare
/// with a constant, not a call through a vtable (a handler runs once per
/// delivery). Two words, so it is passed in registers: the type is named
/// by the function `TypeId::of::<M>`.
#[derive(Clone, Copy)]
pub(crate) struct Lent<'a> {
    type_id: fn() -> TypeId,
    message: *const (),
    _borrow: PhantomData<&'a ()>,
}

impl<'a> Lent<'a> {
    /// Lends `message`.
    #[inline(always)]
    pub(crate) fn new<M: 'static>(message: &'a M) -> Lent<'a> {
        Lent {
            type_id: TypeId::of::<M>,
            message: (message as *const M).cast(),
            _borrow: PhantomData,
        }
    }

    /// The message, if it is an `M`.
    #[inline(always)]
    pub(crate) fn get<M: 'static>(self) -> Option<&'a M> {
        // The same function (usually: one per type in the binary) returns
        // the same `TypeId`; another one (a copy in another codegen unit)
        // is asked, out of line, so that the caller keeps nothing across a
        // call (the message's address comes back as the result).
        let of_m: fn() -> TypeId = TypeId::of::<M>;
        if !std::ptr::fn_addr_eq(self.type_id, of_m) {
            return self.get_asked();
        }
        // SAFETY (lent): `message` came from a `&'a M'` in `new`, with
        // `type_id` the function `TypeId::of::<M'>`, here `TypeId::of::<M>`
        // (the same code gives the same value): so `M' == M` (both
        // `'static`); the borrow lives for `'a`, which the returned
        // reference does not outlive.
        Some(unsafe { &*self.message.cast::<M>() })
    }

    /// [`get`](Self::get) by asking the lender's function for its `TypeId`.
    #[cold]
    #[inline(never)]
    fn get_asked<M: 'static>(self) -> Option<&'a M> {
        // SAFETY (lent): as in `get`, `type_id` (of `M'`) returned
        // `TypeId::of::<M>()`, so `M' == M`.
        ((self.type_id)() == TypeId::of::<M>()).then(|| unsafe { &*self.message.cast::<M>() })
    }
}

const LOOK_WORDS: usize = 3 * LOOK_AHEAD;

/// Asks the processor to bring the cache line of `value` in: a hint, which
/// reads nothing the program sees (a no-op but on x86-64).
#[inline(always)]
pub(crate) fn prefetch<T: ?Sized>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch reads no memory the program sees and never
        // faults, whatever the address; this one is a live reference's.
        // Its target feature (SSE) is part of x86-64's baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

type Word = MaybeUninit<u64>;
const WORD: usize = size_of::<Word>();

/// What the queue knows of one envelope type.
struct VTable<C> {
    /// Moves the envelope out of `payload` and delivers it.
    deliver: unsafe fn(payload: *mut Word, ctx: &mut C),
    /// Drops the envelope at `payload` in place.
    drop: unsafe fn(payload: *mut Word),
    /// Words of the whole entry, header included.
    words: usize,
    /// The envelope's [`Envelope::hint`], read in place, if it has one.
    hint: Option<unsafe fn(payload: *const Word) -> u64>,
}

struct Table<C, E>(PhantomData<fn(C, E)>);

impl<C: Owner, E: Envelope<C>> Table<C, E> {
    const VTABLE: &'static VTable<C> = &VTable {
        deliver: deliver::<C, E>,
        drop: drop_in_place::<E>,
        words: 1 + size_of::<E>().div_ceil(WORD),
        hint: if E::HINTS { Some(hint::<C, E>) } else { None },
    };
}

/// # Safety
/// `payload` points to an initialized `E` that the caller gives up (invariant
/// "ownership": the entry is already behind the cursor).
unsafe fn deliver<C, E: Envelope<C>>(payload: *mut Word, ctx: &mut C) {
    // SAFETY: (layout) the words at `payload` hold an initialized `E`,
    // aligned (align_of::<E>() <= 8 = the words' alignment); (ownership) the
    // caller moved the cursor past this entry, so nothing reads it again and
    // this read is its only move. The pointer is not used after this line.
    let envelope = unsafe { read_by_words::<E>(payload) };
    envelope.deliver(ctx);
}

/// # Safety
/// `payload` points to an initialized `E` that the queue still owns.
unsafe fn hint<C, E: Envelope<C>>(payload: *const Word) -> u64 {
    // SAFETY: (layout) the words at `payload` hold an initialized, aligned
    // `E`, owned by the queue (ownership: the entry is at or past the read
    // cursor), and borrowed only for this call (look-ahead: nothing moves
    // or drops it meanwhile).
    unsafe { &*payload.cast::<E>() }.hint()
}

/// Envelopes up to this size are read out of the buffer a word at a time.
const BY_WORDS: usize = 8 * WORD;

/// Reads the `E` at `payload` out, as `payload.cast::<E>().read()` does,
/// but, for a small `E`, in 8-byte loads, never wider.
///
/// Why: an envelope is usually read right after it was written (an actor
/// sends, the loop delivers next), by stores of its fields, 4 or 8 bytes
/// each. A plain read copies it with 16-byte loads, and a load that spans
/// several recent stores cannot take its bytes from them: it waits until
/// they reach the cache. Loads no wider than the stores avoid that wait
/// (w1: 56 M messages/s with 16-byte loads, 90 M with these). Volatile
/// loads, because the compiler would otherwise merge them back.
///
/// # Safety
/// As [`deliver`]: `payload` points to an initialized, 8-byte-aligned `E`
/// that the caller gives up.
#[inline(always)]
unsafe fn read_by_words<E>(payload: *mut Word) -> E {
    let size = size_of::<E>();
    if size > BY_WORDS {
        // SAFETY: the caller's (layout) and (ownership), as in `deliver`.
        return unsafe { payload.cast::<E>().read() };
    }
    let mut out = MaybeUninit::<E>::uninit();
    let dst = out.as_mut_ptr().cast::<u8>();
    let mut at = 0;
    while at + WORD <= size {
        // SAFETY: (layout) bytes `at..at + 8` are inside the `E` at
        // `payload` (8-aligned, as `payload` is) and inside `out`; read as
        // `MaybeUninit` words, so padding bytes may be uninitialized.
        unsafe {
            let word = payload.cast::<u8>().add(at).cast::<Word>().read_volatile();
            dst.add(at).cast::<Word>().write_unaligned(word);
        }
        at += WORD;
    }
    while at < size {
        // SAFETY: (layout) byte `at` is inside the `E` and inside `out`,
        // read as a `MaybeUninit` byte.
        unsafe {
            let byte = payload.cast::<MaybeUninit<u8>>().add(at).read_volatile();
            dst.add(at).cast::<MaybeUninit<u8>>().write(byte);
        }
        at += 1;
    }
    // SAFETY: every byte of the `E` was copied from an initialized `E`
    // (ownership: this is its only move; the caller never reads it again).
    unsafe { out.assume_init() }
}

/// # Safety
/// As [`deliver`]: `payload` points to an initialized `E` given up by the caller.
unsafe fn drop_in_place<E>(payload: *mut Word) {
    // SAFETY: (layout) an initialized, aligned `E`; (ownership) the cursor
    // moved past it first, so it is dropped exactly once.
    unsafe { payload.cast::<E>().drop_in_place() }
}

/// `Queue::end` of a ring that is not wrapped.
const UNWRAPPED: usize = usize::MAX;

/// The FIFO queue of envelopes delivered to a context `C`.
///
/// `repr(C)`: what a push and a delivery read (the buffer's address,
/// `read`, `write`, `limit`) comes first, together.
#[repr(C)]
pub(crate) struct Queue<C: Owner> {
    /// The ring: every word of it usable, its length its capacity (the
    /// words need no initializing), so that growing reallocates in place
    /// where the allocator can.
    buf: Vec<Word>,
    /// The oldest entry.
    read: usize,
    /// Where the next entry goes.
    write: usize,
    /// A push whose entry ends at or before this needs no room made:
    /// below the buffer's length (its last word is kept for a `Wrap`
    /// entry), or wrapped, below `read` as last seen (the reader only
    /// moves away from it).
    limit: usize,
    /// The next entry to look ahead at (see [`LookAhead`]), when at or
    /// past `read`; otherwise behind, and moved up first. At the end of the
    /// reader's stretch: no look-ahead until more entries come.
    ahead: usize,
    /// Wrapped: where the entries from `read` end, and a `Wrap` entry
    /// sends the reader to the start (the others are from the start to
    /// `write`). Else [`UNWRAPPED`].
    end: usize,
    /// The most words used since the queue was last found empty or its
    /// writer last went back to the start (as seen when the buffer was
    /// full at its end, or found empty).
    burst: usize,
    /// The most words the buffer had to grow to hold since the queue was
    /// last found empty (`shrink_while_busy`).
    grown: usize,
    /// Words copied by growing or shrinking so far (for the tests).
    #[cfg(test)]
    copied: usize,
    _ctx: PhantomData<fn(&mut C)>,
    /// The envelopes need not be `Send` or `Sync` (an `Rc` in a message, an
    /// actor's cell in a handler's closure): neither is the queue.
    _not_send: PhantomData<*const ()>,
}

impl<C: Owner> Default for Queue<C> {
    fn default() -> Self {
        Queue {
            buf: Vec::new(),
            read: 0,
            write: 0,
            end: UNWRAPPED,
            limit: 0,
            ahead: 0,
            burst: 0,
            grown: 0,
            #[cfg(test)]
            copied: 0,
            _ctx: PhantomData,
            _not_send: PhantomData,
        }
    }
}

impl<C: Owner> Queue<C> {
    /// Appends an envelope at the back of the FIFO.
    #[inline]
    pub(crate) fn push<E: Envelope<C>>(&mut self, envelope: E) {
        if align_of::<E>() > WORD {
            self.push_inline(Boxed(Box::new(envelope)));
        } else {
            self.push_inline(envelope);
        }
    }

    /// Whether an `E` is pushed without making room first: a caller with
    /// a slow path may take it there when not, so that its common case
    /// makes no call (`make_room`) and keeps nothing across one.
    #[inline(always)]
    pub(crate) fn has_room<E: Envelope<C>>(&self) -> bool {
        align_of::<E>() > WORD || self.write + Table::<C, E>::VTABLE.words <= self.limit
    }

    #[inline]
    fn push_inline<E: Envelope<C>>(&mut self, envelope: E) {
        assert!(
            align_of::<E>() <= WORD,
            "over-aligned envelopes are boxed by `push`"
        );
        let vtable = Table::<C, E>::VTABLE;
        // `write + words` cannot overflow (`write <= buf.len() <=
        // isize::MAX`, `words` is small); written so, the check is one add
        // and one compare, not a subtraction too.
        if self.write + vtable.words > self.limit {
            self.make_room(vtable.words);
        }
        let at = self.write;
        // SAFETY: `make_room` (or the check against `limit`) left room for
        // `vtable.words` words from `at`, inside the buffer and, wrapped,
        // before `read` (layout); the header word and the envelope's words
        // are written before `write` takes them in, so (layout) holds for
        // the new entry: a header for `E`, then an `E` at an 8-aligned
        // address (the buffer's words are 8-aligned and `align_of::<E>() <=
        // 8`, asserted above; the assert is decided at compile time).
        unsafe {
            let base = self.buf.as_mut_ptr().add(at);
            base.cast::<&'static VTable<C>>().write(vtable);
            base.add(1).cast::<E>().write(envelope);
        }
        self.write = at + vtable.words;
    }

    /// Ends the back stretch at `write` with a [`Wrap`] entry, and sends
    /// the writer to the start of the buffer, with room up to the reader
    /// (`read` is past the room needed: the caller checked).
    pub(super) fn wrap_writer(&mut self) {
        assert!(self.write < self.buf.len() && self.read > 0);
        // SAFETY: `write < buf.len()` (asserted: a not wrapped ring keeps
        // its last word free, see `limit`), so the header word of a `Wrap`
        // entry (one word: the envelope is zero-sized) fits there (layout).
        unsafe {
            let base = self.buf.as_mut_ptr().add(self.write);
            base.cast::<&'static VTable<C>>()
                .write(Table::<C, Wrap>::VTABLE);
        }
        self.end = self.write;
        self.write = 0;
        self.limit = self.read - 1;
    }

    /// The end of the stretch the reader is in: `write`, or wrapped, `end`.
    #[inline(always)]
    fn stretch_end(&self) -> usize {
        if self.read <= self.write {
            self.write
        } else {
            self.end
        }
    }

    /// Takes the oldest entry off the queue: its table and where its envelope
    /// is. The cursor has moved past it (invariant "ownership"), so the
    /// caller must move the envelope out before anything else touches the
    /// queue, and must not keep the pointer.
    ///
    /// The cursor is not moved back to the start when the queue empties
    /// (that would cost a few instructions per message where one message at
    /// a time waits): pushes go on after it, until `make_room` finds the
    /// queue empty at the end of the buffer, or the queue is found empty
    /// here.
    #[inline]
    fn take_front(&mut self) -> Option<(&'static VTable<C>, *mut Word)> {
        if self.read == self.write {
            // Empty (never while wrapped: then `write < read`), and no
            // pointer into the buffer is live: start again from the
            // beginning, and give memory back after a burst.
            self.found_empty();
            return None;
        }
        // SAFETY: (layout) with an entry waiting, `read` is the start of an
        // entry: its first word is the header written by `push_inline`, and
        // the entry's words lie within the buffer.
        let (vtable, payload) = unsafe {
            let base = self.buf.as_mut_ptr().add(self.read);
            let vtable = base.cast::<&'static VTable<C>>().read();
            (vtable, base.add(1))
        };
        self.read += vtable.words;
        Some((vtable, payload))
    }

    /// Delivers the oldest entry to `ctx`, which owns this queue. `false`
    /// if the queue was empty.
    #[inline]
    pub(crate) fn run_next(ctx: &mut C) -> bool {
        let Some((vtable, payload)) = ctx.queue().take_front() else {
            return false;
        };
        // SAFETY: `payload` holds the initialized envelope of the entry just
        // taken (layout), given up by the queue (ownership: the cursor moved
        // past it, and the words stay until the next push or `take_front`).
        // `deliver` moves it out before it
        // uses `ctx`, and the pointer is not kept: whatever the delivery does
        // to the queue (push, grow, clear), it no longer refers to these words.
        unsafe { (vtable.deliver)(payload, ctx) };
        true
    }

    /// Looks ahead ([`LookAhead`]) if other entries wait behind the one
    /// being delivered: it gives `ctx` the hints of the next one or two of
    /// them not given yet, up to [`LOOK_AHEAD`] entries behind it (one per
    /// delivery in a steady stream, once the window is full). For the
    /// `deliver` of an envelope type whose deliveries come in bursts to
    /// many places (a user message's), so that the others (a ping-pong's
    /// routed messages, the system's) pay nothing.
    #[inline(always)]
    pub(crate) fn look_ahead(ctx: &mut C)
    where
        C: LookAhead,
    {
        let q = ctx.queue();
        if q.read != q.write && q.ahead < q.stretch_end() {
            Self::look(ctx);
        }
    }

    /// Gives `ctx` the hint of the next entry to look ahead at, and of
    /// one more while the window fills (out of line: the delivery that
    /// asks keeps its registers). The delivering envelope was moved out of
    /// the queue already, and `ctx` is given only `&C`: nothing else
    /// touches the queue meanwhile (look-ahead).
    #[inline(never)]
    fn look(ctx: &mut C)
    where
        C: LookAhead,
    {
        for _ in 0..2 {
            let q = ctx.queue();
            let Some((hint, filling)) = q.next_hint() else {
                return;
            };
            if !ctx.look_ahead(hint) {
                // Every entry waiting now counts as looked at.
                let q = ctx.queue();
                q.ahead = q.stretch_end();
                return;
            }
            if !filling {
                return;
            }
        }
    }

    /// The hint of the next entry to look ahead at (`ahead`, moved up to
    /// `read` if behind it) if it starts within [`LOOK_WORDS`] words of
    /// `read`, and whether the window has room after it (it is filling);
    /// `None` for an entry without a hint, which ends the look at the
    /// entries waiting now. Wrapped, the look stops at the `Wrap` entry,
    /// and goes on at the start with the reader (the first entry there is
    /// delivered before any look sees it).
    #[inline(always)]
    fn next_hint(&mut self) -> Option<(u64, bool)> {
        let at = self.ahead.max(self.read);
        let stretch_end = self.stretch_end();
        if at >= stretch_end || at >= self.read + LOOK_WORDS {
            return None;
        }
        // SAFETY: (look-ahead) `at`, at or past `read` and before the end of
        // the reader's stretch, is the start of an entry (layout).
        let vtable = unsafe { self.header(at) };
        self.ahead = at + vtable.words;
        let Some(hint) = vtable.hint else {
            // An entry without a hint (a system message, say): none of
            // the entries waiting now are looked at.
            self.ahead = stretch_end;
            return None;
        };
        let filling = self.ahead < self.read + LOOK_WORDS;
        // SAFETY: (layout) the entry's envelope follows its header,
        // initialized and owned by the queue (past the cursor); it is read
        // in place, and nothing else touches the queue during the call.
        Some((unsafe { hint(self.buf.as_ptr().add(at + 1)) }, filling))
    }

    /// The table of the entry at word `at`.
    ///
    /// # Safety
    /// `at` is the start of an entry (layout).
    #[inline(always)]
    unsafe fn header(&self, at: usize) -> &'static VTable<C> {
        // SAFETY: the caller's: the first word of an entry is its header,
        // written by `push_inline`.
        unsafe {
            self.buf
                .as_ptr()
                .add(at)
                .cast::<&'static VTable<C>>()
                .read()
        }
    }

    /// Entries waiting (counted by walking them: for reports, not for the
    /// hot path).
    pub(crate) fn len(&self) -> usize {
        let mut n = 0;
        for stretch in self.stretches() {
            let mut at = stretch.start;
            while at < stretch.end {
                // SAFETY: (layout) `at` is the start of an entry (the
                // stretch's start, or the end of the previous entry).
                at += unsafe { self.header(at) }.words;
                n += 1;
            }
        }
        n
    }

    /// `true` if nothing is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.read == self.write
    }

    /// Drops every waiting envelope, oldest first, and frees the buffer.
    /// If a drop panics, the rest stay queued (and are dropped with the queue).
    pub(crate) fn clear(&mut self) {
        loop {
            if self.read == self.end {
                // The `Wrap` entry: nothing to drop.
                self.unwrap_reader();
            }
            let Some((vtable, payload)) = self.take_front() else {
                break;
            };
            // SAFETY: as in `run_next`: an initialized envelope, given up by
            // the queue; dropped once, and the pointer is not kept (the
            // buffer is not touched until the next `take_front`).
            unsafe { (vtable.drop)(payload) };
        }
        // Empty: `take_front` put both cursors at the start.
        self.buf = Vec::new();
        self.limit = self.free_limit();
    }

    /// Bytes held by the buffer (for size reports).
    #[cfg(test)]
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.buf.len() * WORD
    }
}

impl<C: Owner> Drop for Queue<C> {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "queue_look_tests.rs"]
mod look_tests;

//! How the queue's ring makes room and gives memory back: safe code over
//! the queue's fields (its invariants are the queue's: entries in the
//! stretches `read..write`, or `read..end` and `0..write`, copied only
//! whole and in order).

use super::{Envelope, Owner, Queue, UNWRAPPED, Word};

/// Words the buffer keeps whatever its use: above this, an emptied buffer
/// used to less than a quarter of its capacity gives half of it back.
pub(super) const KEEP_WORDS: usize = 1024;

/// Words the buffer takes at least when it grows: a queue where one message
/// at a time waits then starts again from the beginning once per
/// `MIN_WORDS` words of messages (2 KiB: w1 makes room once per 51
/// messages, not once per 12 as with 64 words).
pub(super) const MIN_WORDS: usize = 256;

/// The entry that ends the back stretch of a wrapped ring (at `end`): its
/// delivery sends the reader to the start of the buffer and delivers the
/// entry there (there is one: the ring wraps for a push). So the reader's
/// way through the ring is the same code as through a buffer: no check of
/// its own per entry.
pub(super) struct Wrap;

impl<C: Owner> Envelope<C> for Wrap {
    fn deliver(self, ctx: &mut C) {
        ctx.queue().unwrap_reader();
        let delivered = Queue::run_next(ctx);
        debug_assert!(delivered, "the ring wrapped for a push");
    }
}

impl<C: Owner> Queue<C> {
    /// Makes room for `words` more words at `write`: by starting again
    /// from the beginning if the queue is empty; else, at the end of the
    /// buffer, by going on at the start if the reader left room there
    /// (wrapping the ring) or, wrapped, behind the reader as it is now;
    /// else by growing (to twice the size, and [`MIN_WORDS`], at least):
    /// the buffer is reallocated, and a wrapped ring's entries at the
    /// start are copied to follow the others.
    ///
    /// So a busy queue copies its entries only when it grows: once per
    /// doubling, however slowly its backlog grows (a buffer whose entries
    /// moved to its start when it filled copied about eight words per word
    /// pushed, under a producer a little faster than its consumer).
    #[cold]
    #[inline(never)]
    pub(super) fn make_room(&mut self, words: usize) {
        let waiting = self.waiting_words();
        self.burst = self.burst.max(waiting + words);
        if self.read == self.write {
            // Empty: every entry was moved out already (ownership), nothing
            // to drop.
            self.read = 0;
            self.write = 0;
            self.ahead = 0;
            self.limit = self.free_limit();
        } else if self.end != UNWRAPPED {
            // Wrapped: the reader moved on since `limit` was set.
            self.limit = self.read - 1;
        } else if words < self.read {
            // At the end, with room before the reader: wrap, unless the
            // buffer is far larger than its use (then the entries move to
            // the start of a smaller one).
            if !self.shrink_while_busy(waiting + words) {
                self.wrap_writer();
            }
        }
        if self.write + words > self.limit {
            let need = waiting + words;
            self.grown = self.grown.max(need);
            // A word more than needed: the last one stays free (`free_limit`).
            let size = (need + 1).max(2 * self.buf.len()).max(MIN_WORDS);
            self.grow(size);
        }
    }

    /// The reader took the [`Wrap`] entry at `end`: it goes on at the start
    /// of the buffer, as the look-ahead does; the ring is not wrapped now.
    pub(super) fn unwrap_reader(&mut self) {
        self.read = 0;
        self.ahead = 0;
        self.end = UNWRAPPED;
        self.limit = self.free_limit();
    }

    /// `limit` of a ring that is not wrapped: the buffer's last word is
    /// kept free for a [`Wrap`] entry.
    pub(super) fn free_limit(&self) -> usize {
        self.buf.len().saturating_sub(1)
    }

    /// The stretches of waiting words, oldest first: `read..write`, or
    /// wrapped, `read..end` and `0..write`.
    pub(super) fn stretches(&self) -> [std::ops::Range<usize>; 2] {
        if self.read <= self.write {
            [self.read..self.write, 0..0]
        } else {
            [self.read..self.end, 0..self.write]
        }
    }

    /// Words in use by waiting entries.
    fn waiting_words(&self) -> usize {
        let [back, front] = self.stretches();
        back.len() + front.len()
    }

    /// Grows the buffer to `size` words (more than the waiting words) by
    /// reallocating it (in place where the allocator can; else its words
    /// are copied, in place): (layout) the entries keep their positions;
    /// a wrapped ring's front stretch is then copied to follow its back
    /// stretch, over the `Wrap` entry, and the ring is not wrapped any
    /// more; (look-ahead) `ahead`, in the back stretch, stays.
    fn grow(&mut self, size: usize) {
        let old = self.buf.len();
        self.buf.reserve_exact(size - old);
        self.buf.resize(self.buf.capacity(), Word::uninit());
        if self.end != UNWRAPPED {
            let (end, front) = (self.end, self.write);
            // `front <= read - 1 < end`: the stretches do not overlap, and
            // `end + front < old + read <= size`.
            self.buf.copy_within(0..front, end);
            self.note_copied(front);
            self.write = end + front;
            self.end = UNWRAPPED;
        }
        self.limit = self.free_limit();
    }

    /// Copies the waiting entries, in order, to the start of a new buffer
    /// of `size` words (more than the waiting words), which replaces the
    /// buffer: (layout) they are whole entries, copied as words, and the
    /// old buffer's words are not read again; (look-ahead) `ahead` moves
    /// with them.
    fn relocate(&mut self, size: usize) {
        let mut buf = vec![Word::uninit(); size];
        let [back, front] = self.stretches();
        // (layout) The stretches hold the entries (a `Wrap` entry is left out).
        let copied = back.len() + front.len();
        buf[..back.len()].copy_from_slice(&self.buf[back.clone()]);
        buf[back.len()..copied].copy_from_slice(&self.buf[front]);
        // `ahead`, at or past `read`, is in the back stretch (or its end):
        // the same entry, `read` words earlier.
        self.ahead = self.ahead.saturating_sub(back.start);
        self.note_copied(copied);
        self.buf = buf;
        self.read = 0;
        self.write = copied;
        self.end = UNWRAPPED;
        self.limit = self.free_limit();
    }

    /// Counts words copied (for the tests).
    #[inline(always)]
    fn note_copied(&mut self, _words: usize) {
        #[cfg(test)]
        {
            self.copied += _words;
        }
    }

    /// The writer is at the end of the buffer and would go back to its
    /// start (`now`: the words in use then): instead, give half of the
    /// buffer back if what was used since the last time took less than an
    /// eighth of it, and the buffer has not grown since the queue was last
    /// found empty (the entries move to the start of the new one). A queue
    /// that never empties (a feeder's turns, each queued behind the
    /// messages of the turn before) walks its whole ring; after a burst,
    /// that would be memory far larger than what waits, every line of it
    /// written and read again from beyond the cache. An eighth, so that the
    /// buffer stays at least four times what waits, and such a move copies
    /// a third of a word per word pushed at most. `true` if it shrank.
    ///
    /// What was used is seen only when the writer reaches the end, so a
    /// turn's peak may fall between two: the buffer may then shrink below
    /// it, and grow again. That growth keeps it from shrinking again while
    /// the queue does not empty (it would otherwise shrink and grow on
    /// every turn of a feeder whose turns fill it).
    fn shrink_while_busy(&mut self, now: usize) -> bool {
        let size = self.buf.len();
        let shrink = size > KEEP_WORDS && self.burst.max(self.grown) < size / 8;
        if shrink {
            self.relocate(size / 2);
        }
        self.burst = now;
        shrink
    }

    /// The queue is empty (every entry was moved out): start again from the
    /// beginning of the buffer, and give half of it back if the last use
    /// (since the queue was last found empty) took less than a quarter.
    #[inline]
    pub(super) fn found_empty(&mut self) {
        if self.read > 0 {
            // Nothing to drop: every entry was moved out already (ownership).
            self.burst = self.burst.max(self.write);
            self.read = 0;
            self.write = 0;
            self.ahead = 0;
        }
        if self.buf.len() > KEEP_WORDS {
            self.shrink_after_burst();
        }
        self.burst = 0;
        self.grown = 0;
    }

    /// The queue is empty: give memory back if the last burst used less
    /// than a quarter of the buffer.
    #[cold]
    fn shrink_after_burst(&mut self) {
        let size = self.buf.len();
        if self.burst < size / 4 {
            // Nothing waits: the first half is kept, reallocated in place
            // (no new buffer, no copy of words that hold nothing).
            self.buf.truncate(size / 2);
            self.buf.shrink_to_fit();
            self.limit = self.free_limit();
        }
    }
}

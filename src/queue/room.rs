//! How the queue's buffer makes room and gives memory back: safe code
//! over the queue's fields (its invariants are the queue's: entries from
//! `read` to the end, moved only whole and in order).

use super::Queue;

/// Words the buffer keeps whatever its use: above this, an emptied buffer
/// used to less than a quarter of its capacity gives half of it back.
pub(super) const KEEP_WORDS: usize = 1024;

/// Words the buffer takes at least when it grows: a queue where one message
/// at a time waits then starts again from the beginning once per
/// `MIN_WORDS` words of messages (2 KiB: w1 makes room once per 51
/// messages, not once per 12 as with 64 words).
pub(super) const MIN_WORDS: usize = 256;

impl<C: 'static> Queue<C> {
    /// Makes room for `words` more words: by starting again from the
    /// beginning if the queue is empty, else by moving the waiting entries
    /// to the start, else by growing (to [`MIN_WORDS`] at least).
    ///
    /// A backlog that grows slowly (a producer a little faster than its
    /// consumer) is moved again and again as it fills more of the buffer:
    /// about eight words copied per word pushed before the buffer grows.
    /// Growing at a move instead (once what waits
    /// fills four fifths of the buffer: under two words) was measured in
    /// session 11 and not kept: the buffer then holds one doubling more
    /// after a burst (heap per idle actor 299 → 333 bytes, per live entity
    /// 745 → 787).
    #[cold]
    #[inline(never)]
    pub(super) fn make_room(&mut self, words: usize) {
        let waiting = self.words.len() - self.read;
        self.burst = self.burst.max(waiting + words);
        if self.read == self.words.len() {
            // Every entry was moved out already (ownership): nothing to drop.
            self.words.clear();
            self.read = 0;
            self.ahead = 0;
        } else if self.read > 0 {
            // Moving the entries keeps (layout): the same words, in the same
            // order, at an 8-aligned start; words before the start are gone.
            // (look-ahead) `ahead` moves with them (behind `read`: to the start).
            self.words.drain(..self.read);
            self.ahead = self.ahead.saturating_sub(self.read);
            self.read = 0;
            self.shrink_while_busy(waiting + words);
        }
        if self.words.capacity() - self.words.len() < words {
            self.grown = self.grown.max(self.words.len() + words);
            self.words.reserve(words.max(MIN_WORDS));
        }
    }

    /// The waiting entries were moved to the start of a full buffer
    /// (`now`: the words in use then): give half of it back if what was
    /// used since the last move took less than an eighth of it, and the
    /// buffer has not grown since the queue was last found empty. A queue
    /// that never empties (a feeder's turns, each queued behind the
    /// messages of the turn before) walks its whole buffer between two
    /// moves; after a burst, that would be memory far larger than what
    /// waits, every line of it written and read again from beyond the
    /// cache. An eighth, so that the buffer stays at least four times what
    /// waits, and a move copies a third of a word per word pushed at most.
    ///
    /// What was used is seen only at a move, so a turn's peak may fall
    /// between two: the buffer may then shrink below it, and grow again.
    /// That growth keeps it from shrinking again while the queue does not
    /// empty (it would otherwise shrink and grow on every turn of a feeder
    /// whose turns fill it).
    fn shrink_while_busy(&mut self, now: usize) {
        let capacity = self.words.capacity();
        if capacity > KEEP_WORDS && self.burst.max(self.grown) < capacity / 8 {
            self.words.shrink_to(capacity / 2);
        }
        self.burst = now;
    }

    /// The queue is empty (every entry was moved out): start again from the
    /// beginning of the buffer, and give half of it back if the last use
    /// (since the queue was last found empty) took less than a quarter.
    #[inline]
    pub(super) fn found_empty(&mut self) {
        if self.read > 0 {
            // Nothing to drop: every entry was moved out already (ownership).
            self.burst = self.burst.max(self.words.len());
            self.words.clear();
            self.read = 0;
            self.ahead = 0;
        }
        if self.words.capacity() > KEEP_WORDS {
            self.shrink_after_burst();
        }
        self.burst = 0;
        self.grown = 0;
    }

    /// The queue is empty: give memory back if the last burst used less
    /// than a quarter of the buffer.
    #[cold]
    fn shrink_after_burst(&mut self) {
        let capacity = self.words.capacity();
        if self.burst < capacity / 4 {
            self.words.shrink_to(capacity / 2);
        }
    }
}

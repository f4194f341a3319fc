//! The bridge thread's wait before it sleeps.
//!
//! A bridge thread that has just handed work to a locality (requests to
//! serve, replies to read) is likely to get work back from it within
//! microseconds: the service's answer, the requester's next request, the
//! window's ack. Sleeping in `epoll` then costs a wake-up on each side (the
//! locality's wake of the runtime, and the scheduler's trip back), which on
//! a small VM is tens of microseconds. So before it parks, the bridge thread
//! looks for a task woken from another thread (the runtime's global queue)
//! for a little while, yielding the CPU between looks, but only after a
//! hand-off, and only while such waits pay off: each wait that times out
//! doubles the number of parks that skip it (up to 63), and one that finds
//! work resets that.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;

/// The longest the bridge thread waits for a locality's work before it
/// sleeps (a locality that sleeps itself takes about this long to wake,
/// dispatch and answer on a 2-vCPU VM).
pub(crate) const BRIDGE_SPIN: Duration = Duration::from_micros(60);

thread_local! {
    /// Set when this thread handed work to a locality since it last parked.
    static HANDED: Cell<bool> = const { Cell::new(false) };
}

/// Work was handed to a locality from this thread (a bridge thread, or the
/// caller's runtime, where nothing reads it).
pub(crate) fn handed_off() {
    HANDED.with(|h| h.set(true));
}

/// The bridge thread's `on_thread_park`: see the module.
#[derive(Default)]
pub(crate) struct Spin {
    pub(crate) handle: OnceLock<Handle>,
    /// Waits that timed out in a row (at most 6).
    misses: AtomicU32,
    /// Parks left that skip the wait.
    skip: AtomicU32,
}

impl Spin {
    pub(crate) fn before_park(&self) {
        if !HANDED.with(|h| h.replace(false)) {
            return;
        }
        let skip = self.skip.load(Ordering::Relaxed);
        if skip > 0 {
            self.skip.store(skip - 1, Ordering::Relaxed);
            return;
        }
        let Some(handle) = self.handle.get() else {
            return;
        };
        let metrics = handle.metrics();
        let until = Instant::now() + BRIDGE_SPIN;
        loop {
            if metrics.global_queue_depth() > 0 {
                self.misses.store(0, Ordering::Relaxed);
                return;
            }
            if Instant::now() >= until {
                break;
            }
            std::thread::yield_now();
        }
        let misses = (self.misses.load(Ordering::Relaxed) + 1).min(6);
        self.misses.store(misses, Ordering::Relaxed);
        self.skip.store((1 << misses) - 1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::{Spin, handed_off};
    use std::sync::atomic::Ordering;

    fn state(spin: &Spin) -> (u32, u32) {
        (
            spin.misses.load(Ordering::Relaxed),
            spin.skip.load(Ordering::Relaxed),
        )
    }

    #[test]
    fn the_bridge_waits_only_after_a_hand_off_and_only_while_waiting_pays_off() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let spin = Spin::default();
        assert!(spin.handle.set(runtime.handle().clone()).is_ok());
        // Nothing handed off: no wait.
        spin.before_park();
        assert_eq!(state(&spin), (0, 0));
        // A wait that finds nothing: the next park skips it.
        handed_off();
        spin.before_park();
        assert_eq!(state(&spin), (1, 1));
        handed_off();
        spin.before_park();
        assert_eq!(state(&spin), (1, 0), "skipped");
        handed_off();
        spin.before_park();
        assert_eq!(state(&spin), (2, 3), "twice as many skipped");
        for _ in 0..3 {
            handed_off();
            spin.before_park();
        }
        // Then one that finds a task woken from another thread (this one:
        // the runtime is not running here, so the task waits in its global
        // queue).
        let task = runtime.spawn(async {});
        handed_off();
        spin.before_park();
        assert_eq!(state(&spin), (0, 0), "found work: no skip");
        // At most 63 parks skip.
        drop(runtime);
        drop(task);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let spin = Spin::default();
        assert!(spin.handle.set(runtime.handle().clone()).is_ok());
        spin.misses.store(6, Ordering::Relaxed);
        handed_off();
        spin.before_park();
        assert_eq!(state(&spin), (6, 63));
    }
}

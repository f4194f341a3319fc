//! Timers of a locality: what each one does when it fires, and firing them.

use super::Core;
use crate::actor::ActorState;
use crate::arena::Key;
use crate::lifecycle;
use crate::timer::{Due, Ticks, TimerId};
use std::time::{Duration, Instant};

/// A user callback, erased over the actor type.
pub(crate) type UserTimerFn = Box<dyn FnOnce(&mut Core, Key, TimerId)>;

/// What happens when a timer fires.
pub(crate) enum TimerAction {
    /// A user callback on the owning actor.
    User(UserTimerFn),
    /// The owner's init did not finish in time.
    InitTimeout,
    /// The owner's shutdown did not finish in time.
    ShutdownTimeout,
    /// The owner (a supervisor) restarts its child in `slot`.
    Restart { slot: usize },
}

impl crate::timer::Action for TimerAction {
    /// A free slot's placeholder (never fired).
    fn vacant() -> Self {
        TimerAction::InitTimeout
    }
}

/// The longest timer: a longer one (`Duration::MAX`) is cut to a century,
/// so that no deadline overflows the clock.
const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Core {
    /// When a timer started now, `after` from now, is due.
    #[inline(always)]
    pub(crate) fn due(&mut self, after: Duration) -> Due {
        // At most a century: fits in ticks, from any clock reading.
        let after = after.min(CENTURY);
        let after = after.as_secs() * 1_000_000_000 + u64::from(after.subsec_nanos());
        let deadline = self.now_ticks.saturating_add(after as Ticks);
        let seq = self.timer_seq;
        self.timer_seq += 1;
        Due {
            deadline,
            after,
            seq,
        }
    }

    /// Starts a timer of `owner`, `after` from now (the locality's clock).
    pub(crate) fn start_timer(&mut self, after: Duration, owner: Key, action: TimerAction) -> Key {
        if self.actors.get(owner).is_none() {
            return Key::NONE; // no owner, nothing to time
        }
        let due = self.due(after);
        self.timers.start(due, owner, action)
    }

    /// Cancels a timer; `false` if it was not pending.
    pub(crate) fn cancel_timer(&mut self, key: Key) -> bool {
        self.timers.cancel(key).is_some()
    }

    /// The earliest deadline of a timer or a request.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let timer = self.timers.earliest().map(|(_, d, _)| d);
        let request = self.requests.earliest().map(|(_, d, _)| d);
        let ticks = match (timer, request) {
            (Some(t), Some(r)) => Some(t.min(r)),
            (t, r) => t.or(r),
        };
        ticks.map(|t| self.instant_of(t))
    }

    /// Sets the clock (`now` and its ticks).
    pub(crate) fn set_now(&mut self, now: Instant) {
        self.now = now;
        self.now_ticks = match now.checked_duration_since(self.epoch) {
            Some(d) => Ticks::try_from(d.as_nanos()).unwrap_or(Ticks::MAX),
            None => Ticks::try_from(self.epoch.duration_since(now).as_nanos())
                .map_or(Ticks::MIN, |t| -t),
        };
    }

    /// The instant of a reading in ticks (`now` if the platform's `Instant`
    /// cannot hold it).
    pub(crate) fn instant_of(&self, ticks: Ticks) -> Instant {
        let d = Duration::from_nanos(ticks.unsigned_abs());
        let at = if ticks >= 0 {
            self.epoch.checked_add(d)
        } else {
            self.epoch.checked_sub(d)
        };
        at.unwrap_or(self.now)
    }

    /// Fires the timers (and request timeouts) that were due when this round
    /// began, in deadline order (ties in start order), at most `limit` of
    /// them: one started meanwhile (even with no delay) waits for the next
    /// round.
    pub(super) fn fire_due_timers(&mut self, limit: usize) -> usize {
        let mut fired = 0;
        let round = self.timer_seq;
        while fired < limit {
            let timer = self.timers.earliest().map(|(_, d, s)| (d, s));
            let request = self.requests.earliest().map(|(_, d, s)| (d, s));
            let request_first = match (timer, request) {
                (Some(t), Some(r)) => r < t,
                (None, Some(_)) => true,
                _ => false,
            };
            if request_first {
                let Some((key, entry)) = self.requests.pop_due(self.now_ticks, round) else {
                    break;
                };
                self.requests.detach(&entry);
                crate::request::on_timeout(self, key, entry.action);
            } else {
                let Some((key, entry)) = self.timers.pop_due(self.now_ticks, round) else {
                    break;
                };
                self.timers.detach(&entry);
                self.fire(key, entry.owner, entry.action);
            }
            fired += 1;
            if self.is_finished() {
                break;
            }
        }
        fired
    }

    fn fire(&mut self, key: Key, owner: Key, action: TimerAction) {
        match action {
            TimerAction::User(callback) => callback(self, owner, TimerId(key)),
            TimerAction::InitTimeout => {
                lifecycle::on_lifecycle_timeout(self, owner, ActorState::Initializing)
            }
            TimerAction::ShutdownTimeout => {
                lifecycle::on_lifecycle_timeout(self, owner, ActorState::ShuttingDown)
            }
            TimerAction::Restart { slot } => {
                crate::supervisor::restart::restart_child(self, owner, slot)
            }
        }
    }
}

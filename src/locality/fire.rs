//! Timers of a locality: what each one does when it fires, and firing them.

use super::Core;
use crate::actor::ActorState;
use crate::arena::{Key, remove_key};
use crate::lifecycle;
use crate::timer::TimerId;
use std::time::Duration;

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
    /// A request of the owner got no reply in time.
    Request(Key),
    /// The owner (a supervisor) restarts its child in `slot`.
    Restart { slot: usize },
}

/// The longest timer: a longer one (`Duration::MAX`) is cut to a century,
/// so that no deadline overflows the clock.
const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Core {
    /// Starts a timer of `owner`, `after` from now (the locality's clock).
    pub(crate) fn start_timer(&mut self, after: Duration, owner: Key, action: TimerAction) -> Key {
        let after = after.min(CENTURY);
        let deadline = self.now.checked_add(after).unwrap_or(self.now);
        self.timers.start(deadline, after, owner, action)
    }

    /// Fires the timers that were due when this round began, at most
    /// `limit` of them: one started meanwhile (even with no delay) waits for
    /// the next round.
    pub(super) fn fire_due_timers(&mut self, limit: usize) -> usize {
        let mut fired = 0;
        let round = self.timers.round();
        while fired < limit {
            let Some((key, entry)) = self.timers.pop_due(self.now, round) else {
                break;
            };
            fired += 1;
            let owner = entry.owner;
            match entry.action {
                TimerAction::User(callback) => {
                    if let Some(rare) = self
                        .actors
                        .get_mut(owner)
                        .and_then(|cell| cell.rare.as_deref_mut())
                    {
                        remove_key(&mut rare.timers, key);
                    }
                    callback(self, owner, TimerId(key));
                }
                TimerAction::InitTimeout => {
                    lifecycle::on_lifecycle_timeout(self, owner, ActorState::Initializing)
                }
                TimerAction::ShutdownTimeout => {
                    lifecycle::on_lifecycle_timeout(self, owner, ActorState::ShuttingDown)
                }
                TimerAction::Request(request) => crate::request::on_timeout(self, request),
                TimerAction::Restart { slot } => {
                    crate::supervisor::restart::restart_child(self, owner, slot)
                }
            }
            if self.is_finished() {
                break;
            }
        }
        fired
    }
}

//! The messages an entity holds until it is live: the first one inline,
//! a queue only from the second on, so that making an entity on its first
//! message allocates nothing of the set's between two entities' spawns
//! (`docs/entities.md`, "Where the entities lie").

use super::instances::Held;
use std::collections::VecDeque;

/// One or more held messages, in arrival order (never empty).
pub(super) enum Pending {
    /// One message: no queue.
    One(Box<dyn Held>),
    /// Two or more (boxed: the record stays small).
    #[allow(clippy::box_collection)]
    Many(Box<VecDeque<Box<dyn Held>>>),
}

impl Pending {
    /// Appends `held` to what `slot` holds.
    pub(super) fn push(slot: &mut Option<Pending>, held: Box<dyn Held>) {
        *slot = Some(match slot.take() {
            None => Pending::One(held),
            Some(Pending::One(first)) => Pending::Many(Box::new(VecDeque::from([first, held]))),
            Some(Pending::Many(mut queue)) => {
                queue.push_back(held);
                Pending::Many(queue)
            }
        });
    }

    /// Takes the oldest message of `slot` (`None` once it is empty).
    pub(super) fn pop(slot: &mut Option<Pending>) -> Option<Box<dyn Held>> {
        match slot.take()? {
            Pending::One(held) => Some(held),
            Pending::Many(mut queue) => {
                let held = queue.pop_front();
                if !queue.is_empty() {
                    *slot = Some(Pending::Many(queue));
                }
                held
            }
        }
    }

    /// Removes the first message `matches` accepts; `true` if one was.
    pub(super) fn remove(slot: &mut Option<Pending>, matches: impl Fn(&dyn Held) -> bool) -> bool {
        match slot {
            None => false,
            Some(Pending::One(held)) => {
                let found = matches(held.as_ref());
                if found {
                    *slot = None;
                }
                found
            }
            Some(Pending::Many(queue)) => {
                let Some(at) = queue.iter().position(|h| matches(h.as_ref())) else {
                    return false;
                };
                drop(queue.remove(at));
                if queue.is_empty() {
                    *slot = None;
                }
                true
            }
        }
    }

    /// Everything held, oldest first.
    pub(super) fn drain(slot: Option<Pending>) -> impl Iterator<Item = Box<dyn Held>> {
        let (first, rest) = match slot {
            None => (None, VecDeque::new()),
            Some(Pending::One(held)) => (Some(held), VecDeque::new()),
            Some(Pending::Many(queue)) => (None, *queue),
        };
        first.into_iter().chain(rest)
    }
}

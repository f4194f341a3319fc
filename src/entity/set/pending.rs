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

#[cfg(test)]
mod tests {
    use super::{Held, Pending};
    use crate::arena::Key;
    use crate::error::Error;
    use crate::locality::Core;
    use crate::request::RequestId;

    /// A held message that names itself by its request id's locality.
    struct Tagged(u32);

    impl Held for Tagged {
        fn deliver(self: Box<Self>, _: &mut Core, _: Key, _: Key) -> bool {
            true
        }
        fn refuse(self: Box<Self>, _: &mut Core, _: Key, _: Error) {}
        fn request_id(&self) -> Option<RequestId> {
            Some(RequestId {
                locality: self.0,
                key: Key::NONE,
            })
        }
    }

    fn tag(held: &dyn Held) -> u32 {
        held.request_id().map_or(u32::MAX, |id| id.locality)
    }

    fn held(slot: &mut Option<Pending>, tags: &[u32]) {
        for &t in tags {
            Pending::push(slot, Box::new(Tagged(t)));
        }
    }

    #[test]
    fn held_messages_keep_arrival_order_one_or_many() {
        let mut slot = None;
        held(&mut slot, &[1]);
        assert!(matches!(slot, Some(Pending::One(_))), "one: no queue");
        assert_eq!(Pending::pop(&mut slot).map(|h| tag(h.as_ref())), Some(1));
        assert!(slot.is_none() && Pending::pop(&mut slot).is_none());
        held(&mut slot, &[1, 2, 3]);
        assert!(Pending::remove(&mut slot, |h| tag(h) == 2));
        assert!(!Pending::remove(&mut slot, |h| tag(h) == 2));
        held(&mut slot, &[4]);
        let order: Vec<u32> = std::iter::from_fn(|| Pending::pop(&mut slot))
            .map(|h| tag(h.as_ref()))
            .collect();
        assert_eq!(order, [1, 3, 4]);
        assert!(slot.is_none(), "emptied");
        held(&mut slot, &[5]);
        assert!(Pending::remove(&mut slot, |h| tag(h) == 5) && slot.is_none());
        held(&mut slot, &[6]);
        let one: Vec<u32> = Pending::drain(slot.take())
            .map(|h| tag(h.as_ref()))
            .collect();
        assert_eq!(one, [6]);
        held(&mut slot, &[7, 8]);
        let many: Vec<u32> = Pending::drain(slot.take())
            .map(|h| tag(h.as_ref()))
            .collect();
        assert_eq!(many, [7, 8]);
        assert_eq!(Pending::drain(None).count(), 0);
    }
}

//! The queue's look-ahead into the routing table (`queue::LookAhead`), in
//! two stages: an address's slot and record first, its handler's box a
//! few looks later.

use super::Routes;
use crate::arena::Key;
use std::cell::Cell;

/// Addresses this close (in index) to the last one looked ahead at are
/// not looked at ([`Routes::look_ahead`]).
const NEAR: u32 = 4;

/// Looks (one per delivery in a steady stream) between the one that
/// prefetches an address's record and the one that reads it and
/// prefetches its handler's box.
const TO_BOX: usize = 3;

/// Addresses kept for the second stage (a power of two over [`TO_BOX`]).
const RING: usize = 4;

/// A handler whose memory the look-ahead can bring in before its call.
pub(crate) trait Prefetch {
    /// Prefetches what a call of the handler reads first.
    fn prefetch(&self);
}

/// A boxed handler: its box (the routing table holds the pointer).
impl<H: ?Sized> Prefetch for Box<H> {
    #[inline(always)]
    fn prefetch(&self) {
        crate::queue::prefetch::<H>(self);
    }
}

/// The look-ahead's state: the last address looked at, and the last few,
/// whose second stage is still to come.
pub(super) struct Look {
    /// The index of the address last looked ahead at.
    last: Cell<u32>,
    /// The addresses of the last [`RING`] looks (keys as words), by look.
    ring: [Cell<u64>; RING],
    /// Looks made (the ring's position).
    looks: Cell<usize>,
}

impl Default for Look {
    fn default() -> Self {
        Look {
            last: Cell::new(0),
            ring: std::array::from_fn(|_| Cell::new(Key::NONE.to_word())),
            looks: Cell::new(0),
        }
    }
}

impl<T, H: Prefetch> Routes<T, H> {
    /// Brings in, ahead of a delivery to `address`, what it will read, in
    /// two stages: now, the address's slot (read here) and its first
    /// channel's first subscription's record (prefetched); [`TO_BOX`]
    /// looks later (the delivery is nearer then, and the record in),
    /// that record's handler (its box, prefetched). `false` (look no
    /// further at the entries waiting: `queue::LookAhead`) for an address
    /// next to the last one looked at: deliveries that walk the table in
    /// order have the processor's own prefetchers, and looking would only
    /// cost them.
    #[inline(always)]
    pub(crate) fn look_ahead(&self, address: Key) -> bool {
        let look = &self.look;
        let last = look.last.replace(address.idx());
        if address.idx().wrapping_sub(last).wrapping_add(NEAR) <= 2 * NEAR {
            return false;
        }
        let n = look.looks.get();
        look.looks.set(n.wrapping_add(1));
        let at = &look.ring[n % RING];
        let earlier = Key::from_word(look.ring[n.wrapping_sub(TO_BOX) % RING].get());
        at.set(address.to_word());
        if let Some(slot) = self.slots.get(address) {
            self.subs.prefetch(slot.first.first);
        }
        if let Some(handler) = self.first_handler(earlier) {
            handler.prefetch();
        }
        true
    }

    /// The handler of `address`'s first channel's first subscription, if
    /// it is in its record (not running).
    #[inline(always)]
    fn first_handler(&self, address: Key) -> Option<&H> {
        let slot = self.slots.get(address)?;
        self.subs.get(slot.first.first)?.handler.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::any::TypeId;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// The ids of the probes prefetched, in order.
    type Log = Rc<RefCell<Vec<u32>>>;

    /// A handler that records its prefetches (by id).
    struct Probe {
        id: u32,
        log: Log,
    }

    impl Prefetch for Probe {
        fn prefetch(&self) {
            self.log.borrow_mut().push(self.id);
        }
    }

    /// Routes with `n` addresses `2 * NEAR` apart in index (none near
    /// another), each with a probe of its number (from 0); the addresses,
    /// their subscriptions and the probes' log.
    fn table(n: u32) -> (Routes<(), Probe>, Vec<Key>, Vec<Key>, Log) {
        let log = Rc::default();
        let mut r = Routes::default();
        let (mut addresses, mut subs) = (Vec::new(), Vec::new());
        // From index 2 * NEAR: index 0 is near the one the look-ahead
        // starts from.
        for idx in 0..(n + 1) * 2 * NEAR {
            let a = r.add_address(|_| ());
            if idx % (2 * NEAR) == 0 && idx > 0 {
                let id = idx / (2 * NEAR) - 1;
                let probe = Probe {
                    id,
                    log: Rc::clone(&log),
                };
                subs.push(
                    r.subscribe(a, TypeId::of::<u8>(), Key::NONE, probe)
                        .unwrap(),
                );
                addresses.push(a);
            }
        }
        (r, addresses, subs, log)
    }

    #[test]
    fn a_handler_is_prefetched_to_box_looks_after_its_address_was_looked_at() {
        let (r, addresses, _, log) = table(10);
        for (k, &a) in addresses.iter().enumerate() {
            assert!(r.look_ahead(a), "{k}");
            let expected: Vec<u32> = (0..(k + 1).saturating_sub(TO_BOX) as u32).collect();
            assert_eq!(*log.borrow(), expected, "after look {k}");
        }
    }

    #[test]
    fn a_near_address_is_not_looked_at_and_makes_no_stage() {
        let (r, addresses, _, log) = table(6);
        let near = Key::new(addresses[0].idx() + 1, addresses[0].generation());
        assert!(r.look_ahead(addresses[0]));
        assert!(!r.look_ahead(near), "next to the last one looked at");
        for &a in &addresses[1..] {
            assert!(r.look_ahead(a));
        }
        // The near one took no place among the looks: the box stage went on
        // from address 0, TO_BOX looks behind.
        let expected: Vec<u32> = (0..(6 - TO_BOX) as u32).collect();
        assert_eq!(*log.borrow(), expected);
    }

    #[test]
    fn a_running_handler_or_a_gone_address_is_skipped() {
        let (mut r, addresses, subs, log) = table(8);
        let running = r.take_handler(subs[1]).unwrap();
        assert!(r.remove_address(addresses[2]).is_some());
        let stale = Key::new(u32::MAX - 100, 7);
        assert!(
            r.look_ahead(stale),
            "a key that is nowhere is looked at (to no effect)"
        );
        for &a in &addresses {
            assert!(r.look_ahead(a));
        }
        // Looks: stale, 0, .., 7; the box stage reaches 0..=4 (stale, 1
        // and 2 have nothing to prefetch).
        assert_eq!(*log.borrow(), [0, 3, 4]);
        assert!(r.put_handler(subs[1], running));
    }
}

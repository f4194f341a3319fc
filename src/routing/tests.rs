//! Unit tests of the routing table.

use super::*;
use std::cell::RefCell;

struct A;
struct B;
struct C;

thread_local! {
    /// Types given another type's tag by [`share_tag`] (this thread's).
    static ALIASES: RefCell<Vec<(TypeId, u32)>> = const { RefCell::new(Vec::new()) };
}

/// The tag [`type_tag`] gives `type_id` in this thread's test, if it was
/// given another type's.
pub(super) fn alias(type_id: TypeId) -> Option<u32> {
    ALIASES.with(|a| {
        a.borrow()
            .iter()
            .find(|(t, _)| *t == type_id)
            .map(|(_, tag)| *tag)
    })
}

/// Until it is dropped, [`type_tag`] gives `Given` the tag of `Of` (in
/// this thread): two types that share a tag, as two in a program may.
pub(crate) struct SharedTag;

impl Drop for SharedTag {
    fn drop(&mut self) {
        ALIASES.with(|a| a.borrow_mut().clear());
    }
}

/// Gives `Given` the tag of `Of` (see [`SharedTag`]).
pub(crate) fn share_tag<Of: 'static, Given: 'static>() -> SharedTag {
    let tag = type_tag(TypeId::of::<Of>());
    ALIASES.with(|a| a.borrow_mut().push((TypeId::of::<Given>(), tag)));
    SharedTag
}

fn routes() -> Routes<&'static str, u32> {
    Routes::default()
}

fn ids(r: &Routes<&'static str, u32>, address: Key, type_id: TypeId) -> Vec<Key> {
    match r.find(address, type_id) {
        Found::One(k) => vec![k],
        Found::Many => r.subscribers(address, type_id).into_vec(),
        _ => vec![],
    }
}

#[test]
fn finds_subscribers_of_a_type_in_subscription_order() {
    let mut r = routes();
    let a = r.add_address(|_| "a");
    let owner = Key::NONE;
    let s1 = r.subscribe(a, TypeId::of::<A>(), owner, 1).unwrap();
    let s2 = r.subscribe(a, TypeId::of::<B>(), owner, 2).unwrap();
    let s3 = r.subscribe(a, TypeId::of::<A>(), owner, 3).unwrap();
    assert_eq!(ids(&r, a, TypeId::of::<A>()), [s1, s3]);
    assert_eq!(ids(&r, a, TypeId::of::<B>()), [s2]);
    assert!(matches!(r.find(a, TypeId::of::<u8>()), Found::NoSubscriber));
    assert_eq!(r.address(a), Some(&"a"));
    assert_eq!(r.subscriptions(), 3);
}

#[test]
fn unsubscribing_keeps_the_order_of_the_rest_in_every_channel() {
    let mut r = routes();
    let a = r.add_address(|_| "a");
    let (ta, tb, tc) = (TypeId::of::<A>(), TypeId::of::<B>(), TypeId::of::<u8>());
    let o = Key::NONE;
    let a1 = r.subscribe(a, ta, o, 1).unwrap();
    let b1 = r.subscribe(a, tb, o, 2).unwrap();
    let a2 = r.subscribe(a, ta, o, 3).unwrap();
    let c1 = r.subscribe(a, tc, o, 4).unwrap();
    let a3 = r.subscribe(a, ta, o, 5).unwrap();
    let b2 = r.subscribe(a, tb, o, 6).unwrap();
    r.unsubscribe(a1).unwrap(); // the first of the first channel
    assert_eq!(ids(&r, a, ta), [a2, a3]);
    r.unsubscribe(b2).unwrap(); // the last of another
    assert_eq!(ids(&r, a, tb), [b1]);
    r.unsubscribe(a2).unwrap();
    r.unsubscribe(a3).unwrap(); // the first channel empties: the next moves up
    assert!(matches!(r.find(a, ta), Found::NoSubscriber));
    assert_eq!(ids(&r, a, tb), [b1]);
    assert_eq!(ids(&r, a, tc), [c1]);
    let a4 = r.subscribe(a, ta, o, 7).unwrap();
    assert_eq!(ids(&r, a, ta), [a4]);
    let (_, removed) = r.remove_address(a).unwrap();
    let mut gone: Vec<Key> = removed.iter().map(|x| x.sub).collect();
    gone.sort();
    let mut expected = vec![b1, c1, a4];
    expected.sort();
    assert_eq!(gone, expected);
    assert_eq!(r.subscriptions(), 0);
}

#[test]
fn a_handler_taken_out_and_unsubscribed_meanwhile_is_not_put_back() {
    let mut r = routes();
    let a = r.add_address(|_| "a");
    let s = r.subscribe(a, TypeId::of::<A>(), Key::NONE, 7).unwrap();
    let h = r.take_handler(s).unwrap();
    assert_eq!(r.take_handler(s), None, "out already");
    assert!(r.unsubscribe(s).is_some());
    assert!(!r.put_handler(s, h));
    assert!(matches!(r.find(a, TypeId::of::<A>()), Found::NoSubscriber));
    assert_eq!(r.subscriptions(), 0);
}

#[test]
fn a_far_address_routes_like_any_other_and_its_stale_key_misses() {
    let mut r = routes();
    let near = r.add_address(|_| "near");
    let far = Key::new(FAR + 3, 9);
    assert!(is_far(far) && !is_far(near) && !is_far(Key::NONE));
    assert!(matches!(r.find(far, TypeId::of::<A>()), Found::Stale));
    assert!(r.add_far_address(far, "far"));
    assert!(!r.add_far_address(far, "again"), "taken");
    let s = r.subscribe(far, TypeId::of::<A>(), Key::NONE, 1).unwrap();
    assert_eq!(ids(&r, far, TypeId::of::<A>()), [s]);
    assert_eq!(r.address(far), Some(&"far"));
    assert_eq!(r.addresses(), 2);
    let newer = Key::new(far.idx(), 10);
    assert!(matches!(r.find(newer, TypeId::of::<A>()), Found::Stale));
    assert!(!r.far_vacant(newer), "the index is in use");
    let (data, removed) = r.remove_address(far).unwrap();
    assert_eq!((data, removed.len()), ("far", 1));
    assert!(matches!(r.find(far, TypeId::of::<A>()), Found::Stale));
    assert_eq!((r.addresses(), r.subscriptions()), (1, 0));
    assert_eq!(r.far.kept(), 0, "no trailing vacant slots kept");
    assert!(r.add_far_address(newer, "newer"));
    assert_eq!(r.address(far), None, "the old key stays stale");
}

#[test]
fn removing_an_address_removes_its_subscriptions_and_stale_keys_miss() {
    let mut r = routes();
    let a = r.add_address(|_| "a");
    let owner = r.add_address(|_| "owner"); // any key will do as an owner
    let s1 = r.subscribe(a, TypeId::of::<A>(), owner, 1).unwrap();
    let s2 = r.subscribe(a, TypeId::of::<B>(), owner, 2).unwrap();
    let (data, removed) = r.remove_address(a).unwrap();
    assert_eq!(data, "a");
    let subs: Vec<Key> = removed.iter().map(|x| x.sub).collect();
    assert_eq!(subs, [s1, s2]);
    assert!(removed.iter().all(|x| x.owner == owner && x.address == a));
    assert!(matches!(r.find(a, TypeId::of::<A>()), Found::Stale));
    assert_eq!(r.subscribe(a, TypeId::of::<A>(), owner, 3), None);
    assert_eq!(r.unsubscribe(s1), None);
    let b = r.add_address(|_| "b");
    assert_eq!(b.idx(), a.idx(), "slot reused");
    assert_eq!(r.address(a), None, "but the old key stays stale");
    assert_eq!(r.subscriptions(), 0);
}

#[test]
fn a_kept_route_holds_while_its_subscription_lives_and_is_taken_while_it_is_alone() {
    let mut r = routes();
    let a = r.add_address(|_| "a");
    let b = r.add_address(|_| "b");
    let (ta, tb) = (TypeId::of::<A>(), TypeId::of::<B>());
    let (tag_a, tag_b) = (type_tag(ta), type_tag(tb));
    assert_ne!(tag_a, tag_b);
    assert_eq!(r.first_of(a, ta), Key::NONE, "nobody yet");
    let s1 = r.subscribe(a, ta, Key::NONE, 1).unwrap();
    assert_eq!(r.first_of(a, ta), s1);
    assert!(r.holds(s1, a));
    assert!(!r.holds(s1, b), "another address");
    assert!(r.holds(s1, a), "for any type: the delivery checks it");
    assert_eq!(r.take_route(s1, tag_b), None);
    assert_eq!(r.take_route(s1, tag_a), Some(1));
    assert_eq!(r.take_route(s1, tag_a), None, "out already");
    assert!(r.put_handler(s1, 1));

    // Company: still the first (kept by a sender), never taken straight.
    let s2 = r.subscribe(a, ta, Key::NONE, 2).unwrap();
    assert!(r.holds(s1, a));
    assert_eq!(r.take_route(s1, tag_a), None);
    assert_eq!(r.take_route(s2, tag_a), None);
    r.unsubscribe(s2).unwrap();
    assert_eq!(r.take_route(s1, tag_a), Some(1), "alone again");
    assert!(r.put_handler(s1, 1));

    // Channels apart from the first keep their marks too.
    let s3 = r.subscribe(a, tb, Key::NONE, 3).unwrap();
    assert_eq!(r.take_route(s3, tag_b), Some(3));
    assert!(r.put_handler(s3, 3));
    let s4 = r.subscribe(a, tb, Key::NONE, 4).unwrap();
    assert_eq!(r.take_route(s3, tag_b), None);
    r.unsubscribe(s3).unwrap();
    assert_eq!(r.first_of(a, tb), s4);
    assert_eq!(r.take_route(s4, tag_b), Some(4), "left alone");
    assert!(r.put_handler(s4, 4));
    assert_eq!(r.take_route(s1, tag_a), Some(1), "the other channel's");
    assert!(r.put_handler(s1, 1));

    // Gone: its record reused by a subscription elsewhere.
    r.unsubscribe(s1).unwrap();
    assert!(!r.holds(s1, a));
    let s5 = r.subscribe(b, ta, Key::NONE, 5).unwrap();
    assert_eq!(s5.idx(), s1.idx(), "the record is reused");
    assert!(!r.holds(s1, a));
    assert!(!r.holds(s5, a), "on another address");
    assert_eq!(r.take_route(s1, tag_a), None);
    r.remove_address(b).unwrap();
    assert!(!r.holds(s5, b));
    assert_eq!(r.take_route(s5, tag_a), None);
}

/// Two types that share a tag keep a channel each, on one address: each
/// is found (`find`, `subscribers`, `first_of`) with its own subscriptions
/// only, in order, through subscribing and unsubscribing; the fast lookup
/// by the tag alone (`find_tagged` with `type_tag`) may find the other's,
/// which its handlers turn back (`Next::Reroute`).
#[test]
fn two_types_sharing_a_tag_keep_a_channel_each() {
    let _shared = share_tag::<A, B>();
    let (ta, tb, tc) = (TypeId::of::<A>(), TypeId::of::<B>(), TypeId::of::<C>());
    assert_eq!(type_tag(ta), type_tag(tb));
    let mut r = routes();
    let a = r.add_address(|_| "a");
    let o = Key::NONE;
    let a1 = r.subscribe(a, ta, o, 1).unwrap();
    let b1 = r.subscribe(a, tb, o, 2).unwrap();
    let a2 = r.subscribe(a, ta, o, 3).unwrap();
    let b2 = r.subscribe(a, tb, o, 4).unwrap();
    assert_ne!(r.tag_of(ta), r.tag_of(tb), "a tag each");
    assert_eq!(ids(&r, a, ta), [a1, a2]);
    assert_eq!(ids(&r, a, tb), [b1, b2]);
    assert!(matches!(r.find(a, tc), Found::NoSubscriber));
    let b3 = r.subscribe(a, tb, o, 5).unwrap();
    r.unsubscribe(a1).unwrap();
    assert_eq!(ids(&r, a, ta), [a2]);
    assert_eq!(ids(&r, a, tb), [b1, b2, b3]);
    // Fast, by the tag alone: `A`'s channel (its handler turns a `B` back).
    assert!(matches!(r.find_tagged(a, type_tag(tb)), Found::One(s) if s == a2));
    r.unsubscribe(b1).unwrap();
    r.unsubscribe(a2).unwrap();
    // `A`'s channel is gone: `B`'s moves up, with its own tag.
    assert!(matches!(r.find(a, ta), Found::NoSubscriber));
    assert!(matches!(
        r.find_tagged(a, type_tag(ta)),
        Found::NoSubscriber
    ));
    assert_eq!(ids(&r, a, tb), [b2, b3]);
    assert_eq!(r.first_of(a, ta), Key::NONE);
    assert_eq!(r.first_of(a, tb), b2);
    r.unsubscribe(b2).unwrap();
    assert!(matches!(r.find(a, tb), Found::One(s) if s == b3));
    // Alone, marked with `B`'s tag: a route to it holds at the send (the
    // type is not checked there), and its delivery takes the handler for
    // `B`'s tag only; an `A` sent on it is routed the long way.
    assert!(r.holds(b3, a));
    assert_eq!(r.take_route(b3, type_tag(ta)), None);
    let handler = r.take_route(b3, r.tag_of(tb)).unwrap();
    assert!(r.put_handler(b3, handler));
    let a3 = r.subscribe(a, ta, o, 6).unwrap();
    assert_eq!(ids(&r, a, ta), [a3]);
    assert_eq!(ids(&r, a, tb), [b3]);
    let (_, removed) = r.remove_address(a).unwrap();
    assert_eq!(removed.len(), 2);
}

/// Whichever of two types sharing a tag comes second gets another tag, on
/// every address of the table; an address with the second type's
/// subscriptions only does not give them to the first.
#[test]
fn the_type_subscribed_second_gets_another_tag_everywhere() {
    let _shared = share_tag::<A, B>();
    let (ta, tb, tc) = (TypeId::of::<A>(), TypeId::of::<B>(), TypeId::of::<C>());
    let mut r = routes();
    let a = r.add_address(|_| "a");
    let b = r.add_address(|_| "b");
    let o = Key::NONE;
    // `B` first: it has the shared tag, `A` the next one.
    let b1 = r.subscribe(b, tb, o, 1).unwrap();
    let a1 = r.subscribe(a, ta, o, 2).unwrap();
    assert_eq!(r.tag_of(tb), type_tag(tb));
    assert_ne!(r.tag_of(ta), type_tag(ta));
    assert!(matches!(r.find(b, ta), Found::NoSubscriber), "not `B`'s");
    assert!(matches!(r.find(a, tb), Found::NoSubscriber), "not `A`'s");
    assert!(matches!(r.find(b, tc), Found::NoSubscriber));
    assert_eq!(r.first_of(b, ta), Key::NONE);
    assert!(r.subscribers(b, ta).is_empty());
    // Fast, by the tag alone: `B`'s channel (its handler turns an `A`
    // back), and `A`'s is not found by its `type_tag` (routed the long way).
    assert!(matches!(r.find_tagged(b, type_tag(ta)), Found::One(s) if s == b1));
    assert!(matches!(
        r.find_tagged(a, type_tag(ta)),
        Found::NoSubscriber
    ));
    assert_eq!(ids(&r, a, ta), [a1]);
    let b2 = r.subscribe(a, tb, o, 3).unwrap();
    let a2 = r.subscribe(b, ta, o, 4).unwrap();
    assert_eq!((ids(&r, a, ta), ids(&r, a, tb)), (vec![a1], vec![b2]));
    assert_eq!((ids(&r, b, ta), ids(&r, b, tb)), (vec![a2], vec![b1]));
}

impl Routes<&'static str, u32> {
    fn holds(&self, sub: Key, address: Key) -> bool {
        matches!(self.check_route(sub, address), Kept::Holds)
    }
}

/// A delivery reads an address's slot, not its data: the slot stays
/// small, so that deliveries to many addresses in turn read few bytes
/// (docs/entities.md, session 9).
#[test]
fn an_address_slot_keeps_its_data_apart() {
    // (its generation and link besides: 80 bytes with the data, in a
    // slab; 48 with its first channel's `TypeId`, before session 10)
    let entry = std::mem::size_of::<super::subs::Record<super::Slot>>();
    assert!(entry <= 32, "{entry}: two per cache line");
    // And a subscription's record (its owner apart): half a cache line.
    let record = std::mem::size_of::<super::subs::Record<super::Sub<Box<dyn Fn()>>>>();
    assert!(record <= 32, "{record}");
    let mut r: Routes<[u64; 8], ()> = Routes::default();
    let a = r.add_address(|_| [1; 8]);
    let b = r.add_address(|_| [2; 8]);
    assert_eq!(r.address(a), Some(&[1; 8]));
    assert_eq!(r.remove_address(a).map(|(d, _)| d), Some([1; 8]));
    assert_eq!(r.address(a), None, "gone with its slot");
    let c = r.add_address(|_| [3; 8]);
    assert_eq!(c.idx(), a.idx(), "the slot is reused, and its data place");
    assert_eq!(r.address(a), None, "a stale key reads no data");
    assert_eq!(r.address(c), Some(&[3; 8]));
    assert!(r.discard_unsubscribed(b));
    assert_eq!(r.address(b), None);
    // Emptied, the tables beside give their memory back too.
    let sub = r.subscribe(c, std::any::TypeId::of::<u8>(), c, ()).unwrap();
    assert_eq!(r.owner(sub), Some(c));
    assert!(r.unsubscribe(sub).is_some());
    assert_eq!(r.owners.capacity(), 0);
    assert!(r.remove_address(c).is_some());
    assert_eq!(r.data.capacity(), 0);
    let d = r.add_address(|_| [4; 8]);
    assert_eq!(
        (d.idx(), r.address(d)),
        (0, Some(&[4; 8])),
        "and start afresh"
    );
}

//! `EntityRef`: a handle per entity that caches where its live instance
//! is, with the set's guarantees (made on the first message, held in order
//! while not live, never given to a leaving instance, never lost through
//! passivation, per-sender FIFO with `Keyed` and router sends), on a
//! manual clock.

mod common;

use common::Log;
use common::entities::*;
use commutator::EntitySet;
use std::collections::HashMap;
use std::time::Duration;

use Via::{Ref as F, Router as R, Set as S};
use What::Reading as N;

fn got(key: u32, instance: u32, ns: impl IntoIterator<Item = u32>) -> Vec<String> {
    ns.into_iter()
        .map(|n| format!("devices/{key} ({instance}) got {n}"))
        .collect()
}

#[test]
fn an_entity_ref_makes_its_entity_on_the_first_message_and_delivers_in_order() {
    let mut f = Fixture::new(None, |s| s);
    f.send(4, &[(F, N(1)), (F, N(2))]);
    assert_eq!(f.at(0), got(4, 1, [1, 2]));
    f.send(4, &[(F, N(3)), (F, N(4))]); // live now: straight to it
    assert_eq!(f.at(1), got(4, 1, [3, 4]));
    let s = f.stats.get();
    assert_eq!((s.live, s.created, s.buffered), (1, 1, 0));
    let r = f.router.entity(4);
    assert_eq!((*r.key(), r.clone().key()), (4, &4));
    assert!(format!("{r:?}").contains("EntityRef"));
}

#[test]
fn ref_router_and_keyed_sends_of_one_sender_keep_their_order() {
    // Entities take 10 ms to start: the first messages wait in the set.
    let mut f = Fixture::new(Some(10), |s| s);
    f.send(1, &[(F, N(1)), (S, N(2)), (R, N(3)), (F, N(4))]);
    assert_eq!(f.at(0), Vec::<String>::new());
    f.send(1, &[(R, N(5)), (F, N(6)), (S, N(7))]); // still initializing
    assert_eq!(f.at(10), got(1, 1, 1..=7));
    let live = [(S, N(8)), (F, N(9)), (R, N(10)), (F, N(11)), (S, N(12))];
    f.send(1, &live);
    assert_eq!(f.at(11), got(1, 1, 8..=12));
}

#[test]
fn ref_messages_queued_before_a_passivation_at_the_cap_wait_behind_held_ones() {
    // Key 1 is live and its ref has cached where. One batch: a new key at
    // the cap passivates 1 (whose shutdown takes 10 ms), then messages for
    // 1, queued before the shutdown request: the first is held by the set,
    // so the ref's ones, delivered while the old instance is still
    // operational, must wait behind it for the next instance.
    let mut f = Fixture::new(None, |s| s.max_live(1));
    f.send(1, &[(F, N(0))]);
    assert_eq!(f.at(0), got(1, 1, [0]));
    f.l.send(&f.sender, Send(2, vec![(S, N(100))])).unwrap();
    f.send(1, &[(S, N(1)), (F, N(2)), (R, N(3)), (F, N(4))]);
    assert_eq!(f.at(1), Vec::<String>::new(), "1 shuts down, for 10 ms");
    let mut want = vec!["devices/1 (1) shut down".to_string()];
    want.extend(got(1, 2, 1..=4));
    assert_eq!(f.at(11), want);
    assert_eq!(
        f.at(30),
        ["devices/1 (2) shut down", "devices/2 (1) got 100"]
    );
    f.send(1, &[(F, N(5))]); // 1 again, at the cap: 2 makes room
    assert_eq!(f.at(50), Vec::<String>::new(), "2 shuts down, for 10 ms");
    let got_it = f.at(60);
    assert_eq!(got_it, ["devices/2 (1) shut down", "devices/1 (3) got 5"]);
}

#[test]
fn an_entity_ref_follows_its_entity_across_idle_passivation_and_re_creation() {
    let mut f = Fixture::new(None, |s| s.idle_after(Duration::from_millis(100)));
    f.send(3, &[(F, N(1))]);
    assert_eq!(f.at(0), got(3, 1, [1]));
    for (ms, n) in [(60, 2), (120, 3), (180, 4)] {
        f.l.run_until_idle(f.clock.at(ms));
        f.send(3, &[(F, N(n))]);
        assert_eq!(f.at(ms), got(3, 1, [n]));
    }
    assert_eq!(
        f.stats.get().passivated,
        0,
        "used through its ref every 60 ms"
    );
    // Quiet: passivated between 100 and 200 ms after the last message.
    assert_eq!(f.at(400), Vec::<String>::new());
    assert_eq!(f.stats.get().passivated, 1);
    // Messages during its shutdown wait for the next instance, in order.
    f.send(3, &[(F, N(5)), (S, N(6)), (R, N(7)), (F, N(8))]);
    let mut want = vec!["devices/3 (1) shut down".to_string()];
    want.extend(got(3, 2, 5..=8));
    assert_eq!(f.at(420), want);
    // The ref found the new instance: straight to it.
    f.send(3, &[(F, N(9)), (S, N(10)), (F, N(11))]);
    assert_eq!(f.at(421), got(3, 2, 9..=11));
    let s = f.stats.get();
    assert_eq!((s.created, s.passivated, s.live), (2, 1, 1));
}

#[test]
fn ref_messages_behind_an_entity_that_leaves_or_fails_reach_its_next_instance() {
    let mut f = Fixture::new(None, |s| s);
    f.send(2, &[(F, N(1))]);
    assert_eq!(f.at(0), got(2, 1, [1]));
    // It leaves (its shutdown takes 10 ms), told through its ref; what
    // comes meanwhile waits for the next instance, in order.
    f.send(2, &[(F, What::Leave)]);
    assert_eq!(f.at(1), Vec::<String>::new());
    f.send(2, &[(F, N(2)), (S, N(3)), (F, N(4))]);
    assert_eq!(f.at(2), Vec::<String>::new());
    assert_eq!(f.stats.get().buffered, 3);
    let mut want = vec!["devices/2 (1) shut down".to_string()];
    want.extend(got(2, 2, 2..=4));
    assert_eq!(f.at(20), want);
    // Its handler panics on a message through its ref: it fails, and
    // what comes next goes to a new instance.
    f.send(2, &[(F, What::Boom)]);
    assert_eq!(f.at(21), Vec::<String>::new());
    f.send(2, &[(F, N(5)), (R, N(6)), (F, N(7))]);
    let mut want = vec!["devices/2 (2) shut down".to_string()];
    want.extend(got(2, 3, 5..=7));
    assert_eq!(f.at(40), want);
    assert_eq!(f.stats.get().created, 3);
}

#[test]
fn a_failing_entity_restarted_in_place_gets_its_ref_messages_in_order() {
    let mut f = Fixture::new(None, |s| s.restart(commutator::RestartPolicy::OnFailure));
    f.send(6, &[(F, N(1))]);
    f.send(7, &[(F, N(100))]);
    let mut want = got(6, 1, [1]);
    want.extend(got(7, 1, [100]));
    assert_eq!(f.at(0), want);
    // 6 fails through its ref; what comes while it shuts down and waits
    // for its restart goes to the restarted instance, in order; 7 is
    // untouched, and its ref still sends straight to it.
    f.send(6, &[(F, What::Boom)]);
    assert_eq!(f.at(1), Vec::<String>::new());
    f.send(6, &[(F, N(2)), (S, N(3)), (R, N(4)), (F, N(5))]);
    f.send(7, &[(F, N(101))]);
    assert_eq!(f.at(2), got(7, 1, [101]));
    let mut want = vec!["devices/6 (1) shut down".to_string()];
    want.extend(got(6, 2, 2..=5));
    assert_eq!(f.at(20), want);
    f.send(6, &[(F, N(6))]);
    assert_eq!(f.at(21), got(6, 2, [6]));
    let s = f.stats.get();
    assert_eq!((s.restarts, s.created, s.live), (1, 2, 2));
}

#[test]
fn at_the_cap_an_entity_used_through_its_ref_is_not_the_least_recently_used() {
    let mut f = Fixture::new(None, |s| s.max_live(2));
    f.send(1, &[(F, N(1))]);
    assert_eq!(f.at(0), got(1, 1, [1]));
    f.send(2, &[(F, N(2))]);
    assert_eq!(f.at(1), got(2, 1, [2]));
    f.send(1, &[(F, N(3))]); // 1 is used after 2
    assert_eq!(f.at(2), got(1, 1, [3]));
    f.send(3, &[(F, N(4))]); // a new key at the cap: 2 makes room
    assert_eq!(f.at(3), Vec::<String>::new(), "2 shuts down, for 10 ms");
    assert_eq!((f.stats.get().waiting, f.stats.get().passivated), (1, 1));
    assert_eq!(f.at(20), ["devices/2 (1) shut down", "devices/3 (1) got 4"]);
}

#[test]
fn an_entity_ref_refuses_before_its_set_starts_after_it_is_gone_and_on_another_locality() {
    // Not started: a ref taken from a set not spawned yet.
    let set = EntitySet::new(|_: &u32| Device {
        instance: 0,
        log: Log::new(),
        hold_init: None,
    })
    .route::<Reading>();
    let early = set.entity(1);
    let mut f = Fixture::new(None, |s| s);
    let early = f.another_sender("early", set.router(), HashMap::from([(1, early)]));
    f.l.send(&early, Send(1, vec![(F, N(1))])).unwrap();
    assert_eq!(f.at(0), ["sender: Unavailable"]);
    drop(set);

    // Another locality on this thread: refused.
    assert_eq!(f.send_from_another_locality(F), ["sender: InvalidArgument"]);

    // Live, then gone: refused.
    f.send(1, &[(F, N(2))]);
    assert_eq!(f.at(1), got(1, 1, [2]));
    f.l.shutdown(&f.set).unwrap();
    f.l.run_until_idle(f.clock.at(2));
    f.send(1, &[(F, N(3))]);
    let after = f.at(30);
    assert!(
        after.contains(&"sender: Unavailable".to_string()),
        "{after:?}"
    );
    assert!(!after.iter().any(|l| l.contains("got 3")), "{after:?}");
}

/// Sends `Leave` to its entity through its ref, then, two handlers later
/// (once the entity's shutdown request is queued, before it is handled),
/// a reading through the same ref.
struct Relay(commutator::EntityRef<u32>);
struct Go;
struct Then(u32);

impl commutator::Actor for Relay {
    fn init_start(&mut self, ctx: &mut commutator::Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, _: &Go, ctx: &mut commutator::Context<'_, Self>| {
                me.0.send(ctx, Leave).unwrap();
                let me = ctx.address().clone();
                ctx.send(&me, Then(1));
            },
        );
        ctx.subscribe(
            |me: &mut Self, t: &Then, ctx: &mut commutator::Context<'_, Self>| {
                if t.0 == 0 {
                    return me.0.send(ctx, Reading(2)).unwrap();
                }
                let me = ctx.address().clone();
                ctx.send(&me, Then(t.0 - 1));
            },
        );
    }
}

#[test]
fn a_ref_message_queued_behind_its_entitys_own_shutdown_reaches_its_next_instance() {
    let mut f = Fixture::new(None, |s| s);
    f.send(3, &[(F, N(1))]);
    assert_eq!(f.at(0), got(3, 1, [1]));
    // The entity asks to shut down (its set queues its shutdown request);
    // the reading is sent while it is still live and operational, queued
    // behind that request: at delivery the entity has left OPERATIONAL,
    // so the reading waits in the set for the next instance.
    let relay = Relay(f.router.entity(3));
    let root = f.root.clone();
    let relay = f.l.spawn(&root, relay).name("relay").finish().unwrap();
    f.l.send(&relay, Go).unwrap();
    assert_eq!(f.at(1), Vec::<String>::new());
    assert_eq!(f.stats.get().buffered, 1);
    let mut want = vec!["devices/3 (1) shut down".to_string()];
    want.extend(got(3, 2, [2]));
    assert_eq!(f.at(20), want);
}

#[test]
fn a_ref_s_messages_of_other_types_and_to_a_channel_that_gained_a_subscriber_reach_every_subscriber()
 {
    // The ref caches the route of the type of the send that looked the
    // key up (`Reading`): the other type's messages, and `Reading`s once
    // the entity has a second subscriber to it, are routed at delivery.
    let mut f = Fixture::new(None, |s| s);
    f.send(2, &[(F, N(0))]);
    assert_eq!(f.at(0), got(2, 1, [0]));
    let mixed = [(F, N(1)), (F, What::Echo(2)), (F, N(3)), (F, What::Echo(4))];
    f.send(2, &mixed);
    let mut want = got(2, 1, [1]);
    want.push("(1) echo 2".into());
    want.extend(got(2, 1, [3]));
    want.push("(1) echo 4".into());
    assert_eq!(f.at(1), want);
    f.send(2, &[(F, What::Tap), (F, N(5)), (F, N(6))]);
    let mut want = got(2, 1, [5]);
    want.push("(1) tap 5".into());
    want.extend(got(2, 1, [6]));
    want.push("(1) tap 6".into());
    assert_eq!(f.at(2), want);
}

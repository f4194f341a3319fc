//! `EntityRouter`: sends for an entity set's keys that go straight to a
//! live entity, with the set's guarantees (made on the first message, held
//! in order while not live, never given to a leaving instance, per-sender
//! FIFO with `Keyed` sends to the set), on a manual clock.

mod common;

use common::Log;
use common::entities::*;
use commutator::EntitySet;
use std::collections::HashMap;
use std::time::Duration;

use Via::{Router as R, Set as S};
use What::{Leave as L, Reading as N};

#[test]
fn a_router_makes_the_entity_on_the_first_message_and_delivers_in_order() {
    let mut f = Fixture::new(None, |s| s);
    f.send(4, &[(R, N(1)), (R, N(2))]);
    assert_eq!(f.at(0), ["devices/4 (1) got 1", "devices/4 (1) got 2"]);
    f.send(4, &[(R, N(3))]); // live now: straight to it
    assert_eq!(f.at(1), ["devices/4 (1) got 3"]);
    let s = f.stats.get();
    assert_eq!((s.live, s.created, s.buffered), (1, 1, 0));
}

#[test]
fn router_and_keyed_sends_of_one_sender_keep_their_order() {
    // Entities take 10 ms to start: the first messages wait in the set.
    let mut f = Fixture::new(Some(10), |s| s);
    let mixed = [(R, N(1)), (S, N(2)), (R, N(3)), (S, N(4))];
    f.send(1, &mixed);
    assert_eq!(f.at(0), Vec::<String>::new());
    f.send(1, &[(R, N(5)), (S, N(6))]); // still initializing
    let got = f.at(10);
    let want: Vec<String> = (1..=6).map(|n| format!("devices/1 (1) got {n}")).collect();
    assert_eq!(got, want);
    f.send(1, &[(S, N(7)), (R, N(8)), (S, N(9)), (R, N(10))]); // live
    let got = f.at(11);
    let want: Vec<String> = (7..=10).map(|n| format!("devices/1 (1) got {n}")).collect();
    assert_eq!(got, want);
}

#[test]
fn router_messages_behind_an_entity_that_leaves_reach_its_next_instance() {
    let mut f = Fixture::new(None, |s| s);
    f.send(2, &[(R, N(1))]);
    assert_eq!(f.at(0), ["devices/2 (1) got 1"]);
    // It leaves (its shutdown takes 10 ms); what comes meanwhile, through
    // the router or the set, waits for the next instance, in order.
    f.send(2, &[(R, L)]);
    assert_eq!(f.at(1), Vec::<String>::new());
    f.send(2, &[(R, N(2)), (S, N(3)), (R, N(4))]);
    assert_eq!(f.at(2), Vec::<String>::new());
    assert_eq!(f.stats.get().buffered, 3);
    assert_eq!(
        f.at(20),
        [
            "devices/2 (1) shut down",
            "devices/2 (2) got 2",
            "devices/2 (2) got 3",
            "devices/2 (2) got 4"
        ]
    );
    assert_eq!(f.stats.get().created, 2);
}

#[test]
fn a_router_in_a_set_with_idle_time_counts_as_use() {
    let mut f = Fixture::new(None, |s| s.idle_after(Duration::from_millis(100)));
    f.send(3, &[(R, N(1))]);
    assert_eq!(f.at(0), ["devices/3 (1) got 1"]);
    for (ms, n) in [(60, 2), (120, 3), (180, 4)] {
        f.l.run_until_idle(f.clock.at(ms));
        f.send(3, &[(R, N(n))]);
        assert_eq!(f.at(ms), [format!("devices/3 (1) got {n}")]);
    }
    assert_eq!(f.stats.get().passivated, 0, "used every 60 ms");
    assert_eq!(f.at(400), Vec::<String>::new(), "then idle: passivated");
    assert_eq!(f.at(420), ["devices/3 (1) shut down"]);
    f.send(3, &[(R, N(5))]);
    assert_eq!(f.at(401), ["devices/3 (2) got 5"]);
}

#[test]
fn a_router_refuses_before_its_set_starts_after_it_is_gone_and_on_another_locality() {
    // Not started: a router taken from a set not spawned yet.
    let set = EntitySet::new(|_: &u32| Device {
        instance: 0,
        log: Log::new(),
        hold_init: None,
    })
    .route::<Reading>();
    let early = set.router();
    let mut f = Fixture::new(None, |s| s);
    let early = f.another_sender("early", early, HashMap::new());
    f.l.send(&early, Send(1, vec![(R, N(1))])).unwrap();
    assert_eq!(f.at(0), ["sender: Unavailable"]);
    drop(set);

    // Another locality on this thread: refused.
    assert_eq!(f.send_from_another_locality(R), ["sender: InvalidArgument"]);

    // Gone: refused.
    f.l.shutdown(&f.set).unwrap();
    f.l.run_until_idle(f.clock.at(1));
    f.send(1, &[(R, N(2))]);
    assert_eq!(f.at(2), ["sender: Unavailable"]);
}

#[test]
fn at_the_cap_an_entity_used_through_a_router_is_not_the_least_recently_used() {
    let mut f = Fixture::new(None, |s| s.max_live(2));
    f.send(1, &[(R, N(1))]);
    assert_eq!(f.at(0), ["devices/1 (1) got 1"]);
    f.send(2, &[(R, N(2))]);
    assert_eq!(f.at(1), ["devices/2 (1) got 2"]);
    f.send(1, &[(R, N(3))]); // 1 is used after 2
    assert_eq!(f.at(2), ["devices/1 (1) got 3"]);
    f.send(3, &[(R, N(4))]); // a new key at the cap: 2 makes room
    assert_eq!(f.at(3), Vec::<String>::new(), "2 shuts down, for 10 ms");
    assert_eq!((f.stats.get().waiting, f.stats.get().passivated), (1, 1));
    assert_eq!(
        f.at(20),
        ["devices/2 (1) shut down", "devices/3 (1) got 4",]
    );
    assert_eq!(f.stats.get().created, 3);
}

//! Pub/sub: what is dropped (a message nobody subscribes to, a message to a
//! stale address) and how delivery inspection reports it.

mod common;

use common::pubsub::{Hub, Listener, Note, Seq};
use common::{Clock, Log, root_on_l0, short};
use commutator::{Actor, Context};

/// A message type nobody subscribes to.
struct Unheard;

#[test]
fn a_message_with_no_subscriber_is_dropped_and_counted() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let hub = locality
        .spawn(&root, Hub { log: log.clone() })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    let before = locality.stats();

    locality.send(&hub, Unheard).unwrap();
    locality
        .send(&root, Note("to the root, where nobody listens"))
        .unwrap();
    locality.run_until_idle(clock.at(0));

    let after = locality.stats();
    assert_eq!(after.dropped_unsubscribed, before.dropped_unsubscribed + 2);
    assert_eq!(after.delivered, before.delivered);
    assert_eq!(after.dropped_stale, before.dropped_stale);
    assert!(log.is_empty());
}

/// Logs `Seq`s with its own name.
struct Named {
    log: Log,
}

impl Actor for Named {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_seq);
    }
}

impl Named {
    fn on_seq(&mut self, seq: &Seq, ctx: &mut Context<'_, Self>) {
        self.log
            .push(format!("{} got {}", short(ctx.address()), seq.n));
    }
}

#[test]
fn messages_to_a_stale_address_are_dropped_and_never_reach_a_newer_actor_in_its_slot() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let old = locality
        .spawn(&root, Named { log: log.clone() })
        .name("old")
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    locality.send(&old, Seq { from: 0, n: 1 }).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(log.take(), ["old#2 got 1"]);
    let addresses = locality.stats().addresses;

    locality.shutdown(&old).unwrap();
    locality.run_until_idle(clock.at(0));
    // The newest freed address slot is reused by the next actor's main address.
    let new = locality
        .spawn(&root, Named { log: log.clone() })
        .name("new")
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.stats().addresses, addresses);
    assert_ne!(old, new);
    let before = locality.stats();

    locality.send(&old, Seq { from: 0, n: 2 }).unwrap();
    locality.send(&new, Seq { from: 0, n: 3 }).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(log.lines(), ["new#3 got 3"]);
    let after = locality.stats();
    assert_eq!(after.dropped_stale, before.dropped_stale + 1);
    assert_eq!(after.delivered, before.delivered + 1);
    assert_eq!(after.dropped_unsubscribed, before.dropped_unsubscribed);
}

#[test]
fn delivery_inspection_reports_deliveries_and_drops() {
    let clock = Clock::new();
    let log = Log::new();
    let lines = Log::new();
    let (mut locality, root) = root_on_l0();
    let sink = lines.clone();
    locality.inspect_with(1, move |line| sink.push(line));
    let hub = locality
        .spawn(&root, Hub { log: log.clone() })
        .name("hub")
        .finish()
        .unwrap();
    let listener = Listener {
        on: hub.clone(),
        log: log.clone(),
    };
    locality
        .spawn(&root, listener)
        .name("ear")
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    assert!(
        lines.is_empty(),
        "level 1 hides the framework's traffic: {:?}",
        lines.lines()
    );

    locality.send(&hub, Note("hi")).unwrap();
    locality.send(&hub, Unheard).unwrap();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&hub).unwrap();
    locality.run_until_idle(clock.at(0));
    locality.send(&hub, Note("late")).unwrap();
    locality.run_until_idle(clock.at(0));

    insta::assert_snapshot!(lines.text());
}

//! Who hears a message is decided when it is delivered, not when it is
//! sent (as in rotor): every change to the routing table between a send and
//! its delivery counts. Each test sends a `Note` from a handler and, in the
//! same handler (so before the delivery), changes who is subscribed: a
//! second subscriber, the only one removed or replaced, its record reused
//! on another address, the address itself removed and its slot reused.
//!
//! These pin the guarantee for any delivery that would rather use a route
//! found at the send (tried on 2026-11-24: `docs/benchmarks.md`, w1): such
//! a route may be used only if nothing here changed it.

mod common;

use common::pubsub::Note;
use common::{Clock, Log, root_on_l0};
use commutator::{Actor, Address, Context, Stats, SubscriptionId};

/// What the changer does after it sends a `Note` to `Step::to` (its main
/// address, or its identity `old`) and before that is delivered.
#[derive(Clone, Copy)]
enum Change {
    /// Subscribes a second handler to `Note` on its main address.
    AddSecond,
    /// Subscribes a second handler, then removes it again.
    AddSecondAndRemoveIt,
    /// Removes its only `Note` subscription.
    Unsubscribe,
    /// Removes its only `Note` subscription and subscribes another handler
    /// to `Note` on its main address.
    Replace,
    /// Removes its only `Note` subscription and subscribes to `Note` on a
    /// new identity (which takes the freed subscription record).
    MoveToIdentity,
    /// Removes the identity `old` (the `Note` went there), makes a new
    /// identity (which takes the freed address slot) and subscribes to
    /// `Note` on it.
    ReplaceIdentity,
    /// Makes its first `Note` subscription on its main address.
    SubscribeFirst,
}

/// Told a `Step`, sends a `Note` and then changes the routing table.
struct Changer {
    log: Log,
    /// Subscribe to `Note` on its main address in `init_start`.
    subscribed: bool,
    note_sub: Option<SubscriptionId>,
    old: Option<Address>,
}

struct Step {
    change: Change,
    to_identity: bool,
}

impl Actor for Changer {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_step);
        if self.subscribed {
            self.note_sub = Some(ctx.subscribe(Self::on_note));
        }
        let old = ctx.create_address("old").unwrap();
        ctx.subscribe_on(
            &old,
            |me: &mut Self, note: &Note, _: &mut Context<'_, Self>| {
                me.log.push(format!("old identity heard {}", note.0));
            },
        )
        .unwrap();
        self.old = Some(old);
    }
}

impl Changer {
    fn on_note(&mut self, note: &Note, _: &mut Context<'_, Self>) {
        self.log.push(format!("first heard {}", note.0));
    }

    fn on_step(&mut self, step: &Step, ctx: &mut Context<'_, Self>) {
        let to = match step.to_identity {
            true => self.old.clone().unwrap(),
            false => ctx.address().clone(),
        };
        ctx.send(&to, Note("x"));
        let second = |me: &mut Self, note: &Note, _: &mut Context<'_, Self>| {
            me.log.push(format!("second heard {}", note.0));
        };
        match step.change {
            Change::AddSecond => {
                ctx.subscribe(second);
            }
            Change::AddSecondAndRemoveIt => {
                let id = ctx.subscribe(second);
                ctx.unsubscribe(id).unwrap();
            }
            Change::Unsubscribe => ctx.unsubscribe(self.note_sub.take().unwrap()).unwrap(),
            Change::Replace => {
                ctx.unsubscribe(self.note_sub.take().unwrap()).unwrap();
                ctx.subscribe(second);
            }
            Change::MoveToIdentity => {
                ctx.unsubscribe(self.note_sub.take().unwrap()).unwrap();
                let elsewhere = ctx.create_address("elsewhere").unwrap();
                ctx.subscribe_on(
                    &elsewhere,
                    |me: &mut Self, note: &Note, _: &mut Context<'_, Self>| {
                        me.log.push(format!("elsewhere heard {}", note.0));
                    },
                )
                .unwrap();
            }
            Change::ReplaceIdentity => {
                let old = self.old.take().unwrap();
                ctx.remove_address(&old).unwrap();
                let new = ctx.create_address("new").unwrap();
                ctx.subscribe_on(
                    &new,
                    |me: &mut Self, note: &Note, _: &mut Context<'_, Self>| {
                        me.log.push(format!("new identity heard {}", note.0));
                    },
                )
                .unwrap();
            }
            Change::SubscribeFirst => {
                self.note_sub = Some(ctx.subscribe(Self::on_note));
            }
        }
    }
}

/// Runs one step on a fresh changer: what was heard, and the locality's
/// counts from before the step to after it.
fn run(change: Change, subscribed: bool, to_identity: bool) -> (Vec<String>, Stats, Stats) {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let changer = Changer {
        log: log.clone(),
        subscribed,
        note_sub: None,
        old: None,
    };
    let changer = locality.spawn(&root, changer).finish().unwrap();
    locality.run_until_idle(clock.at(0));
    let before = locality.stats();
    let step = Step {
        change,
        to_identity,
    };
    locality.send(&changer, step).unwrap();
    locality.run_until_idle(clock.at(0));
    (log.lines(), before, locality.stats())
}

#[test]
fn a_subscriber_added_between_send_and_delivery_hears_the_message_after_the_first() {
    let (heard, before, after) = run(Change::AddSecond, true, false);
    assert_eq!(heard, ["first heard x", "second heard x"]);
    assert_eq!(
        after.delivered - before.delivered,
        2,
        "the step and the note"
    );
}

#[test]
fn a_subscriber_added_and_removed_between_send_and_delivery_leaves_the_first_alone() {
    let (heard, ..) = run(Change::AddSecondAndRemoveIt, true, false);
    assert_eq!(heard, ["first heard x"]);
}

#[test]
fn a_message_whose_only_subscriber_left_between_send_and_delivery_is_dropped() {
    let (heard, before, after) = run(Change::Unsubscribe, true, false);
    assert!(heard.is_empty(), "{heard:?}");
    assert_eq!(after.dropped_unsubscribed - before.dropped_unsubscribed, 1);
}

#[test]
fn a_subscriber_that_replaced_the_only_one_between_send_and_delivery_hears_the_message() {
    let (heard, ..) = run(Change::Replace, true, false);
    assert_eq!(heard, ["second heard x"]);
}

#[test]
fn a_subscription_record_reused_on_another_address_does_not_take_the_message() {
    let (heard, before, after) = run(Change::MoveToIdentity, true, false);
    assert!(heard.is_empty(), "{heard:?}");
    assert_eq!(after.dropped_unsubscribed - before.dropped_unsubscribed, 1);
}

#[test]
fn a_message_to_an_address_removed_between_send_and_delivery_is_stale_even_if_its_slot_is_reused() {
    let (heard, before, after) = run(Change::ReplaceIdentity, true, true);
    assert!(heard.is_empty(), "{heard:?}");
    assert_eq!(after.dropped_stale - before.dropped_stale, 1);
}

#[test]
fn a_first_subscriber_made_between_send_and_delivery_hears_the_message() {
    let (heard, before, after) = run(Change::SubscribeFirst, false, false);
    assert_eq!(heard, ["first heard x"]);
    assert_eq!(after.dropped_unsubscribed, before.dropped_unsubscribed);
}

// A handler keeps the route of its last send and uses it again while it
// holds (w1's fast path): the tests below send from one handler several
// times, with changes between its sends.

struct Other(&'static str);

/// Hears `Note` and `Other`; told an `Order`, changes its `Note` subscribers.
struct Target {
    log: Log,
    note_sub: Option<SubscriptionId>,
}

enum Order {
    /// Replace the `Note` subscription with another handler.
    Replace,
    /// Add a second `Note` subscriber.
    AddSecond,
}

impl Actor for Target {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.note_sub = Some(ctx.subscribe(Self::on_note));
        ctx.subscribe(|me: &mut Self, other: &Other, _: &mut Context<'_, Self>| {
            me.log.push(format!("target heard other {}", other.0));
        });
        ctx.subscribe(Self::on_order);
    }
}

impl Target {
    fn on_note(&mut self, note: &Note, _: &mut Context<'_, Self>) {
        self.log.push(format!("target heard {}", note.0));
    }

    fn on_order(&mut self, order: &Order, ctx: &mut Context<'_, Self>) {
        let second = |me: &mut Self, note: &Note, _: &mut Context<'_, Self>| {
            me.log.push(format!("second heard {}", note.0));
        };
        match order {
            Order::Replace => {
                ctx.unsubscribe(self.note_sub.take().unwrap()).unwrap();
                ctx.subscribe(second);
            }
            Order::AddSecond => {
                ctx.subscribe(second);
            }
        }
    }
}

/// Told `Tell`, sends each of its messages from the same handler.
struct Teller;

struct Tell(Vec<(Address, Say)>);

#[derive(Clone, Copy)]
enum Say {
    Note(&'static str),
    Other(&'static str),
}

impl Actor for Teller {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, tell: &Tell, ctx: &mut Context<'_, Self>| {
            for (to, say) in &tell.0 {
                match *say {
                    Say::Note(n) => ctx.send(to, Note(n)),
                    Say::Other(n) => ctx.send(to, Other(n)),
                }
            }
        });
    }
}

/// A teller and two targets, `a` and `b` (each with its log), operational.
struct Setup {
    locality: commutator::Locality,
    root: Address,
    teller: Address,
    a: Address,
    b: Address,
    log: Log,
    b_log: Log,
    clock: Clock,
}

fn tellers() -> Setup {
    let clock = Clock::new();
    let (log, b_log) = (Log::new(), Log::new());
    let (mut locality, root) = root_on_l0();
    let teller = locality.spawn(&root, Teller).finish().unwrap();
    let target = |log: &Log| Target {
        log: log.clone(),
        note_sub: None,
    };
    let a = locality.spawn(&root, target(&log)).finish().unwrap();
    let b = locality.spawn(&root, target(&b_log)).finish().unwrap();
    locality.run_until_idle(clock.at(0));
    Setup {
        locality,
        root,
        teller,
        a,
        b,
        log,
        b_log,
        clock,
    }
}

#[test]
fn a_handler_sending_again_reaches_a_subscriber_that_replaced_the_first_between_its_sends() {
    let Setup {
        mut locality,
        teller,
        a,
        log,
        clock,
        ..
    } = tellers();
    let tell = |n| Tell(vec![(a.clone(), Say::Note(n))]);
    locality.send(&teller, tell("1")).unwrap();
    locality.run_until_idle(clock.at(0));
    locality.send(&a, Order::Replace).unwrap();
    locality.run_until_idle(clock.at(0));
    locality.send(&teller, tell("2")).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(log.lines(), ["target heard 1", "second heard 2"]);
}

#[test]
fn a_handler_sending_again_reaches_a_second_subscriber_added_between_its_sends() {
    let Setup {
        mut locality,
        teller,
        a,
        log,
        clock,
        ..
    } = tellers();
    let tell = |n| Tell(vec![(a.clone(), Say::Note(n))]);
    locality.send(&teller, tell("1")).unwrap();
    locality.run_until_idle(clock.at(0));
    locality.send(&a, Order::AddSecond).unwrap();
    locality.run_until_idle(clock.at(0));
    locality.send(&teller, tell("2")).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(
        log.lines(),
        ["target heard 1", "target heard 2", "second heard 2"]
    );
}

#[test]
fn a_handler_sending_two_types_to_one_address_reaches_the_subscriber_of_each() {
    let Setup {
        mut locality,
        teller,
        a,
        log,
        clock,
        ..
    } = tellers();
    let says = [
        Say::Note("1"),
        Say::Other("2"),
        Say::Note("3"),
        Say::Other("4"),
    ];
    let tell = Tell(says.iter().map(|s| (a.clone(), *s)).collect());
    locality.send(&teller, tell).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(
        log.lines(),
        [
            "target heard 1",
            "target heard other 2",
            "target heard 3",
            "target heard other 4"
        ]
    );
}

#[test]
fn a_handler_sending_to_two_addresses_in_turn_reaches_each() {
    let Setup {
        mut locality,
        teller,
        a,
        b,
        log,
        b_log,
        clock,
        ..
    } = tellers();
    let tell = Tell(vec![
        (a.clone(), Say::Note("1")),
        (b.clone(), Say::Note("2")),
        (a.clone(), Say::Note("3")),
    ]);
    locality.send(&teller, tell).unwrap();
    locality
        .send(&teller, Tell(vec![(a.clone(), Say::Note("4"))]))
        .unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(
        log.lines(),
        ["target heard 1", "target heard 3", "target heard 4"]
    );
    assert_eq!(b_log.lines(), ["target heard 2"]);
    assert_eq!(locality.stats().dropped_unsubscribed, 0);
}

// A handler's kept route when its address goes: a stale key of the slot
// that a new address took never takes the new address's route, and a dead
// route gives way to the addresses the handler sends to now (written
// while trying a route that kept the destination's index beside it).

#[test]
fn a_handler_sending_to_a_stale_address_whose_slot_holds_its_routes_address_does_not_reach_it() {
    let Setup {
        mut locality,
        teller,
        a,
        log,
        clock,
        root,
        ..
    } = tellers();
    locality
        .send(&teller, Tell(vec![(a.clone(), Say::Note("1"))]))
        .unwrap();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&a).unwrap();
    locality.run_until_idle(clock.at(0));
    // The next actor takes the freed slot: `a`'s index, a new generation.
    let c_log = Log::new();
    let c = locality
        .spawn(
            &root,
            Target {
                log: c_log.clone(),
                note_sub: None,
            },
        )
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    let before = locality.stats();
    // The route is learned for `c`, then a send to the stale `a` (same
    // index) must not take it.
    let tell = Tell(vec![
        (c.clone(), Say::Note("2")),
        (a.clone(), Say::Note("3")),
        (c.clone(), Say::Note("4")),
    ]);
    locality.send(&teller, tell).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(log.lines(), ["target heard 1"]);
    assert_eq!(c_log.lines(), ["target heard 2", "target heard 4"]);
    assert_eq!(
        locality.stats().dropped_stale - before.dropped_stale,
        1,
        "the message to `a` is stale"
    );
}

#[test]
fn a_handler_whose_route_is_for_a_gone_address_reaches_the_addresses_it_sends_to_now() {
    let Setup {
        mut locality,
        teller,
        a,
        b,
        log,
        b_log,
        clock,
        ..
    } = tellers();
    locality
        .send(&teller, Tell(vec![(a.clone(), Say::Note("a"))]))
        .unwrap();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&a).unwrap();
    locality.run_until_idle(clock.at(0));
    // The route kept for `a` is dead: learned again for `b`.
    let notes = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    let says: Vec<_> = (0..30)
        .flat_map(|_| notes.iter().map(|n| (b.clone(), Say::Note(n))))
        .collect();
    locality.send(&teller, Tell(says)).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(log.lines(), ["target heard a"]);
    let heard = b_log.lines();
    assert_eq!(heard.len(), 300);
    assert!(heard.iter().all(|l| l.starts_with("target heard ")));
}

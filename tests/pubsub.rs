//! Pub/sub: who hears a message (subscribers on an actor's own address and
//! on another's, handlers that unsubscribe or subscribe during a delivery,
//! identities, an external subscription made while shutting down). In which
//! order: `pubsub_ordering.rs`; what is dropped: `pubsub_drops.rs`.

mod common;

use common::pubsub::{Hub, Listener, Note};
use common::{Clock, Log, Slot, root_on_l0};
use commutator::{Actor, Address, Context, SubscriptionId};

#[test]
fn several_subscribers_receive_in_subscription_order() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let hub = locality
        .spawn(&root, Hub { log: log.clone() })
        .name("hub")
        .finish()
        .unwrap();
    for name in ["a", "b", "c"] {
        let listener = Listener {
            on: hub.clone(),
            log: log.clone(),
        };
        locality.spawn(&root, listener).name(name).finish().unwrap();
    }
    locality.run_until_idle(clock.at(0));

    locality.send(&hub, Note("one")).unwrap();
    locality.send(&hub, Note("two")).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(
        log.lines(),
        [
            "hub#2 heard one",
            "a#3 heard one",
            "b#4 heard one",
            "c#5 heard one",
            "hub#2 heard two",
            "a#3 heard two",
            "b#4 heard two",
            "c#5 heard two",
        ]
    );
    assert_eq!(
        locality.stats().delivered,
        2,
        "one delivery per message, however many handlers"
    );
}

/// Publishes `Note`s on its own address when told to.
struct Publisher;

struct Publish(&'static str);

impl Actor for Publisher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_publish);
    }
}

impl Publisher {
    fn on_publish(&mut self, publish: &Publish, ctx: &mut Context<'_, Self>) {
        let me = ctx.address().clone();
        ctx.send(&me, Note(publish.0));
    }
}

#[test]
fn an_actor_hears_what_is_published_on_another_actors_address() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let publisher = locality
        .spawn(&root, Publisher)
        .name("publisher")
        .finish()
        .unwrap();
    let listener = Listener {
        on: publisher.clone(),
        log: log.clone(),
    };
    locality
        .spawn(&root, listener)
        .name("listener")
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.send(&publisher, Publish("news")).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(log.lines(), ["listener#3 heard news"]);
    assert_eq!(locality.stats().dropped_unsubscribed, 0);
}

/// Hears `Note`s until it has heard `limit` of them, then unsubscribes.
struct Quitter {
    log: Log,
    sub: Option<SubscriptionId>,
    limit: usize,
    heard: usize,
}

impl Actor for Quitter {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.sub = Some(ctx.subscribe(Self::on_note));
    }
}

impl Quitter {
    fn on_note(&mut self, note: &Note, ctx: &mut Context<'_, Self>) {
        self.heard += 1;
        self.log.push(format!("heard {}", note.0));
        if self.heard == self.limit {
            let result = ctx.unsubscribe(self.sub.take().unwrap());
            self.log.push(format!("unsubscribe: {result:?}"));
        }
    }
}

#[test]
fn a_handler_that_unsubscribes_itself_gets_no_further_messages() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let quitter = Quitter {
        log: log.clone(),
        sub: None,
        limit: 1,
        heard: 0,
    };
    let quitter = locality.spawn(&root, quitter).finish().unwrap();
    locality.run_until_idle(clock.at(0));
    let subscriptions = locality.stats().subscriptions;

    for tag in ["one", "two", "three"] {
        locality.send(&quitter, Note(tag)).unwrap();
    }
    locality.run_until_idle(clock.at(0));

    assert_eq!(log.lines(), ["heard one", "unsubscribe: Ok(())"]);
    let stats = locality.stats();
    assert_eq!(stats.subscriptions, subscriptions - 1);
    assert_eq!(stats.delivered, 1);
    assert_eq!(
        stats.dropped_unsubscribed, 2,
        "with the last handler gone, the type has no subscriber"
    );
}

/// Two handlers for `Note` on its own address; the first unsubscribes the second.
struct Pruner {
    log: Log,
    second: Option<SubscriptionId>,
}

impl Actor for Pruner {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::first);
        self.second = Some(ctx.subscribe(Self::second));
    }
}

impl Pruner {
    fn first(&mut self, note: &Note, ctx: &mut Context<'_, Self>) {
        self.log.push(format!("first {}", note.0));
        if let Some(second) = self.second.take() {
            ctx.unsubscribe(second).unwrap();
        }
    }

    fn second(&mut self, note: &Note, _: &mut Context<'_, Self>) {
        self.log.push(format!("second {}", note.0));
    }
}

#[test]
fn a_handler_unsubscribed_by_an_earlier_handler_is_not_called_for_the_same_message() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let pruner = locality
        .spawn(
            &root,
            Pruner {
                log: log.clone(),
                second: None,
            },
        )
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.send(&pruner, Note("one")).unwrap();
    locality.send(&pruner, Note("two")).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(log.lines(), ["first one", "first two"]);
}

/// Subscribes a second handler for `Note` while hearing the first one.
struct Joiner {
    log: Log,
    joined: bool,
}

impl Actor for Joiner {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::first);
    }
}

impl Joiner {
    fn first(&mut self, note: &Note, ctx: &mut Context<'_, Self>) {
        self.log.push(format!("first {}", note.0));
        if !self.joined {
            self.joined = true;
            ctx.subscribe(Self::late);
        }
    }

    fn late(&mut self, note: &Note, _: &mut Context<'_, Self>) {
        self.log.push(format!("late {}", note.0));
    }
}

#[test]
fn a_handler_subscribed_during_a_delivery_first_hears_the_next_message() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut locality, root) = root_on_l0();
    let joiner = locality
        .spawn(
            &root,
            Joiner {
                log: log.clone(),
                joined: false,
            },
        )
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.send(&joiner, Note("one")).unwrap();
    locality.send(&joiner, Note("two")).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(log.lines(), ["first one", "first two", "late two"]);
}

/// Creates an identity and hands it out.
struct IdentityMaker {
    log: Log,
    out: Slot<Address>,
}

impl Actor for IdentityMaker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_main);
        let replies = ctx.create_address("replies").unwrap();
        ctx.subscribe_on(&replies, Self::on_replies).unwrap();
        self.out.set(replies);
    }
}

impl IdentityMaker {
    fn on_main(&mut self, note: &Note, _: &mut Context<'_, Self>) {
        self.log.push(format!("main {}", note.0));
    }

    fn on_replies(&mut self, note: &Note, _: &mut Context<'_, Self>) {
        self.log.push(format!("replies {}", note.0));
    }
}

#[test]
fn identities_from_create_address_receive_separately() {
    let clock = Clock::new();
    let log = Log::new();
    let out = Slot::new();
    let (mut locality, root) = root_on_l0();
    let maker = IdentityMaker {
        log: log.clone(),
        out: out.clone(),
    };
    let main = locality
        .spawn(&root, maker)
        .name("client")
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));
    let replies: Address = out.get();
    assert_eq!(replies.to_string(), "L0/client#2:replies");
    assert_eq!(replies.actor_name(), "client");
    assert_ne!(replies, main);
    let addresses = locality.stats().addresses;

    locality.send(&main, Note("a")).unwrap();
    locality.send(&replies, Note("b")).unwrap();
    locality.send(&main, Note("c")).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(log.take(), ["main a", "replies b", "main c"]);

    // The identity goes with its actor.
    locality.shutdown(&main).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.stats().addresses, addresses - 2);
    let stale = locality.stats().dropped_stale;
    locality.send(&replies, Note("late")).unwrap();
    locality.run_until_idle(clock.at(0));
    assert_eq!(locality.stats().dropped_stale, stale + 1);
    assert!(log.is_empty());
}

/// Subscribes to `Note`s on an address of another locality while it shuts
/// down (from a timer, after `shutdown_start`; a resource holds the shutdown
/// until then).
struct LateListener {
    on: Address,
}

impl Actor for LateListener {
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.acquire_resource(1);
        ctx.start_timer(std::time::Duration::ZERO, |me: &mut Self, ctx, _| {
            let on = me.on.clone();
            ctx.subscribe_external(&on, |_: &mut Self, _: &Note, _| {})
                .expect("a live address");
            ctx.release_resource(1).unwrap();
        });
    }
}

#[test]
fn an_external_subscription_made_while_shutting_down_does_not_hold_the_shutdown() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut here, root_here) = root_on_l0();
    let (mut there, root_there) = common::root_on("L1");
    let hub = there
        .spawn(&root_there, Hub { log: log.clone() })
        .name("hub")
        .finish()
        .unwrap();
    let late = here
        .spawn(&root_here, LateListener { on: hub })
        .name("late")
        .finish()
        .unwrap();
    here.run_until_idle(clock.at(0));
    there.run_until_idle(clock.at(0));

    here.shutdown(&late).unwrap();
    for _ in 0..3 {
        here.run_until_idle(clock.at(1));
        there.run_until_idle(clock.at(1));
    }

    assert_eq!(here.state_of(&late), None, "its shutdown ended");
    assert_eq!(
        there.stats().subscriptions,
        1,
        "no forwarder is left on the hub"
    );
}

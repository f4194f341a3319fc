//! Pub/sub: who hears a message, in which order, and what is dropped.

mod common;

use common::{Clock, Log, Slot, root_on_l0, short};
use commutator::{Actor, Address, Context, SubscriptionId};
use std::cell::Cell;
use std::rc::Rc;

/// A message with a tag.
struct Note(&'static str);

/// A numbered message from one sender.
struct Seq {
    from: u32,
    n: u32,
}

/// A message type nobody subscribes to.
struct Unheard;

/// Logs every `Note` heard on its own address.
struct Hub {
    log: Log,
}

impl Actor for Hub {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_note);
    }
}

impl Hub {
    fn on_note(&mut self, note: &Note, ctx: &mut Context<'_, Self>) {
        self.log
            .push(format!("{} heard {}", short(ctx.address()), note.0));
    }
}

/// Logs every `Note` heard on another actor's address.
struct Listener {
    on: Address,
    log: Log,
}

impl Actor for Listener {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let on = self.on.clone();
        ctx.subscribe_on(&on, Self::on_note)
            .expect("a live local address");
    }
}

impl Listener {
    fn on_note(&mut self, note: &Note, ctx: &mut Context<'_, Self>) {
        self.log
            .push(format!("{} heard {}", short(ctx.address()), note.0));
    }
}

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

/// Records every `Seq` it receives.
struct Receiver {
    got: Rc<std::cell::RefCell<Vec<(u32, u32)>>>,
}

impl Actor for Receiver {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_seq);
    }
}

impl Receiver {
    fn on_seq(&mut self, seq: &Seq, _: &mut Context<'_, Self>) {
        self.got.borrow_mut().push((seq.from, seq.n));
    }
}

/// Sends `total` numbered messages to `to`, `burst` at a time, re-queuing
/// itself between bursts so that senders interleave.
struct Sender {
    id: u32,
    to: Address,
    next: u32,
    total: u32,
    burst: u32,
}

struct Go;

impl Actor for Sender {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_go);
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.address().clone();
        ctx.send(&me, Go);
    }
}

impl Sender {
    fn on_go(&mut self, _: &Go, ctx: &mut Context<'_, Self>) {
        for _ in 0..self.burst {
            if self.next == self.total {
                return;
            }
            ctx.send(
                &self.to,
                Seq {
                    from: self.id,
                    n: self.next,
                },
            );
            self.next += 1;
        }
        let me = ctx.address().clone();
        ctx.send(&me, Go);
    }
}

fn assert_fifo_per_sender(got: &[(u32, u32)], senders: u32, each: u32) {
    for sender in 0..senders {
        let seen: Vec<u32> = got
            .iter()
            .filter(|(from, _)| *from == sender)
            .map(|(_, n)| *n)
            .collect();
        assert_eq!(
            seen.len(),
            each as usize,
            "sender {sender} lost or duplicated messages"
        );
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "sender {sender} out of order"
        );
    }
}

/// How often the sender changes along the sequence.
fn switches(got: &[(u32, u32)]) -> usize {
    got.windows(2).filter(|w| w[0].0 != w[1].0).count()
}

#[test]
fn per_sender_order_is_kept_when_actor_senders_interleave() {
    let clock = Clock::new();
    let got = Rc::new(std::cell::RefCell::new(Vec::new()));
    let (mut locality, root) = root_on_l0();
    let receiver = locality
        .spawn(&root, Receiver { got: got.clone() })
        .finish()
        .unwrap();
    for id in 0..3 {
        let sender = Sender {
            id,
            to: receiver.clone(),
            next: 0,
            total: 1000,
            burst: 7,
        };
        locality.spawn(&root, sender).finish().unwrap();
    }
    locality.run_until_idle(clock.at(0));

    let got = got.borrow();
    assert_eq!(got.len(), 3000);
    assert_fifo_per_sender(&got, 3, 1000);
    assert!(switches(&got) > 100, "the senders did not interleave");
}

#[test]
fn per_thread_order_is_kept_when_threads_send_to_one_address() {
    let clock = Clock::new();
    let got = Rc::new(std::cell::RefCell::new(Vec::new()));
    let (mut locality, root) = root_on_l0();
    let receiver = locality
        .spawn(&root, Receiver { got: got.clone() })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    let threads: Vec<_> = (0..3)
        .map(|from| {
            let to = receiver.clone();
            std::thread::spawn(move || {
                for n in 0..1000 {
                    to.send(Seq { from, n }).expect("the locality is running");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    locality.run_until_idle(clock.at(0));

    let got = got.borrow();
    assert_eq!(got.len(), 3000);
    assert_fifo_per_sender(&got, 3, 1000);
}

/// Counts how deep its handler is nested, and sends from inside it.
struct Nester {
    log: Log,
    depth: Rc<Cell<u32>>,
    max_depth: Rc<Cell<u32>>,
}

impl Actor for Nester {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_seq);
    }
}

impl Nester {
    fn on_seq(&mut self, seq: &Seq, ctx: &mut Context<'_, Self>) {
        self.depth.set(self.depth.get() + 1);
        self.max_depth
            .set(self.max_depth.get().max(self.depth.get()));
        self.log.push(format!("enter {}", seq.n));
        if seq.n < 3 {
            let me = ctx.address().clone();
            ctx.send(
                &me,
                Seq {
                    from: 0,
                    n: seq.n + 1,
                },
            );
            ctx.send(
                &me,
                Seq {
                    from: 1,
                    n: seq.n + 10,
                },
            );
        }
        self.log.push(format!("leave {}", seq.n));
        self.depth.set(self.depth.get() - 1);
    }
}

#[test]
fn sends_from_a_handler_are_queued_not_delivered_reentrantly() {
    let clock = Clock::new();
    let log = Log::new();
    let depth = Rc::new(Cell::new(0));
    let max_depth = Rc::new(Cell::new(0));
    let (mut locality, root) = root_on_l0();
    let nester = Nester {
        log: log.clone(),
        depth: depth.clone(),
        max_depth: max_depth.clone(),
    };
    let nester = locality.spawn(&root, nester).finish().unwrap();
    locality.run_until_idle(clock.at(0));

    locality.send(&nester, Seq { from: 0, n: 0 }).unwrap();
    locality.send(&nester, Seq { from: 2, n: 100 }).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(max_depth.get(), 1);
    assert_eq!(
        log.lines(),
        [
            "enter 0",
            "leave 0", // queued before its sends: 100 comes first
            "enter 100",
            "leave 100",
            "enter 1",
            "leave 1",
            "enter 10",
            "leave 10",
            "enter 2",
            "leave 2",
            "enter 11",
            "leave 11",
            "enter 3",
            "leave 3",
            "enter 12",
            "leave 12",
        ]
    );
}

/// Forwards every `Note` it hears to an address (of any locality).
struct Relay {
    to: Address,
}

impl Actor for Relay {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_note);
    }
}

impl Relay {
    fn on_note(&mut self, note: &Note, ctx: &mut Context<'_, Self>) {
        ctx.send(&self.to, Note(note.0));
    }
}

#[test]
fn a_message_to_an_address_of_another_locality_arrives_there_in_order() {
    let clock = Clock::new();
    let log = Log::new();
    let (mut here, root_here) = root_on_l0();
    let (mut there, root_there) = common::root_on("L1");
    let hub = there
        .spawn(&root_there, Hub { log: log.clone() })
        .name("hub")
        .finish()
        .unwrap();
    let relay = here.spawn(&root_here, Relay { to: hub }).finish().unwrap();
    here.run_until_idle(clock.at(0));
    there.run_until_idle(clock.at(0));

    for tag in ["one", "two", "three"] {
        here.send(&relay, Note(tag)).unwrap();
    }
    here.run_until_idle(clock.at(0));
    assert!(log.is_empty(), "nothing is delivered until L1 dispatches");
    assert!(there.has_pending());
    there.run_until_idle(clock.at(0));

    assert_eq!(
        log.lines(),
        ["hub#2 heard one", "hub#2 heard two", "hub#2 heard three"]
    );
    assert_eq!(here.stats().delivered, 3);
    assert_eq!(there.stats().delivered, 3);
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

impl Clone for Note {
    fn clone(&self) -> Self {
        Note(self.0)
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

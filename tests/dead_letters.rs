//! Dead letters: undeliverable user messages can be observed, opt-in, with
//! where they were going, who sent them and why; and inspection can print
//! the payload of types that ask for it.

use commutator::prelude::*;
use commutator::{DeadLetter, DeadLetterReason};
use std::cell::RefCell;
use std::rc::Rc;

type Log = Rc<RefCell<Vec<String>>>;

#[derive(Debug)]
struct Lost(u32);

struct Deaf;
impl Actor for Deaf {}

/// Watches the locality's dead letters (takes the message back out).
struct Watcher(Log);
impl Actor for Watcher {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let dead = ctx.dead_letters();
        let log = self.0.clone();
        ctx.subscribe_on(
            &dead,
            move |_: &mut Self, d: &DeadLetter, _: &mut Context<'_, Self>| {
                let n = d.message::<Lost>().map(|m| m.0);
                log.borrow_mut().push(format!(
                    "{} {n:?} {} -> {}: {}",
                    d.message_type(),
                    d.sender(),
                    d.destination(),
                    d.reason()
                ));
            },
        )
        .unwrap();
    }
}

fn tree(watch: bool) -> (Locality, Address, Address, Log) {
    let log: Log = Rc::default();
    let mut l = Locality::named("app");
    let root = l
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    if watch {
        l.spawn(&root, Watcher(log.clone())).finish().unwrap();
    }
    let deaf = l.spawn(&root, Deaf).name("deaf").finish().unwrap();
    let now = l.now();
    l.run_until_idle(now);
    (l, root, deaf, log)
}

#[test]
fn a_message_nobody_hears_becomes_a_dead_letter_for_who_listens() {
    let (mut l, _, deaf, log) = tree(true);
    l.send(&deaf, Lost(1)).unwrap();
    let now = l.now();
    l.run_until_idle(now);
    assert_eq!(
        *log.borrow(),
        ["Lost Some(1) outside -> app/deaf#3: no subscriber"]
    );
    assert_eq!(l.stats().dropped_unsubscribed, 1, "still counted");
}

#[test]
fn a_message_to_a_gone_address_becomes_a_dead_letter() {
    let (mut l, _, deaf, log) = tree(true);
    l.shutdown(&deaf).unwrap();
    let now = l.now();
    l.run_until_idle(now);
    l.send(&deaf, Lost(2)).unwrap();
    l.run_until_idle(now);
    assert_eq!(
        *log.borrow(),
        ["Lost Some(2) outside -> app/deaf#3: stale address"]
    );
}

#[test]
fn a_message_from_an_actor_to_a_finished_locality_becomes_a_dead_letter() {
    struct Sender {
        to: Address,
    }
    impl Actor for Sender {
        fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.send(&self.to, Lost(3));
        }
    }
    let mut other = Locality::named("other");
    let gone = other.spawn_root(Deaf).name("gone").finish().unwrap();
    other.shutdown(&gone).unwrap();
    let now = other.now();
    other.run_until_idle(now);
    assert!(other.is_finished());

    let (mut l, root, _, log) = tree(true);
    l.spawn(&root, Sender { to: gone }).finish().unwrap();
    let now = l.now();
    l.run_until_idle(now);
    let lines = log.borrow();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("Lost Some(3) app/Sender#")
            && lines[0].ends_with("-> other/gone#1: locality finished"),
        "{}",
        lines[0]
    );
    assert_eq!(l.stats().dropped_closed, 1);
}

#[test]
fn without_a_subscriber_dead_letters_are_only_counted() {
    let (mut l, _, deaf, log) = tree(false);
    let dead = l.dead_letters(); // the address exists, nobody listens
    l.send(&deaf, Lost(4)).unwrap();
    let now = l.now();
    l.run_until_idle(now);
    assert!(log.borrow().is_empty());
    assert_eq!(l.stats().dropped_unsubscribed, 1);
    // A dead letter nobody hears is not made (no letter about a letter).
    l.send(&dead, Lost(5)).unwrap();
    l.run_until_idle(now);
    assert_eq!(l.stats().dropped_unsubscribed, 2);
    assert_eq!(l.stats().queued, 0);
}

#[test]
fn a_dead_letter_is_delivered_like_any_message_and_checks_its_type() {
    struct Taker;
    impl Actor for Taker {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            let dead = ctx.dead_letters();
            ctx.subscribe_on(
                &dead,
                |_: &mut Self, d: &DeadLetter, _: &mut Context<'_, Self>| {
                    assert_eq!(d.reason(), DeadLetterReason::NoSubscriber);
                    assert!(d.message::<u8>().is_none());
                },
            )
            .unwrap();
        }
    }
    let (mut l, root, deaf, _) = tree(false);
    l.spawn(&root, Taker).finish().unwrap();
    let now = l.now();
    l.run_until_idle(now);
    l.send(&deaf, Lost(6)).unwrap();
    l.run_until_idle(now);
    assert_eq!(
        l.stats().delivered,
        1,
        "the dead letter itself was delivered"
    );
}

#[test]
fn inspection_prints_the_payload_of_types_that_ask_for_it() {
    let (mut l, _, deaf, _) = tree(false);
    let lines: Log = Rc::default();
    let sink = lines.clone();
    l.inspect_with(1, move |line| sink.borrow_mut().push(line.to_string()));
    l.inspect_payload::<Lost>();
    l.send(&deaf, Lost(7)).unwrap();
    l.send(&deaf, 8u64).unwrap();
    let now = l.now();
    l.run_until_idle(now);
    assert_eq!(
        *lines.borrow(),
        [
            "app: Lost(Lost(7)) outside -> app/deaf#2: dropped (no subscriber)",
            "app: u64 outside -> app/deaf#2: dropped (no subscriber)"
        ]
    );
}

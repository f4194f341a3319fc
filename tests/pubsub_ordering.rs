//! Pub/sub: in which order messages are delivered (per sender, per thread,
//! sends from a handler, to another locality).

mod common;

use common::pubsub::{Hub, Note, Seq};
use common::{Clock, Log, root_on_l0};
use commutator::{Actor, Address, Context};
use std::cell::Cell;
use std::rc::Rc;

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

//! Message types and actors shared by the NATS tests.

use super::Node;
use commutator::nats::{DeadLetter, Nats, Options, Wire};
use commutator::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::mpsc;
use std::time::Duration;

pub const LIMIT: Duration = Duration::from_secs(60);
pub const WAIT: Duration = Duration::from_secs(15);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub from: String,
    pub seq: u32,
}
impl Wire for Note {
    const NAME: &'static str = "test.Note";
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Square(pub u64);
impl Wire for Square {
    const NAME: &'static str = "test.Square";
}
impl Request for Square {
    type Response = u64;
}

pub fn connect(url: &str) -> Nats {
    Nats::connect(Options::new(url).reconnect_delay(Duration::from_millis(100))).expect("connects")
}

/// Squares numbers, except: 13 is never answered, 666 is an error with a
/// cause, 7 is answered after 300 ms (too late for a short timeout).
pub struct Calculator;
impl Actor for Calculator {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Square>, ctx: &mut Context<'_, Self>| match q.payload().0
            {
                13 => {}
                666 => {
                    let cause =
                        Error::new(ErrorCode::InvalidArgument).with_context("the devil's number");
                    ctx.reply_error(q, Error::failure("no devils").caused_by(cause));
                }
                7 => {
                    let q = q.clone();
                    ctx.start_timer(
                        Duration::from_millis(300),
                        move |_: &mut Self, ctx: &mut Context<'_, Self>, _| ctx.reply(&q, 49),
                    );
                }
                n => ctx.reply(q, n * n),
            },
        );
    }
}

/// What a requester saw: the number asked, and the value or the error code
/// with the error's whole chain.
pub type Answer = (u64, Result<u64, (ErrorCode, String)>);

/// Sends its requests when started (`cancel`: cancels it at once) and reports each response.
pub struct Asker {
    pub remote: Address,
    pub plan: Vec<(u64, Duration, bool)>,
    pub out: mpsc::Sender<Answer>,
}
impl Actor for Asker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |this: &mut Self, r: &Response<Square>, _: &mut Context<'_, Self>| {
                let result = r
                    .result()
                    .copied()
                    .map_err(|e| (e.code(), format!("{e:#}")));
                let _ = this.out.send((r.request().0, result));
            },
        );
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        for (n, timeout, cancel) in self.plan.clone() {
            let id = ctx.request(&self.remote, Square(n), timeout);
            if cancel {
                assert!(ctx.cancel_request(id));
            }
        }
    }
}

/// Sends every `M` arriving on its address (and every dead letter) to the test.
pub struct Sink<M> {
    pub to: mpsc::Sender<M>,
    pub dead: Option<mpsc::Sender<DeadLetter>>,
}

impl<M: Clone + Send + 'static> Actor for Sink<M> {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|this: &mut Self, m: &M, _: &mut Context<'_, Self>| {
            let _ = this.to.send(m.clone());
        });
        ctx.subscribe(
            |this: &mut Self, letter: &DeadLetter, _: &mut Context<'_, Self>| {
                if let Some(dead) = &this.dead {
                    let _ = dead.send(letter.clone());
                }
            },
        );
    }
}

/// Starts a node serving `Square` as "calc" on `nats`.
pub fn calc_node(nats: &Nats) -> Node {
    let nats = nats.clone();
    let (node, ()) = Node::start("server", move |system, root| {
        let calculator = system.spawn(root, Calculator).finish()?;
        system
            .spawn(root, nats.service("calc", &calculator).request::<Square>())
            .finish()?;
        Ok(())
    });
    node
}

/// Asks the request it is told to ([`Ask`]) and reports each response.
pub struct Prober {
    pub remote: Address,
    pub out: mpsc::Sender<Answer>,
}

/// Tells a [`Prober`] to ask `Square(n)` with a timeout.
pub struct Ask(pub u64, pub Duration);

impl Actor for Prober {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|this: &mut Self, ask: &Ask, ctx: &mut Context<'_, Self>| {
            let remote = this.remote.clone();
            ctx.request(&remote, Square(ask.0), ask.1);
        });
        ctx.subscribe(
            |this: &mut Self, r: &Response<Square>, _: &mut Context<'_, Self>| {
                let result = r
                    .result()
                    .copied()
                    .map_err(|e| (e.code(), format!("{e:#}")));
                let _ = this.out.send((r.request().0, result));
            },
        );
    }
}

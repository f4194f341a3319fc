//! Request/response with timeouts: every request gets exactly one response.
//!
//! A client asks a bank for five balances, one after another, and prints one
//! line per outcome, in this order: a successful reply, a server error reply,
//! a timeout, a timeout followed by a late reply that is dropped, and a
//! cancellation.
//!
//! Whenever a request ends without a reply (the requester's timeout, its
//! `cancel_request`, or its shutdown) the server gets a `CancelRequest<R>`
//! for it, so it can stop working on it. The `CancelRequest` does not say
//! which of these it was: the bank prints that the client gave up, and the
//! client, which knows, prints what happened.
//!
//! Run it with `cargo run --example request_response`; it ends by itself in
//! well under a second.

use commutator::prelude::*;
use commutator::{CancelRequest, RequestId};
use std::collections::HashMap;
use std::time::Duration;

/// How long the client waits for each answer.
const TIMEOUT: Duration = Duration::from_millis(30);

struct Balance {
    account: u64,
}

impl Request for Balance {
    type Response = u64;
}

/// Serves `RequestMsg<Balance>`: account 1 has 100, 2 does not exist, 3 never
/// answers, 4 answers after 80 ms, 5 is slow and gets cancelled.
#[derive(Default)]
struct Bank {
    /// Requests not answered at once: which account each is about.
    working_on: HashMap<RequestId, u64>,
}

impl Actor for Bank {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_balance);
        ctx.subscribe(Self::on_cancel);
    }
}

impl Bank {
    fn on_balance(&mut self, q: &RequestMsg<Balance>, ctx: &mut Context<'_, Self>) {
        let account = q.payload().account;
        match account {
            1 => ctx.reply(q, 100),
            2 => ctx.reply_error(q, Error::failure("no such account")),
            _ => {
                self.working_on.insert(q.id(), account);
                if account == 3 {
                    return; // never answers
                }
                let q = q.clone(); // a deferred reply
                ctx.start_timer(Duration::from_millis(80), move |me: &mut Self, ctx, _| {
                    if me.working_on.remove(&q.id()).is_none() {
                        println!("bank:    answers account {account} after the client gave up");
                    }
                    ctx.reply(&q, 40) // dropped if it comes too late
                });
            }
        }
    }

    /// The client no longer waits: its timeout expired, it cancelled, or it
    /// shut down. A real server would stop working on the request here.
    fn on_cancel(&mut self, c: &CancelRequest<Balance>, _: &mut Context<'_, Self>) {
        if let Some(account) = self.working_on.remove(&c.id()) {
            println!("bank:    the client gave up on account {account} (timeout or cancel)");
        }
    }
}

struct Client {
    bank: Address,
    next: u64,
}

impl Actor for Client {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_balance);
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.ask(ctx);
    }
}

impl Client {
    fn ask(&mut self, ctx: &mut Context<'_, Self>) {
        self.next += 1;
        let id = ctx.request(&self.bank, Balance { account: self.next }, TIMEOUT);
        if self.next == 5 {
            ctx.start_timer(Duration::from_millis(10), move |_, ctx, _| {
                ctx.cancel_request(id);
            });
        }
    }

    fn on_balance(&mut self, r: &Response<Balance>, ctx: &mut Context<'_, Self>) {
        let account = r.request().account;
        let what = match r.result() {
            Ok(balance) => format!("the bank replied: balance {balance}"),
            Err(e) if e.code() == ErrorCode::RequestTimeout => {
                format!("no reply within {TIMEOUT:?}: {e:#}")
            }
            Err(e) if e.code() == ErrorCode::Cancelled => {
                format!("cancelled by this client: {e:#}")
            }
            Err(e) => format!("the bank replied with an error: {e:#}"),
        };
        println!("client:  account {account}: {what}");
        match account {
            // wait until the late reply to account 4 has come and gone
            4 => {
                ctx.start_timer(Duration::from_millis(70), |me, ctx, _| me.ask(ctx));
            }
            5 => ctx.shutdown_supervisor(),
            _ => self.ask(ctx),
        }
    }
}

fn main() -> Result<(), Error> {
    let mut system = System::named("L0")?;
    // Show the drop of the late reply: inspection lines at level 1 go to this sink.
    system.locality().inspect_with(1, |line| {
        if line.contains("late") {
            println!("inspect: {line}");
        }
    });
    let root = system
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()?;
    let bank = system.spawn(&root, Bank::default()).name("bank").finish()?;
    system
        .spawn(&root, Client { bank, next: 0 })
        .name("client")
        .finish()?;
    system.run()
}

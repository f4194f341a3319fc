//! Request/response with timeouts: every request gets exactly one response.
//!
//! A client asks a bank for five balances, one after another, and prints one
//! line per outcome, in this order: a successful reply, a server error reply,
//! a timeout, a late reply that is dropped, and a cancellation.
//!
//! Run it with `cargo run --example request_response`; it ends by itself in
//! well under a second.

use commutator::CancelRequest;
use commutator::prelude::*;
use std::time::Duration;

struct Balance {
    account: u64,
}

impl Request for Balance {
    type Response = u64;
}

/// Serves `RequestMsg<Balance>`: account 1 has 100, 2 does not exist, 3 never
/// answers, 4 answers after 80 ms, 5 is slow and gets cancelled.
struct Bank;

impl Actor for Bank {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_balance);
        ctx.subscribe(Self::on_cancel);
    }
}

impl Bank {
    fn on_balance(&mut self, q: &RequestMsg<Balance>, ctx: &mut Context<'_, Self>) {
        match q.payload().account {
            1 => ctx.reply(q, 100),
            2 => ctx.reply_error(q, Error::failure("no such account")),
            3 => {} // never answers: the requester's timer will
            _ => {
                let q = q.clone(); // a deferred reply
                ctx.start_timer(Duration::from_millis(80), move |_, ctx, _| {
                    ctx.reply(&q, 40)
                });
            }
        }
    }

    fn on_cancel(&mut self, c: &CancelRequest<Balance>, _: &mut Context<'_, Self>) {
        println!("bank:    {} was cancelled by its requester", c.id());
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
        let id = ctx.request(
            &self.bank,
            Balance { account: self.next },
            Duration::from_millis(30),
        );
        if self.next == 5 {
            ctx.start_timer(Duration::from_millis(10), move |_, ctx, _| {
                ctx.cancel_request(id);
            });
        }
    }

    fn on_balance(&mut self, r: &Response<Balance>, ctx: &mut Context<'_, Self>) {
        let account = r.request().account;
        match r.result() {
            Ok(balance) => println!("client:  account {account}: balance {balance}"),
            Err(e) => println!("client:  account {account}: {e}"),
        }
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
    let bank = system.spawn(&root, Bank).name("bank").finish()?;
    system
        .spawn(&root, Client { bank, next: 0 })
        .name("client")
        .finish()?;
    system.run()
}

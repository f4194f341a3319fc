//! The program that `docs/tutorial.md` builds step by step: two actors on a
//! `System`, a registry lookup, and requests with a timeout.
//!
//! The root supervisor keeps a registry. A `Bank` registers itself there as
//! "bank"; a `Teller` looks the name up while it initializes, so the tree
//! becomes operational only once the teller knows where the bank is. The
//! teller then asks for two balances, with a 100 ms timeout each: account 1
//! is answered at once; account 7 is in the archive, the bank needs 500 ms
//! for it, and the teller gets a timeout instead. Then the teller shuts the
//! tree down and `System::run` returns.
//!
//! Run it with `cargo run --example tutorial`. It ends by itself after about
//! 100 ms and prints:
//!
//! ```text
//! teller: found the bank at tutorial/bank#3
//! teller: account 1 holds 100
//! teller: account 7: request timeout (tutorial/bank#3)
//! main: the tree has shut down
//! ```
//!
//! With `COMMUTATOR_INSPECT_DELIVERY=1` every message is printed as well
//! (level 2 adds the registry's and the lifecycle's own traffic).

use commutator::prelude::*;
use std::time::Duration;

/// Teller → bank: the balance of one account. A request names its response.
struct Balance {
    account: u64,
}

impl Request for Balance {
    type Response = u64;
}

/// The account that takes the bank too long to look up.
const ARCHIVED: u64 = 7;
/// How long the teller waits for each answer.
const TIMEOUT: Duration = Duration::from_millis(100);

/// The server: answers `Balance` requests.
struct Bank;

impl Actor for Bank {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_balance);
    }
}

impl Bank {
    fn on_balance(&mut self, q: &RequestMsg<Balance>, ctx: &mut Context<'_, Self>) {
        let account = q.payload().account;
        if account == ARCHIVED {
            // Keep the request and reply later: too late, as it turns out.
            let q = q.clone();
            ctx.start_timer(Duration::from_millis(500), move |_, ctx, _| {
                ctx.reply(&q, 0)
            });
        } else {
            ctx.reply(q, account * 100);
        }
    }
}

/// The client: finds the bank by name, then asks it questions.
#[derive(Default)]
struct Teller {
    bank: Option<Address>,
}

impl Actor for Teller {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_balance);
        // Init waits for the answer; `wait()` waits for the name to be registered.
        ctx.discover("bank").wait().then(|me: &mut Self, bank, _| {
            println!("teller: found the bank at {bank}");
            me.bank = Some(bank.clone());
        });
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.ask(1, ctx);
    }
}

impl Teller {
    fn ask(&mut self, account: u64, ctx: &mut Context<'_, Self>) {
        if let Some(bank) = &self.bank {
            ctx.request(bank, Balance { account }, TIMEOUT);
        }
    }

    /// Exactly one response per request: the reply, or why there is none.
    fn on_balance(&mut self, r: &Response<Balance>, ctx: &mut Context<'_, Self>) {
        let account = r.request().account;
        match r.result() {
            Ok(balance) => println!("teller: account {account} holds {balance}"),
            Err(e) => println!("teller: account {account}: {e:#}"),
        }
        if account == ARCHIVED {
            ctx.shutdown_supervisor(); // the root goes, so `run` returns
        } else {
            self.ask(ARCHIVED, ctx);
        }
    }
}

fn main() -> Result<(), Error> {
    let mut system = System::named("tutorial")?;
    let root = system
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default().with_registry())
        .finish()?;
    system
        .spawn(&root, Bank)
        .name("bank")
        .register_as("bank")
        .finish()?;
    system
        .spawn(&root, Teller::default())
        .name("teller")
        .finish()?;
    system.run()?;
    println!("main: the tree has shut down");
    Ok(())
}

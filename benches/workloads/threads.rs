//! `w5`: `w1` across two threads (two `System`s), strictly alternating
//! (`w5_threads`) or with `WINDOW` messages in flight (`w5_pipelined`). A
//! module of `workloads`.

use super::*;

thread_local! {
    static STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Messages in flight in `w5_pipelined`.
const WINDOW: u64 = 1_000;

/// Finds the player on L1, then starts the game (and the clock).
struct Kicker {
    player: Address,
}

impl Actor for Kicker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let player = self.player.clone();
        ctx.discover("player")
            .wait()
            .then(move |_: &mut Self, other, ctx| {
                STARTED.with(|s| s.set(Some(Instant::now())));
                ctx.send(&player, Go(Some(other.clone()), n(N_THREADS)));
            });
    }
}

/// The L0 side of `w5_pipelined`: starts `WINDOW` rallies of `count /
/// WINDOW` hops each (an even number: each ends here), done when all have.
#[derive(Default)]
struct Rallies {
    other: Option<Address>,
    ended: u64,
}

impl Actor for Rallies {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_go);
        ctx.subscribe(Self::on_ping);
    }
}

impl Rallies {
    fn on_go(&mut self, go: &Go, ctx: &mut Context<'_, Self>) {
        self.other = go.0.clone();
        if let Some(other) = &self.other {
            for _ in 0..WINDOW {
                ctx.send(other, Ping(go.1 / WINDOW));
            }
        }
    }

    fn on_ping(&mut self, ping: &Ping, ctx: &mut Context<'_, Self>) {
        match &self.other {
            Some(other) if ping.0 > 1 => ctx.send(other, Ping(ping.0 - 1)),
            _ => {
                self.ended += 1;
                if self.ended == WINDOW {
                    done(ctx);
                }
            }
        }
    }
}

/// Strict alternation (`pipelined: false`: one message in flight) or
/// `WINDOW` messages in flight; the same count of messages either way.
pub(super) fn w5(pipelined: bool) {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let mut system = System::named("L1").expect("system");
        tx.send(system.handle()).expect("handle");
        system.run()
    });
    let l1 = rx.recv().expect("L1 starts");
    let mut system = System::named("L0").expect("system");
    let config = SupervisorConfig::default().with_registry();
    let root = system
        .spawn_root(Supervisor)
        .supervisor(config)
        .finish()
        .expect("root");
    let here = if pipelined {
        system.spawn(&root, Rallies::default()).finish()
    } else {
        system.spawn(&root, Player::default()).finish()
    }
    .expect("player");
    let back = here.clone();
    let there = move || Player {
        other: Some(back.clone()),
    };
    system
        .spawn_on(&l1, &root, there)
        .register_as("player")
        .finish()
        .expect("player on L1");
    system
        .spawn(&root, Kicker { player: here })
        .finish()
        .expect("kicker");
    DONE.with(|d| d.set(None));
    system.run().expect("run");
    drop(l1);
    thread.join().expect("L1 joins").expect("L1 runs");
    let (start, end) = (STARTED.with(Cell::get), DONE.with(Cell::get));
    let secs = end
        .zip(start)
        .map_or(0.0, |(e, s)| e.duration_since(s).as_secs_f64());
    let name = if pipelined {
        "w5_pipelined"
    } else {
        "w5_threads"
    };
    report(name, n(N_THREADS), secs);
}

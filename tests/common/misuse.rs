//! What the misuse tests (`misuse*.rs`) share: a finished locality, a
//! [`Tester`] that runs a probe of the test's in its handler, and the
//! locality's stores to compare before and after.

use super::{Clock, Log, root_on_l0};
use commutator::{Actor, Address, Context, Locality};

/// A locality whose only root has shut down.
pub fn finished_locality() -> (Locality, Address) {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&root).unwrap();
    locality.run_until_idle(clock.at(0));
    assert!(locality.is_finished());
    (locality, root)
}

/// Runs a probe the test sends it, inside its handler, and logs what the
/// probe returns: how the newer `Context` calls are refused.
pub struct Tester {
    pub log: Log,
}

pub type Probe = Box<dyn FnOnce(&mut Context<'_, Tester>) -> String + Send>;

/// A probe for a `Tester`.
pub struct Run(std::sync::Mutex<Option<Probe>>);

pub fn run(probe: impl FnOnce(&mut Context<'_, Tester>) -> String + Send + 'static) -> Run {
    Run(std::sync::Mutex::new(Some(Box::new(probe))))
}

impl Actor for Tester {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, r: &Run, ctx: &mut Context<'_, Self>| {
            let probe = r.0.lock().unwrap().take();
            if let Some(probe) = probe {
                me.log.push(probe(ctx));
            }
        });
    }
}

pub fn code<T>(r: commutator::Result<T>) -> String {
    format!("{:?}", r.map(drop).map_err(|e| e.code()))
}

/// A locality `L0` with a root and an operational `Tester` named `tester`.
pub fn with_tester(log: &Log) -> (Locality, Address, Address) {
    let (mut l, root) = root_on_l0();
    let tester = l
        .spawn(&root, Tester { log: log.clone() })
        .name("tester")
        .finish()
        .unwrap();
    l.run_until_idle(Clock::new().at(0));
    (l, root, tester)
}

/// Sends a probe to the tester and runs it; returns what it logged.
pub fn probe(
    l: &mut Locality,
    tester: &Address,
    f: impl FnOnce(&mut Context<'_, Tester>) -> String + Send + 'static,
    log: &Log,
) -> String {
    l.send(tester, run(f)).unwrap();
    l.run_until_idle(Clock::new().at(0));
    log.take().join("\n")
}

/// Stats without the delivery counters (a probe is a delivered message).
pub fn stores(l: &Locality) -> [usize; 7] {
    let s = l.stats();
    [
        s.actors,
        s.addresses,
        s.subscriptions,
        s.timers,
        s.requests,
        s.io,
        s.queued,
    ]
}

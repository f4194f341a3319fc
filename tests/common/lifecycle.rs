//! What the lifecycle tests (`lifecycle*.rs`) share: a [`Probe`] actor that
//! logs every hook, and a root made of one.

use super::{Log, short};
use commutator::{Actor, Address, Context, Error, Locality, SupervisorConfig};

/// Logs every hook as `name#n hook [STATE]`; on `Stop` asks its supervisor
/// to shut down; optionally fails its init or its start.
#[derive(Clone)]
pub struct Probe {
    log: Log,
    fail_init: Option<&'static str>,
    fail_start: Option<&'static str>,
}

/// Tells a `Probe` to call `shutdown_supervisor()`.
pub struct Stop;

impl Probe {
    pub fn new(log: &Log) -> Probe {
        Probe {
            log: log.clone(),
            fail_init: None,
            fail_start: None,
        }
    }

    pub fn failing_init(log: &Log, why: &'static str) -> Probe {
        Probe {
            fail_init: Some(why),
            ..Probe::new(log)
        }
    }

    pub fn failing_start(log: &Log, why: &'static str) -> Probe {
        Probe {
            fail_start: Some(why),
            ..Probe::new(log)
        }
    }

    fn trace(&self, ctx: &Context<'_, Self>, what: &str) {
        self.log
            .push(format!("{} {what} [{}]", short(ctx.address()), ctx.state()));
    }

    fn on_stop(&mut self, _: &Stop, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "shutdown_supervisor()");
        ctx.shutdown_supervisor();
    }
}

impl Actor for Probe {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "init_start");
        ctx.subscribe(Self::on_stop);
        if let Some(why) = self.fail_init {
            ctx.fail(Error::failure(why));
        }
    }

    fn init_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "init_finish");
    }

    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "on_start");
        if let Some(why) = self.fail_start {
            ctx.fail(Error::failure(why));
        }
    }

    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "shutdown_start");
    }

    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.trace(ctx, "shutdown_finish");
    }
}

/// A root supervisor `root#1` on a locality named `L0`.
pub fn probe_root(log: &Log, config: SupervisorConfig) -> (Locality, Address) {
    let mut locality = Locality::named("L0");
    let root = locality
        .spawn_root(Probe::new(log))
        .name("root")
        .supervisor(config)
        .finish()
        .unwrap();
    (locality, root)
}

/// Nudges a [`Scripted`](super::Scripted) actor on (its script decides what to).
pub struct Nudge;

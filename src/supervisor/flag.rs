//! A supervisor that shuts down when a shared flag is set (rotor's
//! `shutdown_flag`): a timer of the supervisor's reads the flag at the
//! interval the user chose, from the supervisor's spawn until it shuts down.

use crate::actor::ActorState;
use crate::arena::Key;
use crate::error::Error;
use crate::lifecycle;
use crate::locality::Core;
use crate::locality::fire::TimerAction;
use crate::timer::TimerId;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The flag and how often it is read.
#[derive(Clone)]
pub(crate) struct ShutdownFlag {
    pub(crate) flag: Arc<AtomicBool>,
    pub(crate) every: Duration,
}

impl PartialEq for ShutdownFlag {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.flag, &other.flag) && self.every == other.every
    }
}

impl Eq for ShutdownFlag {}

impl fmt::Debug for ShutdownFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = self.flag.load(Ordering::Relaxed);
        write!(f, "ShutdownFlag(every {:?}, set: {set})", self.every)
    }
}

/// Reads `flag` for supervisor `me` once `flag.every` from now.
pub(crate) fn arm(core: &mut Core, me: Key, flag: Arc<ShutdownFlag>) {
    let every = flag.every;
    let read = move |core: &mut Core, me: Key, _: TimerId| read(core, me, flag);
    core.start_timer(every, me, TimerAction::User(Box::new(read)));
}

/// The supervisor shuts down if the flag is set; else it reads it again later.
fn read(core: &mut Core, me: Key, flag: Arc<ShutdownFlag>) {
    let Some(cell) = core.actors.get(me) else {
        return;
    };
    if cell.state >= ActorState::ShuttingDown {
        return;
    }
    if !flag.flag.load(Ordering::Acquire) {
        return arm(core, me, flag);
    }
    if let Some(address) = Core::main_address(&core.routes, cell) {
        tracing::info!(supervisor = %address, "shutdown flag set: shutting down");
    }
    let reason = Error::normal().with_context("shutdown flag set");
    lifecycle::request_own_shutdown(core, me, reason);
}

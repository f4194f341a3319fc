//! Resources: counters of external things an actor holds (a socket being
//! opened or closed, a connection being authorized...). Init does not finish
//! while any is held, nor does shutdown.

use crate::arena::Key;
use crate::error::{Error, ErrorCode, Result};
use crate::lifecycle::{self, SystemMsg};
use crate::locality::Core;
use crate::plugin::{PluginState, Vote};

/// Counts one more resource of `kind` held by `me`.
pub(crate) fn acquire(core: &mut Core, me: Key, kind: u32) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let resources = &mut cell.plugins().resources;
    match resources.iter_mut().find(|(k, _)| *k == kind) {
        Some((_, count)) => *count += 1,
        None => resources.push((kind, 1)),
    }
}

/// Counts one resource of `kind` less; when none is held any more, the
/// lifecycle votes again.
pub(crate) fn release(core: &mut Core, me: Key, kind: u32) -> Result<()> {
    let Some(cell) = core.actors.get_mut(me) else {
        return Err(Error::new(ErrorCode::StaleAddress));
    };
    let resources = cell.plugins_mut().map(|p| &mut p.resources);
    let Some(resources) = resources else {
        return Err(not_held(kind));
    };
    let Some(pos) = resources.iter().position(|(k, _)| *k == kind) else {
        return Err(not_held(kind));
    };
    resources[pos].1 -= 1;
    if resources[pos].1 == 0 {
        resources.swap_remove(pos);
    }
    if resources.is_empty() {
        lifecycle::to_self(core, me, SystemMsg::Poll);
    }
    Ok(())
}

fn not_held(kind: u32) -> Error {
    Error::new(ErrorCode::InvalidArgument).with_context(format!("resource {kind} is not held"))
}

/// How many resources of `kind` are held.
pub(crate) fn held(plugins: Option<&PluginState>, kind: u32) -> u32 {
    plugins
        .and_then(|p| p.resources.iter().find(|(k, _)| *k == kind))
        .map_or(0, |(_, n)| *n)
}

/// Resources' vote (init and shutdown alike): nothing held.
pub(crate) fn vote(plugins: &PluginState) -> Vote {
    if plugins.resources.is_empty() {
        Vote::Ready
    } else {
        Vote::Pending
    }
}

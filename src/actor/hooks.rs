//! Calling an actor's lifecycle hooks, and skipping those its type leaves
//! to the trait's default (found on their first call).

use super::{ActorCell, Hook, with_object};
use crate::arena::Key;
use crate::locality::Core;
use crate::names::TypeNames;

impl Hook {
    /// The hook's bit in `Core::default_hook` and in the per-type record of
    /// hooks (`TypeNames::hooks`); the supervisor hooks
    /// have bits 0 and 1 (`HOOK_INIT`, `HOOK_SHUTDOWN`).
    pub(crate) const fn bit(self) -> u8 {
        match self {
            Hook::InitStart => 4,
            Hook::InitFinish => 8,
            Hook::OnStart => 16,
            Hook::ShutdownStart => 32,
            Hook::ShutdownFinish => 64,
        }
    }

    /// The hooks that user plugins and names to register go with.
    pub(crate) const WITH_EXTRAS: u8 = 4 | 32;
}

/// Calls a lifecycle hook of the actor at `me`, unless its type is known
/// to leave it to the trait's default, which does nothing (found on the
/// hook's first call for the type: the default says so). Plugins and
/// names to register go with `init_start` and `shutdown_start`: an actor
/// with either is called anyway.
///
/// The cell keeps what its type's hooks are known to be
/// (`ActorCell::hooks`), so that a hook known either way costs no lookup
/// of the type.
#[inline]
pub(crate) fn call_hook(core: &mut Core, me: Key, hook: Hook) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let bit = u16::from(hook.bit());
    let mut hooks = cell.hooks;
    if hooks & bit != 0 {
        return; // a known default
    }
    if hooks >> 8 & bit == 0 {
        hooks = ask_type(cell, &mut core.type_names);
    }
    if hooks & bit == 0 {
        run_hook(core, me, hook, hooks >> 8 & bit != 0);
    }
}

/// A hook not known to the cell `cell`: it takes what its type's hooks
/// are now known to be (and keeps that); the cell's new record.
#[inline(never)]
fn ask_type(cell: &mut ActorCell, names: &mut TypeNames) -> u16 {
    let extras = cell.hooks & NO_EXTRAS == 0;
    let mut hooks = names.hooks(cell.actor.actor_type()) | cell.hooks & NO_EXTRAS;
    let with_extras = u16::from(Hook::WITH_EXTRAS);
    if hooks & with_extras != 0 && extras && cell.actor.has_extras() {
        // Plugins or names to register go with these hooks: they run.
        hooks = hooks & !with_extras | with_extras << 8;
    }
    cell.hooks = hooks;
    hooks
}

/// In `ActorCell::hooks`: the actor has no user plugins and no names to
/// register (known when it is made, and for good).
pub(crate) const NO_EXTRAS: u16 = 0x80;

/// Calls the hook (`call_hook`), learning what it is on its type's first
/// call (`known`: the cell knows it is overridden, so there is nothing to
/// learn unless it says it is the default after all).
#[inline(never)]
fn run_hook(core: &mut Core, me: Key, hook: Hook, known: bool) {
    let bit = hook.bit();
    let ty = match known {
        true => None,
        false => match core.actors.get(me) {
            Some(cell) => Some(cell.actor.actor_type()),
            None => return,
        },
    };
    core.default_hook &= !bit;
    let ran = with_object(core, me, |object, core| object.hook(hook, core, me));
    let default = core.default_hook & bit != 0;
    core.default_hook &= !bit;
    // Overridden only if it ran to its end without saying it is the default.
    if default || matches!(ran, Some(Ok(()))) && !known {
        let ty = ty.or_else(|| core.actors.get(me).map(|c| c.actor.actor_type()));
        if let Some(ty) = ty {
            core.type_names.learn_hook(ty, bit, default);
        }
    }
}

/// What a new cell of an actor type knows of its hooks at once: its
/// type's record (`TypeNames::hooks`), with the hooks that plugins and
/// names to register go with counted as overridden if it has `extras`
/// (as `call_hook_slow` would find on the first call).
#[inline]
pub(crate) fn known_hooks(type_hooks: u16, extras: bool) -> u16 {
    let with_extras = u16::from(Hook::WITH_EXTRAS);
    match extras {
        true if type_hooks & with_extras != 0 => type_hooks & !with_extras | with_extras << 8,
        true => type_hooks,
        false => type_hooks | NO_EXTRAS,
    }
}

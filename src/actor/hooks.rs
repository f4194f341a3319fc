//! Calling an actor's lifecycle hooks, and skipping those its type leaves
//! to the trait's default (found on their first call).

use super::{ActorCell, Hook, hook_object};
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
/// The cell keeps the index of its type's record (`ActorCell::hooks`,
/// `TypeNames::hook_index`), so that what its type's hooks are known to
/// be, by any of its actors, costs no lookup of the type.
#[inline]
pub(crate) fn call_hook(core: &mut Core, me: Key, hook: Hook) {
    let Some(cell) = core.actors.get(me) else {
        return;
    };
    if cell.hooks & NO_EXTRAS != 0 {
        call_hook_plain(core, me, hook, cell.hooks);
        return;
    }
    let bit = u16::from(hook.bit());
    let record = core.type_names.hooks(cell.hooks & !NO_EXTRAS);
    let with_extras = u16::from(Hook::WITH_EXTRAS);
    if (record | record >> 8) & bit == 0 {
        // Not known yet (or an extras' hook: `with_extras`).
        return run_hook(core, me, hook, extras(cell, bit, record));
    }
    if record & bit == 0 {
        return run_hook(core, me, hook, true); // overridden
    }
    // A known default: called anyway if plugins or names go with it.
    if bit & with_extras != 0 && cell.hooks & NO_EXTRAS == 0 && cell.actor.has_extras() {
        run_hook(core, me, hook, true);
    }
}

/// [`call_hook`] for a cell without extras (`NO_EXTRAS` in its `hooks`,
/// as the caller read them, with the cell): no lookup of the cell to
/// decide. `true` if the hook was called (user code ran, so the cell may
/// have changed); `false` if it was skipped as a known default.
#[inline(always)]
pub(crate) fn call_hook_plain(core: &mut Core, me: Key, hook: Hook, hooks: u16) -> bool {
    debug_assert!(hooks & NO_EXTRAS != 0);
    let bit = u16::from(hook.bit());
    let record = core.type_names.hooks(hooks & !NO_EXTRAS);
    if record & bit != 0 {
        return false; // a known default, and no extras go with it
    }
    // Overridden, or not known yet (then learnt from this call).
    run_hook(core, me, hook, (record >> 8) & bit != 0);
    true
}

/// `true` if `hook` of a cell without extras (its `hooks` as in
/// [`call_hook_plain`]) is known to be the trait's default: skipping it
/// changes nothing.
#[inline]
pub(crate) fn skips(types: &TypeNames, hook: Hook, hooks: u16) -> bool {
    hooks & NO_EXTRAS != 0 && types.hooks(hooks & !NO_EXTRAS) & u16::from(hook.bit()) != 0
}

/// [`call_hook`] with the cell's `hooks` as the caller read them: without
/// extras, no lookup of the cell to decide. `true` unless it was skipped
/// as a known default (the cell is then as it was).
#[inline]
pub(crate) fn call_hook_known(core: &mut Core, me: Key, hook: Hook, hooks: u16) -> bool {
    if hooks & NO_EXTRAS != 0 {
        return call_hook_plain(core, me, hook, hooks);
    }
    call_hook(core, me, hook);
    true
}

/// A hook not known yet of the cell's type: `true` (call it as
/// overridden, learning only if it says it is the default) if plugins or
/// names to register go with it and a hook of theirs is known to be the
/// default (as a cell with extras counts those hooks).
#[inline]
fn extras(cell: &ActorCell, bit: u16, record: u16) -> bool {
    let with_extras = u16::from(Hook::WITH_EXTRAS);
    bit & with_extras != 0
        && record & with_extras != 0
        && cell.hooks & NO_EXTRAS == 0
        && cell.actor.has_extras()
}

/// In `ActorCell::hooks`, beside the index of its type's record: the
/// actor has no user plugins and no names to register (known when it is
/// made, and for good).
pub(crate) const NO_EXTRAS: u16 = 0x8000;

/// Calls the hook (`call_hook`), learning what it is on its type's first
/// call (`known`: the cell knows it is overridden, so there is nothing to
/// learn unless it says it is the default after all).
#[inline(always)]
fn run_hook(core: &mut Core, me: Key, hook: Hook, known: bool) {
    let bit = hook.bit();
    core.default_hook &= !bit;
    let ran = hook_object(core, me, hook);
    let default = core.default_hook & bit != 0;
    core.default_hook &= !bit;
    // Overridden only if it ran to its end without saying it is the default.
    if (default || ran && !known)
        && let Some(cell) = core.actors.get(me)
    {
        let index = cell.hooks & !NO_EXTRAS;
        core.type_names.learn_hook(index, bit, default);
    }
}

/// What a new cell of an actor type keeps of its hooks: the index of its
/// type's record (`TypeNames::hook_index`), with `NO_EXTRAS` unless it may
/// have `extras` (plugins or names to register).
#[inline]
pub(crate) fn known_hooks(index: u16, extras: bool) -> u16 {
    match extras {
        true => index,
        false => index | NO_EXTRAS,
    }
}

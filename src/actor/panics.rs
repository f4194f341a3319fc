//! Panics in actors' code: caught, logged, and turned into an `Error` of
//! the actor that panicked.

use crate::arena::Key;
use crate::error::{Error, ErrorCode};
use crate::locality::Core;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The error for a panic in the user code of actor `me` (logged).
pub(crate) fn panicked(core: &Core, me: Key, payload: &(dyn Any + Send)) -> Error {
    let what = panic_message(payload);
    let who = core
        .address_of(me)
        .map_or_else(|| "an actor".to_string(), crate::Address::to_string);
    tracing::error!(actor = %who, panic = %what, "a handler panicked");
    Error::new(ErrorCode::Panicked).with_context(format!("{who}: {what}"))
}

/// The message a panic carried, if it was a string.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

/// Runs user code outside any handler (a factory, a `Drop`), catching a panic.
pub(crate) fn guarded<R>(core: &Core, me: Key, f: impl FnOnce() -> R) -> Result<R, Error> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panicked(core, me, payload.as_ref()))
}

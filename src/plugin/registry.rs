//! Registry client: register names, discover addresses, during init.
//!
//! Each request goes to the actor's registry with its answer coming back to a
//! private identity of the actor, removed once answered. While any is
//! unanswered the init vote is pending; a failure (`AlreadyRegistered`,
//! `UnknownService`) fails the init. Registered names are deregistered when
//! the actor shuts down.

use crate::actor::Actor;
use crate::address::Address;
use crate::arena::Key;
use crate::context::Context;
use crate::error::{Error, ErrorCode};
use crate::lifecycle;
use crate::locality::Core;
use crate::plugin::{PluginState, Vote};
use crate::registry::{Deregister, Discover, Register};
use crate::request::{Request, Response};
use std::borrow::Cow;
use std::cell::RefCell;
use std::time::Duration;

/// How long a registry request may wait when the actor has no init timeout.
const NO_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

pub(crate) fn register<A: Actor>(ctx: &mut Context<'_, A>, name: Cow<'static, str>) {
    if ctx.state() >= crate::ActorState::ShuttingDown {
        // Its names were deregistered when its shutdown started: one
        // registered now would outlive the actor.
        tracing::warn!(actor = %ctx.address(), %name, "not registered: the actor is shutting down");
        return;
    }
    let address = ctx.address().clone();
    let name = name.into_owned();
    // Recorded now, not on success: if the actor goes before the answer, its
    // `Deregister` follows the `Register` (per-sender order) and undoes it;
    // a refused name is left alone (`Deregister` checks the address).
    if let Some(cell) = ctx.core.actors.get_mut(ctx.me) {
        cell.plugins().names.push(name.clone());
    }
    let payload = Register { name, address };
    ask(
        ctx,
        payload,
        |_: &mut A, _: Result<&(), &Error>, _: &mut Context<'_, A>| {},
    );
}

/// Discovers `name`; on success calls `then` and, if asked, links to the address.
pub(crate) fn discover<A, F>(
    ctx: &mut Context<'_, A>,
    name: String,
    wait: bool,
    link: bool,
    then: F,
) where
    A: Actor,
    F: FnOnce(&mut A, &Address, &mut Context<'_, A>) + 'static,
{
    let then = RefCell::new(Some(then));
    let payload = Discover { name, wait };
    ask(
        ctx,
        payload,
        move |actor: &mut A, result: Result<&Address, &Error>, ctx: &mut Context<'_, A>| {
            if let Ok(address) = result {
                if let Some(then) = then.borrow_mut().take() {
                    then(actor, address, ctx);
                }
                if link {
                    crate::plugin::link::request(ctx.core, ctx.me, address);
                }
            }
        },
    );
}

/// Sends `payload` to the registry; the answer goes to `done`, then counts in the vote.
fn ask<A, R, F>(ctx: &mut Context<'_, A>, payload: R, done: F)
where
    A: Actor,
    R: Request,
    F: Fn(&mut A, Result<&R::Response, &Error>, &mut Context<'_, A>) + 'static,
{
    let me = ctx.me;
    let Some(cell) = ctx.core.actors.get_mut(me) else {
        return;
    };
    let Some(registry) = cell.registry.clone() else {
        let error = Error::new(ErrorCode::UnknownService)
            .with_context("no registry: build a supervisor `with_registry()`");
        return lifecycle::fail(ctx.core, me, error);
    };
    let timeout = cell.config().init_timeout.unwrap_or(NO_TIMEOUT);
    cell.plugins().registry_pending += 1;
    let Ok(reply_to) = ctx.create_address("registry") else {
        return; // in shutdown_finish: nothing is asked
    };
    let identity = reply_to.clone();
    let on_answer = move |actor: &mut A, r: &Response<R>, ctx: &mut Context<'_, A>| {
        ctx.core.remove_identity(ctx.me, &identity);
        if let Some(cell) = ctx.core.actors.get_mut(ctx.me) {
            let plugins = cell.plugins();
            plugins.registry_pending = plugins.registry_pending.saturating_sub(1);
        }
        done(actor, r.result(), ctx);
        match r.result() {
            Ok(_) => lifecycle::to_self(ctx.core, ctx.me, lifecycle::SystemMsg::Poll),
            Err(error) => lifecycle::fail(ctx.core, ctx.me, error.clone()),
        }
    };
    if ctx.subscribe_on(&reply_to, on_answer).is_ok() {
        let _ = ctx.request_via(&reply_to, &registry, payload, timeout);
    }
}

/// At shutdown: deregister every name the actor registered.
pub(crate) fn deregister_all(core: &mut Core, me: Key) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let (Some(registry), Some(plugins)) = (cell.registry.clone(), cell.plugins_mut()) else {
        return;
    };
    let names = std::mem::take(&mut plugins.names);
    let address = cell.address.clone();
    for name in names {
        core.send(
            &registry,
            me,
            Deregister {
                name,
                address: address.clone(),
            },
        );
    }
}

/// Registry client's init vote.
pub(crate) fn init_vote(plugins: &PluginState) -> Vote {
    if plugins.registry_pending > 0 {
        Vote::Pending
    } else {
        Vote::Ready
    }
}

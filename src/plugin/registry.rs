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
        false,
        |_: &mut A, _: Result<&(), &Error>, _: &mut Context<'_, A>| {},
    );
}

/// What a discovery does on a failure, if asked ([`Discovery::on_error`](crate::Discovery::on_error)).
pub(crate) type Failed<A> = Box<dyn FnOnce(&mut A, &Error, &mut Context<'_, A>)>;

/// Discovers `name`; on success calls `then` and, if asked, links to the
/// address. A failure (of the discovery, or of the link) goes to `failed`
/// if given, else it fails the actor.
pub(crate) fn discover<A, F>(
    ctx: &mut Context<'_, A>,
    name: String,
    wait: bool,
    link: bool,
    then: F,
    failed: Option<Failed<A>>,
) where
    A: Actor,
    F: FnOnce(&mut A, &Address, &mut Context<'_, A>) + 'static,
{
    let handled = failed.is_some();
    let then = RefCell::new(Some(then));
    let failed = RefCell::new(failed);
    let payload = Discover { name, wait };
    let done = move |actor: &mut A, result: Result<&Address, &Error>, ctx: &mut Context<'_, A>| {
        let address = match result {
            Ok(address) => address,
            Err(error) => {
                if let Some(failed) = failed.borrow_mut().take() {
                    failed(actor, error, ctx);
                }
                return;
            }
        };
        if let Some(then) = then.borrow_mut().take() {
            then(actor, address, ctx);
        }
        if !link {
            return;
        }
        let failed = failed.borrow_mut().take();
        if let Some(error) = crate::plugin::link::already_linked(ctx.core, ctx.me, address) {
            return match failed {
                Some(failed) => failed(actor, &error, ctx),
                None => lifecycle::fail(ctx.core, ctx.me, error),
            };
        }
        let on_link = failed.map(|failed| {
            Box::new(
                move |core: &mut Core, me: Key, result: Result<&Address, &Error>| {
                    if let Err(error) = result {
                        crate::actor::with_actor::<A>(core, me, |a, ctx| failed(a, error, ctx));
                    }
                },
            ) as crate::plugin::link::Done
        });
        let _ = crate::plugin::link::request(ctx.core, ctx.me, address, on_link);
    };
    ask(ctx, payload, handled, done);
}

/// Sends `payload` to the registry; the answer goes to `done`, then counts
/// in the vote. A failure then fails the actor, unless `handled` (`done`
/// took care of it).
fn ask<A, R, F>(ctx: &mut Context<'_, A>, payload: R, handled: bool, done: F)
where
    A: Actor,
    R: Request,
    F: Fn(&mut A, Result<&R::Response, &Error>, &mut Context<'_, A>) + 'static,
{
    let me = ctx.me;
    let registry = ctx
        .core
        .actors
        .get(me)
        .and_then(|cell| crate::actor::registry_of(ctx.core, cell).map(|r| Address::clone(r)));
    let Some(cell) = ctx.core.actors.get_mut(me) else {
        return;
    };
    let Some(registry) = registry else {
        let error = Error::new(ErrorCode::UnknownService)
            .with_context("no registry: build a supervisor `with_registry()`");
        if !handled {
            return lifecycle::fail(ctx.core, me, error);
        }
        // Told later, outside the caller's code (init waits for it).
        cell.plugins().registry_pending += 1;
        ctx.start_timer(Duration::ZERO, move |actor, ctx, _| {
            if let Some(cell) = ctx.core.actors.get_mut(ctx.me) {
                let plugins = cell.plugins();
                plugins.registry_pending = plugins.registry_pending.saturating_sub(1);
            }
            done(actor, Err(&error), ctx);
            lifecycle::to_self(ctx.core, ctx.me, lifecycle::SystemMsg::Poll);
        });
        return;
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
            Err(error) if !handled => lifecycle::fail(ctx.core, ctx.me, error.clone()),
            _ => lifecycle::to_self(ctx.core, ctx.me, lifecycle::SystemMsg::Poll),
        }
    };
    if ctx.subscribe_on(&reply_to, on_answer).is_ok() {
        let _ = ctx.request_via(&reply_to, &registry, payload, timeout);
    }
}

/// At shutdown: deregister every name the actor registered.
pub(crate) fn deregister_all(core: &mut Core, me: Key) {
    let Some(address) = core.address_of(me).cloned() else {
        return;
    };
    let registry = core
        .actors
        .get(me)
        .and_then(|cell| crate::actor::registry_of(core, cell).map(|r| Address::clone(r)));
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let (Some(registry), Some(plugins)) = (registry, cell.plugins_mut()) else {
        return;
    };
    let names = std::mem::take(&mut plugins.names);
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

//! External subscriptions: an actor here subscribes to a message type on an
//! address of another locality.
//!
//! The subscriber gets a private identity here, with its handler subscribed
//! on it as usual. The other locality installs a forwarder on the target
//! address, which sends a clone of every such message to that identity; so
//! forwarded messages keep their order. Unsubscribing removes the handler at
//! once and asks the other locality to remove the forwarder; the actor's
//! shutdown waits for that confirmation (`ExternalUnsubscribed`).

use crate::actor::ActorState;
use crate::address::Address;
use crate::arena::Key;
use crate::error::ErrorCode;
use crate::lifecycle::{self, SystemMsg};
use crate::locality::Core;
use crate::locality::shared::LocalityShared;
use crate::plugin::{PluginState, Vote};
use crate::subscription::{self, FnHandler};
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

/// One external subscription of an actor.
pub(crate) struct External {
    /// The handler's subscription on `identity`.
    local: Key,
    identity: Address,
    target: Address,
    /// The forwarder's subscription there, once confirmed.
    remote: Option<Key>,
    unsubscribing: bool,
}

/// Installs a forwarder on an address of the locality that runs it.
pub(crate) trait Install: Send {
    /// Subscribes the forwarder on `address`; its subscription key, if the address is live.
    fn install(self: Box<Self>, core: &mut Core, address: Key) -> Option<Key>;
}

/// The installer, as carried by a framework message.
pub(crate) struct Installer(pub(crate) Box<dyn Install>);

impl fmt::Debug for Installer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Installer")
    }
}

struct Forward<M> {
    to: Arc<LocalityShared>,
    identity: Key,
    _message: PhantomData<fn() -> M>,
}

impl<M: Clone + Send + 'static> Install for Forward<M> {
    fn install(self: Box<Self>, core: &mut Core, address: Key) -> Option<Key> {
        let Forward { to, identity, .. } = *self;
        let own = Rc::new(std::cell::Cell::new(Key::NONE));
        let this = own.clone();
        let forward = FnHandler::new(move |core: &mut Core, message: &M| {
            match to.post_user(identity, Key::REMOTE, message.clone()) {
                Ok(()) => {}
                // A full inbox drops this copy, as for any send from here.
                Err(e) if e.error.code() == ErrorCode::InboxFull => core.stats.dropped_full += 1,
                // The subscriber's locality has finished: nobody will hear it again.
                Err(_) => {
                    subscription::unsubscribe(core, this.get());
                }
            }
        });
        let sub = subscription::subscribe::<M>(core, address, Key::NONE, Box::new(forward))?;
        own.set(sub);
        Some(sub)
    }
}

/// Subscriber side: `local` (a subscription on `identity`) now hears `M` on `target`.
pub(crate) fn subscribe<M: Clone + Send + 'static>(
    core: &mut Core,
    me: Key,
    local: Key,
    identity: Address,
    target: &Address,
) {
    let forward = Forward::<M> {
        to: identity.locality().clone(),
        identity: identity.key(),
        _message: PhantomData,
    };
    let msg = SystemMsg::ExternalSubscribe {
        installer: Installer(Box::new(forward)),
        subscriber: identity.clone(),
    };
    let accepted = core.send_system(target, msg);
    if let Some(cell) = core.actors.get_mut(me) {
        let external = External {
            local,
            identity,
            target: target.clone(),
            remote: None,
            unsubscribing: false,
        };
        cell.plugins().externals.push(external);
    }
    if !accepted {
        confirmed_gone(core, me, local);
    } else if core
        .actors
        .get(me)
        .is_some_and(|c| c.state == ActorState::ShuttingDown)
    {
        // Made after shutdown_start ended the others: end it now too, or the
        // shutdown vote would wait for it forever.
        unsubscribe(core, me, local);
    }
}

/// Owner side: install the forwarder on `target` and confirm.
pub(crate) fn on_subscribe(
    core: &mut Core,
    target: Key,
    installer: Installer,
    subscriber: Address,
) {
    let remote = installer.0.install(core, target);
    let target = core.routes.address(target).map(|slot| slot.address.clone());
    let msg = SystemMsg::ExternalSubscribed {
        subscriber: Box::new(subscriber.clone()),
        remote,
        target: target.map(Box::new),
    };
    core.send_system(&subscriber, msg);
}

/// Subscriber side: the forwarder is installed (`remote`), or the target was gone.
pub(crate) fn on_subscribed(core: &mut Core, me: Key, identity: &Address, remote: Option<Key>) {
    let Some(external) = find(core, me, |e| &e.identity == identity) else {
        return;
    };
    external.remote = remote;
    let (local, unsubscribing) = (external.local, external.unsubscribing);
    if remote.is_none() {
        confirmed_gone(core, me, local); // nothing to hear there
    } else if unsubscribing {
        unsubscribe(core, me, local); // unsubscribed meanwhile: undo it now
    }
}

fn find(core: &mut Core, me: Key, which: impl Fn(&External) -> bool) -> Option<&mut External> {
    let plugins = core.actors.get_mut(me)?.plugins_mut()?;
    plugins.externals.iter_mut().find(|e| which(e))
}

/// Subscriber side: `local` is the handler's subscription; `true` if it was
/// external. The handler is not called again; the forwarder goes later.
pub(crate) fn unsubscribe(core: &mut Core, me: Key, local: Key) -> bool {
    if find(core, me, |e| e.local == local).is_none() {
        return false;
    }
    subscription::unsubscribe(core, local);
    let Some(external) = find(core, me, |e| e.local == local) else {
        return true;
    };
    external.unsubscribing = true;
    // Not confirmed yet: `on_subscribed` comes back here when it is.
    let Some(remote) = external.remote.take() else {
        return true;
    };
    let (target, subscriber) = (external.target.clone(), external.identity.clone());
    if !core.send_system(
        &target,
        SystemMsg::ExternalUnsubscribe { remote, subscriber },
    ) {
        confirmed_gone(core, me, local); // its locality is gone, and the forwarder with it
    }
    true
}

/// Owner side: remove the forwarder and confirm.
pub(crate) fn on_unsubscribe(core: &mut Core, remote: Key, subscriber: Address) {
    subscription::unsubscribe(core, remote);
    core.send_system(
        &subscriber.clone(),
        SystemMsg::ExternalUnsubscribed { subscriber },
    );
}

/// Subscriber side: the forwarder is gone.
pub(crate) fn on_unsubscribed(core: &mut Core, me: Key, identity: &Address) {
    let local = core
        .actors
        .get(me)
        .and_then(|c| c.plugins_ref())
        .and_then(|p| p.externals.iter().find(|e| &e.identity == identity))
        .map(|e| e.local);
    if let Some(local) = local {
        confirmed_gone(core, me, local);
    }
}

/// The external subscription `local` is over: forget it and its identity.
fn confirmed_gone(core: &mut Core, me: Key, local: Key) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let state = cell.state;
    let Some(plugins) = cell.plugins_mut() else {
        return;
    };
    let Some(pos) = plugins.externals.iter().position(|e| e.local == local) else {
        return;
    };
    let external = plugins.externals.swap_remove(pos);
    subscription::unsubscribe(core, local);
    core.remove_identity(me, &external.identity);
    if state == ActorState::ShuttingDown {
        lifecycle::to_self(core, me, SystemMsg::Poll);
    }
}

/// At shutdown start: end every external subscription.
pub(crate) fn unsubscribe_all(core: &mut Core, me: Key) {
    let locals: Vec<Key> = match core.actors.get(me).and_then(|c| c.plugins_ref()) {
        Some(plugins) => plugins
            .externals
            .iter()
            .filter(|e| !e.unsubscribing)
            .map(|e| e.local)
            .collect(),
        None => return,
    };
    for local in locals {
        unsubscribe(core, me, local);
    }
}

/// Shutdown vote: every external subscription confirmed gone.
pub(crate) fn shutdown_vote(plugins: &PluginState) -> Vote {
    if plugins.externals.is_empty() {
        Vote::Ready
    } else {
        Vote::Pending
    }
}

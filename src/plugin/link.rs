//! Link: a client links to a server, which then outlives it.
//!
//! The client sends `LinkRequest` (during init its init vote waits for the
//! answer). A server that is not shutting down records the client and
//! confirms. When the server is asked to shut down, it sends `UnlinkRequest`
//! to every client, and its shutdown vote waits until each has answered with
//! `UnlinkNotify`, which a client sends when it has shut down. Everything is
//! a message to an address, so links work across supervisors and localities.

use crate::actor::ActorState;
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode};
use crate::lifecycle::{self, SystemMsg};
use crate::locality::Core;
use crate::plugin::{PluginState, Vote};

/// Client side: asks `server` for a link.
pub(crate) fn request(core: &mut Core, me: Key, server: &Address) {
    let refused = outlived_by(core, me, server);
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let client = cell.address.clone();
    cell.plugins().links_pending += 1;
    if let Some(why) = refused {
        return answered(
            core,
            me,
            server,
            Err(Error::new(ErrorCode::InvalidArgument).with_context(why)),
        );
    }
    if !core.send_system(
        server,
        SystemMsg::LinkRequest {
            client,
            server: server.clone(),
        },
    ) {
        let error =
            Error::new(ErrorCode::LinkFailed).with_context(format!("{server}: locality finished"));
        answered(core, me, server, Err(error));
    }
}

/// Why `me` may not link to `server`: a server outlives its clients, but an
/// actor cannot outlive itself, and a supervisor outlives its descendants.
fn outlived_by(core: &Core, me: Key, server: &Address) -> Option<&'static str> {
    if server.locality_id() != core.id() {
        return None; // a descendant elsewhere is not detected
    }
    let mut actor = core.routes.address(server.key())?.owner;
    if actor == me {
        return Some("an actor cannot link to itself");
    }
    while let Some(parent) = core.actors.get(actor)?.parent.as_ref() {
        if parent.address.locality_id() != core.id() {
            return None;
        }
        actor = core.routes.address(parent.address.key())?.owner;
        if actor == me {
            return Some(
                "a supervisor cannot link to its own descendant (it waits for it at shutdown)",
            );
        }
    }
    None
}

/// Server side: a client asks for a link (to `server`, one of this actor's addresses).
pub(crate) fn on_request(core: &mut Core, me: Key, client: Address, server: Address) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let result = if cell.state < ActorState::ShuttingDown {
        cell.plugins().clients.push(client.clone());
        Ok(())
    } else {
        Err(Error::new(ErrorCode::LinkFailed).with_context(format!("{server} is shutting down")))
    };
    core.send_system(
        &client.clone(),
        SystemMsg::LinkResponse {
            server,
            client,
            result,
        },
    );
}

/// Client side: the server answered.
pub(crate) fn on_response(core: &mut Core, me: Key, server: Address, result: Result<(), Error>) {
    answered(core, me, &server, result);
}

fn answered(core: &mut Core, me: Key, server: &Address, result: Result<(), Error>) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let state = cell.state;
    let plugins = cell.plugins();
    plugins.links_pending = plugins.links_pending.saturating_sub(1);
    match result {
        Ok(()) => plugins.servers.push(server.clone()),
        Err(error) => {
            // During init, the init fails; afterwards, the actor is shut down.
            let error = Error::new(ErrorCode::LinkFailed)
                .with_context(server.to_string())
                .caused_by(error);
            return lifecycle::fail(core, me, error);
        }
    }
    if state == ActorState::Initializing {
        lifecycle::to_self(core, me, SystemMsg::Poll);
    }
}

/// Server side, at shutdown start: ask every linked client to unlink.
pub(crate) fn unlink_clients(core: &mut Core, me: Key) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let server = cell.address.clone();
    let Some(plugins) = cell.plugins_ref() else {
        return;
    };
    let clients = plugins.clients.clone();
    for client in clients {
        let msg = SystemMsg::UnlinkRequest {
            server: server.clone(),
            client: client.clone(),
        };
        if !core.send_system(&client, msg) {
            on_unlinked(core, me, &client); // its locality is gone: so is the client
        }
    }
}

/// Client side: the server asks to unlink; the client shuts down.
pub(crate) fn on_unlink_request(core: &mut Core, me: Key, server: Address) {
    let error = Error::new(ErrorCode::UnlinkRequested).with_context(server.to_string());
    lifecycle::request_own_shutdown(core, me, error);
}

/// Client side, when shut down: tell every server.
pub(crate) fn notify_servers(core: &mut Core, client: &Address, plugins: &PluginState) {
    for server in &plugins.servers {
        core.send_system(
            server,
            SystemMsg::UnlinkNotify {
                client: client.clone(),
            },
        );
    }
}

/// Server side: a client has unlinked.
pub(crate) fn on_unlinked(core: &mut Core, me: Key, client: &Address) {
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let state = cell.state;
    if let Some(plugins) = cell.plugins_mut()
        && let Some(pos) = plugins.clients.iter().position(|c| c == client)
    {
        plugins.clients.swap_remove(pos);
    }
    if state == ActorState::ShuttingDown {
        lifecycle::try_shutdown(core, me);
    }
}

/// A link message whose address is gone: answer for the missing actor.
pub(crate) fn undeliverable(core: &mut Core, msg: SystemMsg) {
    match msg {
        SystemMsg::LinkRequest { client, server } => {
            let error =
                Error::new(ErrorCode::StaleAddress).with_context(format!("{server} is gone"));
            core.send_system(
                &client.clone(),
                SystemMsg::LinkResponse {
                    server,
                    client,
                    result: Err(error),
                },
            );
        }
        // The client went away before the answer: undo the link.
        SystemMsg::LinkResponse {
            server,
            client,
            result: Ok(()),
        }
        | SystemMsg::UnlinkRequest { server, client } => {
            core.send_system(&server, SystemMsg::UnlinkNotify { client });
        }
        _ => {}
    }
}

/// Link client's init vote.
pub(crate) fn init_vote(plugins: &PluginState) -> Vote {
    if plugins.links_pending > 0 {
        Vote::Pending
    } else {
        Vote::Ready
    }
}

/// Link server's shutdown vote: every client has unlinked.
pub(crate) fn shutdown_vote(plugins: &PluginState) -> Vote {
    if plugins.clients.is_empty() {
        Vote::Ready
    } else {
        Vote::Pending
    }
}

//! Link: a client links to a server, which then outlives it.
//!
//! The client sends `LinkRequest` (during init its init vote waits for the
//! answer). A server that is not shutting down records the client and
//! confirms. When the server is asked to shut down, it sends `UnlinkRequest`
//! to every client, and its shutdown vote waits until each has answered with
//! `UnlinkNotify`, which a client sends when it has shut down. Everything is
//! a message to an address, so links work across supervisors and localities.

use crate::actor::{ActorState, Notice, UnlinkAction, notify};
use crate::address::Address;
use crate::arena::Key;
use crate::error::{Error, ErrorCode};
use crate::lifecycle::{self, SystemMsg};
use crate::locality::Core;
use crate::plugin::{PluginState, Vote};

/// What a client does with its link's answer, if it asked to be told
/// ([`Context::link_then`](crate::Context::link_then)): erased over the
/// actor's type.
pub(crate) type Done = Box<dyn FnOnce(&mut Core, Key, Result<&Address, &Error>)>;

/// A link asked for and not yet answered.
pub(crate) struct Pending {
    server: Address,
    done: Option<Done>,
}

/// Client side: asks `server` for a link; `done` hears the answer (else a
/// failure fails the actor). The answer always comes later, as a message,
/// so `done` never runs inside the caller's code.
///
/// Errors: `AlreadyLinked` if `me` is linked, or asking, already.
pub(crate) fn request(
    core: &mut Core,
    me: Key,
    server: &Address,
    done: Option<Done>,
) -> Result<(), Error> {
    if let Some(error) = already_linked(core, me, server) {
        return Err(error);
    }
    let refused = outlived_by(core, me, server);
    let Some(client) = core.address_of(me).cloned() else {
        return Ok(());
    };
    let Some(cell) = core.actors.get_mut(me) else {
        return Ok(());
    };
    cell.plugins().links_pending.push(Pending {
        server: server.clone(),
        done,
    });
    let result = match refused {
        Some(why) => Err(Error::new(ErrorCode::InvalidArgument).with_context(why)),
        None => {
            let msg = SystemMsg::LinkRequest {
                client: Box::new(client.clone()),
                server: Box::new(server.clone()),
            };
            if core.send_system(server, msg) {
                return Ok(());
            }
            let why = format!("{server}: locality finished");
            Err(Error::new(ErrorCode::LinkFailed).with_context(why))
        }
    };
    // Refused here: answered as the server would, by a message.
    let answer = SystemMsg::LinkResponse {
        server: Box::new(server.clone()),
        client: Box::new(client.clone()),
        result,
    };
    core.send_system(&client, answer);
    Ok(())
}

/// `AlreadyLinked` if `me` is linked to `server`, or has asked to be.
pub(crate) fn already_linked(core: &Core, me: Key, server: &Address) -> Option<Error> {
    let cell = core.actors.get(me)?;
    let plugins = cell.plugins_ref()?;
    let asked = plugins.links_pending.iter().any(|p| &p.server == server);
    (asked || plugins.servers.contains(server)).then(|| {
        let client =
            Core::main_address(&core.routes, cell).map_or_else(String::new, Address::to_string);
        let why = format!("{client} to {server}");
        Error::new(ErrorCode::AlreadyLinked).with_context(why)
    })
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
    while let Some(parent) = core.actors.get(actor)?.parent() {
        let crate::actor::Parent::Local { key, .. } = parent else {
            return None;
        };
        actor = core.routes.address(key)?.owner;
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
            server: Box::new(server),
            client: Box::new(client),
            result,
        },
    );
}

/// Client side: the server answered.
pub(crate) fn on_response(core: &mut Core, me: Key, server: Address, result: Result<(), Error>) {
    let Some(client) = core.address_of(me).cloned() else {
        return;
    };
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let state = cell.state;
    let plugins = cell.plugins();
    let Some(at) = plugins
        .links_pending
        .iter()
        .position(|p| p.server == server)
    else {
        // Not asked for (any more): undo a link made.
        if result.is_ok() {
            core.send_system(&server, SystemMsg::UnlinkNotify { client });
        }
        return;
    };
    let pending = plugins.links_pending.remove(at);
    let result = match result {
        Ok(()) => {
            plugins.servers.push(server.clone());
            Ok(())
        }
        Err(error) => Err(Error::new(ErrorCode::LinkFailed)
            .with_context(server.to_string())
            .caused_by(error)),
    };
    match (pending.done, result) {
        (Some(done), result) => done(core, me, result.as_ref().map(|()| &server)),
        // During init, the init fails; afterwards, the actor is shut down.
        (None, Err(error)) => return lifecycle::fail(core, me, error),
        (None, Ok(())) => {}
    }
    if state == ActorState::Initializing {
        lifecycle::to_self(core, me, SystemMsg::Poll);
    }
}

/// Client side: unlinks from `server` (which then no longer waits for
/// this client). Errors: `InvalidArgument` if not linked to it.
pub(crate) fn unlink(core: &mut Core, me: Key, server: &Address) -> Result<(), Error> {
    let Some(client) = core.address_of(me).cloned() else {
        return Ok(());
    };
    let Some(cell) = core.actors.get_mut(me) else {
        return Ok(());
    };
    let servers = cell.plugins_mut().map(|p| &mut p.servers);
    let Some(servers) = servers.filter(|s| s.contains(server)) else {
        let asked = cell
            .plugins_ref()
            .is_some_and(|p| p.links_pending.iter().any(|l| &l.server == server));
        let why = match asked {
            true => format!("{client}: the link to {server} is not confirmed yet"),
            false => format!("{client} is not linked to {server}"),
        };
        return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
    };
    servers.retain(|s| s != server);
    core.send_system(server, SystemMsg::UnlinkNotify { client });
    Ok(())
}

/// Server side, at shutdown start: ask every linked client to unlink.
pub(crate) fn unlink_clients(core: &mut Core, me: Key) {
    let Some(server) = core.address_of(me).cloned() else {
        return;
    };
    let Some(cell) = core.actors.get_mut(me) else {
        return;
    };
    let Some(plugins) = cell.plugins_ref() else {
        return;
    };
    let clients = plugins.clients.clone();
    for client in clients {
        let msg = SystemMsg::UnlinkRequest {
            server: Box::new(server.clone()),
            client: Box::new(client.clone()),
        };
        if !core.send_system(&client, msg) {
            on_unlinked(core, me, &client); // its locality is gone: so is the client
        }
    }
}

/// Client side: the server asks to unlink; the client's `on_unlink`
/// decides: shut down (the default), unlink and carry on, or later.
pub(crate) fn on_unlink_request(core: &mut Core, me: Key, server: Address) {
    let Some(cell) = core.actors.get(me) else {
        return;
    };
    let linked = cell
        .plugins_ref()
        .is_some_and(|p| p.servers.contains(&server));
    // Leaving already: its servers hear of it when it is gone.
    if !linked || cell.state >= ActorState::ShuttingDown {
        return;
    }
    match notify(core, me, Notice::Unlink(&server)).unwrap_or_default() {
        UnlinkAction::Shutdown => {
            let error = Error::new(ErrorCode::UnlinkRequested).with_context(server.to_string());
            lifecycle::request_own_shutdown(core, me, error);
        }
        UnlinkAction::Release => {
            let _ = unlink(core, me, &server);
        }
        UnlinkAction::Defer => {}
    }
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
            core.send_system(&server, SystemMsg::UnlinkNotify { client: *client });
        }
        _ => {}
    }
}

/// Link client's init vote.
pub(crate) fn init_vote(plugins: &PluginState) -> Vote {
    if !plugins.links_pending.is_empty() {
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

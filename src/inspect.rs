//! Delivery inspection: one line per message a locality routes.
//!
//! Enabled by `COMMUTATOR_INSPECT_DELIVERY=<level>` (read once when a locality
//! is created) or by [`Locality::inspect`](crate::Locality::inspect):
//!
//! | level | shows |
//! |---|---|
//! | 0 | nothing (the default; one branch per message) |
//! | 1 | user messages: delivered, sent to another locality, dropped (no subscriber, stale address, late or duplicate reply, locality finished); a supervisor giving up on a failed child |
//! | 2 | also the framework's own traffic: lifecycle, links, external subscriptions, the registry's requests |
//!
//! Lines go to `tracing` (target `commutator::delivery`, level INFO) when a
//! subscriber is installed, to stderr otherwise, or to a sink of the user's.

use crate::arena::{Key, KeyMap};
use crate::error::ErrorCode;
use crate::lifecycle::SystemMsg;
use crate::locality::Core;
use crate::message::short_type_name;
use std::collections::HashMap;
use std::fmt::Write;

/// The environment variable that sets the inspection level.
pub const INSPECT_ENV: &str = "COMMUTATOR_INSPECT_DELIVERY";

/// Where inspection lines go.
pub(crate) enum Sink {
    /// `tracing` if a subscriber is installed, else stderr.
    Auto,
    /// A function of the user's.
    Custom(Box<dyn FnMut(&str)>),
}

/// Why a message was dropped.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Drop {
    NoSubscriber,
    Stale,
    LateReply,
}

pub(crate) struct Inspect {
    pub(crate) level: u8,
    sink: Sink,
    /// Names of removed addresses, so drops to them stay readable.
    gone: KeyMap<String>,
    /// Message types whose payload is printed, and how.
    pub(crate) printers: HashMap<std::any::TypeId, Printer>,
}

/// Prints a payload (its type is checked by the caller's `TypeId`).
pub(crate) type Printer = fn(&dyn std::any::Any) -> String;

const GONE_CAPACITY: usize = 4096;

impl Inspect {
    pub(crate) fn from_env() -> Inspect {
        let level = std::env::var(INSPECT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u8>().ok())
            .unwrap_or(0);
        Inspect {
            level,
            sink: Sink::Auto,
            gone: KeyMap::default(),
            printers: HashMap::new(),
        }
    }

    pub(crate) fn set(&mut self, level: u8, sink: Sink) {
        self.level = level;
        self.sink = sink;
    }

    fn emit(&mut self, line: &str) {
        match &mut self.sink {
            Sink::Custom(f) => f(line),
            Sink::Auto if tracing::dispatcher::has_been_set() => {
                tracing::info!(target: "commutator::delivery", "{line}");
            }
            Sink::Auto => eprintln!("{line}"),
        }
    }

    /// Remembers the name of an address that is being removed.
    pub(crate) fn forget(&mut self, key: Key, name: String) {
        if self.gone.len() >= GONE_CAPACITY {
            self.gone.clear();
        }
        self.gone.insert(key, name);
    }
}

pub(crate) fn address_name(core: &Core, key: Key) -> String {
    match core.routes.address(key) {
        Some(slot) => slot.address.to_string(),
        None => core
            .inspect
            .gone
            .get(&key)
            .cloned()
            .unwrap_or_else(|| format!("{}/?", core.name())),
    }
}

/// How a sender shows on a line (and in a dead letter).
pub(crate) fn sender_name(core: &Core, actor: Key) -> String {
    actor_name(core, actor)
}

fn actor_name(core: &Core, actor: Key) -> String {
    if actor.is_none() {
        return "outside".to_string();
    }
    if actor == Key::REMOTE {
        return "another locality".to_string();
    }
    if actor == Key::FRAMEWORK {
        return "framework".to_string();
    }
    match core.address_of(actor) {
        Some(address) => address.to_string(),
        None => "gone".to_string(),
    }
}

fn actor_label(core: &Core, actor: Key) -> String {
    if actor.is_none() {
        return "a subscriber on another locality".to_string();
    }
    match core.address_of(actor) {
        Some(address) => format!("{}#{}", address.actor_name(), address.seq()),
        None => "gone".to_string(),
    }
}

/// `true` if a message of type `M` shows at the current level: user messages
/// from level 1, the framework's own (the registry's protocol, the child
/// events of entity sets and pools) from level 2.
pub(crate) fn shows<M: 'static>(core: &Core) -> bool {
    match core.inspect.level {
        0 => false,
        1 => !is_framework::<M>(),
        _ => true,
    }
}

fn is_framework<M: 'static>() -> bool {
    use crate::registry::{Deregister, Discover, Register};
    use crate::request::{CancelRequest, RequestMsg, Response};
    use std::any::TypeId;
    let t = TypeId::of::<M>();
    [
        TypeId::of::<RequestMsg<Register>>(),
        TypeId::of::<Response<Register>>(),
        TypeId::of::<RequestMsg<Discover>>(),
        TypeId::of::<Response<Discover>>(),
        TypeId::of::<CancelRequest<Discover>>(),
        TypeId::of::<Deregister>(),
        TypeId::of::<crate::entity::watch::ChildEvent>(),
        TypeId::of::<crate::request::Answered>(),
    ]
    .contains(&t)
}

pub(crate) fn routed<M: 'static>(
    core: &mut Core,
    dest: Key,
    sender: Key,
    handlers: impl Iterator<Item = Key>,
    message: &M,
) {
    let mut line = format!(
        "{}: {} {} -> {}: delivered to ",
        core.name(),
        payload::<M>(core, message),
        actor_name(core, sender),
        address_name(core, dest)
    );
    for (i, actor) in handlers.enumerate() {
        if i > 0 {
            line.push_str(", ");
        }
        line.push_str(&actor_label(core, actor));
    }
    core.inspect.emit(&line);
}

pub(crate) fn dropped<M: 'static>(core: &mut Core, dest: Key, sender: Key, why: Drop, message: &M) {
    if !shows::<M>(core) {
        return;
    }
    let why = match why {
        Drop::NoSubscriber => "dropped (no subscriber)",
        Drop::Stale => "dropped (stale address)",
        Drop::LateReply => "dropped (late or duplicate reply)",
    };
    let line = format!(
        "{}: {} {} -> {}: {why}",
        core.name(),
        payload::<M>(core, message),
        actor_name(core, sender),
        address_name(core, dest)
    );
    core.inspect.emit(&line);
}

pub(crate) fn late_reply<M: 'static>(core: &mut Core, dest: Key, sender: Key, message: &M) {
    dropped::<M>(core, dest, sender, Drop::LateReply, message);
}

/// How a message shows on a line: its type name, and its payload too if its
/// type was registered ([`Locality::inspect_payload`](crate::Locality::inspect_payload)).
fn payload<M: 'static>(core: &Core, message: &M) -> String {
    let name = short_type_name::<M>();
    match core.inspect.printers.get(&std::any::TypeId::of::<M>()) {
        Some(print) => format!("{name}({})", print(message)),
        None => name,
    }
}

pub(crate) fn forwarded<M: 'static>(
    core: &mut Core,
    sender: Key,
    to: &crate::Address,
    outcome: &str,
) {
    if !shows::<M>(core) {
        return;
    }
    let line = format!(
        "{}: {} {} -> {to}: {outcome}",
        core.name(),
        short_type_name::<M>(),
        actor_name(core, sender)
    );
    core.inspect.emit(&line);
}

/// A supervisor (`me`) let a failed child go for good (level 1: a failure
/// nobody restarts is news even when only user messages are shown).
pub(crate) fn gave_up(
    core: &mut Core,
    me: Key,
    child: &dyn std::fmt::Display,
    reason: &crate::Error,
    then: &str,
) {
    if core.inspect.level < 1 {
        return;
    }
    // The whole chain, on the one line.
    let reason: Vec<String> = reason.sources().map(|e| e.to_string()).collect();
    let line = format!(
        "{}: {} gave up on child {child}: {}; {then}",
        core.name(),
        actor_name(core, me),
        reason.join(" <- ")
    );
    core.inspect.emit(&line);
}

pub(crate) fn system(core: &mut Core, dest: Key, msg: &SystemMsg) {
    if core.inspect.level < 2 {
        return;
    }
    let detail = match msg {
        SystemMsg::ShutdownRequest { reason } | SystemMsg::ChildDown { reason, .. } => {
            Some(reason.code())
        }
        _ => None,
    };
    // Messages about a child say which (when it lives here).
    let child = match msg {
        SystemMsg::InitConfirm { child, .. }
        | SystemMsg::ChildDown { child, .. }
        | SystemMsg::ShutdownTrigger {
            child: Some((_, child)),
            ..
        } => Some(*child),
        _ => None,
    };
    let child = child.and_then(|c| c.local_key(core.id()));
    line(core, msg.name(), detail, child, dest);
}

/// The inspection line of a spawned actor's `Init` (`spawn::InitEnvelope`):
/// its main address, from the cell (`<locality>/?` if the actor went before
/// its `Init`, as for any address gone unrecorded; an actor spawned while
/// the level was 2 or more carries its address key in an [`InspectedInit`]).
#[cold]
#[inline(never)]
pub(crate) fn init_line(core: &mut Core, actor: Key) {
    let address = core.actors.get(actor).map_or(Key::NONE, |cell| cell.main);
    step(core, "Init", None, None, address);
}

/// `Init` as queued while inspecting at level 2 or more: with the key of
/// the actor's main address, so that its line names the address even if
/// the actor is gone by then.
struct InspectedInit {
    address: Key,
    actor: Key,
}

impl crate::queue::Envelope<Core> for InspectedInit {
    fn deliver(self, core: &mut Core) {
        step(core, "Init", None, None, self.address);
        crate::lifecycle::on_init(core, self.actor);
    }
}

/// A spawned actor's `Init` while inspecting at level 2 or more (out of
/// line: seldom).
#[cold]
#[inline(never)]
pub(crate) fn enqueue_inspected_init(core: &mut Core, actor: Key, address: Key) {
    core.enqueue(InspectedInit { address, actor });
}

/// A lifecycle step between an actor and its supervisor on the same
/// locality, taken by a direct call instead of a message (level 2): shown
/// as the message it stands for, when it happens. `child` and `dest` are
/// address keys.
pub(crate) fn step(
    core: &mut Core,
    name: &str,
    detail: Option<ErrorCode>,
    child: Option<Key>,
    dest: Key,
) {
    if core.inspect.level >= 2 {
        line(core, name, detail, child, dest);
    }
}

fn line(core: &mut Core, name: &str, detail: Option<ErrorCode>, child: Option<Key>, dest: Key) {
    let mut line = format!("{}: [{name}", core.name());
    if let Some(code) = detail {
        let _ = write!(line, "({code})");
    }
    line.push(']');
    if let Some(key) = child {
        let _ = write!(line, " {}", address_name(core, key));
    }
    let _ = write!(line, " -> {}", address_name(core, dest));
    core.inspect.emit(&line);
}

//! Messages: the envelope a user message travels in, and type names for
//! inspection.

use crate::arena::Key;
use crate::locality::Core;
use crate::locality::shared::Remote;
use crate::queue::{Envelope, Lent};
use crate::subscription::Next;

/// A user message on its way to an address of this locality.
pub(crate) struct UserEnvelope<M> {
    pub(crate) dest: Key,
    /// The sending actor, or `Key::NONE` when sent from outside an actor.
    pub(crate) sender: Key,
    pub(crate) message: M,
}

impl<M: Send + 'static> Envelope<Core> for UserEnvelope<M> {
    #[inline(always)]
    fn deliver(self, core: &mut Core) {
        // The common case (one subscriber, inspection off) here; the rest
        // out of line, so that this path saves few registers.
        let Some((sub, handler)) = crate::subscription::single::<M>(core, self.dest) else {
            return self.deliver_slow(core);
        };
        handler.call(core, sub, Lent::new(&self.message));
        if !matches!(core.next, Next::Done) {
            self.after(core);
        }
    }
}

impl<M: Send + 'static> UserEnvelope<M> {
    #[inline(never)]
    fn deliver_slow(self, core: &mut Core) {
        crate::subscription::route_slow(core, self.dest, self.sender, &self.message);
        if !matches!(core.next, Next::Done) {
            self.after(core);
        }
    }

    /// A handler forwarded the message, or nobody heard it.
    #[cold]
    #[inline(never)]
    fn after(self, core: &mut Core) {
        match std::mem::replace(&mut core.next, Next::Done) {
            // Moved on, not copied; `by` (the forwarder) is its new sender.
            Next::Forward(to, by) => core.send(&to, by, self.message),
            Next::Dropped(reason) if crate::dead_letter::wanted::<M>(core) => {
                let destination = crate::inspect::address_name(core, self.dest);
                crate::dead_letter::post(core, destination, self.sender, reason, self.message);
            }
            _ => {}
        }
    }
}

impl<M: Send + 'static> Remote for UserEnvelope<M> {
    fn localize(self: Box<Self>, core: &mut Core) {
        core.enqueue(*self);
    }
}

/// A short, stable name for a payload type: the path without module prefixes
/// (`commutator::request::Response<app::Balance>` becomes `Response<Balance>`).
pub(crate) fn short_type_name<M: ?Sized>() -> String {
    let full = std::any::type_name::<M>();
    let mut out = String::with_capacity(full.len());
    let mut segment_start = 0;
    for (i, c) in full.char_indices() {
        if matches!(c, '<' | '>' | ',' | ' ' | '(' | ')' | '[' | ']' | '&' | ';') {
            out.push_str(last_segment(&full[segment_start..i]));
            out.push(c);
            segment_start = i + c.len_utf8();
        }
    }
    out.push_str(last_segment(&full[segment_start..]));
    out
}

fn last_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_module_paths() {
        assert_eq!(short_type_name::<u32>(), "u32");
        assert_eq!(short_type_name::<Vec<String>>(), "Vec<String>");
        assert_eq!(
            short_type_name::<Option<(u8, std::time::Duration)>>(),
            "Option<(u8, Duration)>"
        );
    }
}

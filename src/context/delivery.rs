//! What a handler may do with messages beyond sending them: hand a refused
//! one back (`try_send`), send the one it handles on (`forward`), and reach
//! the locality's dead letters and the registry it uses.

use super::Context;
use crate::actor::Actor;
use crate::address::Address;
use crate::error::{Error, ErrorCode, Result, SendError};

impl<A: Actor> Context<'_, A> {
    /// Forwards the message being handled to `to` once every handler of it
    /// here has run: moved on, not copied, with this actor as its sender
    /// (rotor's redirect). Messages this actor forwards keep their order.
    ///
    /// Errors: [`ErrorCode::InvalidArgument`] outside a message handler (a
    /// hook, a timer), or if a handler already forwarded this message.
    pub fn forward(&mut self, to: &Address) -> Result<()> {
        if self.core.running != self.me.to_word() {
            let why = "forward works inside a message handler";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        if !matches!(self.core.next, crate::subscription::Next::Done) {
            let why = "this message is forwarded already";
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        self.core.next = crate::subscription::Next::Forward(to.clone(), self.me);
        Ok(())
    }

    /// The registry this actor uses for
    /// [`register_name`](Context::register_name) and
    /// [`discover`](Context::discover) (inherited from its supervisor, or
    /// given to its builder), to talk to it directly; `None` if it has none.
    pub fn registry(&self) -> Option<&Address> {
        crate::actor::registry_of(self.core, self.cell()).map(|r| &**r)
    }

    /// The locality's dead-letter address: subscribe to
    /// [`DeadLetter`](crate::DeadLetter) there to receive the user messages
    /// of this locality that could not be delivered. Made on first call;
    /// until someone subscribes there, dead letters are only counted.
    pub fn dead_letters(&mut self) -> Address {
        crate::dead_letter::address(self.core)
    }

    /// As [`send`](Context::send), but a message another locality refuses
    /// ([`ErrorCode::InboxFull`], [`ErrorCode::LocalityFinished`]) is handed
    /// back, not counted. A send to this locality always succeeds.
    pub fn try_send<M: Send + 'static>(&mut self, to: &Address, m: M) -> Result<(), SendError<M>> {
        if to.locality_id() == self.core.id() {
            self.core.send(to, self.me, m);
            return Ok(());
        }
        let sent = self.core.post_remote(to, m);
        let outcome = ["to another locality", "handed back"][sent.is_err() as usize];
        crate::inspect::forwarded::<M>(self.core, self.me, to, outcome);
        sent
    }
}

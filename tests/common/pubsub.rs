//! What the pub/sub tests (`pubsub*.rs`) share: the messages, and actors
//! that log what they hear.

use super::{Log, short};
use commutator::{Actor, Address, Context};

/// A message with a tag.
pub struct Note(pub &'static str);

impl Clone for Note {
    fn clone(&self) -> Self {
        Note(self.0)
    }
}

/// A numbered message from one sender.
pub struct Seq {
    pub from: u32,
    pub n: u32,
}

/// Logs every `Note` heard on its own address.
pub struct Hub {
    pub log: Log,
}

impl Actor for Hub {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_note);
    }
}

impl Hub {
    fn on_note(&mut self, note: &Note, ctx: &mut Context<'_, Self>) {
        self.log
            .push(format!("{} heard {}", short(ctx.address()), note.0));
    }
}

/// Logs every `Note` heard on another actor's address.
pub struct Listener {
    pub on: Address,
    pub log: Log,
}

impl Actor for Listener {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let on = self.on.clone();
        ctx.subscribe_on(&on, Self::on_note)
            .expect("a live local address");
    }
}

impl Listener {
    fn on_note(&mut self, note: &Note, ctx: &mut Context<'_, Self>) {
        self.log
            .push(format!("{} heard {}", short(ctx.address()), note.0));
    }
}

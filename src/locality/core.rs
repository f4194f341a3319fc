//! `Core`: everything one locality holds, and what handlers reach through `Context`.

use super::Stats;
use super::fire::TimerAction;
use super::shared::{LocalityShared, Outbox, Remote};
use crate::actor::ActorCell;
use crate::address::Address;
use crate::arena::{Arena, Key, KeyMap, remove_key};
use crate::error::Error;
use crate::inspect::Inspect;
use crate::io::{IoTable, SharedIo};
use crate::lifecycle;
use crate::message::UserEnvelope;
use crate::queue::{Envelope, Queue};
use crate::request::{Payloads, PendingRequest};
use crate::routing::Routes;
use crate::subscription::{AddressInfo, BoxedHandler};
use crate::timer::Timers;
use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Instant;

/// The state of a locality, handed to handlers through [`Context`](crate::Context).
pub(crate) struct Core {
    pub(crate) shared: Arc<LocalityShared>,
    pub(crate) now: Instant,
    /// `now` in ticks of the timers (nanoseconds from `epoch`): a deadline
    /// is `now_ticks` plus a duration, no `Instant` arithmetic.
    pub(crate) now_ticks: crate::timer::Ticks,
    /// Where the ticks count from: the clock when the locality was made.
    pub(crate) epoch: Instant,
    /// `false` until the first `dispatch` sets the clock.
    pub(super) clock_set: bool,
    pub(crate) actors: Arena<ActorCell>,
    /// Why each actor that is shutting down (and did not go at once)
    /// shuts down, by actor: kept beside the cells, not in them, so that a
    /// cell is 64 bytes (`lifecycle::shutdown`).
    pub(crate) reasons: KeyMap<Error>,
    /// Addresses and subscriptions.
    pub(crate) routes: Routes<AddressInfo, BoxedHandler>,
    /// Pending requests: each is a timeout carrying the request.
    pub(crate) requests: Timers<PendingRequest>,
    /// Spare request payload allocations.
    pub(crate) payloads: Payloads,
    pub(crate) queue: Queue<Core>,
    /// The actor whose handler runs (for the dispatch loop's panic
    /// boundary), as one word (`Key::to_word`; `Key::NONE`'s when none), so
    /// that a handler marks and unmarks itself with one store each.
    pub(crate) running: u64,
    /// What comes after the message being delivered: forwarded
    /// ([`Context::forward`](crate::Context::forward)) or dropped.
    pub(crate) next: crate::subscription::Next,
    /// The dead-letter address, once asked for.
    pub(crate) dead_letters: Option<Key>,
    /// Set by a default hook (`Actor::on_child_init`, `Actor::init_start`,
    /// ...; one bit each, `Hook::bit`): it need not be called again.
    pub(crate) default_hook: u8,
    /// Set (for good) once a supervisor here asks for its children's
    /// events (an entity set or a pool, `entity::watch::watching`); until
    /// then the core's calls into `entity::watch` return at once.
    pub(crate) child_watch: bool,
    /// The locality's id (as in `shared`), kept here: one load less per send.
    id: u32,
    pub(crate) io: SharedIo,
    /// Futures started by actors (`Context::spawn_future`).
    pub(crate) futures: crate::future::Futures,
    pub(crate) timers: Timers<TimerAction>,
    /// The start sequence of the next timer (timers and requests share it).
    pub(crate) timer_seq: u64,
    pub(crate) stats: Stats,
    pub(crate) inspect: Inspect,
    pub(super) mail: Vec<Box<dyn Remote>>,
    /// User messages and replies for other localities, admitted there and
    /// pushed in one batch per locality (`flush_outboxes`).
    outboxes: Vec<Outbox>,
    /// The name ids of the actor types spawned here (`shared.names`).
    pub(crate) type_names: crate::names::TypeNames,
    /// Spare labels for addresses with names of their own.
    pub(crate) labels: crate::address::Labels,
    /// Actors that keep the locality alive: roots, and children of
    /// supervisors on other localities.
    pub(super) anchors: usize,
    pub(super) finished: bool,
    pub(super) exit: Option<Error>,
    pub(super) fault: Option<Error>,
    pub(super) on_violation: Option<ViolationHandler>,
    /// The entity sets here, and the version their entity refs check
    /// (`entity::Local`).
    pub(crate) entities: crate::entity::Local,
}

type ViolationHandler = Box<dyn FnMut(&Error) -> ViolationAction>;

/// What to do about a contract violation (such as a shutdown that timed out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViolationAction {
    /// Stop the locality: it finishes with the error as its exit reason (the default).
    Stop,
    /// Log it and carry on: the stuck actor stays where it is. Resources it
    /// holds may leak; rotor calls this "very shaky ground".
    Continue,
}

impl Core {
    pub(super) fn new(name: Option<String>, now: Instant) -> Core {
        let shared = Arc::new(LocalityShared::new(name));
        Core {
            io: IoTable::new(shared.id),
            futures: Default::default(),
            id: shared.id,
            shared,
            now,
            now_ticks: 0,
            epoch: now,
            clock_set: false,
            actors: Arena::default(),
            reasons: KeyMap::default(),
            routes: Routes::default(),
            requests: Timers::default(),
            payloads: Payloads::default(),
            queue: Queue::default(),
            running: Key::NONE.to_word(),
            next: crate::subscription::Next::Done,
            dead_letters: None,
            default_hook: 0,
            child_watch: false,
            timers: Timers::default(),
            timer_seq: 0,
            stats: Stats::default(),
            inspect: Inspect::from_env(),
            mail: Vec::new(),
            outboxes: Vec::new(),
            type_names: Default::default(),
            labels: Default::default(),
            anchors: 0,
            finished: false,
            exit: None,
            fault: None,
            on_violation: None,
            entities: Default::default(),
        }
    }

    #[inline]
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn name(&self) -> &str {
        &self.shared.name
    }

    /// The `#n` of the next actor made here (`LocalityShared::next_seq_here`).
    #[inline]
    pub(crate) fn next_seq(&mut self) -> u64 {
        self.shared.next_seq_here()
    }

    /// Appends an envelope to the FIFO queue.
    #[inline]
    pub(crate) fn enqueue<E: Envelope<Core>>(&mut self, envelope: E) {
        self.queue.push(envelope);
    }

    /// Delivers the oldest queued envelope; `false` if none was waiting.
    #[inline]
    pub(crate) fn run_next(&mut self) -> bool {
        Queue::run_next(self)
    }

    /// A handler panicked (caught by a panic boundary): its actor fails.
    /// A panic outside any handler (a message's own `Drop`, a bug) goes on.
    pub(crate) fn handler_panicked(&mut self, payload: Box<dyn std::any::Any + Send>) {
        let me = Key::from_word(std::mem::replace(&mut self.running, Key::NONE.to_word()));
        // A forward asked before the panic goes with the message the unwind dropped.
        self.next = crate::subscription::Next::Done;
        if me.is_none() {
            std::panic::resume_unwind(payload);
        }
        let error = crate::actor::panicked(self, me, payload.as_ref());
        lifecycle::fail(self, me, error);
    }

    /// Sends a user message: queued here, or posted to the address's
    /// locality (dropped and counted if that one is full or finished).
    #[inline(always)]
    pub(crate) fn send<M: Send + 'static>(&mut self, to: &Address, sender: Key, message: M) {
        if to.is_of(&self.shared) {
            self.queue.push(UserEnvelope {
                dest: to.key(),
                sender,
                message,
            });
        } else {
            self.send_remote(to, sender, message);
        }
    }

    /// Sends a user message to an address of another locality.
    #[cold]
    #[inline(never)]
    pub(crate) fn send_remote<M: Send + 'static>(&mut self, to: &Address, sender: Key, message: M) {
        use crate::dead_letter::DeadLetterReason;
        let (outcome, refused) = match self.post_remote(to, message) {
            Ok(()) => ("to another locality", None),
            Err(e) if e.error.code() == crate::ErrorCode::InboxFull => {
                self.stats.dropped_full += 1;
                let refused = (e.message, DeadLetterReason::InboxFull);
                ("dropped (inbox full)", Some(refused))
            }
            Err(e) => {
                self.stats.dropped_closed += 1;
                let refused = (e.message, DeadLetterReason::LocalityFinished);
                ("dropped (locality finished)", Some(refused))
            }
        };
        crate::inspect::forwarded::<M>(self, sender, to, outcome);
        if let Some((message, reason)) = refused
            && crate::dead_letter::wanted::<M>(self)
        {
            crate::dead_letter::post(self, to.to_string(), sender, reason, message);
        }
    }

    /// Posts a user message to the locality of `to` (another one): admitted
    /// there now, pushed with this locality's batch for it; handed back if
    /// that inbox is full or closed.
    pub(crate) fn post_remote<M: Send + 'static>(
        &mut self,
        to: &Address,
        message: M,
    ) -> Result<(), crate::SendError<M>> {
        if let Err(error) = to.locality().admit_user() {
            return Err(crate::SendError { message, error });
        }
        let envelope = UserEnvelope {
            dest: to.key(),
            sender: Key::REMOTE,
            message,
        };
        self.outbox(to).push_user(envelope);
        Ok(())
    }

    /// Posts a reply to the locality of `to` (another one), in order with
    /// the user messages sent there; `false` if it has finished.
    pub(crate) fn post_reply(&mut self, to: &Address, reply: Box<dyn Remote>) -> bool {
        if !to.locality().admit_reply() {
            return false;
        }
        self.outbox(to).push(reply);
        true
    }

    /// Sends framework traffic that must keep its order with the user
    /// messages this locality sends to `to` (a watched actor's lifecycle
    /// events): queued here, or through the outbox of `to`'s locality, as a
    /// reply is; `false` if that locality has finished.
    pub(crate) fn send_system_in_order(&mut self, to: &Address, msg: lifecycle::SystemMsg) -> bool {
        let envelope = lifecycle::SysEnvelope {
            dest: to.key(),
            msg,
        };
        if to.is_of(&self.shared) {
            self.queue.push(envelope);
            true
        } else if self.post_reply(to, Box::new(envelope)) {
            true
        } else {
            self.stats.dropped_closed += 1;
            false
        }
    }

    fn outbox(&mut self, to: &Address) -> &mut Outbox {
        let id = to.locality_id();
        let i = match self.outboxes.iter().position(|o| o.to().id == id) {
            Some(i) => i,
            None => {
                self.outboxes.push(Outbox::new(to.locality().clone()));
                self.outboxes.len() - 1
            }
        };
        &mut self.outboxes[i]
    }

    /// Pushes every outbox's batch to its locality; forgets the outboxes of
    /// localities that have finished.
    pub(crate) fn flush_outboxes(&mut self) {
        for outbox in &mut self.outboxes {
            outbox.flush();
        }
        self.outboxes.retain(|o| !o.to().is_closed());
    }

    /// Sends framework traffic to any address; `false` if the address's
    /// locality has finished (the message is dropped).
    pub(crate) fn send_system(&mut self, to: &Address, msg: lifecycle::SystemMsg) -> bool {
        let envelope = lifecycle::SysEnvelope {
            dest: to.key(),
            msg,
        };
        if to.is_of(&self.shared) {
            self.queue.push(envelope);
            true
        } else if to.locality().post(Box::new(envelope)) {
            true
        } else {
            self.stats.dropped_closed += 1;
            false
        }
    }

    /// Removes an identity of actor `me` (and every subscription on it).
    pub(crate) fn remove_identity(&mut self, me: Key, address: &Address) {
        if address.locality_id() != self.id() {
            return;
        }
        if let Some(rare) = self
            .actors
            .get_mut(me)
            .and_then(|cell| cell.rare.as_deref_mut())
        {
            remove_key(&mut rare.identities, address.key());
        }
        crate::subscription::remove_address(self, address.key());
    }

    pub(crate) fn create_address_slot(
        &mut self,
        actor: Cow<'static, str>,
        seq: u64,
        identity: Option<Cow<'static, str>>,
    ) -> (Key, Address) {
        let shared = &self.shared;
        let key = self.routes.add_address(|key| AddressInfo {
            owner: Key::NONE,
            address: Address::new(shared.clone(), key, actor, seq, identity),
        });
        let address = self
            .routes
            .address(key)
            .expect("just inserted")
            .address
            .clone();
        (key, address)
    }

    pub(crate) fn create_identity(&mut self, me: Key, label: Cow<'static, str>) -> Address {
        let owner = self
            .address_of(me)
            .expect("a running actor has its main address")
            .clone();
        let key = self.routes.add_address(|key| AddressInfo {
            owner: Key::NONE,
            address: Address::identity_of(&owner, key, label),
        });
        let address = self
            .routes
            .address(key)
            .expect("just inserted")
            .address
            .clone();
        if let Some(slot) = self.routes.address_mut(key) {
            slot.owner = me;
        }
        if let Some(cell) = self.actors.get_mut(me) {
            cell.rare().identities.push(key);
        }
        address
    }

    /// One more actor keeps the locality alive (a root, or a child of a
    /// supervisor elsewhere).
    pub(crate) fn anchor(&mut self) {
        self.anchors += 1;
        self.shared.mark_served();
    }

    /// An anchoring actor is gone; `reason` is its shutdown reason if it was a root.
    pub(crate) fn unanchor(&mut self, root_reason: Option<Error>) {
        self.anchors -= 1;
        if let Some(reason) = root_reason
            && self.exit.as_ref().is_none_or(Error::is_normal)
        {
            self.exit = Some(reason);
        }
        self.check_finished();
    }

    /// Finishes the locality once nothing keeps it alive: no anchoring actor,
    /// no handle (through which more could be spawned), and nothing waiting
    /// in its queue or its inbox (framework messages there may need an
    /// answer, such as an unsubscription).
    pub(crate) fn check_finished(&mut self) {
        if !self.finished
            && self.anchors == 0
            && self.shared.served()
            && self.shared.handles() == 0
            && self.queue.is_empty()
            && self.shared.close_if_empty()
        {
            self.finish();
        }
    }

    /// A broken contract (such as a shutdown timeout): the handler decides;
    /// by default the locality stops with the error.
    pub(crate) fn contract_violation(&mut self, error: Error) {
        tracing::error!(locality = %self.name(), error = error.as_dyn_error(), "contract violation");
        let action = match self.on_violation.as_mut() {
            Some(handler) => handler(&error),
            None => ViolationAction::Stop,
        };
        if action == ViolationAction::Stop {
            self.abandon(&error);
            self.fault.get_or_insert(error);
            self.finish();
        }
    }

    /// The locality stops with its actors where they are: tell what waits
    /// for them on other localities (their supervisors, their linked
    /// servers), so that those do not wait forever, and what they wait for
    /// there (their children, their linked clients) to go.
    pub(super) fn abandon(&mut self, error: &Error) {
        let mut notes = Vec::new();
        for cell in self.actors.values() {
            // A live actor's main address is in its slot.
            let Some(main) = Self::main_address(&self.routes, cell) else {
                continue;
            };
            if let Some(crate::actor::Parent::Remote(address, slot)) = cell.parent() {
                let down = lifecycle::SystemMsg::ChildDown {
                    slot,
                    child: crate::supervisor::ChildId::of(main),
                    reason: error.clone(),
                    restart: false,
                };
                notes.push((address.clone(), down));
            }
            // Its children elsewhere: their supervisor is going away.
            let children = cell.supervisor.iter().flat_map(|s| s.children.iter());
            for (_, record) in children {
                if let Some(child) = record
                    .address
                    .as_ref()
                    .filter(|a| a.locality_id() != self.id())
                {
                    let reason = Error::new(crate::error::ErrorCode::SupervisorShutdown)
                        .caused_by(error.clone());
                    notes.push((
                        child.clone(),
                        lifecycle::SystemMsg::ShutdownRequest { reason },
                    ));
                }
            }
            // Its linked clients elsewhere: their server is going away.
            for client in cell.plugins_ref().into_iter().flat_map(|p| &p.clients) {
                if client.locality_id() != self.id() {
                    notes.push((
                        client.clone(),
                        lifecycle::SystemMsg::UnlinkRequest {
                            server: Box::new(main.clone()),
                            client: Box::new(client.clone()),
                        },
                    ));
                }
            }
            crate::plugin::watch::abandon(self.id(), cell, main, error, &mut notes);
            for server in cell.plugins_ref().into_iter().flat_map(|p| &p.servers) {
                if server.locality_id() != self.id() {
                    notes.push((
                        server.clone(),
                        lifecycle::SystemMsg::UnlinkNotify {
                            client: main.clone(),
                        },
                    ));
                }
            }
        }
        for (to, msg) in notes {
            self.send_system(&to, msg);
        }
    }

    pub(super) fn finish(&mut self) {
        self.finished = true;
        self.shared.close();
        self.queue.clear();
    }

    pub(super) fn is_finished(&self) -> bool {
        self.finished
    }

    /// Moves mail from the inbox into the queue: all framework traffic,
    /// then user messages until `DRAIN_BATCH` user items wait in the queue
    /// (the rest stays in the inbox, so what comes later does not wait
    /// behind a whole backlog).
    pub(super) fn drain_mail(&mut self) {
        if self.shared.has_mail() {
            let room = super::inbox::DRAIN_BATCH.saturating_sub(self.queue.len());
            self.localize_mail(room);
        }
    }

    /// Moves all mail from the inbox into the queue.
    pub(super) fn drain_all_mail(&mut self) {
        if self.shared.has_mail() {
            self.localize_mail(usize::MAX);
        }
    }

    fn localize_mail(&mut self, user_limit: usize) {
        let mut mail = std::mem::take(&mut self.mail);
        self.shared.take_mail(&mut mail, user_limit);
        for item in mail.drain(..) {
            item.localize(self);
        }
        self.mail = mail;
    }

    /// Runs queued envelopes until the queue is empty or `done` reaches
    /// `budget`; returns the new `done`.
    ///
    /// One panic boundary for the whole batch, not one per handler: a panic
    /// in a handler (whose actor `running` names) fails that actor, and the
    /// batch goes on in a new boundary.
    pub(super) fn run_queue(&mut self, mut done: usize, budget: usize) -> usize {
        loop {
            let batch = catch_unwind(AssertUnwindSafe(|| {
                while done < budget && self.run_next() {
                    done += 1;
                }
            }));
            match batch {
                Ok(()) => return done,
                Err(payload) => {
                    done += 1; // the envelope whose delivery panicked
                    self.handler_panicked(payload);
                    if self.is_finished() {
                        return done;
                    }
                }
            }
        }
    }
}

/// The queue's entries are delivered to the `Core` that holds it.
impl crate::queue::Owner for Core {
    #[inline(always)]
    fn queue(&mut self) -> &mut Queue<Core> {
        &mut self.queue
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
#[path = "sizes_tests.rs"]
mod sizes;

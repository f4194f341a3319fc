//! Moving NATS messages into localities, on the bridge thread, without
//! unbounded memory: the credit [`Window`] of a subscription, and the reply
//! [`Inbox`] of a connection.
//!
//! A locality's inbox has no bound of its own, so a pump never runs ahead of
//! the locality by more than a window: every quarter window it sends an
//! [`Ack`] to the bridge actor, behind the messages it sent (to an address of
//! the same locality, so the ack is delivered after them), and it stops
//! reading its subscription while more than a window is unacknowledged. What
//! piles up then stays in async-nats's subscription channel (bounded by
//! [`Options::subscription_capacity`](super::Options::subscription_capacity);
//! beyond it NATS drops, as core NATS does for any slow consumer).

use super::connection::Counters;
use crate::address::Address;
use crate::arena::Key;
use crate::locality::shared::{LocalityShared, Outbox};
use crate::message::UserEnvelope;
use async_nats::{Message, Subscriber};
use futures_util::{FutureExt, StreamExt};
use slab::Slab;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The credit of one pump: how far its locality got.
#[derive(Default)]
pub(crate) struct Window {
    delivered: AtomicU64,
    notify: Notify,
}

impl Window {
    /// The locality delivered everything up to `seq` (called by the bridge
    /// actor's handler of [`Ack`]).
    pub(crate) fn ack(&self, seq: u64) {
        self.delivered.fetch_max(seq, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// Waits until fewer than `limit` of the `sent` messages are unacknowledged.
    async fn room(&self, sent: u64, limit: u64) {
        loop {
            let notified = self.notify.notified();
            if sent.saturating_sub(self.delivered.load(Ordering::SeqCst)) < limit {
                return;
            }
            notified.await;
        }
    }
}

/// A task on the bridge, aborted when its owner (a bridge actor) shuts down
/// or is dropped: aborting drops its subscriptions, which unsubscribes them.
#[derive(Default)]
pub(crate) struct Task(Option<tokio::task::AbortHandle>);

impl Task {
    pub(crate) fn set(&mut self, handle: tokio::task::AbortHandle) {
        self.abort();
        self.0 = Some(handle);
    }

    pub(crate) fn abort(&mut self) {
        if let Some(handle) = self.0.take() {
            handle.abort();
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.abort();
    }
}

/// The resource kind a bridge actor holds while its init waits for the bridge.
pub(crate) const BRIDGE_RESOURCE: u32 = 0x4e41_5453; // "NATS"

/// "The pump's messages up to this one were delivered": sent by a pump to
/// its bridge actor, which calls [`Window::ack`].
#[derive(Debug)]
pub(crate) struct Ack(pub(crate) u64);

/// The most messages one hand-off carries into a locality: what a pump
/// found waiting in its subscription, up to this, crosses as one item of
/// the locality's inbox with one wake ([`Handoff`]).
pub(crate) const HANDOFF_BATCH: usize = 256;

/// Messages on their way from the bridge into one locality, handed over
/// together: each admitted by the locality's inbox (counted against its
/// bound, as [`Address::send`] would), kept in order, and pushed as one
/// batch (consecutive messages of one type in one box) with one wake by
/// [`flush`](Handoff::flush), which a pump calls before it waits for
/// anything. Delivered as if sent one by one with [`Address::send`].
pub(crate) struct Handoff {
    outbox: Outbox,
}

impl Handoff {
    /// A hand-off into the locality of `to`.
    pub(crate) fn new(to: &Address) -> Handoff {
        Handoff {
            outbox: Outbox::new(to.locality().clone()),
        }
    }

    /// Queues `message` for `to`, an address of this hand-off's locality:
    /// `false` if the locality refuses it (finished, or its inbox is full).
    pub(crate) fn send<M: Send + 'static>(&mut self, to: &Address, message: M) -> bool {
        debug_assert!(std::ptr::eq::<LocalityShared>(
            &**to.locality(),
            self.outbox.to()
        ));
        if self.outbox.to().admit_user().is_err() {
            return false;
        }
        self.outbox.push_user(UserEnvelope {
            dest: to.key(),
            sender: Key::NONE,
            message,
        });
        true
    }

    /// `true` if `to` is an address of this hand-off's locality.
    pub(crate) fn is_for(&self, to: &Address) -> bool {
        std::ptr::eq::<LocalityShared>(&**to.locality(), self.outbox.to())
    }

    /// Pushes what is queued into the locality and wakes it (nothing if
    /// nothing is queued).
    pub(crate) fn flush(&mut self) {
        self.outbox.flush();
    }
}

/// Reads `subscription` (one, or several merged) and hands each message to
/// `each`, which queues it on the [`Handoff`] into the locality of `ack_to`
/// (`false` means the locality refused it: it is gone). What is waiting in
/// the subscription (up to [`HANDOFF_BATCH`]) crosses in one hand-off. Keeps
/// at most `limit` messages unacknowledged by the actor at `ack_to`. Ends
/// when the subscription or the locality ends (or the task is aborted: the
/// bridge actor aborts it when it shuts down, which unsubscribes).
pub(crate) async fn pump(
    mut subscription: impl futures_util::Stream<Item = Message> + Unpin,
    window: Arc<Window>,
    limit: u64,
    ack_to: Address,
    stats: Arc<Counters>,
    mut each: impl FnMut(Message, &mut Handoff) -> bool + Send,
) {
    let batch = (limit / 4).max(1);
    let mut sent = 0u64;
    let mut handoff = Handoff::new(&ack_to);
    while let Some(first) = subscription.next().await {
        let mut next = Some(first);
        let mut taken = 0u64;
        let mut wait = false;
        while let Some(message) = next.take() {
            taken += 1;
            if !each(message, &mut handoff) {
                handoff.flush();
                Counters::add(&stats.received, taken);
                return;
            }
            sent += 1;
            if sent.is_multiple_of(batch) {
                // Behind the messages: delivered after them.
                if !handoff.send(&ack_to, Ack(sent)) {
                    handoff.flush();
                    Counters::add(&stats.received, taken);
                    return;
                }
                wait = true;
                break;
            }
            if taken < HANDOFF_BATCH as u64 {
                // What is there already, without waiting (a `None` ends
                // the subscription: the next `next()` says so again).
                next = subscription.next().now_or_never().flatten();
            }
        }
        handoff.flush();
        Counters::add(&stats.received, taken);
        if wait {
            window.room(sent, limit).await;
        }
    }
}

/// The reply inbox of a connection: one wildcard subscription
/// (`_INBOX.<id>.>`) for the replies to every request sent to a remote
/// service. A reply's subject names the [`Remote`](super::Remote) that asked
/// (its slot here) and the request (an id unique in the connection).
pub(crate) struct Inbox {
    pub(crate) prefix: String,
    remotes: Mutex<Slab<Arc<RemoteEntry>>>,
}

/// A remote-service actor, as the inbox knows it.
pub(crate) struct RemoteEntry {
    address: Address,
    /// Requests sent and not answered yet: replies beyond it are not
    /// forwarded (so a peer that floods the inbox cannot fill a locality).
    outstanding: AtomicU64,
}

/// A reply (or a "no responders" status) for request `id`, forwarded by the
/// inbox to the remote-service actor that sent the request.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) id: u64,
    pub(crate) message: Message,
}

impl Inbox {
    pub(crate) fn new(prefix: String) -> Inbox {
        Inbox {
            prefix,
            remotes: Mutex::new(Slab::new()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Slab<Arc<RemoteEntry>>> {
        self.remotes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers a remote-service actor; its slot names it in reply subjects.
    pub(crate) fn register(&self, address: Address) -> (usize, Arc<RemoteEntry>) {
        let entry = Arc::new(RemoteEntry {
            address,
            outstanding: AtomicU64::new(0),
        });
        let slot = self.table().insert(entry.clone());
        (slot, entry)
    }

    pub(crate) fn deregister(&self, slot: usize) {
        self.table().try_remove(slot);
    }

    /// The reply subject of request `id` of the remote at `slot`; with the
    /// milliseconds its requester still waits as a last token `t<ms>` (see
    /// [`deadline_token`]; a [`Remote`](super::Remote) writes the same
    /// into its pack).
    pub(crate) fn reply_subject(&self, slot: usize, id: u64, left_ms: Option<u128>) -> String {
        match left_ms {
            Some(ms) => format!("{}.{slot}.{id}.t{ms}", self.prefix),
            None => format!("{}.{slot}.{id}", self.prefix),
        }
    }

    /// Reads the inbox subscription until the connection ends. What waits
    /// in it (up to [`HANDOFF_BATCH`]) crosses into each locality in one
    /// hand-off.
    pub(crate) async fn run(self: Arc<Self>, mut subscription: Subscriber, stats: Arc<Counters>) {
        let mut handoffs: Vec<Handoff> = Vec::new();
        while let Some(first) = subscription.next().await {
            let mut next = Some(first);
            let mut taken = 0u64;
            while let Some(message) = next.take() {
                taken += 1;
                if !self.forward(message, &mut handoffs) {
                    Counters::add(&stats.late_replies, 1);
                }
                if taken < HANDOFF_BATCH as u64 {
                    next = subscription.next().now_or_never().flatten();
                }
            }
            for handoff in &mut handoffs {
                handoff.flush();
            }
            handoffs.clear();
            Counters::add(&stats.received, taken);
        }
    }

    /// Queues a reply for its remote: `false` if none waits for it.
    fn forward(&self, message: Message, handoffs: &mut Vec<Handoff>) -> bool {
        let parsed = message
            .subject
            .strip_prefix(self.prefix.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|rest| {
                let mut tokens = rest.split('.');
                let slot = tokens.next()?.parse::<usize>().ok()?;
                Some((slot, tokens.next()?.parse::<u64>().ok()?))
            });
        let Some((slot, id)) = parsed else {
            return false;
        };
        let Some(entry) = self.table().get(slot).cloned() else {
            return false;
        };
        if !entry.take_outstanding() {
            return false;
        }
        // The remote answers its requester, who may ask again at once.
        super::spin::handed_off();
        let to = &entry.address;
        let i = match handoffs.iter().position(|h| h.is_for(to)) {
            Some(i) => i,
            None => {
                handoffs.push(Handoff::new(to));
                handoffs.len() - 1
            }
        };
        handoffs[i].send(to, Reply { id, message })
    }
}

impl RemoteEntry {
    /// One more request sent.
    pub(crate) fn asked(&self) {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
    }

    /// A request that could not be sent after all.
    pub(crate) fn unask(&self) {
        let _ = self.take_outstanding();
    }

    /// One reply may pass: `false` if none is due.
    fn take_outstanding(&self) -> bool {
        self.outstanding
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// A reply subject without its deadline token, and the deadline: the last
/// token `t<digits>` that a [`Remote`](super::Remote) adds, the
/// milliseconds its requester still waits. (A subject token rather than a
/// header: async-nats makes and parses a header map for each message that
/// has one, a fifth of the CPU of a request round trip.)
pub(crate) fn deadline_token(reply: &str) -> (&str, Option<std::time::Duration>) {
    let parsed = reply.rsplit_once('.').and_then(|(head, last)| {
        let digits = last.strip_prefix('t')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let ms = digits.parse::<u64>().unwrap_or(u64::MAX);
        Some((head, std::time::Duration::from_millis(ms)))
    });
    match parsed {
        Some((head, left)) => (head, Some(left)),
        None => (reply, None),
    }
}

/// A quick hasher for the bridge's tables of request ids (numbers a peer
/// cannot choose: this connection's sequence, and local request ids), where
/// SipHash's resistance to chosen keys buys nothing.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A map keyed by request ids, with [`IdHasher`].
pub(crate) type IdMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::deadline_token;
    use std::time::Duration;

    #[test]
    fn a_deadline_token_is_read_off_a_reply_subject_and_nothing_else_is() {
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(
            deadline_token("_INBOX.a.3.9.t250"),
            ("_INBOX.a.3.9", ms(250))
        );
        assert_eq!(deadline_token("_INBOX.a.3.9"), ("_INBOX.a.3.9", None));
        // async-nats's own inboxes, and tokens that only look alike.
        for reply in [
            "_INBOX.abc.tXyZ12",
            "_INBOX.a.t",
            "_INBOX.a.t12x",
            "t12",
            "",
        ] {
            assert_eq!(deadline_token(reply), (reply, None), "{reply}");
        }
        assert_eq!(
            deadline_token("_INBOX.a.1.2.t99999999999999999999999"),
            ("_INBOX.a.1.2", ms(u64::MAX))
        );
    }
}

#[cfg(test)]
mod handoff_tests {
    use super::{HANDOFF_BATCH, Handoff};
    use crate::{Actor, Address, Context, Locality, Supervisor, SupervisorConfig};
    use std::sync::{Arc, Mutex};

    type Log = Arc<Mutex<Vec<u32>>>;

    /// Keeps every `u32` it hears.
    struct Collect(Log);
    impl Actor for Collect {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|this: &mut Self, n: &u32, _: &mut Context<'_, Self>| {
                this.0.lock().unwrap().push(*n)
            });
        }
    }

    fn collector() -> (Locality, Address, Address, Log) {
        let log = Log::default();
        let mut l = Locality::named("handoff");
        let root = l
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let to = l.spawn(&root, Collect(log.clone())).finish().unwrap();
        let now = l.now();
        l.run_until_idle(now);
        (l, root, to, log)
    }

    #[test]
    fn a_handoff_delivers_its_messages_in_order_as_ordinary_messages() {
        let (mut l, _root, to, log) = collector();
        let n = HANDOFF_BATCH as u32 * 2 + 3;
        let sent = std::thread::scope(|s| {
            s.spawn(|| {
                let mut handoff = Handoff::new(&to);
                let sent = (0..n).all(|i| handoff.send(&to, i));
                handoff.flush();
                sent
            })
            .join()
            .unwrap()
        });
        assert!(sent);
        let now = l.now();
        l.run_until_idle(now);
        assert_eq!(*log.lock().unwrap(), (0..n).collect::<Vec<_>>());
        assert_eq!(l.stats().inbox, 0);
    }

    #[test]
    fn a_handoff_is_refused_by_a_full_inbox_and_by_a_finished_locality() {
        let (mut l, root, to, log) = collector();
        l.set_inbox_capacity(4).unwrap();
        let mut handoff = Handoff::new(&to);
        assert!((0u32..4).all(|i| handoff.send(&to, i)));
        assert!(!handoff.send(&to, 4u32), "the inbox holds 4");
        handoff.flush();
        let now = l.now();
        l.run_until_idle(now);
        assert_eq!(*log.lock().unwrap(), vec![0, 1, 2, 3], "{:?}", l.stats());
        l.shutdown(&root).unwrap();
        let now = l.now();
        l.run_until_idle(now);
        assert!(l.is_finished());
        assert!(!handoff.send(&to, 5u32));
        handoff.flush();
    }
}

#[cfg(test)]
mod inbox_tests {
    use super::{Inbox, Reply};
    use crate::{Actor, Address, Context, Locality, Supervisor, SupervisorConfig};
    use std::sync::{Arc, Mutex};

    type Log = Arc<Mutex<Vec<u64>>>;

    /// Keeps the id of every reply it gets.
    struct Remote(Log);
    impl Actor for Remote {
        fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.subscribe(|this: &mut Self, r: &Reply, _: &mut Context<'_, Self>| {
                this.0.lock().unwrap().push(r.id)
            });
        }
    }

    fn remote(name: &str) -> (Locality, Address, Address, Log) {
        let log = Log::default();
        let mut l = Locality::named(name);
        let root = l
            .spawn_root(Supervisor)
            .supervisor(SupervisorConfig::default())
            .finish()
            .unwrap();
        let to = l.spawn(&root, Remote(log.clone())).finish().unwrap();
        let now = l.now();
        l.run_until_idle(now);
        (l, root, to, log)
    }

    fn reply(subject: String) -> async_nats::Message {
        async_nats::Message {
            subject: subject.into(),
            reply: None,
            payload: bytes::Bytes::new(),
            headers: None,
            status: None,
            description: None,
            length: 0,
        }
    }

    #[test]
    fn replies_read_together_reach_each_remote_in_order_and_only_when_due() {
        let (mut la, _ra, a, log_a) = remote("a");
        let (mut lb, _rb, b, log_b) = remote("b");
        let inbox = Inbox::new("_INBOX.t".into());
        let (slot_a, entry_a) = inbox.register(a.clone());
        let (slot_b, entry_b) = inbox.register(b.clone());
        for _ in 0..3 {
            entry_a.asked();
        }
        for _ in 0..2 {
            entry_b.asked();
        }
        let mut handoffs = Vec::new();
        let mut forwarded: Vec<bool> = [
            (slot_a, 1),
            (slot_b, 2),
            (slot_a, 3),
            (slot_b, 4),
            (slot_a, 5),
            // Not due: b asked twice; and no remote 9.
            (slot_b, 6),
            (9, 7),
        ]
        .into_iter()
        .map(|(slot, id)| {
            let subject = inbox.reply_subject(slot, id, Some(5));
            inbox.forward(reply(subject), &mut handoffs)
        })
        .collect();
        // Not a reply subject.
        forwarded.push(inbox.forward(reply("_INBOX.t.x".into()), &mut handoffs));
        assert_eq!(
            forwarded,
            [true, true, true, true, true, false, false, false]
        );
        assert_eq!(handoffs.len(), 2, "one hand-off per locality");
        assert!(log_a.lock().unwrap().is_empty(), "nothing before the flush");
        for handoff in &mut handoffs {
            handoff.flush();
        }
        for l in [&mut la, &mut lb] {
            let now = l.now();
            l.run_until_idle(now);
        }
        assert_eq!(*log_a.lock().unwrap(), [1, 3, 5]);
        assert_eq!(*log_b.lock().unwrap(), [2, 4]);
    }
}

//! What the entity tests (`entity_ref.rs`, `entity_router.rs`) share: a
//! device entity that logs what it gets, and a sender that sends each
//! message its own way (an `EntityRef`, a router, or a `Keyed` to the set),
//! in a set on a manual clock.

use super::{Clock, Log, root_on, root_on_l0};
use commutator::{
    Actor, Address, Context, EntityRef, EntityRouter, EntitySet, EntityStats, Keyed, Locality,
    StatsHandle,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

/// Reading `.0` (numbered by the test).
pub struct Reading(pub u32);
/// Makes the entity shut itself down.
pub struct Leave;
/// Makes the entity's handler panic.
pub struct Boom;
/// Logged as an echo of `.0` (a second message type).
pub struct Echo(pub u32);
/// Makes the entity subscribe a second handler to `Reading` (a tap).
pub struct Tap;

pub struct Device {
    pub instance: u32,
    pub log: Log,
    pub hold_init: Option<u64>,
}

impl Actor for Device {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, r: &Reading, ctx: &mut Context<'_, Self>| {
            me.log
                .push(format!("{} ({}) got {}", ctx.name(), me.instance, r.0));
        });
        ctx.subscribe(|_: &mut Self, _: &Leave, ctx: &mut Context<'_, Self>| ctx.shutdown());
        ctx.subscribe(|_: &mut Self, _: &Boom, _: &mut Context<'_, Self>| panic!("boom"));
        ctx.subscribe(|me: &mut Self, e: &Echo, _: &mut Context<'_, Self>| {
            me.log.push(format!("({}) echo {}", me.instance, e.0));
        });
        ctx.subscribe(|_: &mut Self, _: &Tap, ctx: &mut Context<'_, Self>| {
            ctx.subscribe(|me: &mut Self, r: &Reading, _: &mut Context<'_, Self>| {
                me.log.push(format!("({}) tap {}", me.instance, r.0));
            });
        });
        if let Some(ms) = self.hold_init {
            ctx.acquire_resource(1);
            ctx.start_timer(Duration::from_millis(ms), |_: &mut Self, ctx, _| {
                ctx.release_resource(1).unwrap();
            });
        }
    }
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        // Shutting down takes 10 ms (a resource held).
        ctx.acquire_resource(2);
        ctx.start_timer(Duration::from_millis(10), |_: &mut Self, ctx, _| {
            ctx.release_resource(2).unwrap();
        });
    }
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        self.log
            .push(format!("{} ({}) shut down", ctx.name(), self.instance));
    }
}

/// How one message goes: through the key's `EntityRef`, a router, or as a
/// `Keyed` to the set.
#[derive(Clone, Copy)]
pub enum Via {
    Ref,
    Router,
    Set,
}

/// What to send.
#[derive(Clone, Copy)]
pub enum What {
    Reading(u32),
    Leave,
    Boom,
    Echo(u32),
    Tap,
}

/// Sends what it is told, for key `.0`, each message its own way; logs
/// an error.
pub struct Send(pub u32, pub Vec<(Via, What)>);

pub struct Sender {
    pub router: EntityRouter<u32>,
    /// One ref per key, made on its first use and kept.
    pub refs: HashMap<u32, EntityRef<u32>>,
    pub set: Address,
    pub log: Log,
}

fn send_via<M: std::marker::Send + 'static>(
    me: &mut Sender,
    ctx: &mut Context<'_, Sender>,
    key: u32,
    via: Via,
    message: M,
) -> commutator::Result<()> {
    match via {
        Via::Ref => {
            let router = me.router.clone();
            let r = me.refs.entry(key).or_insert_with(|| router.entity(key));
            r.send(ctx, message)
        }
        Via::Router => me.router.send(ctx, key, message),
        Via::Set => {
            ctx.send(&me.set, Keyed::new(key, message));
            Ok(())
        }
    }
}

impl Actor for Sender {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, s: &Send, ctx: &mut Context<'_, Self>| {
            for &(via, what) in &s.1 {
                let sent = match what {
                    What::Reading(n) => send_via(me, ctx, s.0, via, Reading(n)),
                    What::Leave => send_via(me, ctx, s.0, via, Leave),
                    What::Boom => send_via(me, ctx, s.0, via, Boom),
                    What::Echo(n) => send_via(me, ctx, s.0, via, Echo(n)),
                    What::Tap => send_via(me, ctx, s.0, via, Tap),
                };
                if let Err(e) = sent {
                    me.log.push(format!("sender: {:?}", e.code()));
                }
            }
        });
    }
}

pub struct Fixture {
    pub l: Locality,
    pub root: Address,
    pub clock: Clock,
    pub set: Address,
    pub sender: Address,
    pub router: EntityRouter<u32>,
    pub stats: StatsHandle<EntityStats>,
    pub log: Log,
}

impl Fixture {
    pub fn new(
        hold_init: Option<u64>,
        make: impl FnOnce(EntitySet<u32, Device>) -> EntitySet<u32, Device>,
    ) -> Self {
        let (mut l, root) = root_on_l0();
        let clock = Clock { t0: l.now() };
        let log = Log::new();
        let instances: Rc<RefCell<HashMap<u32, u32>>> = Rc::default();
        let made_log = log.clone();
        let set = make(
            EntitySet::new(move |key: &u32| {
                let mut counts = instances.borrow_mut();
                let n = counts.entry(*key).or_insert(0);
                *n += 1;
                Device {
                    instance: *n,
                    log: made_log.clone(),
                    hold_init,
                }
            })
            .route::<Reading>()
            .route::<Leave>()
            .route::<Boom>()
            .route::<Echo>()
            .route::<Tap>(),
        );
        let stats = set.stats();
        let router = set.router();
        let set = l.spawn(&root, set).name("devices").finish().unwrap();
        let sender = Sender {
            router: router.clone(),
            refs: HashMap::new(),
            set: set.clone(),
            log: log.clone(),
        };
        let sender = l.spawn(&root, sender).name("sender").finish().unwrap();
        l.run_until_idle(clock.t0);
        Fixture {
            l,
            root,
            clock,
            set,
            sender,
            router,
            stats,
            log,
        }
    }

    pub fn send(&mut self, key: u32, what: &[(Via, What)]) {
        self.l.send(&self.sender, Send(key, what.to_vec())).unwrap();
    }

    pub fn at(&mut self, ms: u64) -> Vec<String> {
        self.l.run_until_idle(self.clock.at(ms));
        self.log.take()
    }

    /// Another sender here, with `router` and `refs` of its own, started.
    pub fn another_sender(
        &mut self,
        name: &'static str,
        router: EntityRouter<u32>,
        refs: HashMap<u32, EntityRef<u32>>,
    ) -> Address {
        let sender = Sender {
            router,
            refs,
            set: self.set.clone(),
            log: self.log.clone(),
        };
        let root = self.root.clone();
        let sender = self.l.spawn(&root, sender).name(name).finish().unwrap();
        self.l.run_until_idle(self.clock.t0);
        sender
    }

    /// A reading for key 1 sent `via` the fixture's router by an actor of
    /// another locality on this thread: what the senders logged.
    pub fn send_from_another_locality(&mut self, via: Via) -> Vec<String> {
        let (mut l2, root2) = root_on("L2");
        let far = Sender {
            router: self.router.clone(),
            refs: HashMap::new(),
            set: self.set.clone(),
            log: self.log.clone(),
        };
        let far = l2.spawn(&root2, far).name("far").finish().unwrap();
        let t0 = l2.now();
        l2.send(&far, Send(1, vec![(via, What::Reading(1))]))
            .unwrap();
        l2.run_until_idle(t0);
        self.log.take()
    }
}

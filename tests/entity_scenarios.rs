//! Generated scenarios for entity sets, on a manual clock: random readings,
//! failures and self-shutdowns for a few keys, random idle time, cap,
//! restart policy and slow inits and shutdowns. After each scenario:
//! nothing was lost (every reading reached an instance of its key, or was
//! refused and counted), each key's readings arrived in order, two
//! instances of one key never lived at once, and once the set is gone the
//! locality holds nothing of it.

mod common;

use common::root_on_l0;
use commutator::{Actor, Context, EntitySet, EntityStats, Error, Keyed, RestartPolicy};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

const KEYS: u32 = 6;

struct Reading(u32);
struct Fail;
struct Leave;

/// What happened, in order: (key, instance, event).
#[derive(Default)]
struct Trace {
    events: Vec<(u32, u32, Event)>,
    instances: HashMap<u32, u32>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    Init,
    Got(u32),
    /// A `Fail` or `Leave` reached it.
    Told,
    Finish,
}

struct Device {
    key: u32,
    instance: u32,
    trace: Rc<RefCell<Trace>>,
    hold_init: u64,
    hold_shutdown: u64,
}

impl Device {
    fn note(&self, event: Event) {
        self.trace
            .borrow_mut()
            .events
            .push((self.key, self.instance, event));
    }

    fn hold(ctx: &mut Context<'_, Self>, ms: u64) {
        if ms > 0 {
            ctx.acquire_resource(1);
            ctx.start_timer(Duration::from_millis(ms), |_: &mut Self, ctx, _| {
                ctx.release_resource(1).unwrap();
            });
        }
    }
}

impl Actor for Device {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.note(Event::Init);
        ctx.subscribe(|me: &mut Self, r: &Reading, _: &mut Context<'_, Self>| {
            me.note(Event::Got(r.0))
        });
        ctx.subscribe(|me: &mut Self, _: &Fail, ctx: &mut Context<'_, Self>| {
            me.note(Event::Told);
            ctx.fail(Error::failure("told to"))
        });
        ctx.subscribe(|me: &mut Self, _: &Leave, ctx: &mut Context<'_, Self>| {
            me.note(Event::Told);
            ctx.shutdown()
        });
        Self::hold(ctx, self.hold_init);
    }
    fn shutdown_start(&mut self, ctx: &mut Context<'_, Self>) {
        Self::hold(ctx, self.hold_shutdown);
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.note(Event::Finish);
    }
}

/// xorshift: the scenario from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

fn scenario(seed: u64) -> EntityStats {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let trace: Rc<RefCell<Trace>> = Rc::default();
    let (hold_init, hold_shutdown) = (rng.next(3) * 5, rng.next(3) * 5);
    let made = trace.clone();
    let mut set = EntitySet::new(move |key: &u32| {
        let mut t = made.borrow_mut();
        let n = t.instances.entry(*key).or_insert(0);
        *n += 1;
        Device {
            key: *key,
            instance: *n,
            trace: made.clone(),
            hold_init,
            hold_shutdown,
        }
    })
    .route::<Reading>()
    .route::<Fail>()
    .route::<Leave>();
    if rng.next(2) == 0 {
        set = set.idle_after(Duration::from_millis(10 + rng.next(40)));
    }
    if rng.next(2) == 0 {
        set = set.max_live(1 + rng.next(4) as usize);
    }
    if rng.next(2) == 0 {
        set = set
            .restart(RestartPolicy::OnFailure)
            .restart_delay(Duration::from_millis(rng.next(10)))
            .restart_limit(1000, Duration::from_secs(1));
    }
    let stats = set.stats();
    let (mut l, root) = root_on_l0();
    let t0 = l.now();
    let set = l.spawn(&root, set).name("devices").finish().unwrap();
    let mut now = 0;
    let mut sent: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut seq = 0;
    let mut told = 0;
    for _ in 0..150 {
        let key = rng.next(u64::from(KEYS)) as u32;
        match rng.next(20) {
            0 => {
                told += 1;
                l.send(&set, Keyed::new(key, Fail)).unwrap();
            }
            1 => {
                told += 1;
                l.send(&set, Keyed::new(key, Leave)).unwrap();
            }
            2..=4 => {
                now += rng.next(30);
                l.run_until_idle(t0 + Duration::from_millis(now));
            }
            _ => {
                seq += 1;
                sent.entry(key).or_default().push(seq);
                l.send(&set, Keyed::new(key, Reading(seq))).unwrap();
            }
        }
    }
    // Let everything settle, then end the set.
    for _ in 0..50 {
        now += 10;
        l.run_until_idle(t0 + Duration::from_millis(now));
    }
    l.shutdown(&set).unwrap();
    for _ in 0..10 {
        now += 10;
        l.run_until_idle(t0 + Duration::from_millis(now));
    }
    let trace = trace.borrow();
    let context = format!("seed {seed}: {:?}", stats.get());
    // Each key: readings in order, nothing lost but what was refused, and
    // one instance at a time.
    let mut delivered = 0;
    for key in 0..KEYS {
        let got: Vec<u32> = trace
            .events
            .iter()
            .filter_map(|&(k, _, e)| match e {
                Event::Got(n) if k == key => Some(n),
                _ => None,
            })
            .collect();
        assert!(
            got.windows(2).all(|w| w[0] < w[1]),
            "{context}: key {key} out of order: {got:?}"
        );
        let all = sent.remove(&key).unwrap_or_default();
        assert!(
            got.iter().all(|n| all.contains(n)),
            "{context}: key {key} got what it was not sent"
        );
        delivered += got.len() as u64;
        let mut live: Option<u32> = None;
        for &(k, instance, event) in &trace.events {
            if k != key {
                continue;
            }
            match event {
                Event::Init => {
                    assert_eq!(
                        live, None,
                        "{context}: key {key}: instance {instance} while another lives"
                    );
                    live = Some(instance);
                }
                Event::Got(_) | Event::Told => {
                    assert_eq!(live, Some(instance), "{context}: key {key}")
                }
                Event::Finish => {
                    assert_eq!(live, Some(instance), "{context}: key {key}");
                    live = None;
                }
            }
        }
        assert_eq!(live, None, "{context}: key {key} outlived its set");
    }
    let told_delivered = trace.events.iter().filter(|e| e.2 == Event::Told).count() as u64;
    assert_eq!(
        delivered + told_delivered + stats.get().refused,
        u64::from(seq + told),
        "{context}: lost messages"
    );
    let stores = l.stats();
    assert_eq!(
        (
            stores.actors,
            stores.timers,
            stores.dropped_stale,
            stores.dropped_unsubscribed
        ),
        (1, 0, 0, 0),
        "{context}: only the root is left, and nothing was dropped"
    );
    stats.get()
}

#[test]
fn generated_entity_scenarios_lose_nothing_keep_order_and_one_instance_per_key() {
    let seeds: u64 = std::env::var("COMMUTATOR_ENTITY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let (mut restarts, mut passivated, mut refused) = (0, 0, 0);
    for seed in 0..seeds {
        let s = scenario(seed);
        restarts += s.restarts;
        passivated += s.passivated;
        refused += s.refused;
    }
    // The scenarios reach every path: restarts, passivation, refusals at the cap.
    assert!(
        restarts > 0 && passivated > 0 && refused > 0,
        "{restarts} {passivated} {refused}"
    );
}

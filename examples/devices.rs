//! Device actors made on demand from a stream of readings, passivated when
//! quiet, made again when their device speaks again.
//!
//! A `Feed` plays a stream of sensor readings for 16 devices over about a
//! second, in three phases: devices 0 to 7 speak, then 4 to 15, then 0 to 2
//! again. Each reading goes to the entity set `devices` as
//! `Keyed::new("device-N", Reading(..))`: the set makes the device's actor
//! on its first reading, delivers the next ones straight to it, and
//! passivates it after 150 ms without a reading (its `shutdown_finish` runs:
//! it prints what it saw). A device that speaks again gets a new actor. Now
//! and then the feed asks a device for its average with a request routed by
//! key. When the stream is over and every device has been passivated, the
//! feed prints a summary line and ends the program.
//!
//! Run it with `cargo run --example devices`; it ends by itself after about
//! 1.3 s. Set `COMMUTATOR_INSPECT_DELIVERY=1` to see each delivery, with the
//! devices named by key (`app/devices/device-3#9`).

use commutator::prelude::*;
use commutator::{EntityStats, StatsHandle};
use std::time::{Duration, Instant};

/// One sensor reading.
struct Reading(f64);

/// Asks a device for its average so far.
struct Average(String);
impl Request for Average {
    type Response = (u32, f64);
}

/// A device's actor: lives while its device speaks.
struct Device {
    key: String,
    readings: u32,
    sum: f64,
}

impl Actor for Device {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, r: &Reading, _: &mut Context<'_, Self>| {
            me.readings += 1;
            me.sum += r.0;
        });
        ctx.subscribe(
            |me: &mut Self, q: &RequestMsg<Average>, ctx: &mut Context<'_, Self>| {
                let average = me.sum / f64::from(me.readings.max(1));
                ctx.reply(q, (me.readings, average));
            },
        );
    }
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        let average = self.sum / f64::from(self.readings.max(1));
        println!(
            "{:>5} ms  {:<10} passivated after {:>3} readings (average {average:.1})",
            ms(ctx.now()),
            self.key,
            self.readings
        );
    }
}

thread_local! {
    static T0: Instant = Instant::now();
}

fn ms(t: Instant) -> u128 {
    T0.with(|t0| t.saturating_duration_since(*t0).as_millis())
}

/// Plays the stream, then waits for the set to empty and sums up.
struct Feed {
    devices: Address,
    stats: StatsHandle<EntityStats>,
    tick: u32,
    seed: u64,
    sent: u32,
    most_live: usize,
}

/// Which devices speak at a tick (one tick is 5 ms), if the stream goes on.
fn speaking(tick: u32) -> Option<std::ops::Range<u32>> {
    match tick {
        0..60 => Some(0..8),
        60..140 => Some(4..16),
        140..160 => Some(160..160), // quiet
        160..200 => Some(0..3),
        _ => None,
    }
}

impl Feed {
    fn next_random(&mut self) -> u64 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed
    }

    fn on_tick(&mut self, ctx: &mut Context<'_, Self>, _: TimerId) {
        self.most_live = self.most_live.max(self.stats.get().live);
        match speaking(self.tick) {
            Some(range) => {
                if self.tick % 50 == 49 && !range.is_empty() {
                    let n = range.start + (self.tick / 50) % range.len() as u32;
                    let key = format!("device-{n}");
                    ctx.request(&self.devices, Average(key), Duration::from_secs(1));
                }
                for n in range {
                    if self.next_random().is_multiple_of(3) {
                        let value = 20.0 + (self.next_random() % 100) as f64 / 10.0;
                        ctx.send(
                            &self.devices,
                            Keyed::new(format!("device-{n}"), Reading(value)),
                        );
                        self.sent += 1;
                    }
                }
            }
            None if self.stats.get().live == 0 => {
                let s = self.stats.get();
                println!(
                    "summary: {} readings to 16 devices; {} device actors made, {} passivated, \
                     {} refused; at most {} live at once",
                    self.sent, s.created, s.passivated, s.refused, self.most_live
                );
                return ctx.shutdown_supervisor(); // the root goes: `run` returns
            }
            None => {} // waiting for the last devices to go quiet
        }
        self.tick += 1;
        ctx.start_timer(Duration::from_millis(5), Self::on_tick);
    }
}

impl Actor for Feed {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, r: &Response<Average>, ctx: &mut Context<'_, Self>| {
                if let Ok((readings, average)) = r.result() {
                    println!(
                        "{:>5} ms  {:<10} asked: {readings} readings, average {average:.1}",
                        ms(ctx.now()),
                        r.request().0
                    );
                }
            },
        );
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.start_timer(Duration::ZERO, Self::on_tick);
    }
}

fn main() -> Result<(), Error> {
    T0.with(|_| ());
    let mut system = System::named("app")?;
    let root = system
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()?;
    let devices = EntitySet::new(|key: &String| Device {
        key: key.clone(),
        readings: 0,
        sum: 0.0,
    })
    .route::<Reading>()
    .route_request::<Average>(|q| q.0.clone())
    .idle_after(Duration::from_millis(150));
    let stats = devices.stats();
    let devices = system.spawn(&root, devices).name("devices").finish()?;
    let feed = Feed {
        devices,
        stats,
        tick: 0,
        seed: 0x9e37_79b9_7f4a_7c15,
        sent: 0,
        most_live: 0,
    };
    system.spawn(&root, feed).name("feed").finish()?;
    system.run()
}

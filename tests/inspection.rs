//! Delivery inspection: one readable line per routed message, with the
//! framework's own traffic from level 2 on.

mod common;

use common::{Clock, Log};
use commutator::*;
use std::time::Duration;

struct Question;
impl Request for Question {
    type Response = u32;
}
struct Flush;
struct Nobody;
struct Hello;

/// Keeps questions and answers them only on `Flush` (too late).
#[derive(Default)]
struct Slow {
    kept: Vec<RequestMsg<Question>>,
}

impl Actor for Slow {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |me: &mut Self, q: &RequestMsg<Question>, _: &mut Context<'_, Self>| {
                me.kept.push(q.clone())
            },
        );
        ctx.subscribe(|me: &mut Self, _: &Flush, ctx: &mut Context<'_, Self>| {
            for q in me.kept.drain(..) {
                ctx.reply(&q, 42);
            }
        });
        ctx.subscribe(|_: &mut Self, _: &Hello, _: &mut Context<'_, Self>| {});
    }
}

/// Asks once, with a 10 ms timeout; sends a `Hello` to `far` on start.
struct Asker {
    slow: Address,
    far: Address,
}

impl Actor for Asker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|_: &mut Self, _: &Response<Question>, _: &mut Context<'_, Self>| {});
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.request(&self.slow, Question, Duration::from_millis(10));
        ctx.send(&self.far, Hello);
    }
}

fn scenario(level: u8) -> String {
    let clock = Clock::new();
    let lines = Log::new();
    let mut far = Locality::named("L1");
    let far_root = far
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let far_slow = far
        .spawn(&far_root, Slow::default())
        .name("far")
        .finish()
        .unwrap();
    let mut l = Locality::named("L0");
    for (locality, sink) in [(&mut l, lines.clone()), (&mut far, lines.clone())] {
        locality.inspect_with(level, move |line| sink.push(line));
    }
    let root = l
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let slow = l
        .spawn(&root, Slow::default())
        .name("slow")
        .finish()
        .unwrap();
    let asker = Asker {
        slow: slow.clone(),
        far: far_slow,
    };
    let asker = l.spawn(&root, asker).name("asker").finish().unwrap();
    l.run_until_idle(clock.at(0));
    far.run_until_idle(clock.at(0)); // the Hello arrives there
    l.send(&asker, Nobody).unwrap(); // nobody listens to that
    l.run_until_idle(clock.at(10)); // the request times out
    l.send(&slow, Flush).unwrap(); // the late reply
    l.run_until_idle(clock.at(11));
    l.shutdown(&asker).unwrap();
    l.run_until_idle(clock.at(12));
    l.send(&asker, Hello).unwrap(); // to a stale address
    l.run_until_idle(clock.at(13));
    lines.text()
}

#[test]
fn level_one_shows_user_messages_and_every_drop() {
    insta::assert_snapshot!(scenario(1));
}

#[test]
fn level_two_adds_the_frameworks_own_traffic() {
    let text = scenario(2);
    for framework in [
        "[Init] -> L0/root#1",
        "[InitConfirm] L0/slow#2 -> L0/root#1",
        "[InitConfirm] L0/asker#3 -> L0/root#1",
        "[Start] -> L0/asker#3",
    ] {
        assert!(text.contains(framework), "{framework} missing in\n{text}");
    }
    assert!(
        text.contains("[ShutdownRequest(normal shutdown)] -> L0/asker#3"),
        "{text}"
    );
}

#[test]
fn level_zero_shows_nothing() {
    assert_eq!(scenario(0), "");
}

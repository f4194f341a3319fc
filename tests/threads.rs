//! Several loops on several threads: trees that span threads, failures and
//! restarts across threads, requests, links and the registry across threads.
//! Delivery and subscriptions across threads are in `threads_delivery.rs`,
//! when a locality served on a thread ends in `threads_locality_end.rs`.
//!
//! Every test is bounded: threads are joined with a deadline, and no test
//! asserts on timing.

mod common;

use common::threads::{SharedLog, l0_root, serve};
use commutator::*;
use std::time::Duration;

/// Tells `to` (on the main thread) when it starts and when it goes.
struct Reporter {
    to: Address,
    label: &'static str,
}

#[derive(Debug, PartialEq)]
struct Note(String);

impl Actor for Reporter {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let here = ctx.address().to_string();
        ctx.send(&self.to, Note(format!("{} started at {here}", self.label)));
    }
    fn shutdown_finish(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send(&self.to, Note(format!("{} down", self.label)));
    }
}

/// Collects notes; shuts the root down after `stop_after` of them.
struct Collector {
    notes: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    stop_after: usize,
}

impl Actor for Collector {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(|me: &mut Self, n: &Note, ctx: &mut Context<'_, Self>| {
            me.notes.borrow_mut().push(n.0.clone());
            if me.notes.borrow().len() == me.stop_after {
                ctx.shutdown_supervisor();
            }
        });
    }
}

/// A supervisor (on the other thread) that makes a reporter child.
struct Team {
    to: Address,
}

impl Actor for Team {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let to = self.to.clone();
        if let Err(e) = ctx
            .spawn(Reporter {
                to,
                label: "member",
            })
            .name("member")
            .finish()
        {
            ctx.fail(e);
        }
    }
}

#[test]
fn a_tree_across_threads_becomes_operational_and_shuts_down() {
    let l1 = serve("L1");
    let mut l0 = System::named("L0").unwrap();
    let root = l0
        .spawn_root(Supervisor)
        .name("root")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let notes = std::rc::Rc::default();
    let collector = Collector {
        notes: std::rc::Rc::clone(&notes),
        stop_after: 2,
    };
    let collector = l0
        .spawn(&root, collector)
        .name("collector")
        .finish()
        .unwrap();
    let to = collector.clone();
    l0.spawn_on(l1.handle(), &root, move || Team { to: to.clone() })
        .name("team")
        .supervisor(SupervisorConfig::default())
        .finish()
        .unwrap();
    let to = collector.clone();
    l0.spawn_on(l1.handle(), &root, move || Reporter {
        to: to.clone(),
        label: "solo",
    })
    .name("solo")
    .finish()
    .unwrap();
    l0.run().unwrap();
    // Actor numbers on L1 depend on how its inbox batches arrive: drop them.
    let mut seen: Vec<String> = notes
        .borrow()
        .iter()
        .map(|n| n.split('#').next().unwrap().to_string())
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        ["member started at L1/member", "solo started at L1/solo"]
    );
    assert_eq!(l1.finish(), Ok(()));
}

/// Fails as soon as it starts; logs each instance.
struct Crasher {
    log: SharedLog,
}

impl Actor for Crasher {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        self.log.push(format!(
            "crasher started on {}",
            ctx.address().to_string().split('/').next().unwrap()
        ));
        ctx.fail(Error::failure("crash"));
    }
}

/// A supervisor on the other thread whose crasher escalates.
struct CrashTeam {
    log: SharedLog,
}

impl Actor for CrashTeam {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        let crasher = Crasher {
            log: self.log.clone(),
        };
        if let Err(e) = ctx
            .spawn(crasher)
            .name("crasher")
            .escalate_failure()
            .finish()
        {
            ctx.fail(e);
        }
    }
}

#[test]
fn a_failure_escalates_across_threads_to_the_root() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    let team_log = log.clone();
    l0.spawn_on(l1.handle(), &root, move || CrashTeam {
        log: team_log.clone(),
    })
    .name("team")
    .supervisor(SupervisorConfig::default())
    .escalate_failure()
    .finish()
    .unwrap();
    let reason = l0.run().unwrap_err();
    assert_eq!(
        format!("{reason:#}"),
        "failure escalation (L0/root#1)\n  <- failure escalation (L1/team#1)\n  <- actor failure (crash)"
    );
    assert_eq!(log.lines(), ["crasher started on L1"]);
    assert_eq!(l1.finish(), Ok(()));
}

#[test]
fn a_child_on_another_thread_is_restarted_there() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    let crasher_log = log.clone();
    // Two restarts allowed; then the supervisor gives up and, escalating, ends the tree.
    l0.spawn_on(l1.handle(), &root, move || Crasher {
        log: crasher_log.clone(),
    })
    .name("crasher")
    .restart(RestartPolicy::Always)
    .restart_limit(2, Duration::from_secs(60))
    .escalate_failure()
    .finish()
    .unwrap();
    let reason = l0.run().unwrap_err();
    assert_eq!(log.lines(), ["crasher started on L1"; 3]);
    assert_eq!(reason.code(), ErrorCode::FailureEscalation);
    assert!(
        format!("{reason:#}").contains("restart limit reached (L1/crasher#3: 2 restarts in 60s)"),
        "{reason:#}"
    );
    assert_eq!(l1.finish(), Ok(()));
}

struct Add(u64);
impl Request for Add {
    type Response = u64;
}

/// Answers `Add(n)` with `n + 1`, except `Add(0)`, which it never answers.
struct Adder;

impl Actor for Adder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(
            |_: &mut Self, q: &RequestMsg<Add>, ctx: &mut Context<'_, Self>| {
                if q.payload().0 > 0 {
                    ctx.reply(q, q.payload().0 + 1);
                }
            },
        );
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        LINK_LOG.with(|log| {
            log.borrow()
                .as_ref()
                .map(|l: &SharedLog| l.push("server down"))
        });
    }
}

thread_local! {
    static LINK_LOG: std::cell::RefCell<Option<SharedLog>> = const { std::cell::RefCell::new(None) };
}

/// Finds "adder" (waiting for it), links to it, asks two questions.
struct Asker {
    log: SharedLog,
    adder: Option<Address>,
    answers: usize,
}

impl Actor for Asker {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_sum);
        ctx.discover("adder")
            .wait()
            .link()
            .then(|me: &mut Self, adder, _| me.adder = Some(adder.clone()));
    }
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let adder = self.adder.clone().expect("discovered during init");
        self.log.push(format!("found {adder}"));
        ctx.request(&adder, Add(41), Duration::from_secs(30));
        ctx.request(&adder, Add(0), Duration::from_millis(20));
    }
    fn shutdown_finish(&mut self, _: &mut Context<'_, Self>) {
        self.log.push("client down");
    }
}

impl Asker {
    fn on_sum(&mut self, r: &Response<Add>, ctx: &mut Context<'_, Self>) {
        self.log.push(format!(
            "{} -> {:?}",
            r.request().0,
            r.result().map_err(Error::code)
        ));
        self.answers += 1;
        if self.answers == 2 {
            ctx.shutdown_supervisor();
        }
    }
}

#[test]
fn registry_requests_timeouts_and_links_work_across_threads() {
    let l1 = serve("L1");
    let (mut l0, root) = l0_root();
    let log = SharedLog::default();
    let server_log = log.clone();
    // The server lives on L1, registers in L0's registry, and logs its end there.
    l0.spawn_on(l1.handle(), &root, move || {
        let log = server_log.clone();
        LINK_LOG.with(|l| *l.borrow_mut() = Some(log));
        Adder
    })
    .name("adder")
    .register_as("adder")
    .finish()
    .unwrap();
    l0.spawn(
        &root,
        Asker {
            log: log.clone(),
            adder: None,
            answers: 0,
        },
    )
    .name("asker")
    .finish()
    .unwrap();
    l0.run().unwrap();
    assert_eq!(l1.finish(), Ok(()));
    let lines = log.lines();
    assert_eq!(lines[0], "found L1/adder#1");
    assert_eq!(lines[1..3], ["41 -> Ok(42)", "0 -> Err(RequestTimeout)"]);
    assert_eq!(
        lines[3..],
        ["client down", "server down"],
        "the linked server outlives its client"
    );
}

//! The invariants, checked on an [`Outcome`]: what the actors logged, how the
//! localities ended, and the root's exit reason. Here the log is indexed per
//! actor instance and per request; the invariants are in [`lifecycle`] (hook
//! order, tree order, supervisor init, links), [`requests`] (one response
//! each, no leak) and [`reasons`] (exit reasons, restarts).

mod lifecycle;
mod reasons;
mod requests;

use super::node::{Ev, Event};
use super::run::Outcome;
use super::{OnViolation, Reply, Scenario};
use commutator::Error;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::time::Instant;

/// A hook or event: where it is in the log, and when.
#[derive(Clone, Copy, Debug)]
struct At {
    pos: usize,
    at: Option<Instant>,
}

/// What the log says about one actor instance.
#[derive(Debug, Default)]
struct Inst {
    uid: usize,
    node: usize,
    index: usize,
    parent: Option<usize>,
    made: Option<usize>,
    init_start: Option<At>,
    init_finish: Option<At>,
    start: Option<At>,
    shutdown_start: Option<At>,
    shutdown_finish: Option<At>,
    addr: Option<String>,
    reason: Option<(usize, Error)>,
    dropped: Option<usize>,
    failed: Vec<Error>,
    linking: Vec<String>,
    linked: Vec<String>,
    /// Every other event of this instance (must come while it lives).
    activity: Vec<At>,
}

/// A request, as its requester logged it.
#[derive(Debug, Default)]
struct Req {
    sent: Option<(At, Reply, u64)>,
    answers: Vec<(At, Result<u64, Error>)>,
    cancels: Vec<(At, bool, bool)>,
    unanswered: Option<At>,
}

struct Checker<'a> {
    s: &'a Scenario,
    o: &'a Outcome,
    insts: BTreeMap<usize, Inst>,
    by_addr: HashMap<String, usize>,
    reqs: BTreeMap<(usize, u32), Req>,
    contracts: Vec<Error>,
    problems: Vec<String>,
}

/// Checks every invariant; returns what is broken (empty: all hold).
pub fn check(o: &Outcome) -> Vec<String> {
    let mut c = Checker {
        s: &o.env.scenario,
        o,
        insts: BTreeMap::new(),
        by_addr: HashMap::new(),
        reqs: BTreeMap::new(),
        contracts: Vec::new(),
        problems: Vec::new(),
    };
    if let Some(stuck) = &o.stuck {
        c.problems.push(format!("run did not end: {stuck}"));
    }
    c.index(&o.events);
    c.lifecycle();
    c.tree_order();
    c.supervisor_init();
    c.links();
    c.requests();
    c.leaks();
    c.reasons();
    c.restarts();
    c.problems
}

impl Checker<'_> {
    fn bad(&mut self, what: String) {
        self.problems.push(what);
    }

    fn name(&self, uid: usize) -> String {
        match self.insts.get(&uid) {
            Some(i) => format!("u{uid} (n{}#{})", i.node, i.index),
            None => format!("u{uid}"),
        }
    }

    fn stopped_on_violation(&self) -> bool {
        !self.contracts.is_empty() && self.s.on_violation == OnViolation::Stop
    }

    fn index(&mut self, events: &[Event]) {
        fn once(slot: &mut Option<At>, at: At, what: &str, problems: &mut Vec<String>, uid: usize) {
            if slot.is_some() {
                problems.push(format!("u{uid}: {what} twice"));
            }
            slot.get_or_insert(at);
        }
        let mut problems = Vec::new();
        for (pos, e) in events.iter().enumerate() {
            let at = At { pos, at: e.at };
            match &e.ev {
                Ev::Made {
                    uid,
                    node,
                    index,
                    parent,
                } => {
                    let i = self.insts.entry(*uid).or_default();
                    if i.made.is_some() {
                        problems.push(format!("u{uid} made twice"));
                    }
                    (i.uid, i.node, i.index, i.parent, i.made) =
                        (*uid, *node, *index, *parent, Some(pos));
                }
                Ev::InitStart { uid, addr } => {
                    let i = self.insts.entry(*uid).or_default();
                    once(&mut i.init_start, at, "init_start", &mut problems, *uid);
                    i.addr = Some(addr.clone());
                    self.by_addr.insert(addr.clone(), *uid);
                }
                Ev::InitFinish { uid } => {
                    let i = self.insts.entry(*uid).or_default();
                    once(&mut i.init_finish, at, "init_finish", &mut problems, *uid);
                }
                Ev::Start { uid } => {
                    let i = self.insts.entry(*uid).or_default();
                    once(&mut i.start, at, "on_start", &mut problems, *uid);
                }
                Ev::ShutdownStart { uid } => {
                    let i = self.insts.entry(*uid).or_default();
                    once(
                        &mut i.shutdown_start,
                        at,
                        "shutdown_start",
                        &mut problems,
                        *uid,
                    );
                }
                Ev::ShutdownFinish { uid, addr } => {
                    let i = self.insts.entry(*uid).or_default();
                    once(
                        &mut i.shutdown_finish,
                        at,
                        "shutdown_finish",
                        &mut problems,
                        *uid,
                    );
                    i.addr = Some(addr.clone());
                    self.by_addr.insert(addr.clone(), *uid);
                }
                Ev::Reason { uid, reason } => {
                    let i = self.insts.entry(*uid).or_default();
                    if i.reason.is_some() {
                        problems.push(format!("u{uid}: two shutdown reasons"));
                    }
                    i.reason.get_or_insert((pos, reason.clone()));
                }
                Ev::Dropped { uid } => {
                    let i = self.insts.entry(*uid).or_default();
                    if i.dropped.is_some() {
                        problems.push(format!("u{uid}: dropped twice"));
                    }
                    i.dropped.get_or_insert(pos);
                }
                Ev::Failed { uid, error } => {
                    let i = self.insts.entry(*uid).or_default();
                    i.failed.push(error.clone());
                    i.activity.push(at);
                }
                Ev::Listening { uid, .. } => {
                    self.insts.entry(*uid).or_default().activity.push(at);
                }
                Ev::Linking { uid, server } => {
                    let i = self.insts.entry(*uid).or_default();
                    i.linking.push(server.clone());
                    i.activity.push(at);
                }
                Ev::Linked { uid, server } => {
                    let i = self.insts.entry(*uid).or_default();
                    i.linked.push(server.clone());
                    i.activity.push(at);
                }
                Ev::Sent {
                    uid,
                    req,
                    reply,
                    timeout,
                } => {
                    self.insts.entry(*uid).or_default().activity.push(at);
                    let r = self.reqs.entry((*uid, *req)).or_default();
                    if r.sent.is_some() {
                        problems.push(format!("u{uid}: request {req} sent twice"));
                    }
                    r.sent = Some((at, *reply, *timeout));
                }
                Ev::Answered { uid, req, result } => {
                    self.insts.entry(*uid).or_default().activity.push(at);
                    let r = self.reqs.entry((*uid, *req)).or_default();
                    r.answers.push((at, result.clone()));
                }
                Ev::Cancel {
                    uid,
                    req,
                    cancelled,
                    unanswered,
                } => {
                    self.insts.entry(*uid).or_default().activity.push(at);
                    let r = self.reqs.entry((*uid, *req)).or_default();
                    r.cancels.push((at, *cancelled, *unanswered));
                }
                Ev::Unanswered { uid, req } => {
                    let r = self.reqs.entry((*uid, *req)).or_default();
                    r.unanswered = Some(at);
                }
                Ev::Broken { uid, what } => {
                    problems.push(format!("u{uid} saw: {what}"));
                }
                Ev::Contract { error } => self.contracts.push(error.clone()),
            }
        }
        self.problems.extend(problems);
    }
}

/// The outcome as text: the failing invariants, the scenario, the log.
pub fn report(o: &Outcome, problems: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} invariant(s) broken:", problems.len());
    for p in problems.iter().take(30) {
        let _ = writeln!(out, "  - {p}");
    }
    let _ = writeln!(out, "{}", o.env.scenario);
    let _ = writeln!(
        out,
        "exit reason: {:?}",
        o.exit.as_ref().map(ToString::to_string)
    );
    for l in &o.localities {
        let _ = writeln!(out, "{}: finished={} {:?}", l.name, l.finished, l.stats);
    }
    let _ = writeln!(out, "log ({} events):", o.events.len());
    for e in &o.events {
        let at =
            e.at.map(|t| format!("{:>5}ms ", o.env.since(t)))
                .unwrap_or_else(|| "        ".into());
        let _ = writeln!(out, "  {at}{:?}", e.ev);
    }
    out
}

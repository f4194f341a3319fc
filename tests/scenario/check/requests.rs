//! Request invariants: exactly one response per request (or its requester
//! gone first), timeouts on time; and nothing leaks.

use super::Checker;
use crate::scenario::Reply;
use crate::scenario::node::Ask;
use commutator::{Error, ErrorCode};

impl Checker<'_> {
    /// Every request gets exactly one response (value, error, timeout or
    /// cancel), unless its requester is gone first; on the manual clock a
    /// timeout comes exactly at the deadline and no response after it.
    pub(super) fn requests(&mut self) {
        let stopped = self.stopped_on_violation();
        let manual = self.o.env.manual;
        let scale = self.o.env.scale;
        let mut problems = Vec::new();
        for (&(uid, req), r) in &self.reqs {
            let who = format!("{} request {req}", self.name(uid));
            let Some((sent, reply, timeout)) = r.sent else {
                problems.push(format!("{who}: answered but never sent"));
                continue;
            };
            let deadline = sent.at.map(|t| t + scale * timeout as u32);
            let outcomes = r.answers.len() + r.unanswered.iter().count();
            if outcomes > 1 || (outcomes == 0 && !stopped) {
                problems.push(format!(
                    "{who}: {} responses{}",
                    r.answers.len(),
                    if r.unanswered.is_some() {
                        " and unanswered at shutdown"
                    } else {
                        ""
                    }
                ));
            }
            let cancelled = r.cancels.iter().find(|(_, c, _)| *c).map(|(a, _, _)| *a);
            for &(at, c, unanswered) in &r.cancels {
                if c && !unanswered {
                    problems.push(format!(
                        "{who}: cancel_request said pending after its response"
                    ));
                }
                if !c
                    && unanswered
                    && r.answers
                        .iter()
                        .any(|(_, res)| code(res) != Some(ErrorCode::RequestTimeout))
                {
                    problems.push(format!(
                        "{who}: not pending at cancel (event {}), yet not timed out",
                        at.pos
                    ));
                }
            }
            let expected = Ask::value_of(uid, req);
            for (at, result) in &r.answers {
                let fine = match result {
                    Ok(v) => {
                        *v == expected
                            && matches!(reply, Reply::Now | Reply::Late(_) | Reply::Twice)
                    }
                    Err(e) => match e.code() {
                        ErrorCode::Failure => {
                            reply == Reply::Error && e.context() == Some("refused")
                        }
                        ErrorCode::RequestTimeout => cancelled.is_none_or(|c| c.pos > at.pos),
                        ErrorCode::Cancelled => cancelled.is_some_and(|c| c.pos < at.pos),
                        _ => false,
                    },
                };
                if !fine {
                    problems.push(format!("{who} ({reply:?}): unexpected response {result:?}"));
                }
                if manual && let (Some(t), Some(d)) = (at.at, deadline) {
                    if t > d {
                        problems.push(format!("{who}: answered after its deadline"));
                    }
                    if code(result) == Some(ErrorCode::RequestTimeout) && t != d {
                        problems.push(format!(
                            "{who}: timed out at {}ms, deadline {}ms",
                            self.o.env.since(t),
                            self.o.env.since(d)
                        ));
                    }
                }
                if let Some(c) = cancelled
                    && code(result) != Some(ErrorCode::Cancelled)
                    && at.pos > c.pos
                {
                    problems.push(format!("{who}: cancelled, then answered {result:?}"));
                }
            }
            if manual && let (Some(u), Some(d)) = (r.unanswered.and_then(|u| u.at), deadline) {
                let limit = cancelled.and_then(|c| c.at).map_or(d, |c| c.min(d));
                if u > limit {
                    problems.push(format!(
                        "{who}: its requester lived to {}ms with no response (deadline {}ms)",
                        self.o.env.since(u),
                        self.o.env.since(d)
                    ));
                }
            }
        }
        self.problems.extend(problems);
    }

    /// Nothing leaks: every store of every locality is empty at the end.
    pub(super) fn leaks(&mut self) {
        let stopped = self.stopped_on_violation();
        let mut problems = Vec::new();
        for l in &self.o.localities {
            if !l.finished {
                problems.push(format!("{} did not finish", l.name));
            }
            let s = &l.stats;
            let left = [
                ("actors", s.actors),
                ("addresses", s.addresses),
                ("subscriptions", s.subscriptions),
                ("timers", s.timers),
                ("requests", s.requests),
                ("io", s.io),
                ("queued", s.queued),
            ];
            if !stopped && left.iter().any(|(_, n)| *n > 0) {
                let left: Vec<String> = left
                    .iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(w, n)| format!("{n} {w}"))
                    .collect();
                problems.push(format!("{} leaks {}", l.name, left.join(", ")));
            }
        }
        self.problems.extend(problems);
    }
}

fn code(r: &Result<u64, Error>) -> Option<ErrorCode> {
    r.as_ref().err().map(Error::code)
}

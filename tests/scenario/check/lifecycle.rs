//! Lifecycle invariants: every instance's hooks in order, children before
//! their supervisor, a supervisor's init after its children's, linked
//! clients before their servers.

use super::{At, Checker};
use commutator::InitFailurePolicy;

impl Checker<'_> {
    /// Every instance goes through its hooks in order and ends SHUT_DOWN
    /// exactly once; its value is dropped once, before its locality is.
    pub(super) fn lifecycle(&mut self) {
        let stopped = self.stopped_on_violation();
        let mut problems = Vec::new();
        for i in self.insts.values() {
            let who = format!("u{} (n{}#{})", i.uid, i.node, i.index);
            let Some(made) = i.made else {
                problems.push(format!("{who}: logged without being made"));
                continue;
            };
            let pos = |a: Option<At>| a.map(|a| a.pos);
            let chain = [
                ("made", Some(made)),
                ("init_start", pos(i.init_start)),
                ("init_finish", pos(i.init_finish)),
                ("on_start", pos(i.start)),
            ];
            let mut last: Option<(&str, usize)> = None;
            let mut gap = None;
            for (what, p) in chain {
                match (p, gap) {
                    (Some(_), Some(missing)) => {
                        problems.push(format!("{who}: {what} without {missing}"));
                    }
                    (Some(p), None) => {
                        if let Some((before, q)) = last
                            && q > p
                        {
                            problems.push(format!("{who}: {what} before {before}"));
                        }
                        last = Some((what, p));
                    }
                    (None, _) => gap = gap.or(Some(what)),
                }
            }
            if i.shutdown_start.is_some() != i.init_start.is_some() && i.shutdown_finish.is_some() {
                problems.push(format!(
                    "{who}: shutdown_start {} although init_start {}",
                    if i.shutdown_start.is_some() {
                        "ran"
                    } else {
                        "did not run"
                    },
                    if i.init_start.is_some() {
                        "ran"
                    } else {
                        "did not"
                    }
                ));
            }
            match i.shutdown_finish {
                None if !stopped => problems.push(format!("{who}: never shut down")),
                None => {}
                Some(f) => {
                    for (what, p) in [
                        ("init_start", pos(i.init_start)),
                        ("init_finish", pos(i.init_finish)),
                        ("on_start", pos(i.start)),
                        ("shutdown_start", pos(i.shutdown_start)),
                    ] {
                        if p.is_some_and(|p| p > f.pos) {
                            problems.push(format!("{who}: {what} after shutdown_finish"));
                        }
                    }
                    for a in &i.activity {
                        if a.pos > f.pos || i.init_start.is_none_or(|s| a.pos < s.pos) {
                            problems
                                .push(format!("{who}: active outside its life (event {})", a.pos));
                        }
                    }
                }
            }
            match (&i.reason, i.shutdown_finish) {
                (None, Some(_)) => problems.push(format!("{who}: no shutdown reason")),
                (Some((p, _)), Some(f)) if *p < f.pos => {
                    problems.push(format!("{who}: shutdown reason before shutdown_finish"))
                }
                (Some(_), None) => problems.push(format!("{who}: a reason but no shutdown_finish")),
                _ => {}
            }
            match i.dropped {
                None => problems.push(format!("{who}: its value was never dropped")),
                Some(d) => {
                    if i.shutdown_finish.is_some_and(|f| f.pos > d) {
                        problems.push(format!("{who}: dropped before shutdown_finish"));
                    }
                    if !stopped && d >= self.o.before_drop {
                        problems.push(format!("{who}: dropped only with its locality"));
                    }
                }
            }
        }
        self.problems.extend(problems);
    }

    /// Children finish before their supervisor.
    pub(super) fn tree_order(&mut self) {
        let mut problems = Vec::new();
        for i in self.insts.values() {
            let Some(p) = i.parent else { continue };
            let Some(parent) = self.insts.get(&p) else {
                problems.push(format!(
                    "{}: its supervisor u{p} is unknown",
                    self.name(i.uid)
                ));
                continue;
            };
            if parent.node != self.s.nodes[i.node].parent.unwrap_or(usize::MAX) {
                problems.push(format!(
                    "{}: made by u{p}, not an instance of its supervisor",
                    self.name(i.uid)
                ));
            }
            match (i.shutdown_finish, parent.shutdown_finish) {
                (Some(c), Some(p)) if c.pos > p.pos => problems.push(format!(
                    "{} finished after its supervisor {}",
                    self.name(i.uid),
                    self.name(parent.uid)
                )),
                (None, Some(_)) => problems.push(format!(
                    "{} never finished, but its supervisor {} did",
                    self.name(i.uid),
                    self.name(parent.uid)
                )),
                _ => {}
            }
        }
        self.problems.extend(problems);
    }

    /// A supervisor that shuts down on a child's init failure
    /// (`ShutdownSupervisor`) never finishes its own init after that failure:
    /// it confirms its init only when every child has.
    pub(super) fn supervisor_init(&mut self) {
        let mut problems = Vec::new();
        for s in self.insts.values() {
            let policy = self.s.nodes[s.node].supervisor.map(|c| c.init_failure);
            let (Some(InitFailurePolicy::ShutdownSupervisor), Some(done)) = (policy, s.init_finish)
            else {
                continue;
            };
            for c in self.insts.values().filter(|c| c.parent == Some(s.uid)) {
                let failed = c.init_finish.is_none()
                    && c.reason.as_ref().is_some_and(|(_, r)| !r.is_normal());
                if failed && c.shutdown_finish.is_some_and(|f| f.pos < done.pos) {
                    problems.push(format!(
                        "{} finished its init after its child {} failed its own",
                        self.name(s.uid),
                        self.name(c.uid)
                    ));
                }
            }
        }
        self.problems.extend(problems);
    }

    /// Linked clients finish before their servers.
    pub(super) fn links(&mut self) {
        let mut problems = Vec::new();
        for i in self.insts.values() {
            for server in &i.linked {
                if !i.linking.contains(server) {
                    problems.push(format!(
                        "{}: linked to {server} without asking",
                        self.name(i.uid)
                    ));
                }
                let Some(s) = self.by_addr.get(server).and_then(|u| self.insts.get(u)) else {
                    problems.push(format!(
                        "{}: linked to {server}, which is none of ours",
                        self.name(i.uid)
                    ));
                    continue;
                };
                match (i.shutdown_finish, s.shutdown_finish) {
                    (Some(c), Some(p)) if c.pos > p.pos => problems.push(format!(
                        "linked client {} finished after its server {}",
                        self.name(i.uid),
                        self.name(s.uid)
                    )),
                    (None, Some(_)) => problems.push(format!(
                        "linked client {} never finished, but its server {} did",
                        self.name(i.uid),
                        self.name(s.uid)
                    )),
                    _ => {}
                }
            }
        }
        self.problems.extend(problems);
    }
}

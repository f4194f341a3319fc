//! A [`Scenario`] as text, for a failing seed's report: the tree with each
//! node's settings and its instances' scripts, then the root's stops.

use super::{Action, Init, Scenario, Script};
use commutator::RestartPolicy;
use std::fmt;

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scenario {:#018x}: {} localit{}, root ends at {}ms, contract violations: {:?}{}",
            self.seed,
            self.localities,
            if self.localities == 1 { "y" } else { "ies" },
            self.end_ms,
            self.on_violation,
            if self.registry {
                ", root has a registry"
            } else {
                ""
            },
        )?;
        self.fmt_node(f, 0, "", "")?;
        if let Some(at) = self.release_handles_at {
            writeln!(
                f,
                "at {at}ms the root releases its handles on the localities"
            )?;
        }
        for (at, node) in &self.stops {
            writeln!(f, "at {at}ms the root stops n{node}")?;
        }
        Ok(())
    }
}

impl Scenario {
    fn fmt_node(
        &self,
        f: &mut fmt::Formatter<'_>,
        id: usize,
        lead: &str,
        rest: &str,
    ) -> fmt::Result {
        let n = &self.nodes[id];
        write!(f, "{lead}n{id} [L{}]", n.locality)?;
        match &n.supervisor {
            Some(s) => {
                write!(f, " supervisor(init failure: {:?}", s.init_failure)?;
                if s.synchronize {
                    write!(f, ", synchronized start")?;
                }
                write!(f, ")")?;
            }
            None => write!(f, " worker")?,
        }
        if let Some(t) = n.init_timeout {
            write!(f, " init_timeout={t}ms")?;
        }
        if let Some(t) = n.shutdown_timeout {
            write!(f, " shutdown_timeout={t}ms")?;
        }
        if n.restart != RestartPolicy::Never {
            write!(f, " restart={:?} delay={}ms", n.restart, n.restart_delay)?;
            if let Some(max) = n.backoff {
                write!(f, " backoff<={max}ms")?;
            }
            match n.limit {
                Some((k, p)) => write!(f, " limit={k}/{p}ms")?,
                None => write!(f, " limit=3/5000ms")?,
            }
        }
        if n.escalate {
            write!(f, " escalate")?;
        }
        if n.autoshutdown {
            write!(f, " autoshutdown")?;
        }
        if let Some(name) = n.register_as {
            write!(f, " register \"svc{name}\"")?;
            if name != id {
                write!(f, " (clash)")?;
            }
        }
        for l in &n.links {
            let how = match (l.discover, l.wait) {
                (false, _) => "link",
                (true, true) => "discover+link",
                (true, false) => "discover(no wait)+link",
            };
            write!(f, " {how}->n{}", l.server)?;
        }
        writeln!(f)?;
        for (i, s) in n.scripts.iter().enumerate() {
            // The last script is also that of every later instance.
            let plus = if i + 1 == n.scripts.len() { "+" } else { " " };
            writeln!(f, "{rest}   #{i}{plus} {s}")?;
        }
        for (k, &c) in n.children.iter().enumerate() {
            let last = k + 1 == n.children.len();
            let (l, r) = if last {
                ("└─ ", "   ")
            } else {
                ("├─ ", "│  ")
            };
            self.fmt_node(f, c, &format!("{rest}{l}"), &format!("{rest}{r}"))?;
        }
        Ok(())
    }
}

impl fmt::Display for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.init {
            Init::Ready => write!(f, "init ok")?,
            Init::Fail => write!(f, "init fails")?,
            Init::Delay(d) => write!(f, "init holds a resource {d}ms")?,
            Init::FailAfter(d) => write!(f, "init fails after {d}ms")?,
        }
        if let Some(d) = self.shutdown_delay {
            write!(f, "; shutdown holds a resource {d}ms")?;
        }
        if self.ask_restart {
            write!(f, "; wants a restart")?;
        }
        for (at, a) in &self.actions {
            write!(f, "; +{at}ms ")?;
            match a {
                Action::Crash => write!(f, "crash")?,
                Action::Panic => write!(f, "panic")?,
                Action::Quit => write!(f, "quit")?,
                Action::StopSupervisor => write!(f, "stop its supervisor")?,
                Action::Send { to, count } => write!(f, "send {count} to n{to}")?,
                Action::SendStale { to, count } => {
                    write!(f, "send {count} to n{to}'s first address")?
                }
                Action::Listen { to } => write!(f, "listen to n{to}")?,
                Action::Request {
                    to,
                    reply,
                    timeout,
                    cancel_after,
                    via,
                } => {
                    write!(f, "ask n{to} ({reply:?}, timeout {timeout}ms")?;
                    if let Some(c) = cancel_after {
                        write!(f, ", cancel at +{c}ms")?;
                    }
                    if *via {
                        write!(f, ", reply to an identity")?;
                    }
                    write!(f, ")")?;
                }
            }
        }
        Ok(())
    }
}

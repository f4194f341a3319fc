//! The settings an entity set or a pool gives each child it makes: restart
//! policy and limits, timeouts. Checked when the set or pool initializes.

use crate::actor::Actor;
use crate::builder::Builder;
use crate::error::{Error, ErrorCode, Result};
use crate::supervisor::restart::RestartPolicy;
use std::time::Duration;

/// What a set or pool sets on the builder of each child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ChildSettings {
    pub(super) restart: RestartPolicy,
    pub(super) delay: Duration,
    pub(super) backoff: Option<Duration>,
    pub(super) limit: Option<(u32, Duration)>,
    pub(super) escalate: bool,
    pub(super) init_timeout: Option<Duration>,
    pub(super) shutdown_timeout: Option<Duration>,
}

impl ChildSettings {
    pub(super) fn new(restart: RestartPolicy) -> Self {
        ChildSettings {
            restart,
            delay: Duration::ZERO,
            backoff: None,
            limit: None,
            escalate: false,
            init_timeout: None,
            shutdown_timeout: None,
        }
    }

    /// Refuses settings that could not work, before any child is made.
    pub(super) fn check(&self, what: &str) -> Result<()> {
        if self.restart != RestartPolicy::Never
            && let Some((_, period)) = self.limit
            && period.is_zero()
        {
            let why = format!("{what}: a restart limit needs a period longer than zero");
            return Err(Error::new(ErrorCode::InvalidArgument).with_context(why));
        }
        Ok(())
    }

    /// Sets them on a child's builder.
    pub(super) fn apply<'a, A: Actor, T>(&self, mut b: Builder<'a, A, T>) -> Builder<'a, A, T> {
        if self.restart != RestartPolicy::Never {
            b = b.restart(self.restart).restart_delay(self.delay);
            if let Some(max) = self.backoff {
                b = b.restart_backoff(max);
            }
            if let Some((restarts, period)) = self.limit {
                b = b.restart_limit(restarts, period);
            }
        }
        if self.escalate {
            b = b.escalate_failure();
        }
        if let Some(timeout) = self.init_timeout {
            b = b.init_timeout(timeout);
        }
        if let Some(timeout) = self.shutdown_timeout {
            b = b.shutdown_timeout(timeout);
        }
        b
    }
}

/// The settings methods every set and pool has, on `ChildSettings` in a
/// field named `children`.
macro_rules! child_settings_methods {
    ($what:literal) => {
        #[doc = concat!("Waits `delay` before each restart of ", $what, " (default: none).")]
        pub fn restart_delay(mut self, delay: std::time::Duration) -> Self {
            self.children.delay = delay;
            self
        }

        #[doc = concat!("Doubles the restart delay of ", $what, " with each restart within the limit's period, up to `max`.")]
        pub fn restart_backoff(mut self, max: std::time::Duration) -> Self {
            self.children.backoff = Some(max);
            self
        }

        #[doc = concat!("Gives up on ", $what, " after `restarts` restarts within `period` (default: 3 in 5 s).")]
        pub fn restart_limit(mut self, restarts: u32, period: std::time::Duration) -> Self {
            self.children.limit = Some((restarts, period));
            self
        }

        #[doc = concat!("When ", $what, " fails and is not restarted, the whole set or pool shuts down with `FailureEscalation`.")]
        pub fn escalate_failure(mut self) -> Self {
            self.children.escalate = true;
            self
        }

        #[doc = concat!("Fails the init of ", $what, " with `InitTimeout` if it takes longer than `timeout`.")]
        pub fn init_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.children.init_timeout = Some(timeout);
            self
        }

        #[doc = concat!("Treats a shutdown of ", $what, " longer than `timeout` as a contract violation.")]
        pub fn shutdown_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.children.shutdown_timeout = Some(timeout);
            self
        }
    };
}

pub(super) use child_settings_methods;

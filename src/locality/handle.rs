//! [`LocalityHandle`]: a thread-safe handle on a locality, for spawning there.

use super::shared::LocalityShared;
use std::fmt;
use std::sync::Arc;

/// A handle on a locality (usually a [`System`](crate::System) on another
/// thread), from [`Locality::handle`](crate::Locality::handle) or
/// [`System::handle`](crate::System::handle). `Send + Sync + Clone`.
///
/// With it, a supervisor here can spawn a child there
/// ([`Context::spawn_on`](crate::Context::spawn_on)): the supervisor tree then
/// spans threads. While any handle exists, the locality keeps running even
/// when it has no actor left (more may come); it finishes once its actors
/// are gone and the last handle is dropped.
pub struct LocalityHandle {
    pub(crate) shared: Arc<LocalityShared>,
}

impl LocalityHandle {
    pub(crate) fn new(shared: Arc<LocalityShared>) -> LocalityHandle {
        shared.handle_made();
        LocalityHandle { shared }
    }

    /// The name of the locality the handle is on.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// `true` once the locality has finished: spawning through this handle
    /// then fails with [`ErrorCode::LocalityFinished`](crate::ErrorCode::LocalityFinished).
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }
}

impl Clone for LocalityHandle {
    fn clone(&self) -> Self {
        LocalityHandle::new(self.shared.clone())
    }
}

impl Drop for LocalityHandle {
    fn drop(&mut self) {
        self.shared.handle_dropped();
    }
}

impl fmt::Debug for LocalityHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LocalityHandle({})", self.shared.name)
    }
}

//! One locality's waker per `mio::Poll`: mio allows one waker per poll, so
//! a second locality registered on the same poll is refused with an error
//! (mio would panic).

use crate::error::{Error, ErrorCode, Result};

/// A poll that holds a locality's waker: mio allows one waker per poll, so a
/// second locality on the same poll is refused with an error (mio would panic).
#[derive(Debug)]
pub(super) struct PollClaim {
    #[cfg(unix)]
    fd: std::os::fd::RawFd,
}

#[cfg(unix)]
static CLAIMED_POLLS: std::sync::Mutex<Vec<std::os::fd::RawFd>> = std::sync::Mutex::new(Vec::new());

impl PollClaim {
    #[cfg(unix)]
    pub(super) fn claim(registry: &mio::Registry, name: &str) -> Result<PollClaim> {
        let fd = std::os::fd::AsRawFd::as_raw_fd(registry);
        let mut claimed = CLAIMED_POLLS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if claimed.contains(&fd) {
            let why = format!(
                "{name}: this poll already has a locality's waker (mio allows one per poll)"
            );
            return Err(Error::new(ErrorCode::AlreadyRegisteredOnPoll).with_context(why));
        }
        claimed.push(fd);
        Ok(PollClaim { fd })
    }

    #[cfg(not(unix))]
    pub(super) fn claim(_: &mio::Registry, _: &str) -> Result<PollClaim> {
        Ok(PollClaim {})
    }
}

impl Drop for PollClaim {
    fn drop(&mut self) {
        #[cfg(unix)]
        CLAIMED_POLLS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|&fd| fd != self.fd);
    }
}

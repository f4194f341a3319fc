//! One locality's waker per `mio::Poll`: mio allows one waker per poll, so
//! a second locality registered on the same poll is refused with an error
//! (mio would panic).
//!
//! A poll is known by its descriptor's number. A poll closed while its
//! locality lives leaves its number claimed, and the system may give the
//! number to a new poll: on Linux the claim keeps a duplicate of the poll's
//! descriptor, so that such a new poll can be told apart (an epoll instance
//! cannot watch itself: asking the new poll to watch the duplicate fails
//! only if both are the same poll).

use crate::error::{Error, ErrorCode, Result};

/// A poll that holds a locality's waker: mio allows one waker per poll, so a
/// second locality on the same poll is refused with an error (mio would panic).
#[derive(Debug)]
pub(super) struct PollClaim {
    #[cfg(unix)]
    id: u64,
}

/// A claimed poll: its descriptor's number, and (Linux) a duplicate of it.
#[cfg(unix)]
struct Claimed {
    fd: std::os::fd::RawFd,
    id: u64,
    #[cfg(target_os = "linux")]
    poll: mio::Registry,
}

#[cfg(unix)]
static CLAIMED_POLLS: std::sync::Mutex<Vec<Claimed>> = std::sync::Mutex::new(Vec::new());

#[cfg(unix)]
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl PollClaim {
    #[cfg(unix)]
    pub(super) fn claim(registry: &mio::Registry, name: &str) -> Result<PollClaim> {
        let fd = std::os::fd::AsRawFd::as_raw_fd(registry);
        let mut claimed = CLAIMED_POLLS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for other in claimed.iter().filter(|c| c.fd == fd) {
            if same_poll(other, registry) {
                let why = format!(
                    "{name}: this poll already has a locality's waker (mio allows one per poll)"
                );
                return Err(Error::new(ErrorCode::AlreadyRegisteredOnPoll).with_context(why));
            }
        }
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        claimed.push(Claimed {
            fd,
            id,
            #[cfg(target_os = "linux")]
            poll: registry.try_clone().map_err(Error::from)?,
        });
        Ok(PollClaim { id })
    }

    #[cfg(not(unix))]
    pub(super) fn claim(_: &mio::Registry, _: &str) -> Result<PollClaim> {
        Ok(PollClaim {})
    }
}

/// `true` if `registry` is the poll `claimed` holds, not a new poll that got
/// its number after it was closed. The claim's duplicate is offered to the
/// new poll to watch: an epoll instance refuses to watch itself (`EINVAL`).
#[cfg(target_os = "linux")]
fn same_poll(claimed: &Claimed, registry: &mio::Registry) -> bool {
    use std::os::fd::AsRawFd;
    let dup = claimed.poll.as_raw_fd();
    let mut source = mio::unix::SourceFd(&dup);
    match registry.register(&mut source, mio::Token(usize::MAX), mio::Interest::READABLE) {
        Ok(()) => {
            // Another poll: the claimed one was closed and its number reused.
            let _ = registry.deregister(&mut source);
            false
        }
        Err(e) => e.kind() == std::io::ErrorKind::InvalidInput,
    }
}

/// Elsewhere the number alone tells (a poll closed before its locality
/// keeps its number claimed until the locality is dropped).
#[cfg(all(unix, not(target_os = "linux")))]
fn same_poll(_: &Claimed, _: &mio::Registry) -> bool {
    true
}

impl Drop for PollClaim {
    fn drop(&mut self) {
        #[cfg(unix)]
        CLAIMED_POLLS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|c| c.id != self.id);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_poll_is_claimed_once_and_a_new_poll_with_a_closed_ones_number_is_not_refused() {
        let poll = mio::Poll::new().unwrap();
        let first = PollClaim::claim(poll.registry(), "a").unwrap();
        let err = PollClaim::claim(poll.registry(), "b").unwrap_err();
        assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
        // The first poll closes while its claim lives; the next descriptor
        // the system makes may take its number (then the claim must not
        // refuse it: it is another poll).
        use std::os::fd::AsRawFd;
        let number = poll.as_raw_fd();
        drop(poll);
        let again = mio::Poll::new().unwrap();
        let second = PollClaim::claim(again.registry(), "c").expect("another poll");
        if again.as_raw_fd() == number {
            // The case the duplicate is for: same number, other poll.
            let err = PollClaim::claim(again.registry(), "d").unwrap_err();
            assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
        }
        drop((first, second));
        PollClaim::claim(again.registry(), "e").expect("free again");
    }
}

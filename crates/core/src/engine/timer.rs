//! Microsecond-precise wake-ups that stay armed across waits.
//!
//! `epoll_wait` takes whole milliseconds, which is why wrk2 is only accurate
//! to about ±1 ms. The poller ([`super::poller`]) waits with
//! `epoll_pwait2`'s nanosecond timeout for a deadline that is near; for a
//! later one (or where the kernel lacks `epoll_pwait2`) a `timerfd` armed
//! with an absolute `CLOCK_MONOTONIC` deadline wakes it to within the
//! kernel's timer slack, which the worker sets to 1 ns with
//! `prctl(PR_SET_TIMERSLACK)`. The fd is registered with the poller like
//! any socket, so one wait covers I/O and the next deadline, and it stays
//! armed while the deadline stays the same.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::clock::Nanos;

pub struct Timer {
    fd: OwnedFd,
    /// The deadline currently armed, so re-arming for the same deadline
    /// costs no syscall.
    armed: Option<Nanos>,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Timer { fd, armed: None })
    }

    /// Arms the timer to fire at the absolute monotonic time `at`, or
    /// disarms it with `None`.
    pub fn arm(&mut self, at: Option<Nanos>) -> io::Result<()> {
        if self.armed == at {
            return Ok(());
        }
        // An all-zero it_value disarms; an absolute time in the past fires at once,
        // so clamp to 1 ns to keep "now" from meaning "disarm".
        let ns = at.map_or(0, |t| t.max(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid fd and a fully initialised itimerspec.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed = at;
        Ok(())
    }

    /// Consumes an expiry so that the edge-triggered poller reports the
    /// next one.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into an 8-byte buffer from our own fd;
        // EAGAIN (not expired) is fine and ignored.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        self.armed = None;
    }
}

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Asks the kernel to wake this thread's timers with 1 ns slack instead of
/// the default 50 µs.
pub fn set_fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::now;

    fn wait_readable(fd: RawFd) {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; bounded 1 s wait.
        let rc = unsafe { libc::poll(&mut pfd, 1, 1000) };
        assert_eq!(rc, 1, "timer did not fire within 1 s");
    }

    #[test]
    fn fires_at_the_absolute_deadline_not_before() {
        set_fine_timer_slack();
        let mut t = Timer::new().unwrap();
        let deadline = now() + 3_000_000;
        t.arm(Some(deadline)).unwrap();
        wait_readable(t.as_raw_fd());
        assert!(now() >= deadline);
        t.clear();
    }

    #[test]
    fn a_past_deadline_fires_at_once() {
        let mut t = Timer::new().unwrap();
        t.arm(Some(1)).unwrap();
        wait_readable(t.as_raw_fd());
    }
}

//! Waiting: for I/O on a worker's sockets, for its waker, and for the next
//! moment it has something to do (an intended send time, a timeout sweep,
//! the end of the window), all in one call.
//!
//! Sockets are registered through mio's [`Registry`] (edge-triggered
//! epoll). The wait itself is `epoll_pwait2`, whose timeout is a
//! `timespec`: with the thread's timer slack at 1 ns it wakes within
//! microseconds of the deadline, and costs one system call per wait.
//! Kernels before 5.11 (or sandboxes that refuse the call) fall back to a
//! [`Timer`] registered with the poller like a socket, which costs two more
//! per wait that has a new deadline: arming it, and reading its expiry.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use mio::unix::SourceFd;
use mio::{Interest, Poll, Registry, Token, Waker};

use crate::clock::{self, Nanos};

use super::timer::{self, Timer};

/// The fallback timer's token; never handed to the caller.
const TIMER: Token = Token(usize::MAX - 1);
/// The waker's token.
pub const WAKE: Token = Token(usize::MAX - 2);

pub struct Poller {
    poll: Poll,
    waker: Arc<Waker>,
    /// `None` when `epoll_pwait2` does the timing.
    timer: Option<Timer>,
}

/// Room for the events of one wait.
pub struct Events(Vec<libc::epoll_event>);

impl Events {
    pub fn with_capacity(n: usize) -> Events {
        Events(Vec::with_capacity(n))
    }

    pub fn iter(&self) -> impl Iterator<Item = Ready> + '_ {
        self.0.iter().map(|e| Ready {
            token: e.u64,
            flags: e.events,
        })
    }
}

/// One socket's (or the waker's) readiness, read as mio reads epoll's
/// flags.
#[derive(Clone, Copy, Debug)]
pub struct Ready {
    token: u64,
    flags: u32,
}

impl Ready {
    fn has(&self, flag: libc::c_int) -> bool {
        self.flags & flag as u32 != 0
    }

    pub fn token(&self) -> Token {
        Token(self.token as usize)
    }

    pub fn is_readable(&self) -> bool {
        self.has(libc::EPOLLIN) || self.has(libc::EPOLLPRI)
    }

    pub fn is_writable(&self) -> bool {
        self.has(libc::EPOLLOUT)
    }

    pub fn is_error(&self) -> bool {
        self.has(libc::EPOLLERR)
    }

    /// The peer closed its side (or the connection is gone).
    pub fn is_read_closed(&self) -> bool {
        self.has(libc::EPOLLHUP) || (self.has(libc::EPOLLIN) && self.has(libc::EPOLLRDHUP))
    }
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        timer::set_fine_timer_slack();
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let timer = if precise_wait_works(&poll) {
            None
        } else {
            let t = Timer::new()?;
            poll.registry()
                .register(&mut SourceFd(&t.as_raw_fd()), TIMER, Interest::READABLE)?;
            Some(t)
        };
        Ok(Poller { poll, waker, timer })
    }

    pub fn registry(&self) -> &Registry {
        self.poll.registry()
    }

    pub fn waker(&self) -> Arc<Waker> {
        self.waker.clone()
    }

    /// Waits until something is ready or `deadline` (monotonic time)
    /// passes, and fills `events` with what is ready (nothing when the
    /// deadline came first or a signal interrupted the wait).
    pub fn wait(&mut self, events: &mut Events, deadline: Nanos) -> io::Result<()> {
        let buf = &mut events.0;
        buf.clear();
        let cap = buf.capacity() as libc::c_int;
        let epfd = self.poll.as_raw_fd();
        let n = match self.timer.as_mut() {
            None => {
                let left = deadline.saturating_sub(clock::now());
                let timeout = libc::timespec {
                    tv_sec: (left / 1_000_000_000) as libc::time_t,
                    tv_nsec: (left % 1_000_000_000) as libc::c_long,
                };
                // SAFETY: `buf` has room for `cap` events and the kernel
                // writes at most that many; the timespec outlives the call.
                unsafe { pwait2(epfd, buf.as_mut_ptr(), cap, &timeout) }
            }
            Some(t) => {
                t.arm(Some(deadline))?;
                // SAFETY: as above; -1 waits until an event or the timer.
                unsafe { libc::epoll_wait(epfd, buf.as_mut_ptr(), cap, -1) }
            }
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(()),
                _ => Err(e),
            };
        }
        // SAFETY: the kernel initialised the first `n` entries.
        unsafe { buf.set_len(n as usize) };
        if let Some(t) = self.timer.as_mut() {
            let before = buf.len();
            buf.retain(|e| e.u64 != TIMER.0 as u64);
            if buf.len() < before {
                t.clear();
            }
        }
        Ok(())
    }
}

/// # Safety
/// `events` must have room for `max` entries.
unsafe fn pwait2(
    epfd: libc::c_int,
    events: *mut libc::epoll_event,
    max: libc::c_int,
    timeout: &libc::timespec,
) -> libc::c_int {
    // SAFETY: per the function's contract; no signal mask is passed.
    unsafe {
        libc::syscall(
            libc::SYS_epoll_pwait2,
            epfd,
            events,
            max,
            timeout as *const libc::timespec,
            std::ptr::null::<libc::sigset_t>(),
            0usize,
        ) as libc::c_int
    }
}

/// True when this kernel (and sandbox) answers `epoll_pwait2`.
fn precise_wait_works(poll: &Poll) -> bool {
    let mut ev = [libc::epoll_event { events: 0, u64: 0 }; 1];
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: one event's room, a zero timeout: returns at once.
    unsafe { pwait2(poll.as_raw_fd(), ev.as_mut_ptr(), 1, &zero) >= 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both() -> Vec<Poller> {
        let precise = Poller::new().unwrap();
        let mut fallback = Poller::new().unwrap();
        if fallback.timer.is_none() {
            let t = Timer::new().unwrap();
            fallback
                .registry()
                .register(&mut SourceFd(&t.as_raw_fd()), TIMER, Interest::READABLE)
                .unwrap();
            fallback.timer = Some(t);
        }
        vec![precise, fallback]
    }

    #[test]
    fn a_wait_ends_at_its_deadline_not_before_and_not_much_after() {
        for mut p in both() {
            let mut events = Events::with_capacity(8);
            for _ in 0..5 {
                let deadline = clock::now() + 2_000_000;
                let mut now = clock::now();
                // A signal may end a wait early; the loop waits again.
                while now < deadline {
                    p.wait(&mut events, deadline).unwrap();
                    assert_eq!(events.iter().count(), 0);
                    now = clock::now();
                }
                // Generous: a loaded machine may be late, never early.
                assert!(now - deadline < 500_000_000, "{}", now - deadline);
            }
        }
    }

    #[test]
    fn a_past_deadline_returns_at_once() {
        for mut p in both() {
            let mut events = Events::with_capacity(8);
            let t = std::time::Instant::now();
            p.wait(&mut events, clock::now().saturating_sub(1_000))
                .unwrap();
            assert!(t.elapsed() < std::time::Duration::from_secs(1));
        }
    }

    #[test]
    fn the_waker_ends_a_wait_and_says_so() {
        for mut p in both() {
            let waker = p.waker();
            let t = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                waker.wake().unwrap();
            });
            let mut events = Events::with_capacity(8);
            let far = clock::now() + 10_000_000_000;
            let mut woken = false;
            while !woken && clock::now() < far {
                p.wait(&mut events, far).unwrap();
                woken = events.iter().any(|e| e.token() == WAKE);
            }
            t.join().unwrap();
            assert!(woken);
        }
    }
}

//! Waiting: for I/O on a worker's sockets, for its waker, and for the next
//! moment it has something to do (an intended send time, a timeout sweep,
//! the end of the window), all in one call.
//!
//! Sockets are registered through mio's [`Registry`] (edge-triggered
//! epoll). A deadline less than [`NEAR`] away is the wait's own timeout:
//! `epoll_pwait2` takes it as a `timespec`, and with the thread's timer
//! slack at 1 ns wakes within microseconds of it, in one system call. A
//! later one is left to a [`Timer`] registered with the poller like a
//! socket, armed only when the deadline changes, and the wait has no
//! timeout: a timeout arms a kernel timer on every wait and cancels it
//! when I/O comes first, which costs a tenth of a worker's time when
//! responses wake it tens of thousands of times a second (in a virtual
//! machine each arming reprograms the host's timer). Deadlines that may be
//! late by up to [`SOFT_GRAIN`] (a session's timers, the timeout sweep)
//! are rounded up onto that grain, so that one that moves on every packet
//! (QUIC's loss timer) re-arms the timer at most once per grain. Kernels
//! before 5.11 (or sandboxes that refuse `epoll_pwait2`) leave every
//! deadline to the timer.

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

/// A deadline nearer than this is a wait's timeout; a later one is the
/// timer's. Requests paced faster than one per [`NEAR`] (2,000/s) fall due
/// nearer than that, and a timeout costs them nothing more: the wait ends
/// by it anyway.
pub const NEAR: Nanos = 500_000;

/// How late a soft deadline may come.
pub const SOFT_GRAIN: Nanos = 1_000_000;

pub struct Poller {
    poll: Poll,
    waker: Arc<Waker>,
    timer: Timer,
    /// `epoll_pwait2` works here: near deadlines are its timeouts.
    precise: bool,
}

/// When a wait should end: at `hard` (an intended send time, the end of
/// the run), within microseconds, or at `soft` (a session's timer, the
/// sweep), up to [`SOFT_GRAIN`] late. [`Nanos::MAX`] is never.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    pub hard: Nanos,
    pub soft: Nanos,
}

impl Deadline {
    /// The moment the wait ends: the soft deadline rounded up onto the
    /// grain, if that comes before the hard one.
    fn at(&self) -> Nanos {
        let soft = self.soft.div_ceil(SOFT_GRAIN).saturating_mul(SOFT_GRAIN);
        self.hard.min(soft)
    }
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
        let timer = Timer::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
        let precise = precise_wait_works(&poll);
        Ok(Poller {
            poll,
            waker,
            timer,
            precise,
        })
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
    pub fn wait(&mut self, events: &mut Events, deadline: Deadline) -> io::Result<()> {
        let buf = &mut events.0;
        buf.clear();
        let cap = buf.capacity() as libc::c_int;
        let epfd = self.poll.as_raw_fd();
        let at = deadline.at();
        let left = at.saturating_sub(clock::now());
        let n = if self.precise && left < NEAR {
            let timeout = libc::timespec {
                tv_sec: 0,
                tv_nsec: left as libc::c_long,
            };
            // SAFETY: `buf` has room for `cap` events and the kernel
            // writes at most that many; the timespec outlives the call.
            unsafe { pwait2(epfd, buf.as_mut_ptr(), cap, &timeout) }
        } else {
            self.timer.arm((at < Nanos::MAX).then_some(at))?;
            // SAFETY: as above; -1 waits until an event or the timer.
            unsafe { libc::epoll_wait(epfd, buf.as_mut_ptr(), cap, -1) }
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
        let before = buf.len();
        buf.retain(|e| e.u64 != TIMER.0 as u64);
        if buf.len() < before {
            self.timer.clear();
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

    /// A poller as this kernel has it, and one that leaves every deadline
    /// to the timer, as where `epoll_pwait2` is missing.
    fn both() -> Vec<Poller> {
        let precise = Poller::new().unwrap();
        let mut fallback = Poller::new().unwrap();
        fallback.precise = false;
        vec![precise, fallback]
    }

    /// Only a hard deadline.
    fn hard(at: Nanos) -> Deadline {
        Deadline {
            hard: at,
            soft: Nanos::MAX,
        }
    }

    /// Waits until `deadline` has passed (a signal may end a wait early:
    /// it waits again), and says how late it ended.
    fn wait_out(p: &mut Poller, deadline: Deadline, until: Nanos) -> Nanos {
        let mut events = Events::with_capacity(8);
        let mut now = clock::now();
        while now < until {
            p.wait(&mut events, deadline).unwrap();
            assert_eq!(events.iter().count(), 0);
            now = clock::now();
        }
        now - until
    }

    /// Near deadlines are the wait's timeout, later ones the timer's:
    /// both end the wait at their time, never before.
    #[test]
    fn a_wait_ends_at_its_deadline_not_before_and_not_much_after() {
        for mut p in both() {
            for ahead in [NEAR / 2, 2_000_000, NEAR / 2, 3_000_000] {
                for _ in 0..3 {
                    let at = clock::now() + ahead;
                    let late = wait_out(&mut p, hard(at), at);
                    // Generous: a loaded machine may be late, never early.
                    assert!(late < 500_000_000, "{late}");
                }
            }
        }
    }

    /// A soft deadline may end the wait up to a grain late, never early;
    /// one that moves within its grain keeps the timer as it was armed.
    #[test]
    fn a_soft_deadline_ends_the_wait_on_its_grain() {
        for mut p in both() {
            // Well inside a grain, so that the nudge below cannot cross
            // into the next one whatever the clock reads.
            let soft = (clock::now() / SOFT_GRAIN + 2) * SOFT_GRAIN + 123_456;
            let on_grain = soft.div_ceil(SOFT_GRAIN) * SOFT_GRAIN;
            let deadline = Deadline {
                hard: Nanos::MAX,
                soft,
            };
            assert_eq!(deadline.at(), on_grain);
            let nudged = Deadline {
                soft: soft + 1_000,
                ..deadline
            };
            assert_eq!(nudged.at(), on_grain);
            let late = wait_out(&mut p, deadline, on_grain);
            assert!(late < 500_000_000, "{late}");
        }
        let sooner = Deadline {
            hard: 5 * SOFT_GRAIN + 1,
            soft: 5 * SOFT_GRAIN - 1,
        };
        assert_eq!(sooner.at(), 5 * SOFT_GRAIN);
        let never = Deadline {
            hard: Nanos::MAX,
            soft: Nanos::MAX,
        };
        assert_eq!(never.at(), Nanos::MAX);
    }

    #[test]
    fn a_past_deadline_returns_at_once() {
        for mut p in both() {
            let mut events = Events::with_capacity(8);
            let t = std::time::Instant::now();
            p.wait(&mut events, hard(clock::now().saturating_sub(1_000)))
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
                p.wait(&mut events, hard(far)).unwrap();
                woken = events.iter().any(|e| e.token() == WAKE);
            }
            t.join().unwrap();
            assert!(woken);
        }
    }
}

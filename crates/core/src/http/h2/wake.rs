//! Wakers that tell the session what the HTTP/2 library has news for: the
//! connection, or one stream (by its slot). After a read, only the streams
//! woken are polled, not every stream in flight, so a read costs the same
//! with one stream open as with a hundred.
//!
//! Nothing sleeps on these wakers: the session polls whatever was woken
//! before it returns from `receive`, `open` or `take_output`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Wake, Waker};

#[derive(Debug, Default)]
struct Woken {
    conn: AtomicBool,
    streams: Mutex<Vec<usize>>,
}

/// Wakes one stream slot, once until its wake is taken.
#[derive(Debug)]
struct Flag {
    woken: Arc<Woken>,
    slot: usize,
    queued: AtomicBool,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            let mut list = self
                .woken
                .streams
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            list.push(self.slot);
        }
    }
}

/// Wakes the connection.
#[derive(Debug)]
struct ConnFlag(Arc<Woken>);

impl Wake for ConnFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.conn.store(true, Ordering::Release);
    }
}

/// The wakers of one session: one for the connection, one per stream
/// slot (made when the slot is first used, then kept).
#[derive(Debug)]
pub(crate) struct Wakeups {
    woken: Arc<Woken>,
    conn: Waker,
    flags: Vec<Arc<Flag>>,
    wakers: Vec<Waker>,
}

impl Wakeups {
    pub(crate) fn new() -> Wakeups {
        let woken = Arc::new(Woken::default());
        Wakeups {
            conn: Waker::from(Arc::new(ConnFlag(woken.clone()))),
            woken,
            flags: Vec::new(),
            wakers: Vec::new(),
        }
    }

    pub(crate) fn conn(&self) -> &Waker {
        &self.conn
    }

    /// The waker of stream slot `slot`.
    pub(crate) fn stream(&mut self, slot: usize) -> &Waker {
        while self.wakers.len() <= slot {
            let flag = Arc::new(Flag {
                woken: self.woken.clone(),
                slot: self.wakers.len(),
                queued: AtomicBool::new(false),
            });
            self.wakers.push(Waker::from(flag.clone()));
            self.flags.push(flag);
        }
        &self.wakers[slot]
    }

    /// True if the connection was woken since the last call.
    pub(crate) fn take_conn(&self) -> bool {
        self.woken.conn.swap(false, Ordering::AcqRel)
    }

    /// Moves the slots woken since the last call into `into` (cleared
    /// first); each may be woken again from now on.
    pub(crate) fn take_streams(&self, into: &mut Vec<usize>) {
        into.clear();
        {
            let mut list = self
                .woken
                .streams
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            std::mem::swap(&mut *list, into);
        }
        for &slot in into.iter() {
            if let Some(flag) = self.flags.get(slot) {
                flag.queued.store(false, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_woken_slot_is_listed_once_until_taken() {
        let mut wakeups = Wakeups::new();
        let two = wakeups.stream(2).clone();
        let zero = wakeups.stream(0).clone();
        two.wake_by_ref();
        two.wake_by_ref();
        zero.wake_by_ref();
        let mut slots = Vec::new();
        wakeups.take_streams(&mut slots);
        assert_eq!(slots, [2, 0]);
        wakeups.take_streams(&mut slots);
        assert!(slots.is_empty());
        two.wake();
        wakeups.take_streams(&mut slots);
        assert_eq!(slots, [2]);
        assert!(!wakeups.take_conn());
        wakeups.conn().wake_by_ref();
        assert!(wakeups.take_conn() && !wakeups.take_conn());
    }
}

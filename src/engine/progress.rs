//! The live progress line: each worker publishes its running totals a few
//! times a second (from its periodic sweep, never per request), and the
//! main thread reads them while it waits for the run to end.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::clock::Nanos;
use crate::stats::ThreadStats;

/// How often a worker publishes.
pub const PUBLISH_EVERY: Nanos = 250_000_000;

/// One slot of running totals per worker thread.
pub struct Board {
    slots: Vec<Slot>,
}

#[derive(Default)]
struct Slot {
    completed: AtomicU64,
    errors: AtomicU64,
    p99_us: AtomicU64,
}

/// The sum over all threads at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    pub completed: u64,
    pub errors: u64,
    /// The highest of the threads' 99th percentiles so far: an upper bound
    /// of the run's, and close to it when threads share the load evenly.
    pub p99_us: u64,
}

impl Board {
    pub fn new(threads: usize) -> Board {
        Board {
            slots: (0..threads).map(|_| Slot::default()).collect(),
        }
    }

    pub fn publish(&self, thread: usize, stats: &ThreadStats) {
        let Some(slot) = self.slots.get(thread) else {
            return;
        };
        let c = &stats.counters;
        slot.completed.store(c.completed, Relaxed);
        slot.errors
            .store(c.errors.lost_requests() + c.errors.status, Relaxed);
        slot.p99_us
            .store(stats.latency.value_at_quantile(0.99), Relaxed);
    }

    pub fn totals(&self) -> Totals {
        self.slots.iter().fold(Totals::default(), |t, s| Totals {
            completed: t.completed + s.completed.load(Relaxed),
            errors: t.errors + s.errors.load(Relaxed),
            p99_us: t.p99_us.max(s.p99_us.load(Relaxed)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_threads_and_bound_the_percentile() {
        let board = Board::new(2);
        let mut a = ThreadStats::default();
        a.counters.completed = 10;
        a.latency.record(100).unwrap();
        let mut b = ThreadStats::default();
        b.counters.completed = 5;
        b.counters.errors.timeout = 1;
        b.latency.record(900).unwrap();
        board.publish(0, &a);
        board.publish(1, &b);
        board.publish(7, &b); // no such thread: ignored
        let t = board.totals();
        assert_eq!((t.completed, t.errors), (15, 1));
        assert!((899..=901).contains(&t.p99_us), "{t:?}");
    }
}

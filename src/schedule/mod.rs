//! Intended send times: when each request *should* go out.
//!
//! Rate mode is an open model: one global plan of intended times for the
//! whole run, independent of how fast the server answers. With rate R and
//! T threads, thread j owns the times `t0 + (j + k·T)/R` for k = 0, 1, …,
//! so the threads interleave and the aggregate is exactly uniform at R for
//! any R and T (R < T included). Other arrival processes would only change
//! how these times are generated; nothing else in the engine looks inside.

use crate::clock::Nanos;

/// Highest rate (requests/s): one intended time every nanosecond, the
/// clock's resolution. Above it consecutive times would coincide.
pub const MAX_RATE: f64 = 1e9;

/// How a worker decides when to send.
#[derive(Clone, Debug)]
pub enum Plan {
    /// Throughput mode: every connection sends its next request as soon as
    /// the previous response is complete (wrk's closed loop).
    Closed,
    /// Rate mode: requests are due at the times of an arrival process.
    Paced(Arrivals),
}

/// A thread's share of the global schedule, consumed in order.
#[derive(Clone, Debug)]
pub struct Arrivals {
    t0: Nanos,
    /// Nanoseconds between this thread's consecutive sends (T/R).
    step: f64,
    /// This thread's offset into the interleaving (j/R), in nanoseconds.
    offset: f64,
    /// Index of the next intended time.
    k: u64,
}

impl Arrivals {
    /// Thread `thread` of `threads` sharing a constant total `rate` (req/s)
    /// that starts at `t0`.
    pub fn constant(t0: Nanos, rate: f64, thread: usize, threads: usize) -> Arrivals {
        assert!(rate > 0.0 && threads > 0 && thread < threads);
        let per_request = 1e9 / rate;
        Arrivals {
            t0,
            step: per_request * threads as f64,
            offset: per_request * thread as f64,
            k: 0,
        }
    }

    /// The next intended send time.
    #[inline]
    pub fn peek(&self) -> Nanos {
        self.at(self.k)
    }

    /// Intended time number `k`: never decreasing in `k`, exact to the
    /// nanosecond within the first 2^53 ns (104 days) of the run, and
    /// saturating at the end of time rather than wrapping (a rate of one
    /// request a century puts a second thread's first time past it).
    #[inline]
    fn at(&self, k: u64) -> Nanos {
        // f64 holds every whole nanosecond up to 2^53 exactly, and keeps
        // fractional steps from drifting; the cast saturates.
        let since_t0 = (self.offset + k as f64 * self.step).round() as Nanos;
        self.t0.saturating_add(since_t0)
    }

    /// Moves past the time `peek` returned.
    #[inline]
    pub fn advance(&mut self) {
        self.k += 1;
    }

    /// How many intended times were consumed so far.
    pub fn consumed(&self) -> u64 {
        self.k
    }

    /// Counts the intended times from the next one up to (not including)
    /// `end` that also lie at or after `from`, without consuming them.
    /// Exact for any rate and run length, in a few dozen steps.
    pub fn count_pending(&self, from: Nanos, end: Nanos) -> u64 {
        let first = self.first_at_or_after(self.k, from);
        let past = self.first_at_or_after(first, end);
        past - first
    }

    /// The smallest `k` at or after `lo` whose time is at or after `t`: a
    /// search that doubles its reach, then halves the gap, since times
    /// never decrease. At most 1G times a second (one per nanosecond) and
    /// a thread's step of at least 1 ns make 2^64 times reach past any `t`.
    fn first_at_or_after(&self, lo: u64, t: Nanos) -> u64 {
        if self.at(lo) >= t {
            return lo;
        }
        // Invariant: at(below) < t <= at(above).
        let (mut below, mut reach) = (lo, 1u64);
        let mut above = loop {
            let probe = below.saturating_add(reach);
            if probe == u64::MAX || self.at(probe) >= t {
                break probe;
            }
            below = probe;
            reach = reach.saturating_mul(2);
        };
        while above - below > 1 {
            let mid = below + (above - below) / 2;
            if self.at(mid) >= t {
                above = mid;
            } else {
                below = mid;
            }
        }
        above
    }

    /// Number of this thread's intended times in `[from, end)`.
    pub fn count_in(&self, from: Nanos, end: Nanos) -> u64 {
        Arrivals {
            k: 0,
            ..self.clone()
        }
        .count_pending(from, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(mut a: Arrivals, n: usize) -> Vec<Nanos> {
        (0..n)
            .map(|_| {
                let t = a.peek();
                a.advance();
                t
            })
            .collect()
    }

    #[test]
    fn threads_interleave_into_one_uniform_schedule() {
        let rate = 1000.0;
        let mut all: Vec<Nanos> = (0..3)
            .flat_map(|j| times(Arrivals::constant(0, rate, j, 3), 100))
            .collect();
        all.sort_unstable();
        for (i, t) in all.iter().enumerate() {
            assert_eq!(*t, i as u64 * 1_000_000, "request {i}");
        }
    }

    #[test]
    fn rate_below_thread_count_still_interleaves() {
        // 0.5 req/s over 4 threads: one request every 2 s overall.
        let mut all: Vec<Nanos> = (0..4)
            .flat_map(|j| times(Arrivals::constant(10, 0.5, j, 4), 3))
            .collect();
        all.sort_unstable();
        let expect: Vec<Nanos> = (0..12).map(|i| 10 + i * 2_000_000_000).collect();
        assert_eq!(all, expect);
    }

    #[test]
    fn fractional_intervals_do_not_drift() {
        // 3 req/s: 333,333,333.3 ns apart; after 3 million requests the
        // millionth second is hit exactly.
        let mut a = Arrivals::constant(0, 3.0, 0, 1);
        a.k = 3_000_000;
        assert_eq!(a.peek(), 1_000_000 * 1_000_000_000);
    }

    #[test]
    fn counts_times_in_a_window() {
        let a = Arrivals::constant(0, 100.0, 1, 2); // 10 ms, 30 ms, 50 ms, ...
        assert_eq!(a.count_in(0, 1_000_000_000), 50);
        assert_eq!(a.count_in(20_000_000, 60_000_000), 2);
        let mut b = a.clone();
        b.advance();
        assert_eq!(b.count_pending(0, 60_000_000), 2);
    }

    /// Counting by walking every time took seconds at -R 1G and never
    /// ended where the times stopped advancing: a run stuck at its end.
    #[test]
    fn counts_are_exact_at_the_extremes_of_rate() {
        let day = 24 * 3600 * 1_000_000_000u64;
        let year = 365 * day;
        // The highest rate over a day: 8.6e13 times, counted at once.
        let a = Arrivals::constant(5, MAX_RATE, 0, 1);
        assert_eq!(a.count_in(5, 5 + day), day);
        // Over a year the times' indices pass 2^53, where f64 places
        // them to a few nanoseconds: the count is off by as little.
        let n = a.count_in(5, 5 + year);
        assert!(n.abs_diff(year) < 8, "{n}");
        // Two threads share it: each has every other nanosecond.
        let b = Arrivals::constant(0, MAX_RATE, 1, 2);
        assert_eq!(b.count_in(0, 1_000_001), 500_000);
        // A rate so low that only thread 0's first time is in the run; the
        // others' lie past the end of time and saturate there.
        let slow: Vec<u64> = (0..3)
            .map(|j| Arrivals::constant(7, 1e-30, j, 3).count_in(0, year))
            .collect();
        assert_eq!(slow, [1, 0, 0]);
        assert_eq!(Arrivals::constant(7, 1e-30, 2, 3).peek(), Nanos::MAX);
    }

    #[test]
    fn counting_agrees_with_walking() {
        for (rate, threads) in [(3.0, 1), (1000.0, 3), (7.5e6, 2), (0.7, 4)] {
            for j in 0..threads {
                let mut a = Arrivals::constant(11, rate, j, threads);
                for _ in 0..5 {
                    a.advance();
                }
                let (from, end) = (400_000_000, 2_300_000_000);
                let mut walk = a.clone();
                let mut n = 0;
                while walk.peek() < end {
                    n += u64::from(walk.peek() >= from);
                    walk.advance();
                }
                assert_eq!(a.count_pending(from, end), n, "{rate}/s, thread {j}");
            }
        }
    }
}

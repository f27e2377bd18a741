//! Intended send times: when each request *should* go out.
//!
//! Rate mode is an open model: one global plan of intended times for the
//! whole run, independent of how fast the server answers. With rate R and
//! T threads, thread j owns the times `t0 + (j + k·T)/R` for k = 0, 1, …,
//! so the threads interleave and the aggregate is exactly uniform at R for
//! any R and T (R < T included). Other arrival processes would only change
//! how these times are generated; nothing else in the engine looks inside.

use crate::clock::Nanos;

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
        // f64 keeps sub-nanosecond precision for runs far longer than a day.
        self.t0 + (self.offset + self.k as f64 * self.step).round() as Nanos
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
    pub fn count_pending(&self, from: Nanos, end: Nanos) -> u64 {
        let mut probe = self.clone();
        // Skip the part before `from` arithmetically, then walk: the walk is
        // bounded by the number of requests due in the window.
        let mut n = 0;
        while probe.peek() < from {
            probe.advance();
        }
        while probe.peek() < end {
            n += 1;
            probe.advance();
        }
        n
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
}

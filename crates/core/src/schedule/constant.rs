//! The constant rate of `-R`: request k of the run is due k/R seconds
//! after the start.

use super::{Arrivals, Cursor};
use crate::clock::Nanos;

/// Highest rate (requests/s): one intended time every nanosecond, the
/// clock's resolution. Above it consecutive times would coincide.
pub const MAX_RATE: f64 = 1e9;

/// `rate` requests per second, evenly spaced, from the start of the run.
#[derive(Clone, Debug)]
pub struct ConstantRate {
    rate: f64,
    /// Nanoseconds between consecutive requests (1/R).
    per_request: f64,
}

impl ConstantRate {
    /// A total `rate` in requests per second, above 0 and at most
    /// [`MAX_RATE`] (the command line checks it, with a message).
    pub fn new(rate: f64) -> ConstantRate {
        assert!(rate > 0.0 && rate <= MAX_RATE, "rate {rate} out of range");
        ConstantRate {
            rate,
            per_request: 1e9 / rate,
        }
    }
}

impl Arrivals for ConstantRate {
    fn cursor(&self) -> Box<dyn Cursor> {
        Box::new(self.clone())
    }

    fn rate(&self) -> f64 {
        self.rate
    }
}

/// Stateless: every time has a closed form.
impl Cursor for ConstantRate {
    /// Exact to the nanosecond within the first 2^53 ns (104 days) of the
    /// run: f64 holds every whole number up to 2^53 exactly, and one
    /// product keeps fractional intervals from drifting. The cast
    /// saturates: a rate of one request a century puts the second request
    /// past the end of time, not back at its start.
    #[inline]
    fn time_of(&mut self, k: u64) -> Nanos {
        (k as f64 * self.per_request).round() as Nanos
    }

    /// In closed form: the estimate `t / (1/R)` is off by at most a step
    /// or two of rounding, mended by looking at its neighbours. The search
    /// it replaces takes about a hundred probes, and a run that falls
    /// behind asks on every event. Past 2^52 requests, where a step of one
    /// request may not move the rounded time, it searches after all.
    fn index_before(&mut self, t: Nanos) -> u64 {
        let estimate = (t as f64 / self.per_request).floor();
        if estimate >= (1u64 << 52) as f64 {
            return super::first_at_or_after(|k| self.time_of(k), 0, t);
        }
        let mut k = estimate as u64;
        while k > 0 && self.time_of(k - 1) >= t {
            k -= 1;
        }
        while self.time_of(k) < t {
            k += 1;
        }
        k
    }

    fn fork(&self) -> Box<dyn Cursor> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractional_intervals_do_not_drift() {
        // 3 req/s: 333,333,333.3 ns apart; after 3 million requests the
        // millionth second is hit exactly.
        let mut a = ConstantRate::new(3.0);
        assert_eq!(a.time_of(3_000_000), 1_000_000 * 1_000_000_000);
    }

    #[test]
    fn the_closed_form_count_is_the_searched_one() {
        for rate in [3.0, 7.5e6, 90_000.0, 1e9, 0.5, 123_456.789] {
            let mut a = ConstantRate::new(rate);
            let mut b = a.clone();
            let mut t: Nanos = 0;
            for step in 0..2000u64 {
                let want = super::super::first_at_or_after(|k| b.time_of(k), 0, t);
                assert_eq!(a.index_before(t), want, "rate {rate}, t {t}");
                t = t.saturating_add(1 + step * step * 7919 % 1_000_003);
            }
            for t in [Nanos::MAX / 2, Nanos::MAX - 1, Nanos::MAX] {
                let want = super::super::first_at_or_after(|k| b.time_of(k), 0, t);
                assert_eq!(a.index_before(t), want, "rate {rate}, t {t}");
            }
        }
    }

    #[test]
    fn times_never_decrease_and_saturate() {
        let mut a = ConstantRate::new(7.5e6);
        let times: Vec<Nanos> = (0..1000).map(|k| a.time_of(k)).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(ConstantRate::new(1e-30).time_of(1), Nanos::MAX);
    }
}

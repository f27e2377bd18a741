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
    fn times_never_decrease_and_saturate() {
        let mut a = ConstantRate::new(7.5e6);
        let times: Vec<Nanos> = (0..1000).map(|k| a.time_of(k)).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(ConstantRate::new(1e-30).time_of(1), Nanos::MAX);
    }
}

//! The intended rate over time: `-R` (one rate for ever) or a
//! `--rate-profile` of holds and linear ramps, and its integral.
//!
//! The integral Λ(t) is the number of requests due by `t` on average. An
//! arrival process turns it into times: request k is due at the first
//! instant the integral passes its *epoch* (k itself for an even
//! schedule, the k-th point of a unit-rate Poisson process for random
//! arrivals). Inverting Λ is done in closed form, phase by phase: a hold
//! is linear in time, a ramp quadratic, so no time is ever approximated
//! by stepping.

use crate::clock::Nanos;

/// One phase of a profile: a hold (`from == to`) or a linear ramp.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// How the user wrote it (`1k:30s`, `1k-5k:60s`), for the reports.
    pub label: String,
    /// Nanoseconds; [`Nanos::MAX`] for the one open-ended phase of `-R`.
    pub length: Nanos,
    /// Requests per second at the phase's start and at its end.
    pub from: f64,
    pub to: f64,
}

impl Phase {
    /// Requests due over the whole phase on average (infinite for `-R`).
    fn total(&self) -> f64 {
        if self.length == Nanos::MAX {
            return f64::INFINITY;
        }
        (self.from + self.to) / 2.0 * self.length as f64 / 1e9
    }
}

/// A piecewise-linear rate, from the run's start.
#[derive(Clone, Debug)]
pub struct Profile {
    phases: Vec<Phase>,
    /// Per phase: its start (ns from the run's start), the integral at
    /// that start, and nanoseconds per request at its start rate.
    starts: Vec<Nanos>,
    before: Vec<f64>,
    per_request: Vec<f64>,
    total: f64,
}

impl Profile {
    /// A constant `rate` for ever: what `-R` asks for.
    pub fn constant(rate: f64) -> Profile {
        Profile::new(vec![Phase {
            label: "-R".to_string(),
            length: Nanos::MAX,
            from: rate,
            to: rate,
        }])
    }

    /// Phases one after the other. The command line checks them (rates
    /// finite and not negative, lengths above zero, some request due) with
    /// messages; here they are only asserted.
    pub fn new(phases: Vec<Phase>) -> Profile {
        assert!(!phases.is_empty(), "a profile has a phase");
        let (mut starts, mut before, mut per_request) = (Vec::new(), Vec::new(), Vec::new());
        let (mut at, mut sum) = (0u64, 0.0f64);
        for p in &phases {
            assert!(p.from >= 0.0 && p.to >= 0.0 && p.length > 0, "{p:?}");
            starts.push(at);
            before.push(sum);
            per_request.push(1e9 / p.from);
            at = at.saturating_add(p.length);
            sum += p.total();
        }
        Profile {
            phases,
            starts,
            before,
            per_request,
            total: sum,
        }
    }

    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }

    /// Start of each phase, in nanoseconds from the run's start.
    pub fn starts(&self) -> &[Nanos] {
        &self.starts
    }

    /// The profile's length, `None` for `-R`'s open-ended rate.
    pub fn length(&self) -> Option<Nanos> {
        let last = self.phases.len() - 1;
        (self.phases[last].length != Nanos::MAX)
            .then(|| self.starts[last].saturating_add(self.phases[last].length))
    }

    /// Whether this is the single open-ended rate of `-R`.
    pub fn is_constant(&self) -> bool {
        self.length().is_none()
    }

    /// The mean rate: `-R` itself, or the requests of the whole profile
    /// over its length.
    pub fn mean_rate(&self) -> f64 {
        match self.length() {
            None => self.phases[0].from,
            Some(len) => self.total / (len as f64 / 1e9),
        }
    }

    /// The rate at `t` (ns from the start), 0 past the end.
    pub fn rate_at(&self, t: Nanos) -> f64 {
        let i = self.phase_at(t);
        let p = &self.phases[i];
        let tau = t - self.starts[i];
        if tau >= p.length {
            return 0.0;
        }
        p.from + (p.to - p.from) * (tau as f64 / p.length as f64)
    }

    /// The phase that holds `t`: the last one starting at or before it.
    pub fn phase_at(&self, t: Nanos) -> usize {
        self.starts.partition_point(|&s| s <= t).max(1) - 1
    }

    /// Λ(t): requests due by `t` (ns from the start) on average.
    pub fn integral(&self, t: Nanos) -> f64 {
        let i = self.phase_at(t);
        let p = &self.phases[i];
        let tau = (t - self.starts[i]).min(p.length) as f64;
        let from = p.from / 1e9;
        let slope = self.slope(i);
        self.before[i] + from * tau + slope * tau * tau / 2.0
    }

    /// The rate's change per nanosecond, per nanosecond, in phase `i`.
    fn slope(&self, i: usize) -> f64 {
        let p = &self.phases[i];
        if p.from == p.to {
            0.0
        } else {
            (p.to - p.from) / 1e9 / p.length as f64
        }
    }

    /// The first time at which the integral passes `x`: when the request
    /// whose epoch is `x` is due. [`Nanos::MAX`] when it never does (past
    /// the profile's end). Never decreases as `x` grows.
    pub fn time_at(&self, x: f64) -> Nanos {
        if x.is_nan() || x < 0.0 {
            return 0;
        }
        let i = self.before.partition_point(|&b| b <= x).max(1) - 1;
        let p = &self.phases[i];
        let y = x - self.before[i];
        if y >= p.total() {
            return Nanos::MAX;
        }
        let slope = self.slope(i);
        let tau = if y <= 0.0 {
            0.0
        } else if slope == 0.0 {
            // One product, as a constant rate has always computed it:
            // exact to the nanosecond for 2^53 ns, without drift.
            y * self.per_request[i]
        } else {
            // The root of from·τ + slope·τ²/2 = y, in the form that stays
            // accurate when the slope is small or the rate starts at 0.
            let from = p.from / 1e9;
            2.0 * y / (from + (from * from + 2.0 * slope * y).max(0.0).sqrt())
        };
        // The cast saturates: a time past the end of time stays there.
        let tau = (tau.round() as Nanos).min(p.length);
        self.starts[i].saturating_add(tau)
    }

    /// Requests due over the whole profile on average (infinite for `-R`).
    pub fn total(&self) -> f64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Nanos = 1_000_000_000;

    fn phase(from: f64, to: f64, secs: u64) -> Phase {
        Phase {
            label: format!("{from}-{to}:{secs}s"),
            length: secs * SEC,
            from,
            to,
        }
    }

    #[test]
    fn a_constant_rate_is_one_request_every_interval() {
        let p = Profile::constant(1000.0);
        assert_eq!(p.time_at(0.0), 0);
        assert_eq!(p.time_at(1.0), 1_000_000);
        assert_eq!(p.time_at(2500.0), 2_500_000_000);
        assert_eq!(p.integral(3 * SEC), 3000.0);
        assert_eq!(p.length(), None);
        assert_eq!(p.mean_rate(), 1000.0);
    }

    #[test]
    fn holds_and_ramps_integrate_exactly() {
        // 1k for 30 s, 1k to 5k over 60 s, 5k for 30 s.
        let p = Profile::new(vec![
            phase(1000.0, 1000.0, 30),
            phase(1000.0, 5000.0, 60),
            phase(5000.0, 5000.0, 30),
        ]);
        assert_eq!(p.length(), Some(120 * SEC));
        assert_eq!(p.total(), 30_000.0 + 180_000.0 + 150_000.0);
        assert_eq!(p.integral(30 * SEC), 30_000.0);
        // Halfway up the ramp: 30 s at an average of 2k.
        assert!((p.integral(60 * SEC) - 90_000.0).abs() < 1e-6);
        assert_eq!(p.rate_at(60 * SEC), 3000.0);
        assert_eq!(p.rate_at(200 * SEC), 0.0);
        // Inverse: the time at which the integral reaches x.
        for x in [
            0.5, 29_999.0, 30_000.0, 45_000.5, 90_000.0, 209_999.0, 359_999.0,
        ] {
            let t = p.time_at(x);
            assert!((p.integral(t) - x).abs() < 0.01, "{x}: {t}");
        }
        assert_eq!(p.time_at(360_000.0), Nanos::MAX);
    }

    #[test]
    fn a_ramp_from_zero_and_a_pause() {
        let p = Profile::new(vec![
            phase(0.0, 1000.0, 10),
            phase(0.0, 0.0, 5),
            phase(100.0, 100.0, 10),
        ]);
        // τ²·1000/20 = x: the 50th request is due at 1 s.
        assert_eq!(p.time_at(50.0), SEC);
        // The first request after the ramp waits for the pause to end.
        assert_eq!(p.time_at(5000.0), 15 * SEC);
        assert_eq!(p.time_at(5001.0), 15 * SEC + SEC / 100);
    }

    #[test]
    fn times_never_decrease() {
        let p = Profile::new(vec![phase(3.0, 7000.0, 20), phase(7000.0, 10.0, 20)]);
        let mut last = 0;
        let total = p.total() as u64;
        for k in (0..total).step_by(7) {
            let t = p.time_at(k as f64);
            assert!(t >= last, "{k}");
            last = t;
        }
    }
}

//! The arrival process the command line builds: a rate over time
//! ([`Profile`]) and how requests are spread under it ([`Spacing`]).
//!
//! Request k is due when the profile's integral passes its epoch: k itself
//! when requests are spread evenly (a constant gap at a constant rate), or
//! the k-th point of a unit-rate Poisson process. Under a profile the
//! second is a non-homogeneous Poisson process by the time change Λ⁻¹, so
//! ramps and holds, evenly or at random, are one mechanism.

use std::sync::Arc;

use super::poisson::{PointCursor, PoissonPoints};
use super::profile::Profile;
use super::{first_at_or_after, Arrivals, Cursor};
use crate::clock::Nanos;

/// How requests are spread under the rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spacing {
    /// Evenly: at a constant rate, one request every 1/R.
    Even,
    /// At random: exponential gaps drawn from `seed` (a Poisson process),
    /// the same for every thread, process and machine given the seed.
    Poisson { seed: u64 },
}

/// The arrival process by name (`--arrival`, the JSON document's
/// `arrival`), without its seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// One request every 1/R.
    Constant,
    /// Exponential gaps (a Poisson process), drawn from a seed.
    Poisson,
}

impl Spacing {
    /// The arrival process this spacing draws.
    pub fn arrival(self) -> Arrival {
        match self {
            Spacing::Even => Arrival::Constant,
            Spacing::Poisson { .. } => Arrival::Poisson,
        }
    }

    /// The seed that repeats random arrivals.
    pub fn seed(self) -> Option<u64> {
        match self {
            Spacing::Even => None,
            Spacing::Poisson { seed } => Some(seed),
        }
    }
}

/// A profile and a spacing: the schedule of a run.
#[derive(Debug)]
pub struct Process {
    profile: Arc<Profile>,
    spacing: Spacing,
    epochs: Epochs,
}

#[derive(Debug)]
enum Epochs {
    Even,
    Poisson(Arc<PoissonPoints>),
}

impl Process {
    /// The schedule of a run of `length` (ns): nothing after it is ever
    /// due, so random points are drawn only that far.
    pub fn new(profile: Profile, spacing: Spacing, length: Nanos) -> Process {
        let end = profile.length().map_or(length, |l| l.min(length));
        let epochs = match spacing {
            Spacing::Even => Epochs::Even,
            Spacing::Poisson { seed } => {
                Epochs::Poisson(Arc::new(PoissonPoints::new(seed, profile.integral(end))))
            }
        };
        Process {
            profile: Arc::new(profile),
            spacing,
            epochs,
        }
    }
}

impl Arrivals for Process {
    fn cursor(&self) -> Box<dyn Cursor> {
        let epochs = match &self.epochs {
            Epochs::Even => EpochCursor::Even,
            Epochs::Poisson(points) => EpochCursor::Poisson(PointCursor::new(points.clone())),
        };
        Box::new(ProcessCursor {
            profile: self.profile.clone(),
            epochs,
        })
    }

    fn rate(&self) -> f64 {
        self.profile.mean_rate()
    }

    fn spacing(&self) -> Spacing {
        self.spacing
    }

    fn profile(&self) -> Option<&Profile> {
        Some(&self.profile)
    }
}

#[derive(Clone, Debug)]
enum EpochCursor {
    Even,
    Poisson(PointCursor),
}

impl EpochCursor {
    fn epoch(&mut self, k: u64) -> f64 {
        match self {
            EpochCursor::Even => k as f64,
            EpochCursor::Poisson(points) => points.point(k),
        }
    }

    /// How many epochs lie below `x`, about: the search that follows
    /// corrects for rounding either way.
    fn count_below(&mut self, x: f64) -> u64 {
        match self {
            // The cast saturates, and NaN (never given) becomes 0.
            EpochCursor::Even => x.ceil().max(0.0) as u64,
            EpochCursor::Poisson(points) => points.count_below(x),
        }
    }
}

#[derive(Clone, Debug)]
struct ProcessCursor {
    profile: Arc<Profile>,
    epochs: EpochCursor,
}

impl Cursor for ProcessCursor {
    fn time_of(&mut self, k: u64) -> Nanos {
        self.profile.time_at(self.epochs.epoch(k))
    }

    /// From the epoch the integral reaches by `t`, then a search of a step
    /// or two that makes the count agree exactly with [`Cursor::time_of`].
    fn index_before(&mut self, t: Nanos) -> u64 {
        let guess = self.epochs.count_below(self.profile.integral(t));
        let lo = guess.saturating_sub(2);
        if lo > 0 && self.time_of(lo) >= t {
            return first_at_or_after(|k| self.time_of(k), 0, t);
        }
        first_at_or_after(|k| self.time_of(k), lo, t)
    }

    fn fork(&self) -> Box<dyn Cursor> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{Phase, Share};

    const SEC: Nanos = 1_000_000_000;

    fn ramp() -> Profile {
        Profile::new(vec![
            Phase {
                label: "1k:2s".into(),
                length: 2 * SEC,
                from: 1000.0,
                to: 1000.0,
            },
            Phase {
                label: "1k-5k:4s".into(),
                length: 4 * SEC,
                from: 1000.0,
                to: 5000.0,
            },
        ])
    }

    fn all_times(p: &Process, end: Nanos) -> Vec<Nanos> {
        let mut c = p.cursor();
        (0..)
            .map(|k| c.time_of(k))
            .take_while(|&t| t < end)
            .collect()
    }

    #[test]
    fn the_count_of_intended_requests_is_the_integral() {
        let p = Process::new(ramp(), Spacing::Even, 6 * SEC);
        let times = all_times(&p, Nanos::MAX);
        // 2k + 12k requests; the last is due just before the end.
        assert!(
            (times.len() as f64 - 14_000.0).abs() <= 1.0,
            "{}",
            times.len()
        );
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        // Ramping up: the gaps shrink.
        let gap = |i: usize| times[i + 1] - times[i];
        assert!(gap(3000) > gap(8000) && gap(8000) > gap(13_000));
    }

    #[test]
    fn a_poisson_ramp_follows_the_profile() {
        let p = Process::new(ramp(), Spacing::Poisson { seed: 3 }, 6 * SEC);
        let times = all_times(&p, Nanos::MAX);
        let n = times.len() as f64;
        // Poisson: the count is 14k give or take a few sqrt(14k) = 118.
        assert!((n - 14_000.0).abs() < 600.0, "{n}");
        let first_2s = times.iter().filter(|&&t| t < 2 * SEC).count() as f64;
        let last_s = times.iter().filter(|&&t| t >= 5 * SEC).count() as f64;
        assert!((first_2s - 2000.0).abs() < 250.0, "{first_2s}");
        assert!((last_s - 4500.0).abs() < 350.0, "{last_s}");
    }

    #[test]
    fn counting_agrees_with_the_times() {
        for spacing in [Spacing::Even, Spacing::Poisson { seed: 11 }] {
            let p = Process::new(ramp(), spacing, 6 * SEC);
            let times = all_times(&p, Nanos::MAX);
            let mut c = p.cursor();
            for t in [0, 1, 999_999, SEC, 2 * SEC + 7, 5 * SEC, 6 * SEC, 7 * SEC] {
                let expect = times.iter().filter(|&&x| x < t).count() as u64;
                assert_eq!(c.index_before(t), expect, "{spacing:?} at {t}");
            }
            // Lanes split the same sequence and count it exactly.
            for lanes in [1, 3] {
                for lane in 0..lanes {
                    let mut s = Share::new(&p, 0, lane, lanes);
                    let own = times
                        .iter()
                        .enumerate()
                        .filter(|(k, &t)| k % lanes == lane && (SEC..4 * SEC).contains(&t))
                        .count() as u64;
                    assert_eq!(s.count_in(SEC, 4 * SEC), own, "{spacing:?} {lane}/{lanes}");
                }
            }
        }
    }

    #[test]
    fn poisson_at_a_constant_rate_has_exponential_gaps() {
        let p = Process::new(
            Profile::constant(10_000.0),
            Spacing::Poisson { seed: 5 },
            20 * SEC,
        );
        let times = all_times(&p, 20 * SEC);
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((mean / 100_000.0 - 1.0).abs() < 0.02, "mean gap {mean} ns");
        assert!((sd / mean - 1.0).abs() < 0.03, "cv {}", sd / mean);
        // The same seed, the same schedule; even spacing is constant.
        let again = Process::new(
            Profile::constant(10_000.0),
            Spacing::Poisson { seed: 5 },
            20 * SEC,
        );
        assert_eq!(
            all_times(&again, SEC),
            times[..times.partition_point(|&t| t < SEC)]
        );
        let even = Process::new(Profile::constant(10_000.0), Spacing::Even, SEC);
        let t = all_times(&even, SEC);
        assert!(t.windows(2).all(|w| w[1] - w[0] == 100_000));
    }
}

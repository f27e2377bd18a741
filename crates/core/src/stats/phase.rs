//! Figures per phase of a rate profile (`--rate-profile`): a request
//! belongs to the phase its intended time falls in, so each phase's
//! latency is what the load of that phase met, wherever the response
//! came.

use hdrhistogram::Histogram;

use super::{add_histogram, conservative, new_histogram};
use crate::clock::Nanos;

/// Most phases broken out; a longer profile (a rate file of many rows) is
/// reported over its intervals instead, since each phase keeps two
/// histograms per thread.
pub const MAX_PHASES: usize = 32;

/// One phase's share of a thread's (or, merged, the run's) requests.
#[derive(Clone, Debug)]
pub struct PhaseStats {
    /// As the profile wrote it; given after the run, with the phase's
    /// place in the measured window (from its start).
    pub label: String,
    pub start: std::time::Duration,
    pub length: std::time::Duration,
    /// Requests intended in the phase (and in the measured window).
    pub due: u64,
    /// Responses received, error statuses included.
    pub completed: u64,
    /// Error statuses, and requests lost to read, write and timeout errors.
    pub errors: u64,
    /// Corrected latency of the completed requests.
    pub latency: Histogram<u64>,
    /// Lower bounds of the unfinished ones (docs/MEASUREMENT.md, §6).
    pub unfinished: Histogram<u64>,
}

impl Default for PhaseStats {
    fn default() -> Self {
        PhaseStats {
            label: String::new(),
            start: std::time::Duration::ZERO,
            length: std::time::Duration::ZERO,
            due: 0,
            completed: 0,
            errors: 0,
            latency: new_histogram(),
            unfinished: new_histogram(),
        }
    }
}

impl PhaseStats {
    pub fn add(&mut self, other: &PhaseStats) {
        self.due += other.due;
        self.completed += other.completed;
        self.errors += other.errors;
        add_histogram(&mut self.latency, &other.latency);
        add_histogram(&mut self.unfinished, &other.unfinished);
    }

    /// The phase's conservative distribution.
    pub fn with_unfinished(&self) -> std::borrow::Cow<'_, Histogram<u64>> {
        conservative(&self.latency, &self.unfinished)
    }
}

/// Where the phases start, on the run's clock: which phase a time is in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    starts: Vec<Nanos>,
}

impl Phases {
    /// Phases starting at `offsets` (ns from `t0`, the first at 0); none
    /// when there are more than [`MAX_PHASES`] or just one.
    pub fn new(t0: Nanos, offsets: &[Nanos]) -> Phases {
        if offsets.len() < 2 || offsets.len() > MAX_PHASES {
            return Phases::default();
        }
        Phases {
            starts: offsets.iter().map(|o| t0.saturating_add(*o)).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The phase `t` falls in (the first for times before it).
    #[inline]
    pub fn of(&self, t: Nanos) -> usize {
        self.starts.partition_point(|&s| s <= t).max(1) - 1
    }

    /// Phase `i`'s span `[start, next start)`, the last one open-ended.
    pub fn span(&self, i: usize) -> (Nanos, Nanos) {
        let end = self.starts.get(i + 1).copied().unwrap_or(Nanos::MAX);
        (self.starts[i], end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_fall_in_their_phase() {
        let p = Phases::new(100, &[0, 10, 30]);
        assert_eq!(
            (p.of(0), p.of(109), p.of(110), p.of(129), p.of(130)),
            (0, 0, 1, 1, 2)
        );
        assert_eq!(p.span(1), (110, 130));
        assert_eq!(p.span(2), (130, Nanos::MAX));
        assert!(Phases::new(0, &[0]).is_empty());
        assert!(Phases::new(0, &vec![0; MAX_PHASES + 1]).is_empty());
    }
}

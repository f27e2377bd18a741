//! A thread's completions over time, in memory that does not grow with the
//! run: the counts behind `--timeseries`, `--thread-timeseries` and the
//! JSON document's per-thread series, and the 100 ms rate samples behind
//! wrk's `Req/Sec` line; and the rows `--thread-timeseries` prints of
//! them as the run goes.
//!
//! Both are touched once per completion: an index computation and an
//! increment, with an allocation at most once per step.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::{HIST_SIGFIG, RATE_SAMPLE, SERIES_STEP};

/// The most steps a coarsening series keeps: 128 KiB of counts. When a
/// completion falls past the last, neighbouring steps are added up in pairs
/// and the step doubles, so the counts stay exact and their resolution
/// follows the run's length (10 ms for the first 2.7 minutes, about 5 s
/// over a day).
const MAX_STEPS: usize = 1 << 14;

/// Completed requests of one thread in one interval of the measured window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub thread: usize,
    /// The interval's position, counting from 0 at the window's start.
    pub interval: usize,
    pub completed: u64,
}

/// Completions per step of time from the window's start.
#[derive(Clone, Debug)]
pub struct Completions {
    step_ns: u64,
    counts: Vec<u64>,
    /// The step never changes: an output asked for counts at it, and the
    /// counts are then as many as that output has rows.
    fixed: bool,
}

impl Completions {
    /// Counts at `every` when an output needs them at exactly that step
    /// (a whole number of [`SERIES_STEP`]s); otherwise from
    /// [`SERIES_STEP`], coarsening as the run grows.
    pub fn new(every: Option<Duration>) -> Completions {
        let step = every.unwrap_or(SERIES_STEP);
        Completions {
            step_ns: (step.as_nanos() as u64).max(1),
            counts: Vec::new(),
            fixed: every.is_some(),
        }
    }

    /// Counts given per [`SERIES_STEP`], for tests.
    #[cfg(test)]
    pub(crate) fn of_steps(counts: &[u32]) -> Completions {
        Completions {
            step_ns: SERIES_STEP.as_nanos() as u64,
            counts: counts.iter().map(|&c| u64::from(c)).collect(),
            fixed: true,
        }
    }

    /// Counts one completion at `offset_ns` from the window's start.
    #[inline]
    pub fn count(&mut self, offset_ns: u64) {
        let mut slot = (offset_ns / self.step_ns) as usize;
        while !self.fixed && slot >= MAX_STEPS {
            self.coarsen();
            slot = (offset_ns / self.step_ns) as usize;
        }
        if slot >= self.counts.len() {
            // Grows once per step at most, not per request.
            self.counts.resize(slot + 1, 0);
        }
        self.counts[slot] += 1;
    }

    /// Adds neighbouring steps in pairs and doubles the step.
    fn coarsen(&mut self) {
        let pairs = self.counts.len().div_ceil(2);
        for i in 0..pairs {
            let b = self.counts.get(2 * i + 1).copied().unwrap_or(0);
            self.counts[i] = self.counts[2 * i] + b;
        }
        self.counts.truncate(pairs);
        self.step_ns *= 2;
    }

    /// The length of a step.
    pub fn step(&self) -> Duration {
        Duration::from_nanos(self.step_ns)
    }

    /// Completions per step, from the window's start.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Completions in the `i`-th interval of length `step` from the
    /// window's start. `step` is a whole number of steps: callers ask for
    /// the step they fixed (see [`Completions::new`]).
    pub fn completions_in(&self, i: usize, step: Duration) -> u64 {
        debug_assert!(step.as_nanos() as u64 % self.step_ns == 0);
        let per = (step.as_nanos() as u64 / self.step_ns).max(1) as usize;
        let lo = (i * per).min(self.counts.len());
        let hi = ((i + 1) * per).min(self.counts.len());
        self.counts[lo..hi].iter().sum()
    }

    /// How many intervals of length `step` the counts span: all of
    /// `window`, and any completion filed after it (a response read as a
    /// stop request arrived).
    pub fn intervals_spanned(&self, step: Duration, window: Duration) -> usize {
        let in_window = window.as_nanos().div_ceil(step.as_nanos().max(1)) as usize;
        let per = (step.as_nanos() as u64 / self.step_ns).max(1) as usize;
        in_window.max(self.counts.len().div_ceil(per))
    }
}

impl Default for Completions {
    fn default() -> Self {
        Completions::new(None)
    }
}

/// wrk's `Req/Sec`: a thread's request rate over each [`RATE_SAMPLE`] of
/// the window, gathered into a histogram as each sample closes, so that
/// only the open sample is kept as a count.
#[derive(Clone, Debug)]
pub struct RateSamples {
    /// Samples below `open`, in requests per second.
    closed: Histogram<u64>,
    open: u64,
    open_count: u64,
}

impl RateSamples {
    /// Counts one completion at `offset_ns` from the window's start.
    /// Completions come in time order (the worker files each at a clock
    /// reading taken after the one before).
    #[inline]
    pub fn count(&mut self, offset_ns: u64) {
        let k = offset_ns / RATE_SAMPLE.as_nanos() as u64;
        if k > self.open {
            self.close_to(k);
        }
        self.open_count += 1;
    }

    /// Closes the open sample and every empty one before `k`.
    fn close_to(&mut self, k: u64) {
        let _ = self.closed.record(rate(self.open_count));
        let empty = k - self.open - 1;
        if empty > 0 {
            let _ = self.closed.record_n(0, empty);
        }
        self.open = k;
        self.open_count = 0;
    }

    /// Every whole sample of a window `window` long, in requests per
    /// second. A sample is closed when a later completion comes; one that
    /// closed after a stop cut the window short (a response read in that
    /// moment) stays among them: it is whole, and its count is real.
    pub fn samples(&self, window: Duration) -> Histogram<u64> {
        let whole = (window.as_nanos() / RATE_SAMPLE.as_nanos()) as u64;
        let mut out = self.closed.clone();
        if whole > self.open {
            let _ = out.record(rate(self.open_count));
            let empty = whole - self.open - 1;
            if empty > 0 {
                let _ = out.record_n(0, empty);
            }
        }
        out
    }
}

/// Requests per second of a sample that counted `n`.
fn rate(n: u64) -> u64 {
    (n as f64 / RATE_SAMPLE.as_secs_f64()).round() as u64
}

impl Default for RateSamples {
    fn default() -> Self {
        RateSamples {
            closed: Histogram::new(HIST_SIGFIG).expect("valid precision"),
            open: 0,
            open_count: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn rate_samples_cover_whole_samples_only() {
        let mut r = RateSamples::default();
        for i in 0..250 {
            r.count(i * MS);
        }
        let h = r.samples(Duration::from_millis(250));
        assert_eq!((h.len(), h.min(), h.max()), (2, 1000, 1000));
    }

    #[test]
    fn silent_samples_count_as_zero_before_and_after_the_last_completion() {
        let mut r = RateSamples::default();
        r.count(5 * MS);
        r.count(350 * MS);
        let h = r.samples(Duration::from_millis(600));
        // 10/s, then 0 (100-200), 0 (200-300), 10/s (300-400), 0, 0.
        assert_eq!(h.len(), 6);
        assert_eq!(h.count_at(0), 4);
        assert_eq!(h.count_at(10), 2);
    }

    #[test]
    fn a_fixed_series_counts_at_its_step() {
        let mut c = Completions::new(Some(Duration::from_millis(250)));
        for i in 0..1000 {
            c.count(i * MS);
        }
        assert_eq!(c.counts(), &[250, 250, 250, 250]);
        assert_eq!(c.completions_in(1, Duration::from_millis(500)), 500);
        assert_eq!(
            c.intervals_spanned(Duration::from_millis(250), Duration::from_secs(2)),
            8
        );
    }

    #[test]
    fn a_long_series_coarsens_with_exact_totals_in_bounded_memory() {
        let mut c = Completions::default();
        // 24 hours, a completion every 50 ms.
        let day = 24 * 3600 * 1000;
        let mut n = 0;
        for ms in (0..day).step_by(50) {
            c.count(ms * MS);
            n += 1;
        }
        assert!(c.counts().len() <= MAX_STEPS, "{}", c.counts().len());
        assert_eq!(c.counts().iter().sum::<u64>(), n);
        let step = c.step();
        assert_eq!(step.as_nanos() % SERIES_STEP.as_nanos(), 0);
        // Every step but the last holds step / 50 ms completions, give or
        // take the one a step's edge splits.
        let per = step.as_millis() as u64 / 50;
        let full = &c.counts()[..c.counts().len() - 1];
        assert!(full.iter().all(|&k| k == per || k == per + 1), "{per}");
    }
}

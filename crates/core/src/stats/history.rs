//! The run's intervals as the reports draw them over time (the JSON
//! document's series, the HTML charts, `metron report --csv`), kept in
//! memory that does not grow with the run.
//!
//! The main thread adds each interval once every thread has closed it.
//! Up to [`MAX_POINTS`] intervals are kept as they are; past that,
//! neighbouring points are added up in pairs and a point stands for twice
//! as long. Adding histograms loses nothing, so the points' counts and
//! distributions still add up to the run's totals exactly: a 24-hour run at
//! 1 s intervals ends with points of about a minute, in the memory a
//! 30-minute run needs. The interval log and `--csv`, written as the run
//! goes, keep every interval at its own length.

use std::time::Duration;

use hdrhistogram::serialization::Deserializer;

use super::interval::{self, EncodedInterval};
use super::IntervalStats;

/// The most points kept: each holds its histograms compressed, a few
/// hundred bytes, so well under a megabyte in all.
pub const MAX_POINTS: usize = 2048;

#[derive(Clone, Debug)]
pub struct History {
    /// The statistics' interval (`--interval`).
    base: Duration,
    /// How many of those each point stands for: a power of two.
    factor: u64,
    /// Point `i` covers intervals `[i·factor, (i+1)·factor)`.
    points: Vec<EncodedInterval>,
    /// The next interval expected.
    next: u64,
    /// Where points are added up, kept so that adding allocates no
    /// histograms (allocated on first use).
    scratch: Option<Box<IntervalStats>>,
}

impl History {
    pub fn new(base: Duration) -> History {
        History {
            base: base.max(Duration::from_nanos(1)),
            factor: 1,
            points: Vec::new(),
            next: 0,
            scratch: None,
        }
    }

    /// Adds the next interval of the window (they come in order, each
    /// once, gaps included as empty intervals).
    pub fn push(&mut self, iv: &IntervalStats) {
        debug_assert_eq!(iv.index, self.next, "intervals come in order");
        self.next = iv.index + 1;
        let at = iv.index / self.factor;
        let mut encoded = interval::encode_totals(iv);
        encoded.index = at;
        match self.points.last_mut() {
            Some(last) if last.index == at => {
                *last = sum(&mut self.scratch, at, [&*last, &encoded])
            }
            _ => self.points.push(encoded),
        }
        if self.points.len() > MAX_POINTS {
            self.coarsen();
        }
    }

    /// Adds neighbouring points in pairs: each then stands for twice as
    /// many intervals.
    fn coarsen(&mut self) {
        self.factor *= 2;
        let old = std::mem::take(&mut self.points);
        self.points = old
            .chunks(2)
            .enumerate()
            .map(|(i, pair)| sum(&mut self.scratch, i as u64, pair))
            .collect();
    }

    /// The time one point stands for.
    pub fn interval(&self) -> Duration {
        self.base * self.factor as u32
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The points in order, each decoded in turn; the last ends where the
    /// window does.
    pub fn points(&self, window: Duration) -> impl Iterator<Item = IntervalStats> + '_ {
        let length = self.interval();
        let mut de = Deserializer::new();
        self.points.iter().map(move |p| {
            let mut out = IntervalStats::empty(p.index, length);
            interval::add_into(&mut out, p, &mut de);
            let rest = window.saturating_sub(out.start);
            out.length = if rest.is_zero() {
                length
            } else {
                length.min(rest)
            };
            out
        })
    }
}

/// The intervals `parts` added up in `scratch`, as point `index`.
fn sum<'a>(
    scratch: &mut Option<Box<IntervalStats>>,
    index: u64,
    parts: impl IntoIterator<Item = &'a EncodedInterval>,
) -> EncodedInterval {
    let out = scratch.get_or_insert_with(|| Box::new(IntervalStats::empty(index, Duration::ZERO)));
    out.reuse(index, Duration::ZERO);
    let mut de = Deserializer::new();
    for p in parts {
        interval::add_into(out, p, &mut de);
    }
    interval::encode_totals(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(index: u64, latency_us: u64, n: u64) -> IntervalStats {
        let mut iv = IntervalStats::empty(index, Duration::from_millis(10));
        iv.completed = n;
        iv.errors = index % 2;
        iv.kinds.status = index % 2;
        iv.latency.record_n(latency_us, n).unwrap();
        iv.uncorrected.record_n(latency_us / 2, n).unwrap();
        iv
    }

    #[test]
    fn a_short_run_keeps_every_interval() {
        let mut h = History::new(Duration::from_millis(10));
        for i in 0..100 {
            h.push(&interval(i, 100 + i, 3));
        }
        assert_eq!(h.interval(), Duration::from_millis(10));
        let points: Vec<_> = h.points(Duration::from_millis(995)).collect();
        assert_eq!(points.len(), 100);
        assert_eq!(points[7].latency.max(), h_value(107));
        assert_eq!(points[7].start(), Duration::from_millis(70));
        assert_eq!(
            points[99].length,
            Duration::from_millis(5),
            "cut by the window"
        );
    }

    fn h_value(v: u64) -> u64 {
        crate::stats::new_histogram().highest_equivalent(v)
    }

    #[test]
    fn a_long_run_coarsens_into_bounded_points_with_exact_totals() {
        let mut h = History::new(Duration::from_millis(10));
        let n = 5 * MAX_POINTS as u64 + 3;
        for i in 0..n {
            h.push(&interval(i, 1 + i % 1000, 2));
        }
        assert!(h.len() <= MAX_POINTS, "{}", h.len());
        assert_eq!(h.interval(), Duration::from_millis(80));
        let window = Duration::from_millis(10 * n);
        let points: Vec<_> = h.points(window).collect();
        let completed: u64 = points.iter().map(|p| p.completed).sum();
        let errors: u64 = points.iter().map(|p| p.errors).sum();
        let status: u64 = points.iter().map(|p| p.kinds.status).sum();
        let latencies: u64 = points.iter().map(|p| p.latency.len()).sum();
        assert_eq!(completed, 2 * n);
        assert_eq!((errors, status), (n / 2, n / 2));
        assert_eq!(latencies, 2 * n);
        let time: Duration = points.iter().map(|p| p.length).sum();
        assert_eq!(time, window, "the points tile the window");
        // The first point holds intervals 0..8: latencies 1..=8 µs.
        assert_eq!((points[0].latency.min(), points[0].latency.max()), (1, 8));
    }
}

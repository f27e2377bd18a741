//! The ages of requests that never started: lower bounds of their latency,
//! recorded from a count of intended times rather than one by one.
//!
//! A request that was due but never sent has a corrected latency of at
//! least the run's end minus its intended time (docs/MEASUREMENT.md, §6).
//! A server that stops answering may leave millions of them, so they are
//! not walked: for each bucket of the histogram, the schedule counts the
//! intended times whose age falls in it, which takes as many steps as the
//! histogram has buckets up to the oldest age (about 30 000 for a day),
//! whatever the number of requests.

use hdrhistogram::Histogram;

use super::{HIST_HIGH_US, HIST_LOW_US};
use crate::clock::Nanos;

/// Records into `hist` the age at `end`, in microseconds, of every intended
/// time in `[from, end)` that `count` counts (`count(a, b)`: how many lie
/// in `[a, b)`). Ages above the histogram's range are recorded at its top.
/// None is younger than `min_age_us` (a caller counting only older times
/// says so, and the walk starts there). Returns how many were recorded,
/// and how many of those were clamped.
pub fn record_ages(
    hist: &mut Histogram<u64>,
    from: Nanos,
    end: Nanos,
    min_age_us: u64,
    mut count: impl FnMut(Nanos, Nanos) -> u64,
) -> (u64, u64) {
    let (mut total, mut saturated) = (0, 0);
    // Once every pending time is filed, the older buckets hold none: the
    // walk stops at the oldest pending age, not at the window's start.
    let pending = count(from, end);
    if pending == 0 {
        return (0, 0);
    }
    // Ages are whole microseconds, truncated (as every latency is): the
    // bucket [lo, hi) of ages holds the times t with
    // end - t in [lo * 1000, hi * 1000), that is t in (end - hi µs, end - lo µs].
    let mut lo_us: u64 = if min_age_us <= HIST_LOW_US {
        0
    } else {
        hist.lowest_equivalent(min_age_us.min(HIST_HIGH_US))
    };
    loop {
        let newest = (end + 1)
            .saturating_sub(lo_us.saturating_mul(1_000))
            .min(end);
        if newest <= from {
            return (total, saturated);
        }
        let top = lo_us > HIST_HIGH_US;
        // The bucket that holds the range's top ends with it, so that what
        // lies above is counted as clamped, as `record_clamped` counts it.
        let hi_us = if top {
            u64::MAX
        } else {
            hist.next_non_equivalent(lo_us.max(HIST_LOW_US))
                .min(HIST_HIGH_US + 1)
        };
        let oldest = (end + 1)
            .saturating_sub(hi_us.saturating_mul(1_000))
            .max(from);
        let n = count(oldest, newest);
        if n > 0 {
            let value = lo_us.clamp(HIST_LOW_US, HIST_HIGH_US);
            // In range by construction, so this cannot fail.
            let _ = hist.record_n(value, n);
            total += n;
            if top {
                saturated += n;
            }
        }
        if top || oldest <= from || total == pending {
            return (total, saturated);
        }
        lo_us = hi_us;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_histogram;

    const MS: Nanos = 1_000_000;

    /// Intended times every `gap` ns from 0, counted in closed form.
    fn every(gap: Nanos) -> impl Fn(Nanos, Nanos) -> u64 {
        move |a, b| b.div_ceil(gap).saturating_sub(a.div_ceil(gap))
    }

    /// The same ages recorded one request at a time.
    fn one_by_one(from: Nanos, end: Nanos, gap: Nanos) -> Histogram<u64> {
        let mut h = new_histogram();
        let mut t = from.div_ceil(gap) * gap;
        while t < end {
            h.record(((end - t) / 1_000).max(1)).unwrap();
            t += gap;
        }
        h
    }

    #[test]
    fn bucket_counts_equal_recording_each_request() {
        for (from, end, gap) in [
            (0, 3_000 * MS, MS),
            (7, 2_500 * MS + 333, 123_457),
            (1_000 * MS, 1_000 * MS + 999, 10),
            (0, 100 * MS, 1),
        ] {
            let mut h = new_histogram();
            let (n, saturated) = record_ages(&mut h, from, end, 0, every(gap));
            let expect = one_by_one(from, end, gap);
            assert_eq!(n, expect.len(), "{from} {end} {gap}");
            assert_eq!(saturated, 0);
            assert_eq!(h, expect, "{from} {end} {gap}");
        }
    }

    #[test]
    fn nothing_pending_records_nothing() {
        let mut h = new_histogram();
        assert_eq!(record_ages(&mut h, 5 * MS, 5 * MS, 0, every(MS)), (0, 0));
        assert_eq!(record_ages(&mut h, 0, 10 * MS, 0, |_, _| 0), (0, 0));
        assert!(h.is_empty());
    }

    #[test]
    fn ages_beyond_the_range_are_clamped_and_counted() {
        let day = HIST_HIGH_US * 1_000;
        let mut h = new_histogram();
        let hour = 3_600_000 * MS;
        // One request an hour over 26 hours: the two oldest are over a day.
        let (n, saturated) = record_ages(&mut h, 0, day + 2 * hour + 1, 0, every(hour));
        assert_eq!((n, saturated), (27, 2));
        assert!(h.equivalent(h.max(), HIST_HIGH_US));
    }
}

//! A histogram's summary figures computed the way the original's C
//! HdrHistogram computes them, so that the printed digits agree.
//!
//! The Rust crate has its own `mean`, `value_at_quantile` and `max`, but
//! they round differently: its mean sums fractions in floating point, its
//! quantile lookup rounds the target count up where the C library rounds
//! to nearest (90% of 7 values is the 6th value in C, the 7th in the
//! crate), and its `max` is the top of the highest bucket where the C
//! library reports the bottom. Each figure here says which C rule it
//! follows. An empty histogram gives zeros, never NaN.

use super::HIST_HIGH_US;
use hdrhistogram::Histogram;

/// The mean of the recorded values, each bucket counted at its median
/// equivalent value; the sum is kept as an integer, as in C.
pub fn mean(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let total: u128 = buckets(h)
        .map(|(v, n)| u128::from(h.median_equivalent(v)) * u128::from(n))
        .sum();
    total as f64 / h.len() as f64
}

/// The population standard deviation around [`mean`], over the same
/// median equivalent values.
pub fn stdev(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let mean = mean(h);
    let mut total = 0.0;
    for (v, n) in buckets(h) {
        let dev = h.median_equivalent(v) as f64 - mean;
        total += (dev * dev) * n as f64;
    }
    (total / h.len() as f64).sqrt()
}

/// The largest recorded value as the C library reports it: the lowest
/// value of the highest non-empty bucket (12 496, not 12 503, for 12 500).
pub fn max(h: &Histogram<u64>) -> u64 {
    if h.is_empty() {
        return 0;
    }
    h.lowest_equivalent(h.max())
}

/// The value at `percentile` (0–100): the highest equivalent value of the
/// first bucket whose cumulative count reaches the target count, which is
/// `percentile`% of the total rounded to nearest and at least 1; but never
/// above [`max`]. The C rules report a percentile at the top of its bucket
/// and the maximum at the bottom of the same bucket, so a percentile in the
/// highest bucket would print above the maximum (`p99.9 329.98ms, max
/// 329.73ms`); every report takes its percentiles from here, so none
/// contradicts the maximum beside it. (The spectrum lists bucket tops as
/// the C library prints them, and does not come through here.)
pub fn value_at_percentile(h: &Histogram<u64>, percentile: f64) -> u64 {
    let wanted = percentile.min(100.0) / 100.0 * h.len() as f64 + 0.5;
    // `as` truncates toward zero, like C's conversion to int64_t.
    let target = (wanted as u64).max(1);
    let mut seen = 0_u64;
    for (v, n) in buckets(h) {
        seen = seen.saturating_add(n);
        if seen >= target {
            return h.highest_equivalent(v).min(max(h));
        }
    }
    0
}

/// [`value_at_percentile`] of what was measured; `None` when nothing was,
/// so that no report prints an unmeasured figure as 0.
pub fn percentile(h: &Histogram<u64>, percentile: f64) -> Option<u64> {
    (!h.is_empty()).then(|| value_at_percentile(h, percentile))
}

/// [`max`] of what was measured; `None` when nothing was.
pub fn maximum(h: &Histogram<u64>) -> Option<u64> {
    (!h.is_empty()).then(|| max(h))
}

/// The share (in percent) of recorded values within `mean ± stdev`, each
/// bucket judged by its median equivalent value like [`mean`] and
/// [`stdev`], so that a single repeated value counts as 100% within.
pub fn within_stdev(h: &Histogram<u64>, mean: f64, stdev: f64) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let (low, high) = (mean - stdev, mean + stdev);
    let inside: u64 = buckets(h)
        .filter(|&(v, _)| (low..=high).contains(&(h.median_equivalent(v) as f64)))
        .map(|(_, n)| n)
        .sum();
    100.0 * inside as f64 / h.len() as f64
}

/// The bucket layout the C library derives from a histogram's range and
/// precision, as printed in the spectrum's footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub buckets: u32,
    pub sub_buckets: u32,
}

/// Computes [`Layout`] with the C library's rules: enough sub-buckets for
/// single-unit resolution up to `2 × 10^sigfig`, rounded up to a power of
/// two; then buckets, each doubling the range, until the sub-bucket mask
/// shifted up reaches the highest trackable value. A histogram that grows
/// as values come (each of metron's) is laid out over the whole range it
/// can grow to, up to [`HIST_HIGH_US`], like the C library's fixed one.
pub fn layout(h: &Histogram<u64>) -> Layout {
    let high = if h.is_auto_resize() {
        h.high().max(HIST_HIGH_US)
    } else {
        h.high()
    };
    let single_unit_limit = 2 * 10_u64.pow(u32::from(h.sigfig()));
    let sub_bucket_magnitude = ceil_log2(single_unit_limit).max(1);
    let sub_buckets = 1_u64 << sub_bucket_magnitude;
    let unit_magnitude = h.low().max(1).ilog2();
    let mut trackable = (sub_buckets - 1) << unit_magnitude;
    let mut buckets = 1;
    while trackable < high {
        trackable <<= 1;
        buckets += 1;
    }
    Layout {
        buckets,
        sub_buckets: sub_buckets as u32,
    }
}

fn ceil_log2(n: u64) -> u32 {
    n.next_power_of_two().trailing_zeros()
}

/// The non-empty buckets in ascending order, as (any value in the bucket,
/// count in the bucket).
fn buckets(h: &Histogram<u64>) -> impl Iterator<Item = (u64, u64)> + '_ {
    h.iter_recorded()
        .map(|b| (b.value_iterated_to(), b.count_at_value()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{histogram_of as histogram, new_histogram};

    #[test]
    fn empty_histograms_give_zeros() {
        let h = new_histogram();
        assert_eq!((mean(&h), stdev(&h), max(&h)), (0.0, 0.0, 0));
        assert_eq!(value_at_percentile(&h, 50.0), 0);
        // What the reports print from: nothing, rather than a 0.
        assert_eq!((percentile(&h, 99.0), maximum(&h)), (None, None));
        assert_eq!(within_stdev(&h, 0.0, 0.0), 0.0);
    }

    #[test]
    fn mean_and_stdev_use_median_equivalents() {
        // 2500 sits in a 2-wide bucket (median 2501), 12500 in an 8-wide
        // one (median 12500).
        let h = histogram(&[(500, 4), (1000, 3), (2500, 2), (12500, 1)]);
        assert_eq!(mean(&h), 2250.2);
        assert!((stdev(&h) - 3494.653).abs() < 1e-3);
    }

    #[test]
    fn max_is_the_bottom_of_the_top_bucket() {
        assert_eq!(max(&histogram(&[(12500, 1)])), 12496);
        assert_eq!(max(&histogram(&[(700, 1)])), 700);
    }

    #[test]
    fn percentiles_round_the_target_count_to_nearest() {
        let h = histogram(&(1..=7).map(|v| (v, 1)).collect::<Vec<_>>());
        // 90% of 7 is 6.3 values: C takes the 6th, the crate the 7th.
        assert_eq!(value_at_percentile(&h, 90.0), 6);
        assert_eq!(h.value_at_quantile(0.9), 7);
        assert_eq!(value_at_percentile(&h, 0.0), 1);
        assert_eq!(value_at_percentile(&h, 100.0), 7);
        assert_eq!(value_at_percentile(&h, 150.0), 7);
    }

    #[test]
    fn percentiles_report_the_top_of_a_bucket() {
        let h = histogram(&[(2500, 1), (12500, 1)]);
        assert_eq!(value_at_percentile(&h, 50.0), 2501);
    }

    /// Regression: a percentile in the highest bucket was its top
    /// (329 983 µs) beside a maximum at its bottom (329 727 µs), and a line
    /// printed `p99.9 329.98ms, max 329.73ms`.
    #[test]
    fn no_percentile_exceeds_the_maximum() {
        let h = histogram(&[(1000, 998), (329_800, 2)]);
        assert_eq!(max(&h), 329_728);
        for p in [99.9, 99.99, 100.0] {
            assert_eq!(value_at_percentile(&h, p), max(&h), "p{p}");
        }
        let h = histogram(&[(2500, 1), (12500, 1)]);
        assert_eq!(value_at_percentile(&h, 100.0), 12496);
        // Below the highest bucket, percentiles keep the top of theirs.
        assert_eq!(value_at_percentile(&h, 50.0), 2501);
    }

    #[test]
    fn within_stdev_counts_both_edges() {
        let h = histogram(&[(300, 5), (700, 5)]);
        assert_eq!((mean(&h), stdev(&h)), (500.0, 200.0));
        assert_eq!(within_stdev(&h, 500.0, 200.0), 100.0);
        assert_eq!(within_stdev(&h, 500.0, 199.0), 0.0);
        let constant = histogram(&[(42, 9)]);
        assert_eq!(within_stdev(&constant, 42.0, 0.0), 100.0);
    }

    #[test]
    fn layout_of_metron_histograms_matches_the_c_library() {
        let h = new_histogram();
        assert_eq!(
            layout(&h),
            Layout {
                buckets: 27,
                sub_buckets: 2048
            }
        );
        let fixed = Histogram::<u64>::new_with_bounds(1, HIST_HIGH_US, 3).unwrap();
        assert_eq!(layout(&fixed), layout(&h));
        assert_eq!(u32::from(fixed.buckets()), layout(&h).buckets);
    }

    #[test]
    fn layout_follows_range_and_precision() {
        let h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 2).unwrap();
        // 2 × 10^2 = 200 needs 256 sub-buckets; 255 × 2^24 ≥ 3.6e9.
        assert_eq!(
            layout(&h),
            Layout {
                buckets: 25,
                sub_buckets: 256
            }
        );
        let h = Histogram::<u64>::new_with_bounds(1000, 3_600_000_000, 3).unwrap();
        // Unit magnitude 9: 2047 × 2^9 × 2^12 ≥ 3.6e9.
        assert_eq!(
            layout(&h),
            Layout {
                buckets: 13,
                sub_buckets: 2048
            }
        );
    }
}

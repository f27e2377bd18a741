//! The "Detailed Percentile spectrum": HdrHistogram's classic percentile
//! table, with the steps and the footer of the C library the original
//! links.
//!
//! The steps are computed here rather than with the crate's
//! `iter_quantiles`, because the two walk different targets. The C library
//! counts in percent and adds `100 / ticks` (10, 5, 2.5, ... all exact in
//! binary), while the crate counts in fractions and adds `1 / ticks` (0.1,
//! 0.05, ... inexact), so its target drifts just above a bucket's exact
//! share: with the values 1 to 10, C prints the 0.3 row at value 3 and the
//! crate at value 4. Both end alike: one row in the last bucket, then a
//! row at percentile 1.0 with the maximum and the total count.

use std::io::{self, Write};

use hdrhistogram::Histogram;

use crate::stats::summary;

/// Rows per halving of the distance to 100%, as the original prints.
pub const TICKS_PER_HALF_DISTANCE: u32 = 5;
/// Values are recorded in µs and printed in ms.
pub const MICROS_PER_MILLI: f64 = 1000.0;

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// Highest value equivalent to the bucket the step stopped in.
    pub value: u64,
    /// The percentile iterated to (0–100), not the bucket's own share.
    pub percentile: f64,
    /// Values recorded up to and including that bucket.
    pub total_count: u64,
}

/// The table's steps: for each non-empty bucket, one step per percentile
/// target its cumulative share reaches, the targets advancing by
/// `100 / (ticks × 2^k)` where `2^k` is the next power of two above
/// `100 / (100 - target)`. Once the last bucket is reached, only one step
/// is taken there, then a final step at 100%.
///
/// An empty histogram has no steps (the C library prints a lone
/// `0.000 1.000000 0 inf` row instead; the report leaves it out).
pub fn steps(h: &Histogram<u64>, ticks_per_half_distance: u32) -> Vec<Step> {
    let total = h.len();
    let mut steps = Vec::new();
    let mut target = 0.0;
    let mut seen = 0_u64;
    let mut last_value = 0;
    for bucket in h.iter_recorded() {
        seen = seen.saturating_add(bucket.count_at_value());
        last_value = bucket.value_iterated_to();
        let reached = 100.0 * seen as f64 / total as f64;
        while target <= reached {
            steps.push(Step {
                value: last_value,
                percentile: target,
                total_count: seen,
            });
            target = next_target(target, ticks_per_half_distance);
            if seen >= total {
                break;
            }
        }
    }
    if total > 0 {
        steps.push(Step {
            value: last_value,
            percentile: 100.0,
            total_count: total,
        });
    }
    steps
}

/// The percentile target after `target`, in the C library's arithmetic
/// (natural logarithms, truncation toward zero) so that the same targets
/// come out to the last bit.
fn next_target(target: f64, ticks_per_half_distance: u32) -> f64 {
    let halvings = ((100.0 / (100.0 - target)).ln() / 2f64.ln()) as i64 + 1;
    let ticks = u32::try_from(halvings)
        .ok()
        .and_then(|h| 1_i64.checked_shl(h))
        .and_then(|half_distance| half_distance.checked_mul(i64::from(ticks_per_half_distance)));
    match ticks {
        Some(ticks) if ticks > 0 => target + 100.0 / ticks as f64,
        // Only after some 2^60 values: the remaining distance is nil.
        _ => 100.0,
    }
}

/// Writes the table, its footer included, for a histogram of µs values
/// printed in ms.
pub fn write_spectrum(out: &mut impl Write, h: &Histogram<u64>) -> io::Result<()> {
    writeln!(
        out,
        "{:>12} {:>12} {:>12} {:>12}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    for step in steps(h, TICKS_PER_HALF_DISTANCE) {
        write_step(out, &step)?;
    }
    write_footer(out, h)
}

fn write_step(out: &mut impl Write, step: &Step) -> io::Result<()> {
    let value = step.value as f64 / MICROS_PER_MILLI;
    let quantile = step.percentile / 100.0;
    // At 1.0 this is +inf, which prints as "inf" like printf's.
    let inverted = 1.0 / (1.0 - quantile);
    writeln!(
        out,
        "{value:12.3} {quantile:12.6} {:12} {inverted:12.2}",
        step.total_count
    )
}

fn write_footer(out: &mut impl Write, h: &Histogram<u64>) -> io::Result<()> {
    let mean = summary::mean(h) / MICROS_PER_MILLI;
    let stdev = summary::stdev(h) / MICROS_PER_MILLI;
    let max = summary::max(h) as f64 / MICROS_PER_MILLI;
    let layout = summary::layout(h);
    writeln!(
        out,
        "#[Mean    = {mean:12.3}, StdDeviation   = {stdev:12.3}]"
    )?;
    writeln!(
        out,
        "#[Max     = {max:12.3}, Total count    = {:12}]",
        h.len()
    )?;
    writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        layout.buckets, layout.sub_buckets
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{histogram_of as histogram, new_histogram};

    fn rows(h: &Histogram<u64>) -> Vec<(u64, f64, u64)> {
        steps(h, 5)
            .iter()
            .map(|s| (s.value, s.percentile, s.total_count))
            .collect()
    }

    fn text(h: &Histogram<u64>) -> String {
        let mut out = Vec::new();
        write_spectrum(&mut out, h).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn targets_advance_by_halving_distances() {
        let mut t = 0.0;
        let mut seen = Vec::new();
        while t < 92.0 {
            seen.push(t);
            t = next_target(t, 5);
        }
        let expected = [
            0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 55.0, 60.0, 65.0, 70.0, 75.0, 77.5, 80.0, 82.5,
            85.0, 87.5, 88.75, 90.0, 91.25,
        ];
        assert_eq!(seen, expected);
    }

    #[test]
    fn exact_shares_meet_their_targets() {
        // Regression: the crate's fractional targets put the 0.3 row at
        // value 4; the C library puts it at value 3.
        let h = histogram(&(1..=10).map(|v| (v, 1)).collect::<Vec<_>>());
        let rows = rows(&h);
        assert!(rows.contains(&(3, 30.0, 3)));
        let crate_row = h
            .iter_quantiles(5)
            .find(|q| q.quantile_iterated_to() > 0.29)
            .unwrap();
        assert_eq!(crate_row.value_iterated_to(), 4);
    }

    #[test]
    fn a_bucket_yields_every_target_it_reaches() {
        let h = histogram(&[(300, 5), (700, 5)]);
        let expected = [
            (300, 0.0, 5),
            (300, 10.0, 5),
            (300, 20.0, 5),
            (300, 30.0, 5),
            (300, 40.0, 5),
            (300, 50.0, 5),
            (700, 55.0, 10),
            (700, 100.0, 10),
        ];
        assert_eq!(rows(&h), expected);
    }

    #[test]
    fn the_last_bucket_gives_one_row_then_the_final_row() {
        let h = histogram(&[(1, 1), (2, 1_000_000)]);
        let rows = rows(&h);
        let tail: Vec<_> = rows.iter().filter(|r| r.0 == 2).collect();
        assert_eq!(tail.len(), 2);
        assert_eq!(*tail[1], (2, 100.0, 1_000_001));
        assert!(tail[0].1 < 100.0);
    }

    #[test]
    fn a_single_value_prints_two_rows() {
        let expected = "       Value   Percentile   TotalCount 1/(1-Percentile)\n\n\
            \x20     12.503     0.000000            1         1.00\n\
            \x20     12.503     1.000000            1          inf\n\
            #[Mean    =       12.500, StdDeviation   =        0.000]\n\
            #[Max     =       12.496, Total count    =            1]\n\
            #[Buckets =           27, SubBuckets     =         2048]\n";
        assert_eq!(text(&histogram(&[(12500, 1)])), expected);
    }

    #[test]
    fn an_empty_histogram_prints_zeros_not_nan() {
        let expected = "       Value   Percentile   TotalCount 1/(1-Percentile)\n\n\
            #[Mean    =        0.000, StdDeviation   =        0.000]\n\
            #[Max     =        0.000, Total count    =            0]\n\
            #[Buckets =           27, SubBuckets     =         2048]\n";
        assert_eq!(text(&new_histogram()), expected);
    }

    #[test]
    fn rows_are_monotonic_and_end_at_the_maximum() {
        let mut h = new_histogram();
        for i in 0..20_000_u64 {
            h.record(100 + (i * i) % 50_000).unwrap();
        }
        let rows = steps(&h, 5);
        assert!(rows.windows(2).all(|w| w[0].percentile < w[1].percentile));
        assert!(rows.windows(2).all(|w| w[0].value <= w[1].value));
        let last = rows.last().unwrap();
        assert_eq!(
            (last.value, last.percentile, last.total_count),
            (h.max(), 100.0, 20_000)
        );
        assert_eq!(rows.iter().filter(|r| r.percentile == 100.0).count(), 1);
    }
}

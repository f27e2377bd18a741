//! The raw outputs of the wrk forks that added them: `--timeseries`
//! (completed requests per interval), `--thread-timeseries` (the same per
//! thread) and `--histogram` (the latency histogram in 1 µs bins). They
//! follow the text report, so parsers of the report are undisturbed.

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use crate::stats::{RunStats, SERIES_STEP};

/// Completions per `step` for one thread's 10 ms series, over `window`.
fn buckets(series: &[u32], step: Duration, window: Duration) -> Vec<u64> {
    let per = (step.as_nanos() / SERIES_STEP.as_nanos()).max(1) as usize;
    let n = window.as_nanos().div_ceil(step.as_nanos().max(1)) as usize;
    let n = n.max(series.len().div_ceil(per));
    (0..n)
        .map(|i| {
            let lo = (i * per).min(series.len());
            let hi = ((i + 1) * per).min(series.len());
            series[lo..hi].iter().map(|&c| u64::from(c)).sum()
        })
        .collect()
}

/// Milliseconds since the Unix epoch of the `i`-th interval's start.
fn epoch_ms(start: SystemTime, step: Duration, i: usize) -> u128 {
    let t = start + step * i as u32;
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

/// `EPOCH | REQUESTS`, all threads together.
pub fn write_timeseries(
    out: &mut dyn Write,
    run: &RunStats,
    start: SystemTime,
    step: Duration,
) -> io::Result<()> {
    let per_thread: Vec<Vec<u64>> = run
        .threads
        .iter()
        .map(|t| buckets(&t.series, step, run.window))
        .collect();
    let n = per_thread.iter().map(Vec::len).max().unwrap_or(0);
    writeln!(
        out,
        "  Timeseries (completed requests per {}ms):",
        step.as_millis()
    )?;
    writeln!(out, "  EPOCH | REQUESTS")?;
    for i in 0..n {
        let total: u64 = per_thread
            .iter()
            .map(|b| b.get(i).copied().unwrap_or(0))
            .sum();
        writeln!(out, "  {} | {total}", epoch_ms(start, step, i))?;
    }
    Ok(())
}

/// `THREAD | EPOCH | REQUESTS`, thread by thread.
pub fn write_thread_timeseries(
    out: &mut dyn Write,
    run: &RunStats,
    start: SystemTime,
    step: Duration,
) -> io::Result<()> {
    writeln!(
        out,
        "  Thread timeseries (completed requests per {}ms):",
        step.as_millis()
    )?;
    writeln!(out, "  THREAD | EPOCH | REQUESTS")?;
    for (j, t) in run.threads.iter().enumerate() {
        for (i, n) in buckets(&t.series, step, run.window).iter().enumerate() {
            writeln!(out, "  {j} | {} | {n}", epoch_ms(start, step, i))?;
        }
    }
    Ok(())
}

/// `VALUE_US | COUNT` for every 1 µs from 0 to the last non-empty bin.
/// Above 2048 µs a histogram bin covers several microseconds; its count is
/// shown at the last microsecond it covers, so the counts add up to the
/// number of requests.
pub fn write_histogram(out: &mut dyn Write, h: &Histogram<u64>) -> io::Result<()> {
    writeln!(out, "  Latency histogram (1us bins):")?;
    writeln!(out, "  VALUE_US | COUNT")?;
    if h.is_empty() {
        return Ok(());
    }
    // The iteration may run on to the end of the last bin's range.
    let last = h
        .iter_linear(1)
        .filter(|s| s.count_since_last_iteration() > 0)
        .map(|s| s.value_iterated_to())
        .last()
        .unwrap_or(0);
    for step in h.iter_linear(1) {
        let value = step.value_iterated_to();
        if value > last {
            break;
        }
        writeln!(out, "  {value} | {}", step.count_since_last_iteration())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ThreadStats;

    fn run_with(series: Vec<Vec<u32>>, window: Duration) -> RunStats {
        let threads = series
            .into_iter()
            .map(|s| ThreadStats {
                series: s,
                ..ThreadStats::default()
            })
            .collect();
        RunStats::merge(threads, window)
    }

    fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        f(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn timeseries_adds_threads_per_interval() {
        // 10 ms steps: 25 of them make one 250 ms interval.
        let run = run_with(vec![vec![1; 50], vec![2; 50]], Duration::from_millis(500));
        let start = UNIX_EPOCH + Duration::from_secs(1000);
        let t = text(|o| write_timeseries(o, &run, start, Duration::from_millis(250)));
        assert_eq!(
            t,
            "  Timeseries (completed requests per 250ms):\n  EPOCH | REQUESTS\n  1000000 | 75\n  1000250 | 75\n"
        );
        let t = text(|o| write_thread_timeseries(o, &run, start, Duration::from_millis(250)));
        assert!(
            t.ends_with(
                "  0 | 1000000 | 25\n  0 | 1000250 | 25\n  1 | 1000000 | 50\n  1 | 1000250 | 50\n"
            ),
            "{t}"
        );
    }

    #[test]
    fn histogram_bins_add_up_to_the_count() {
        let mut h = crate::stats::new_histogram();
        for v in [1, 2, 2, 5, 3000] {
            h.record(v).unwrap();
        }
        let t = text(|o| write_histogram(o, &h));
        assert!(t.contains("\n  2 | 2\n  3 | 0\n"), "{t}");
        let total: u64 = t
            .lines()
            .skip(2)
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 5);
        let last = t.trim_end().lines().last().unwrap().to_string();
        assert_eq!(last, "  3000 | 1");
    }
}

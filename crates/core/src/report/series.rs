//! The raw outputs of the wrk fork that added them, in its exact forms, so
//! that scripts written to plot its output read metron's:
//!
//! - `--thread-timeseries`: completed requests per interval and thread,
//!   printed during the run as the intervals close, before the report;
//! - `--timeseries`: the same for all threads together, after the report;
//! - `--histogram`: the corrected latency histogram in 1 µs bins, after
//!   the report.
//!
//! Each is a header line, then bare numbers; intervals are counted from 0
//! at the start of the measured window. (The JSON document holds the same
//! series with the window's start as a Unix time, for epoch stamps.)

use std::io::{self, Write};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::stats::{Row, RunStats};

/// The header of `--thread-timeseries`, printed before the run starts; the
/// columns below it are right-aligned under its words.
pub fn write_thread_header(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "THREAD  |  EPOCH  |  REQUESTS")
}

/// Rows of `--thread-timeseries`: thread, interval (the "epoch" of the
/// header, counting from 0) and completed requests.
pub fn write_thread_rows(out: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    for r in rows {
        writeln!(out, "{:>6}{:>10}{:>13}", r.thread, r.interval, r.completed)?;
    }
    Ok(())
}

/// `--timeseries`: completed requests per `step`, all threads together,
/// one line per interval of the measured window. The interval length is
/// written in milliseconds, whatever unit `--timeseries-interval` used.
pub fn write_timeseries(out: &mut dyn Write, run: &RunStats, step: Duration) -> io::Result<()> {
    writeln!(
        out,
        "Request counts time series (interval = {}ms) ",
        step.as_millis()
    )?;
    let n = run
        .threads
        .iter()
        .map(|t| t.intervals_spanned(step, run.window))
        .max()
        .unwrap_or(0);
    for i in 0..n {
        let total: u64 = run.threads.iter().map(|t| t.completions_in(i, step)).sum();
        writeln!(out, "{total}")?;
    }
    Ok(())
}

/// `--histogram`: one count per microsecond from 0 µs to the last
/// non-empty bin. Below 2048 µs each histogram bin is one microsecond;
/// above, a bin spans several (2 µs up to 4096 µs, then 4, and so on), and
/// its count stands on the first microsecond it covers, with zeros on the
/// rest, so the counts still add up to the number of requests.
pub fn write_histogram(out: &mut dyn Write, h: &Histogram<u64>) -> io::Result<()> {
    writeln!(out, "Latency histogram (bin width = 1us)")?;
    // Streamed bin by bin: a long tail is many lines, but no memory.
    let mut next = 0u64;
    for bin in h.iter_recorded() {
        let first = h.lowest_equivalent(bin.value_iterated_to());
        for _ in next..first {
            writeln!(out, "0")?;
        }
        writeln!(out, "{}", bin.count_at_value())?;
        next = first + 1;
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
                series: crate::stats::Completions::of_steps(&s),
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
    fn thread_rows_line_up_under_their_header() {
        let rows = [
            Row {
                thread: 0,
                interval: 0,
                completed: 2662,
            },
            Row {
                thread: 11,
                interval: 123,
                completed: 1_234_567,
            },
        ];
        let t = text(|o| {
            write_thread_header(o)?;
            write_thread_rows(o, &rows)
        });
        assert_eq!(
            t,
            "\nTHREAD  |  EPOCH  |  REQUESTS\n     0         0         2662\n    11       123      1234567\n"
        );
    }

    #[test]
    fn timeseries_adds_threads_per_interval() {
        // 10 ms steps: 25 of them make one 250 ms interval; the last
        // interval, cut short by the window's end, is there too.
        let run = run_with(vec![vec![1; 60], vec![2; 60]], Duration::from_millis(600));
        let t = text(|o| write_timeseries(o, &run, Duration::from_millis(250)));
        assert_eq!(
            t,
            "Request counts time series (interval = 250ms) \n75\n75\n30\n"
        );
        let t = text(|o| write_timeseries(o, &run, Duration::from_secs(1)));
        assert_eq!(t, "Request counts time series (interval = 1000ms) \n180\n");
    }

    #[test]
    fn an_empty_interval_is_a_zero() {
        let run = run_with(vec![vec![4], vec![]], Duration::from_millis(500));
        let t = text(|o| write_timeseries(o, &run, Duration::from_millis(250)));
        assert_eq!(t, "Request counts time series (interval = 250ms) \n4\n0\n");
    }

    #[test]
    fn histogram_has_a_line_per_microsecond_from_zero() {
        let mut h = crate::stats::new_histogram();
        for v in [1, 2, 2, 5] {
            h.record(v).unwrap();
        }
        let t = text(|o| write_histogram(o, &h));
        assert_eq!(t, "Latency histogram (bin width = 1us)\n0\n1\n2\n0\n0\n1\n");
        let empty = crate::stats::new_histogram();
        let t = text(|o| write_histogram(o, &empty));
        assert_eq!(t, "Latency histogram (bin width = 1us)\n");
    }

    #[test]
    fn a_wide_bin_counts_on_its_first_microsecond() {
        let mut h = crate::stats::new_histogram();
        // 3001 shares the 2 µs bin 3000-3001; 5000 is in the 4 µs bin 5000-5003.
        for v in [1, 3001, 3001, 5002] {
            h.record(v).unwrap();
        }
        let t = text(|o| write_histogram(o, &h));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "Latency histogram (bin width = 1us)");
        let counts: Vec<u64> = lines[1..].iter().map(|l| l.parse().unwrap()).collect();
        assert_eq!(counts.len(), 5001, "0 µs to 5000 µs");
        assert_eq!(counts[1], 1);
        assert_eq!((counts[3000], counts[3001]), (2, 0));
        assert_eq!(counts[5000], 1);
        assert_eq!(counts.iter().sum::<u64>(), 4);
    }
}

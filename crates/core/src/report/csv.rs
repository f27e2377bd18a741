//! `--csv`: one row per interval of the measured window, under a header
//! row, for a spreadsheet. The rows are the JSON document's series points
//! ([`Point`]): written as the run goes by the run itself, or from a saved
//! document by `metron report FILE.json --csv OUT`.
//!
//! Columns (times in seconds from the window's start, latencies in µs;
//! a cell is empty where the figure does not apply, such as `intended` in
//! throughput mode, was not measured, such as the percentiles of an
//! interval in which nothing completed, or is missing from an older
//! document):
//! `start_s,end_s,completed,errors,errors_status,errors_read,errors_write,
//! errors_timeout,errors_connect,intended,achieved_rate,p50_us,p90_us,
//! p99_us,p999_us,max_us,uncorrected_p99_us,send_lag_p99_us,ttfb_p99_us`.

use std::io::{self, Write};

use super::json::{Document, Point};

pub const HEADER: &str = "start_s,end_s,completed,errors,errors_status,errors_read,errors_write,\
errors_timeout,errors_connect,intended,achieved_rate,p50_us,p90_us,p99_us,p999_us,max_us,\
uncorrected_p99_us,send_lag_p99_us,ttfb_p99_us";

pub fn write_header(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{HEADER}")
}

/// One interval's row; `interval_s` is the series' interval length (the
/// point's own length, when it has one, wins: the last is cut short).
pub fn write_row(out: &mut dyn Write, p: &Point, interval_s: f64) -> io::Result<()> {
    let length = p.length_s.unwrap_or(interval_s);
    let cell = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let k = p.error_kinds;
    let rate = if length > 0.0 {
        format!("{:.3}", p.completed as f64 / length)
    } else {
        String::new()
    };
    writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        seconds(p.t),
        seconds(p.t + length),
        p.completed,
        p.errors,
        cell(k.map(|k| k.status)),
        cell(k.map(|k| k.read)),
        cell(k.map(|k| k.write)),
        cell(k.map(|k| k.timeout)),
        cell(k.map(|k| k.connect)),
        cell(p.intended),
        rate,
        cell(p.p50),
        cell(p.p90),
        cell(p.p99),
        cell(p.p999),
        cell(p.max),
        cell(p.uncorrected_p99),
        cell(p.send_lag_p99),
        cell(p.ttfb_p99),
    )
}

/// A saved document's series as CSV.
pub fn write_document(out: &mut dyn Write, doc: &Document) -> io::Result<()> {
    write_header(out)?;
    for p in &doc.series.points {
        write_row(out, p, doc.series.interval_s)?;
    }
    out.flush()
}

/// Seconds with the precision of a microsecond, without trailing zeros.
fn seconds(s: f64) -> String {
    let text = format!("{s:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Errors;

    #[test]
    fn a_row_has_every_column_of_the_header_and_empty_cells_for_what_is_missing() {
        let mut p = Point::empty(2.0);
        p.completed = 450;
        p.errors = 3;
        (p.p50, p.p99, p.max) = (Some(800), Some(1200), Some(1500));
        p.ttfb_p99 = Some(700);
        p.length_s = Some(0.5);
        p.error_kinds = Some(Errors {
            status: 2,
            timeout: 1,
            ..Errors::default()
        });
        let mut out = Vec::new();
        write_header(&mut out).unwrap();
        write_row(&mut out, &p, 1.0).unwrap();
        write_row(&mut out, &Point::empty(0.25), 0.25).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let columns = lines[0].split(',').count();
        assert_eq!(columns, 19);
        assert!(
            lines.iter().all(|l| l.split(',').count() == columns),
            "{text}"
        );
        assert_eq!(
            lines[1],
            "2,2.5,450,3,2,0,0,1,0,,900.000,800,,1200,,1500,,,700"
        );
        // Nothing completed: no percentile, rather than a latency of 0.
        assert_eq!(lines[2], "0.25,0.5,0,0,,,,,,,0.000,,,,,,,,");
    }
}

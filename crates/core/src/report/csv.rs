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
//! p99_us,p999_us,max_us,uncorrected_p99_us,send_lag_p99_us,ttfb_p99_us,
//! first_event_p99_us,event_gap_p99_us,tpot_p99_us,output_tokens,endpoint`.
//! The event columns are `--sse`'s (and, with `--llm`, the first token's
//! and the gaps between tokens); `tpot_p99_us` and `output_tokens` are
//! `--llm`'s, over the answers that ended in the interval.
//!
//! An interval's row for the whole run has an empty `endpoint`. When the
//! run keeps figures per endpoint (a flow's steps, a requests file's
//! names), the run's own CSV follows it with a row per endpoint that saw
//! anything in the interval ([`EndpointPoint`]), named in `endpoint`, with
//! the figures an endpoint has per interval (its answers, errors and
//! corrected percentiles) and the others' cells empty. A saved document
//! keeps no endpoint figures per interval, so `metron report --csv` writes
//! the whole run's rows alone.

use std::io::{self, Write};

use super::json::{Document, EndpointPoint, Point};

pub const HEADER: &str = "start_s,end_s,completed,errors,errors_status,errors_read,errors_write,\
errors_timeout,errors_connect,intended,achieved_rate,p50_us,p90_us,p99_us,p999_us,max_us,\
uncorrected_p99_us,send_lag_p99_us,ttfb_p99_us,first_event_p99_us,event_gap_p99_us,tpot_p99_us,\
output_tokens,endpoint";

pub fn write_header(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{HEADER}")
}

/// One interval's row; `interval_s` is the series' interval length (the
/// point's own length, when it has one, wins: the last is cut short).
pub fn write_row(out: &mut dyn Write, p: &Point, interval_s: f64) -> io::Result<()> {
    let k = p.error_kinds;
    let row = Row {
        completed: p.completed,
        errors: p.errors,
        kinds: [
            k.map(|k| k.status),
            k.map(|k| k.read),
            k.map(|k| k.write),
            k.map(|k| k.timeout),
            k.map(|k| k.connect),
        ],
        intended: p.intended,
        latency: [p.p50, p.p90, p.p99, p.p999, p.max],
        others: [
            p.uncorrected_p99,
            p.send_lag_p99,
            p.ttfb_p99,
            p.first_event_p99,
            p.event_gap_p99,
            p.tpot_p99,
            p.output_tokens,
        ],
        endpoint: "",
    };
    row.write(out, p, interval_s)
}

/// The row of endpoint `e` in the interval of `p`.
pub fn write_endpoint_row(
    out: &mut dyn Write,
    p: &Point,
    e: &EndpointPoint,
    interval_s: f64,
) -> io::Result<()> {
    let row = Row {
        completed: e.completed,
        errors: e.errors,
        kinds: [None; 5],
        intended: None,
        latency: [e.p50, e.p90, e.p99, e.p999, e.max],
        others: [None; 7],
        endpoint: &e.name,
    };
    row.write(out, p, interval_s)
}

/// The cells of a row after its times.
struct Row<'a> {
    completed: u64,
    errors: u64,
    /// Errors by kind: status, read, write, timeout; failed connects.
    kinds: [Option<u64>; 5],
    intended: Option<u64>,
    /// p50, p90, p99, p99.9 and max of the corrected latency.
    latency: [Option<u64>; 5],
    /// p99 of the uncorrected latency, the send lag, the time to first
    /// byte, the first events, the gaps between events and the time per
    /// output token; the output tokens.
    others: [Option<u64>; 7],
    endpoint: &'a str,
}

impl Row<'_> {
    fn write(&self, out: &mut dyn Write, p: &Point, interval_s: f64) -> io::Result<()> {
        let length = p.length_s.unwrap_or(interval_s);
        let cell = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let rate = if length > 0.0 {
            format!("{:.3}", self.completed as f64 / length)
        } else {
            String::new()
        };
        let mut cells = vec![
            seconds(p.t),
            seconds(p.t + length),
            self.completed.to_string(),
            self.errors.to_string(),
        ];
        cells.extend(self.kinds.map(cell));
        cells.push(cell(self.intended));
        cells.push(rate);
        cells.extend(self.latency.map(cell));
        cells.extend(self.others.map(cell));
        cells.push(quoted(self.endpoint));
        writeln!(out, "{}", cells.join(","))
    }
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

/// A cell as RFC 4180 has it: in double quotes, doubled inside, when it
/// holds a comma, a quote or a line break.
fn quoted(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
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
        (p.first_event_p99, p.tpot_p99, p.output_tokens) = (Some(300), Some(20), Some(0));
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
        assert_eq!(columns, 24);
        assert!(
            lines.iter().all(|l| l.split(',').count() == columns),
            "{text}"
        );
        assert_eq!(
            lines[1],
            "2,2.5,450,3,2,0,0,1,0,,900.000,800,,1200,,1500,,,700,300,,20,0,"
        );
        // Nothing completed: no percentile, rather than a latency of 0.
        assert_eq!(lines[2], "0.25,0.5,0,0,,,,,,,0.000,,,,,,,,,,,,,");
    }

    #[test]
    fn an_endpoints_row_names_it_and_leaves_the_whole_runs_cells_empty() {
        let mut p = Point::empty(1.0);
        p.length_s = Some(0.5);
        let e = |name: &str| EndpointPoint {
            name: name.into(),
            completed: 20,
            errors: 1,
            p50: Some(900),
            p90: None,
            p99: Some(4000),
            p999: None,
            max: Some(5000),
        };
        let mut out = Vec::new();
        write_endpoint_row(&mut out, &p, &e("login"), 1.0).unwrap();
        write_endpoint_row(&mut out, &p, &e("say \"hi\", then go"), 1.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "1,1.5,20,1,,,,,,,40.000,900,,4000,,5000,,,,,,,,login"
        );
        assert_eq!(
            lines[1],
            "1,1.5,20,1,,,,,,,40.000,900,,4000,,5000,,,,,,,,\"say \"\"hi\"\", then go\""
        );
    }
}

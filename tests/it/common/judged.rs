//! Helpers of the tests of arrival processes, SLO verdicts and sweeps:
//! targets that answer late, the documents a run and a sweep write, and
//! the lines of a report.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use metron::cli::profile::{parse_profile, ProfileSpec};
use metron::clock::Nanos;
use metron::report::json::Document;
use metron::report::sweep::SweepDocument;
use metron::schedule::{Arrivals, Phase, Process, Profile, Spacing};
use metron::serve::{ServeConfig, Server};
use metron::verdict::SloReport;

use super::files::{read_json, sweep_schema_errors};

/// A target that holds every response for `delay` (`metron serve --delay`).
pub fn delayed(delay: Duration) -> Server {
    Server::start(ServeConfig {
        delay,
        ..ServeConfig::default()
    })
    .expect("the built-in target starts")
}

/// The JSON document of a run, as `--json FILE` wrote it.
pub fn run_document(path: &Path) -> Document {
    read_json(path)
}

/// The JSON document of a sweep, as `metron sweep --json FILE` wrote it,
/// which follows its published schema (docs/sweep.schema.json).
pub fn sweep_document(path: &Path) -> SweepDocument {
    let doc: serde_json::Value = read_json(path);
    let errors = sweep_schema_errors(&doc);
    assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    serde_json::from_value(doc).expect("a sweep document")
}

/// The last non-empty line of some output.
pub fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

/// The exit status, with both streams in the message when it is not
/// `want`.
pub fn assert_status(o: &Output, want: i32) {
    assert_eq!(
        o.status.code(),
        Some(want),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A usage error: exit status `want` (1 for a configuration that does not
/// hold together, 2 for a flag that does not parse) and one line on
/// stderr, which is returned.
pub fn usage_error(o: &Output, want: i32) -> String {
    assert_status(o, want);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(
        o.stdout.is_empty(),
        "nothing ran: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    err
}

/// A second, in the schedule's nanoseconds.
pub const SEC: Nanos = 1_000_000_000;

/// The intended times of a process before `end`, in order; at most
/// `limit` of them, so that a process that never reaches `end` cannot
/// hang the test.
pub fn times_before(p: &dyn Arrivals, end: Nanos, limit: usize) -> Vec<Nanos> {
    let mut c = p.cursor();
    let times: Vec<Nanos> = (0..limit as u64 + 1)
        .map(|k| c.time_of(k))
        .take_while(|&t| t < end)
        .collect();
    assert!(times.len() <= limit, "more than {limit} times before {end}");
    times
}

/// The gaps between consecutive times.
pub fn gaps(times: &[Nanos]) -> Vec<f64> {
    times.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
}

/// Mean and coefficient of variation (standard deviation over mean).
pub fn mean_cv(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt() / mean)
}

/// Poisson arrivals at a constant rate for `length`.
pub fn poisson(rate: f64, seed: u64, length: Nanos) -> Process {
    Process::new(Profile::constant(rate), Spacing::Poisson { seed }, length)
}

/// The phases `--rate-profile` reads from `spec`.
pub fn phases(spec: &str) -> Vec<Phase> {
    match parse_profile(spec) {
        Ok(ProfileSpec::Phases(p)) => p,
        other => panic!("{spec}: {other:?}"),
    }
}

/// The `  SLO <term>: ...` rows of a report, in order.
pub fn slo_rows(report: &str) -> Vec<&str> {
    report.lines().filter(|l| l.starts_with("  SLO ")).collect()
}

/// The verdict of the document at `json`.
pub fn slo_of(json: &str) -> SloReport {
    run_document(Path::new(json))
        .slo
        .expect("the document has the verdict")
}

/// The sweep's table rows: the lines after the header, up to the
/// conclusion.
pub fn table_rows(out: &str) -> Vec<&str> {
    out.lines()
        .skip_while(|l| !l.trim_start().starts_with("Step "))
        .skip(1)
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .collect()
}

//! Python's HdrHistogram as a second reader of metron's interval logs:
//! whether it is there, what it reads, and the intervals the cross-check
//! writes.

use std::process::Command;
use std::time::Duration;

use hdrhistogram::Histogram;
use metron::stats::{new_histogram, IntervalStats};
use serde_json::Value;

/// tests/hlog_check.py: reads an interval log with Python's HdrHistogram.
const HLOG_CHECK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/hlog_check.py");

/// Where python3 and the package are missing: a failure under CI, a note
/// elsewhere. Returns whether the check can go on.
pub fn python_ready() -> bool {
    let probe = Command::new("python3")
        .args(["-c", "import hdrh.log, hdrh.histogram"])
        .output();
    let why = match probe {
        Err(e) => format!("cannot run python3: {e}"),
        Ok(out) if !out.status.success() => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr.lines().last().unwrap_or("").to_owned();
            format!(
                "python3 cannot import the hdrhistogram package ({last}); pip install hdrhistogram"
            )
        }
        Ok(_) => return true,
    };
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("note: Python cross-check of the interval log skipped: {why}");
    false
}

pub fn python_reading(log: &std::path::Path) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(HLOG_CHECK)
        .arg(log)
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "hlog_check.py failed: {stderr}");
    serde_json::from_slice(&out.stdout).expect("hlog_check.py prints JSON")
}

/// Five one-second intervals. The latency values come in blocks wide
/// enough that the 50th and 99th percentiles fall well inside one: the
/// two implementations round a percentile's rank differently, and that
/// must not move the answer to a neighbouring value. The last interval is
/// empty, as an idle second of a run is.
pub fn intervals() -> Vec<IntervalStats> {
    let latency: [&[(u64, u64)]; 5] = [
        &[(1_000, 300)],
        &[(2_000, 300)],
        &[(5_000, 300)],
        &[(40_000, 95), (250_000, 5)],
        &[],
    ];
    latency
        .iter()
        .enumerate()
        .map(|(i, values)| {
            let mut s = IntervalStats::empty(i as u64, Duration::from_secs(1));
            for &(v, n) in *values {
                s.latency.record_n(v, n).unwrap();
                s.uncorrected.record_n(v / 2, n).unwrap();
            }
            if !values.is_empty() {
                s.send_lag.record_n(15 + i as u64, 7).unwrap();
            }
            s
        })
        .collect()
}

/// One histogram (`pick`) added up over the intervals.
pub fn sum(
    intervals: &[IntervalStats],
    pick: fn(&IntervalStats) -> &Histogram<u64>,
) -> Histogram<u64> {
    let mut total = new_histogram();
    for s in intervals {
        total.add(pick(s)).unwrap();
    }
    total
}

/// A count in Python's reading, or the test fails naming it.
pub fn number(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a count: {v}"))
}

/// The package reads tags from release 0.8 on; an older one skips tagged
/// lines, which is its limit and not the log's.
pub fn tags_too_old(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) < (0, 8)
}

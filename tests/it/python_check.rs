//! Cross-checks the interval log against an independent reader: the Python
//! HdrHistogram package, run through tests/hlog_check.py. A log that only
//! metron's own reader can read would be of little use to the tools that
//! plot and merge these logs.
//!
//! Needs python3 and `pip install hdrhistogram`. Without them the test
//! fails where CI is set, and elsewhere prints a note and passes.

use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::Histogram;
use metron::report::hlog::write_log;
use metron::stats::{new_histogram, IntervalStats};
use serde_json::Value;

use crate::common::{python_reading, python_ready};

/// Five one-second intervals. The latency values come in blocks wide
/// enough that the 50th and 99th percentiles fall well inside one: the
/// two implementations round a percentile's rank differently, and that
/// must not move the answer to a neighbouring value. The last interval is
/// empty, as an idle second of a run is.
fn intervals() -> Vec<IntervalStats> {
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

fn sum(intervals: &[IntervalStats], pick: fn(&IntervalStats) -> &Histogram<u64>) -> Histogram<u64> {
    let mut total = new_histogram();
    for s in intervals {
        total.add(pick(s)).unwrap();
    }
    total
}

fn number(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a count: {v}"))
}

/// The package reads tags from release 0.8 on; an older one skips tagged
/// lines, which is its limit and not the log's.
fn tags_too_old(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) < (0, 8)
}

#[test]
fn python_reads_the_log_as_metron_wrote_it() {
    if !python_ready() {
        return;
    }
    let intervals = intervals();
    let path =
        std::env::temp_dir().join(format!("metron-python-check-{}.hlog", std::process::id()));
    let mut log = Vec::new();
    let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    write_log(
        &mut log,
        start,
        "metron python check",
        intervals.clone().into_iter(),
        &[],
    )
    .unwrap();
    std::fs::write(&path, &log).unwrap();
    let seen = python_reading(&path);
    std::fs::remove_file(&path).unwrap();

    let latency = sum(&intervals, |s| &s.latency);
    assert_eq!(number(&seen, "total_count"), latency.len(), "{seen}");
    for (key, ours) in [
        ("p50", latency.value_at_quantile(0.5)),
        ("p99", latency.value_at_quantile(0.99)),
        ("max", latency.max()),
    ] {
        let theirs = number(&seen, key);
        assert!(
            latency.equivalent(theirs, ours),
            "{key}: python {theirs}, rust {ours}"
        );
    }

    let version = seen["package_version"].as_str().unwrap_or("");
    if seen["tags_supported"] != Value::Bool(true) {
        assert!(
            tags_too_old(version),
            "hdrhistogram {version} dropped tagged lines: {seen}"
        );
        eprintln!("note: hdrhistogram {version} predates tags; tagged lines not checked");
        return;
    }
    let uncorrected = sum(&intervals, |s| &s.uncorrected).len();
    let send_lag = sum(&intervals, |s| &s.send_lag).len();
    assert_eq!(number(&seen, "uncorrected_count"), uncorrected, "{seen}");
    assert_eq!(number(&seen["tag_counts"], "send-lag"), send_lag, "{seen}");
}

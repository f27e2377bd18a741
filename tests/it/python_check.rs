//! Cross-checks the interval log against an independent reader: the Python
//! HdrHistogram package, run through tests/hlog_check.py. A log that only
//! metron's own reader can read would be of little use to the tools that
//! plot and merge these logs.
//!
//! Needs python3 and `pip install hdrhistogram`. Without them the test
//! fails where CI is set, and elsewhere prints a note and passes.

use std::time::{Duration, UNIX_EPOCH};

use metron::report::hlog::write_log;
use serde_json::Value;

use crate::common::python::*;

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

//! Reading a run's JSON document as the tests of real servers do: its
//! counts by path, the ledger, its histograms, and a run of the binary
//! that writes one.

use std::path::Path;

use hdrhistogram::Histogram;
use serde_json::Value;

use super::files::read_json;
use super::{metron, servers, stderr, stdout};

/// A run of the binary with `args` and `--json`: its document and its text
/// report; it must have succeeded.
pub fn run(args: &[&str]) -> (Value, String) {
    let dir = servers::fresh_dir("run");
    let json = dir.join("run.json").display().to_string();
    let mut argv = args.to_vec();
    argv.splice(0..0, ["--json", json.as_str()]);
    let out = metron(&argv);
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "metron {argv:?}: {}\n{text}",
        stderr(&out)
    );
    let doc = read_json(Path::new(&json));
    let _ = std::fs::remove_dir_all(&dir);
    (doc, text)
}

/// A count of the document's `counters`, by its path there
/// (`errors.status`).
pub fn counter(doc: &Value, path: &str) -> u64 {
    let mut v = &doc["counters"];
    for key in path.split('.') {
        v = &v[key];
    }
    v.as_u64()
        .unwrap_or_else(|| panic!("counters.{path} is not a count: {}", doc["counters"]))
}

/// The requests lost to read, write and timeout errors.
pub fn lost(doc: &Value) -> u64 {
    ["errors.read", "errors.write", "errors.timeout"]
        .iter()
        .map(|p| counter(doc, p))
        .sum()
}

/// A server's own count of messages (`what`: "received", "sent")
/// against the ledger: every completed message is counted, and at most
/// those still in flight when the run ended besides (a run does not wait
/// for their answers, which may or may not have reached the server, or
/// left it).
pub fn assert_counted_by_server(doc: &Value, what: &str, n: u64) {
    let completed = counter(doc, "completed");
    let in_flight = counter(doc, "in_flight");
    assert!(
        (completed..=completed + in_flight).contains(&n),
        "the server {what} {n} messages; metron completed {completed}, {in_flight} in flight"
    );
}

/// The ledger: due = completed + lost + in flight + never sent.
pub fn assert_ledger(doc: &Value) {
    let c = &doc["counters"];
    assert_eq!(
        counter(doc, "due"),
        counter(doc, "completed")
            + lost(doc)
            + counter(doc, "in_flight")
            + counter(doc, "never_sent"),
        "the ledger does not balance: {c}"
    );
}

/// A histogram of the document, by its name under `histograms` (or under
/// `events` for `first_histogram` and `gap_histogram`).
pub fn histogram(v: &Value) -> Histogram<u64> {
    metron::report::json::decode(v.as_str().expect("a histogram")).expect("it decodes")
}

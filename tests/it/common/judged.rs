//! Helpers of the tests of arrival processes, SLO verdicts and sweeps:
//! targets that answer late, the documents a run and a sweep write, and
//! the lines of a report.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use metron::report::json::Document;
use metron::report::sweep::SweepDocument;
use metron::serve::{ServeConfig, Server};

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
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The JSON document of a sweep, as `metron sweep --json FILE` wrote it.
pub fn sweep_document(path: &Path) -> SweepDocument {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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

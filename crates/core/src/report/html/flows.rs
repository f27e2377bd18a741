//! A flow's blocks: one row per step, and the visits' ledger and
//! durations.

use std::fmt::Write;

use super::blocks::grid;
use super::fmt::{count, escape};
use super::tables::{at, endpoint_row, latency_or_missing};
use crate::report::json::Document;

/// The steps' table and the visits' ledger, when the run was a flow.
pub fn section(page: &mut String, doc: &Document) {
    let Some(v) = &doc.visits else {
        return;
    };
    page.push_str("<section>\n<h2>Visits and steps</h2>\n");
    let failed: Vec<String> = v
        .failed_by
        .iter()
        .map(|(reason, n)| format!("{} {}", escape(reason), count(*n)))
        .collect();
    let failed = if failed.is_empty() {
        String::new()
    } else {
        format!(" ({})", failed.join(", "))
    };
    let _ = writeln!(
        page,
        "<p>{} visits due: {} started, {} completed, {} failed{failed}, {} in flight at the end, \
         {} never started. Completed visits took {} at the median and {} at p99, from their \
         scheduled start.</p>",
        count(v.due),
        count(v.started),
        count(v.completed),
        count(v.failed),
        count(v.in_flight),
        count(v.never_started),
        latency_or_missing(at(&v.duration, 50.0)),
        latency_or_missing(at(&v.duration, 99.0)),
    );
    page.push_str(
        "<p>Each step is timed from when it should have gone: the first from the visit's \
         scheduled start, each later one from the end of the step before plus its rests. \
         The uncorrected p99 runs from the send.</p>\n",
    );
    let rows: Vec<Vec<String>> = doc
        .endpoints
        .iter()
        .map(|e| {
            let mut row = endpoint_row(e);
            let unc = e.uncorrected.as_ref().and_then(|u| at(u, 99.0));
            row.push(latency_or_missing(unc));
            row.push(escape(&e.status_codes.to_string()));
            row
        })
        .collect();
    grid(
        page,
        "numbers endpoints",
        &[
            "step",
            "completed",
            "errors",
            "p50",
            "p99",
            "p99.9",
            "uncorrected p99",
            "status codes",
        ],
        &rows,
    );
    page.push_str("</section>\n");
}

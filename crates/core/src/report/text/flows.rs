//! A flow's lines: one row per step (each step's requests, as the
//! endpoints table gives a requests file's) and the visits' ledger and
//! durations.

use super::*;
use crate::stats::VisitStats;

/// One row per step: its requests, errors, corrected percentiles, the
/// uncorrected p99 beside them (a stall the corrected figures show and
/// the uncorrected hide), and its status codes.
pub(super) fn write_steps(out: &mut impl Write, steps: &[EndpointStats]) -> io::Result<()> {
    writeln!(
        out,
        "  Steps (corrected latency; uncorrected p99 beside it)"
    )?;
    writeln!(
        out,
        "  {:>10} {:>8} {:>9} {:>9} {:>9} {:>9}  {:<20} Status codes",
        "Requests", "Errors", "50%", "99%", "99.9%", "unc. 99%", "Step"
    )?;
    let empty = crate::stats::new_histogram();
    for e in steps {
        let h = e.latency.as_ref().unwrap_or(&empty);
        let u = e.uncorrected.as_ref().unwrap_or(&empty);
        let at = |h, p| time_or_none(summary::percentile(h, p));
        writeln!(
            out,
            "  {:>10} {:>8} {:>9} {:>9} {:>9} {:>9}  {:<20} {}",
            e.completed,
            e.errors,
            at(h, 50.0),
            at(h, 99.0),
            at(h, 99.9),
            at(u, 99.0),
            e.name,
            e.status_codes
        )?;
    }
    Ok(())
}

/// `Visits: …` and the completed visits' durations.
pub(super) fn write_visits(out: &mut impl Write, v: &VisitStats) -> io::Result<()> {
    let mut failed = String::new();
    if !v.failed.is_empty() {
        let reasons: Vec<String> = v.failed.iter().map(|(r, n)| format!("{r}: {n}")).collect();
        failed = format!(" ({})", reasons.join(", "));
    }
    writeln!(
        out,
        "  Visits: {} due, {} started, {} completed, {} failed{failed}, {} in flight at end, {} never started",
        v.due(),
        v.started,
        v.completed,
        v.failed_total(),
        v.in_flight,
        v.never_started
    )?;
    let at = |p| time_or_none(summary::percentile(&v.duration, p));
    writeln!(
        out,
        "  Visit duration (completed): 50% {}, 99% {}, 99.9% {}, max {}",
        at(50.0),
        at(99.0),
        at(99.9),
        time_or_none(summary::maximum(&v.duration))
    )
}

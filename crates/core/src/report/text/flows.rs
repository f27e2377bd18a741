//! A flow's lines: one row per step (each step's requests, as the
//! endpoints table gives a requests file's) and the visits' ledger and
//! durations.

use super::*;
use crate::stats::VisitStats;

/// One row per step: its requests, errors, corrected percentiles, the
/// uncorrected p99 beside them (a stall the corrected figures show and
/// the uncorrected hide), and its status codes.
pub(super) fn write_steps(out: &mut impl Write, steps: &[EndpointStats]) -> io::Result<()> {
    if steps.is_empty() {
        return Ok(());
    }
    // Names run to 100 characters: the column is as wide as the longest
    // (a merged document's, not checked, no wider than a screen's width).
    let w = steps
        .iter()
        .map(|e| e.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(20, 200);
    writeln!(
        out,
        "  Steps (corrected latency; uncorrected p99 beside it)"
    )?;
    writeln!(
        out,
        "  {:>10} {:>8} {:>9} {:>9} {:>9} {:>9}  {:<w$} Status codes",
        "Requests", "Errors", "50%", "99%", "99.9%", "unc. 99%", "Step"
    )?;
    let empty = crate::stats::new_histogram();
    for e in steps {
        let h = e.latency.as_ref().unwrap_or(&empty);
        let u = e.uncorrected.as_ref().unwrap_or(&empty);
        let at = |h, p| time_or_none(summary::percentile(h, p));
        writeln!(
            out,
            "  {:>10} {:>8} {:>9} {:>9} {:>9} {:>9}  {:<w$} {}",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A long name widens the column, so the status codes stay in line;
    /// no steps at all (every name refused) prints no table.
    #[test]
    fn the_step_column_is_as_wide_as_the_longest_name() {
        let step = |name: &str| {
            let mut e = EndpointStats {
                name: name.into(),
                completed: 1,
                ..EndpointStats::default()
            };
            e.status_codes.count(200);
            e
        };
        let long = "a".repeat(40);
        let mut out = Vec::new();
        write_steps(&mut out, &[step("login"), step(&long)]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let columns: Vec<usize> = text
            .lines()
            .skip(1)
            .map(|l| {
                l.find("Status codes")
                    .or_else(|| l.rfind(" 200").map(|i| i + 1))
                    .unwrap()
            })
            .collect();
        assert!(columns.windows(2).all(|w| w[0] == w[1]), "{text}");
        let mut none = Vec::new();
        write_steps(&mut none, &[]).unwrap();
        assert!(none.is_empty());
    }
}

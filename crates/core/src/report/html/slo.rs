//! `--slo` on the page: the verdict in its style, and the run's table of
//! terms with their measured values.

use std::fmt::Write;

use crate::verdict::{SloReport, SloRow};

use super::blocks::{grid, verdict_class};
use super::fmt::{escape, latency_us, real, MISSING};

/// A term's measured value: a latency like the rest of the page, a share
/// in percent.
pub fn measured(row: &SloRow) -> String {
    let Some(v) = row.value.filter(|v| v.is_finite()) else {
        return MISSING.to_string();
    };
    match row.unit.as_str() {
        "us" if v >= 0.0 => latency_us(v.round() as u64),
        "share" => format!("{:.2}%", v * 100.0),
        unit => format!("{} {}", real(v), escape(unit)),
    }
}

/// The run's SLO: the verdict, then each term with what was measured.
pub fn section(page: &mut String, slo: &SloReport) {
    page.push_str("<section>\n<h2>SLO</h2>\n");
    let _ = writeln!(
        page,
        "<p class=\"verdict {}\">Objective <code>{}</code>: <strong>{}</strong></p>",
        verdict_class(slo.verdict),
        escape(&slo.spec),
        escape(&slo.sentence())
    );
    let rows: Vec<Vec<String>> = slo
        .rows
        .iter()
        .map(|r| {
            let met = match (r.met, r.value) {
                (true, _) => "met",
                (false, None) => "not measured",
                (false, Some(_)) => "NOT MET",
            };
            vec![
                format!("<code>{}</code>", escape(&r.term)),
                measured(r),
                met.to_string(),
            ]
        })
        .collect();
    grid(page, "numbers slo", &["term", "measured", "result"], &rows);
    page.push_str(
        "<p>Latency terms are judged on the corrected latency with every unfinished request \
         at its lower bound; errors are lost requests and error statuses as a share of the \
         due requests; rate is the completed share of the due requests.</p>\n</section>\n",
    );
}

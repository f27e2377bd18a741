//! `--slo` on the page: a verdict's outcome, its sentence and style, and
//! the run's table of terms with their measured values.

use std::fmt::Write;

use crate::report::json::{SloReport, SloRow};

use super::fmt::{escape, latency_us, real, MISSING};
use super::tables::grid;

/// What a verdict says, whatever its wording in the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Met,
    NotMet,
    /// The generator, not the server, limited the load (or nothing was
    /// measured): neither a pass nor a fail.
    Inconclusive,
}

impl Outcome {
    pub fn of(slo: &SloReport) -> Outcome {
        match slo.verdict.as_str() {
            "met" => Outcome::Met,
            "inconclusive" => Outcome::Inconclusive,
            _ if slo.reason.is_some() => Outcome::Inconclusive,
            _ => Outcome::NotMet,
        }
    }

    /// The style class of a verdict box and of a table row.
    pub fn class(self) -> &'static str {
        match self {
            Outcome::Met => "met",
            Outcome::NotMet => "failed",
            Outcome::Inconclusive => "unsure",
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Outcome::Met => "met",
            Outcome::NotMet => "not met",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// The verdict in words, as the text report ends: `met`, `not met
/// (p99<10ms)` naming the failed terms, or `inconclusive: why`. Not
/// escaped.
pub fn verdict_text(slo: &SloReport) -> String {
    let outcome = Outcome::of(slo);
    match outcome {
        Outcome::Met => outcome.word().to_string(),
        Outcome::NotMet => {
            let failed: Vec<&str> = slo
                .rows
                .iter()
                .filter(|r| !r.met)
                .map(|r| r.term.as_str())
                .collect();
            if failed.is_empty() {
                outcome.word().to_string()
            } else {
                format!("{} ({})", outcome.word(), failed.join(", "))
            }
        }
        Outcome::Inconclusive => match &slo.reason {
            Some(why) => format!("{}: {why}", outcome.word()),
            None => outcome.word().to_string(),
        },
    }
}

/// A term's measured value: a latency like the rest of the page, a share
/// in percent.
pub fn measured(row: &SloRow) -> String {
    let v = row.value;
    if !v.is_finite() {
        return MISSING.to_string();
    }
    match row.unit.as_str() {
        "us" if v >= 0.0 => latency_us(v.round() as u64),
        "share" => format!("{:.2}%", v * 100.0),
        unit => format!("{} {}", real(v), escape(unit)),
    }
}

/// The run's SLO: the verdict, then each term with what was measured.
pub fn section(page: &mut String, slo: &SloReport) {
    let outcome = Outcome::of(slo);
    page.push_str("<section>\n<h2>SLO</h2>\n");
    let _ = writeln!(
        page,
        "<p class=\"verdict {}\">Objective <code>{}</code>: <strong>{}</strong></p>",
        outcome.class(),
        escape(&slo.spec),
        escape(&verdict_text(slo))
    );
    let rows: Vec<Vec<String>> = slo
        .rows
        .iter()
        .map(|r| {
            let met = if r.met { "met" } else { "NOT MET" };
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

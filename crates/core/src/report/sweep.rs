//! What `metron sweep` prints and saves: a row per step (rate, achieved
//! rate, corrected latency, errors, send lag, verdict), the highest rate
//! that met the SLO, and the JSON document holding every step with its
//! histograms (`--json`), from which `--html` draws the knee.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::json::{unmeasured, RunConfig};
use crate::units::{format_rate, format_time_us};
use crate::verdict::{SloReport, Verdict};

/// Version of the sweep document's layout.
pub const SWEEP_SCHEMA: u32 = 1;

/// The whole sweep, as `--json` writes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepDocument {
    pub schema: u32,
    /// `sweep`: tells this document from a single run's.
    pub kind: String,
    pub metron_version: String,
    pub config: SweepConfig,
    pub steps: Vec<SweepStep>,
    /// The highest rate that met the SLO (`null` when none did).
    pub highest: Option<f64>,
    /// Why the sweep ended where it did, in a sentence.
    pub conclusion: String,
    /// Ctrl-C or SIGTERM ended the sweep before its search did: the steps
    /// are those that finished (a step cut short is left out).
    #[serde(default)]
    pub interrupted: bool,
}

/// How the sweep was asked for; `run` describes the first step's run (its
/// `rate` is that step's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepConfig {
    pub slo: String,
    pub from: f64,
    pub to: f64,
    /// Relative width of the final bracket (0.02 for 2%).
    pub resolution: f64,
    pub step_duration_s: f64,
    pub cooldown_s: f64,
    pub run: RunConfig,
}

/// One step: a full measured run at a constant rate, judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepStep {
    /// The rate offered, and the rate of completed requests, per second.
    pub rate: f64,
    pub achieved: f64,
    /// Corrected latency with unfinished requests at their lower bounds,
    /// in microseconds; `null` when nothing was measured.
    #[serde(default, deserialize_with = "unmeasured")]
    pub p50: Option<u64>,
    #[serde(default, deserialize_with = "unmeasured")]
    pub p99: Option<u64>,
    #[serde(default, deserialize_with = "unmeasured")]
    pub p999: Option<u64>,
    #[serde(default, deserialize_with = "unmeasured")]
    pub max: Option<u64>,
    /// Requests lost and error statuses.
    pub errors: u64,
    pub due: u64,
    /// `null` when the step sent nothing.
    #[serde(default, deserialize_with = "unmeasured")]
    pub send_lag_p99: Option<u64>,
    /// `met`, `not met` or `inconclusive`, with each term.
    pub slo: SloReport,
    /// HdrHistogram V2, deflated, base64: the completed requests'
    /// corrected latency, and the unfinished ones' lower bounds.
    pub corrected: String,
    pub unfinished: String,
}

/// The table's header.
pub fn write_header(out: &mut (impl Write + ?Sized)) -> io::Result<()> {
    writeln!(
        out,
        "  {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9}  Verdict",
        "Step", "Rate", "Achieved", "p50", "p99", "p99.9", "Max", "Errors", "Lag p99"
    )
}

/// One step's row, as soon as the step has run.
pub fn write_row(out: &mut (impl Write + ?Sized), n: usize, s: &SweepStep) -> io::Result<()> {
    // A figure the step did not measure prints as a dash, not 0.00us.
    let t = |us: Option<u64>| us.map_or_else(|| "-".to_string(), |us| format_time_us(us as f64));
    let verdict = match &s.slo.reason {
        Some(_) => Verdict::Inconclusive,
        None => s.slo.verdict,
    };
    writeln!(
        out,
        "  {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9}  {verdict}",
        n,
        format_rate(s.rate),
        format_rate(s.achieved),
        t(s.p50),
        t(s.p99),
        t(s.p999),
        t(s.max),
        s.errors,
        t(s.send_lag_p99),
    )
}

/// A rate as the conclusion says it: `3.80k requests/s`.
pub fn rate_words(r: f64) -> String {
    format!("{} requests/s", format_rate(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step that sent nothing has no latency and no send lag: dashes,
    /// not `0.00us`; and an older document's zeros read the same way.
    #[test]
    fn a_step_that_measured_nothing_prints_dashes() {
        let step: SweepStep = serde_json::from_value(serde_json::json!({
            "rate": 900.0, "achieved": 0.0, "p50": 0, "p99": 0, "p999": 0, "max": 0,
            "errors": 0, "due": 1800, "send_lag_p99": 0,
            "slo": {"spec": "p99<10ms", "verdict": "inconclusive", "reason": "nothing was sent",
                    "exit_status": 4, "rows": []},
            "corrected": "", "unfinished": ""
        }))
        .unwrap();
        assert_eq!((step.p99, step.send_lag_p99), (None, None));
        let mut out = Vec::new();
        write_row(&mut out, 1, &step).unwrap();
        let row = String::from_utf8(out).unwrap();
        assert!(row.starts_with("     1    900.00      0.00         -         -         -         -        0         -  "), "{row}");
        assert!(!row.contains("0.00us"), "{row}");
        let json = serde_json::to_value(&step).unwrap();
        assert!(
            json["p99"].is_null() && json["send_lag_p99"].is_null(),
            "{json}"
        );
    }
}

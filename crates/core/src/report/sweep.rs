//! What `metron sweep` prints and saves: a row per step (rate, achieved
//! rate, corrected latency, the phases the SLO bounds, errors, send lag,
//! verdict), the highest rate
//! that met the SLO, and the JSON document holding every step with its
//! histograms (`--json`), from which `--html` draws the knee.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::json::{unmeasured, RunConfig};
use crate::units::{format_rate, format_time_us};
use crate::verdict::{parse_slo, Measure, SloReport, Timed, Verdict};

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
    /// The rate offered, and the rate of completed requests, per second
    /// (of a flow: of visits asked for, and of visits started).
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
    /// A flow's visits: `rate` and `achieved` count visits started, and
    /// these say how they ended. Absent for runs of requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visits: Option<SweepVisits>,
}

/// How a step's visits ended (a flow).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepVisits {
    pub due: u64,
    pub completed: u64,
    pub failed: u64,
    /// Started and still under way when the step ended: with the others,
    /// `due = completed + failed + in_flight + never_started`. Absent from
    /// older documents.
    #[serde(default)]
    pub in_flight: u64,
    pub never_started: u64,
    /// Visits' durations at p99, unfinished ones at their lower bounds
    /// (µs); `null` when none ended or was under way.
    pub p99: Option<u64>,
}

/// A column of the table beside the whole-response latency: a term of
/// the SLO that bounds a phase (`first_event_p99`, `ttfb_p99`) or a share
/// the table has no column for (`goodput`, `visits_failed`), with the
/// value each step's verdict judged, so that the figure a verdict rests
/// on is on its row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judged {
    /// The term's name, as typed (`first_event_p99`): the header.
    pub name: String,
    /// Its place among the SLO's terms, and so among each step's rows.
    pub term: usize,
}

/// The columns of the phase and share terms of `spec` (none for the
/// whole-response latency, errors and rate, which the table has already).
pub fn judged_columns(spec: &str) -> Vec<Judged> {
    let Ok(slo) = parse_slo(spec) else {
        return Vec::new();
    };
    slo.terms
        .iter()
        .enumerate()
        .filter(|(_, t)| match t.measure {
            Measure::Time(timed, _) => timed != Timed::Latency,
            Measure::Goodput | Measure::VisitsFailed => true,
            Measure::Errors | Measure::Rate => false,
        })
        .map(|(term, t)| {
            let end = t.text.find(['<', '>']).unwrap_or(t.text.len());
            Judged {
                name: t.text[..end].trim().to_string(),
                term,
            }
        })
        .collect()
}

/// The table's header, with a column for each of `judged`.
pub fn write_header(out: &mut (impl Write + ?Sized), judged: &[Judged]) -> io::Result<()> {
    let extra: String = judged
        .iter()
        .map(|j| format!(" {:>w$}", j.name, w = width(j)))
        .collect();
    writeln!(
        out,
        "  {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}{extra} {:>8} {:>9}  Verdict",
        "Step", "Rate", "Achieved", "p50", "p99", "p99.9", "Max", "Errors", "Lag p99"
    )
}

/// A judged column is as wide as its name, and at least as the others.
fn width(j: &Judged) -> usize {
    j.name.len().max(9)
}

/// One step's row, as soon as the step has run.
pub fn write_row(
    out: &mut (impl Write + ?Sized),
    n: usize,
    s: &SweepStep,
    judged: &[Judged],
) -> io::Result<()> {
    // A figure the step did not measure prints as a dash, not 0.00us.
    let t = |us: Option<u64>| us.map_or_else(|| "-".to_string(), |us| format_time_us(us as f64));
    let verdict = match &s.slo.reason {
        Some(_) => Verdict::Inconclusive,
        None => s.slo.verdict,
    };
    let extra: String = judged
        .iter()
        .map(|j| {
            let row = s.slo.rows.get(j.term);
            let value = match (row.and_then(|r| r.value), row.map(|r| r.unit.as_str())) {
                (Some(share), Some("share")) => format!("{:.2}%", share * 100.0),
                (value, _) => t(value.map(|v| v as u64)),
            };
            format!(" {value:>w$}", w = width(j))
        })
        .collect();
    writeln!(
        out,
        "  {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}{extra} {:>8} {:>9}  {verdict}",
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

impl SweepDocument {
    /// What the sweep's rates count: `requests`, or a flow's `visits`.
    pub fn rates_count(&self) -> &'static str {
        match self.steps.iter().any(|s| s.visits.is_some()) {
            true => "visits",
            false => "requests",
        }
    }
}

/// A rate as the conclusion says it: `3.80k requests/s`.
pub fn rate_words(r: f64) -> String {
    rate_in(r, "requests")
}

/// A rate of `what` (`requests`, or a flow's `visits`) as the conclusion
/// says it: `120 visits/s`.
pub fn rate_in(r: f64, what: &str) -> String {
    format!("{} {what}/s", format_rate(r))
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
        write_row(&mut out, 1, &step, &[]).unwrap();
        let row = String::from_utf8(out).unwrap();
        assert!(row.starts_with("     1    900.00      0.00         -         -         -         -        0         -  "), "{row}");
        assert!(!row.contains("0.00us"), "{row}");
        let json = serde_json::to_value(&step).unwrap();
        assert!(
            json["p99"].is_null() && json["send_lag_p99"].is_null(),
            "{json}"
        );
    }

    /// Regression: a sweep judged on first events showed the
    /// whole-response p99 beside its verdict, and not the figure judged.
    /// A phase term gets a column of its own, with the value judged.
    #[test]
    fn a_phase_the_slo_bounds_has_its_column() {
        let judged = judged_columns("first_event_p99<500ms,p99<1s,errors<1%");
        assert_eq!(
            judged,
            [Judged {
                name: "first_event_p99".into(),
                term: 0
            }]
        );
        assert!(judged_columns("p99<1s,max<2s,errors<1%,rate>=99%").is_empty());
        let step: SweepStep = serde_json::from_value(serde_json::json!({
            "rate": 100.0, "achieved": 100.0, "p50": 2000, "p99": 3000, "p999": 4000,
            "max": 5000, "errors": 0, "due": 200, "send_lag_p99": 50,
            "slo": {"spec": "first_event_p99<500ms,p99<1s,errors<1%", "verdict": "met",
                    "exit_status": 0, "rows": [
                        {"term": "first_event_p99<500ms", "value": 302080.0, "unit": "us", "met": true},
                        {"term": "p99<1s", "value": 3000.0, "unit": "us", "met": true},
                        {"term": "errors<1%", "value": 0.0, "unit": "share", "met": true}]},
            "corrected": "", "unfinished": ""
        }))
        .unwrap();
        let mut out = Vec::new();
        write_header(&mut out, &judged).unwrap();
        write_row(&mut out, 1, &step, &judged).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("    Max first_event_p99   Errors"),
            "{text}"
        );
        assert!(
            lines[1].contains("  5.00ms        302.08ms        0"),
            "{text}"
        );
        // The column sits where its header is.
        let at = lines[0].find("first_event_p99").unwrap() + "first_event_p99".len();
        assert_eq!(&lines[1][at - 8..at], "302.08ms", "{text}");
    }

    /// `--llm`'s goodput share, which the table has no column for, gets
    /// one, printed as the share it is.
    #[test]
    fn a_goodput_term_has_its_column_in_percent() {
        let judged = judged_columns("ttft_p99<500ms,goodput>=99%,errors<1%");
        let names: Vec<&str> = judged.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["ttft_p99", "goodput"]);
        let step: SweepStep = serde_json::from_value(serde_json::json!({
            "rate": 10.0, "achieved": 10.0, "p50": 2000, "p99": 3000, "p999": 4000,
            "max": 5000, "errors": 0, "due": 20, "send_lag_p99": 50,
            "slo": {"spec": "ttft_p99<500ms,goodput>=99%,errors<1%", "verdict": "not met",
                    "exit_status": 3, "rows": [
                        {"term": "ttft_p99<500ms", "value": 120000.0, "unit": "us", "met": true},
                        {"term": "goodput>=99%", "value": 0.975, "unit": "share", "met": false},
                        {"term": "errors<1%", "value": 0.0, "unit": "share", "met": true}]},
            "corrected": "", "unfinished": ""
        }))
        .unwrap();
        let mut out = Vec::new();
        write_header(&mut out, &judged).unwrap();
        write_row(&mut out, 1, &step, &judged).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let at = lines[0].find(" goodput").unwrap() + " goodput".len();
        assert_eq!(
            lines[1][..at].trim_end().rsplit(' ').next(),
            Some("97.50%"),
            "{text}"
        );
    }
}

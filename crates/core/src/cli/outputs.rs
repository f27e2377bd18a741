//! The flags of the outputs a run feeds besides its text report: the JSON
//! document, the HTML page, the interval log, the CSV rows and the live
//! dashboard, each fed by the run's intervals and its result
//! (`crate::run::sink`). They are listed once, in [`SinkFlags::each`]:
//! the messages that name them and the sweep's refusals come from there.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueHint};

use crate::units::parse_duration;

/// The output flags of a run, as typed (part of every run's flags).
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct SinkFlags {
    /// Write the results as one JSON document to FILE ("-": stdout, and the text report goes to stderr)
    #[arg(long = "json", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub json: Option<PathBuf>,

    /// Write an HdrHistogram interval log (corrected latency; uncorrected and send lag tagged)
    #[arg(long = "hlog", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub hlog: Option<PathBuf>,

    /// Write a self-contained HTML report
    #[arg(long = "html", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub html: Option<PathBuf>,

    /// Write one CSV row per interval (completed, errors by kind, intended, achieved rate, percentiles), as the run goes
    #[arg(long = "csv", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub csv: Option<PathBuf>,

    /// Serve a live page of the run at ADDR (default 127.0.0.1:0, a free port; the address is printed): per-interval charts by Server-Sent Events, /series.json, /metrics for Prometheus, then the final report. Give ADDR with '=': --dashboard=127.0.0.1:9090
    #[arg(long = "dashboard", value_name = "ADDR", num_args = 0..=1, require_equals = true, default_missing_value = "127.0.0.1:0")]
    pub dashboard: Option<String>,

    /// How long the dashboard stays up after the run [default: until Ctrl-C in a terminal's foreground; else it closes with the run]
    #[arg(long = "dashboard-linger", value_parser = parse_duration, value_name = "T")]
    pub dashboard_linger: Option<Duration>,
}

/// The outputs, by kind: `crate::run::sink` opens each by an exhaustive
/// match on it, so that an output added here cannot go unopened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Json,
    Html,
    Hlog,
    Csv,
    Dashboard,
}

/// One output: what it is, its flag, and what `metron sweep` does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    pub kind: Kind,
    pub flag: &'static str,
    pub in_sweep: InSweep,
}

/// What `metron sweep` does with an output of its steps' runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InSweep {
    /// The sweep writes one of its own, over all its steps.
    Writes,
    /// The sweep refuses it, for this reason.
    Refuses(&'static str),
}

impl SinkFlags {
    /// Every output, with whether it is asked for, in the order messages
    /// name them: the one list of the outputs.
    pub fn each(&self) -> [(Output, bool); 5] {
        let output = |kind, flag, in_sweep| Output {
            kind,
            flag,
            in_sweep,
        };
        [
            (
                output(Kind::Json, "--json", InSweep::Writes),
                self.json.is_some(),
            ),
            (
                output(Kind::Html, "--html", InSweep::Writes),
                self.html.is_some(),
            ),
            (
                output(
                    Kind::Hlog,
                    "--hlog",
                    InSweep::Refuses(
                        "a log per step is not kept; --json holds every step's histograms",
                    ),
                ),
                self.hlog.is_some(),
            ),
            (
                output(
                    Kind::Csv,
                    "--csv",
                    InSweep::Refuses(
                        "the sweep keeps no time series; its table is one row per step",
                    ),
                ),
                self.csv.is_some(),
            ),
            (
                output(
                    Kind::Dashboard,
                    "--dashboard",
                    InSweep::Refuses("it follows one run; the sweep prints a row per step"),
                ),
                self.dashboard.is_some() || self.dashboard_linger.is_some(),
            ),
        ]
    }

    /// Whether any output is asked for.
    pub fn any(&self) -> bool {
        self.each().iter().any(|(_, given)| *given)
    }

    /// Every output's flag, as a message lists them: `--json, --html,
    /// --hlog, --csv and --dashboard`.
    pub fn named() -> String {
        let flags: Vec<&str> = SinkFlags::default()
            .each()
            .iter()
            .map(|(o, _)| o.flag)
            .collect();
        match flags.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The JSON document goes to stdout (`--json -`).
    pub fn json_on_stdout(&self) -> bool {
        self.json.as_deref() == Some(Path::new("-"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_every_output_in_order() {
        assert_eq!(
            SinkFlags::named(),
            "--json, --html, --hlog, --csv and --dashboard"
        );
    }

    #[test]
    fn the_dashboards_linger_asks_for_the_dashboard() {
        let flags = SinkFlags {
            dashboard_linger: Some(Duration::from_secs(1)),
            ..SinkFlags::default()
        };
        assert!(flags.any());
        assert!(!SinkFlags::default().any());
    }
}

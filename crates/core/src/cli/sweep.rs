//! `metron sweep`: every flag of a run, plus the range and steps of the
//! search for the highest rate that meets an SLO.

use std::time::Duration;

use clap::Args;

use super::bench::BenchArgs;
use super::outputs::{InSweep, SinkFlags};
use crate::units::{parse_duration, parse_si_f64};

/// What `metron sweep --help` says it does.
pub const ABOUT: &str = "Find the highest rate that meets an SLO: constant-rate steps from --from, doubling until the SLO fails or --to is reached, then bisection to --resolution.";

/// The sweep's own flags, and those of every step's run.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// First rate tried, in requests per second (SI suffixes: 500, 2.5k)
    #[arg(long = "from", value_parser = parse_si_f64, value_name = "R1")]
    pub from: f64,

    /// Highest rate tried
    #[arg(long = "to", value_parser = parse_si_f64, value_name = "R2")]
    pub to: f64,

    /// Stop bisecting when the bracket is this narrow, relative to the rate that met the SLO
    #[arg(long = "resolution", default_value = "2%", value_parser = parse_percent, value_name = "PCT")]
    pub resolution: f64,

    /// Length of each step's run (its --warmup included)
    #[arg(long = "step-duration", default_value = "20s", value_parser = parse_duration, value_name = "T")]
    pub step_duration: Duration,

    /// Pause between steps, so that the server drains what the last one left
    #[arg(long = "cooldown", default_value = "2s", value_parser = parse_duration, value_name = "T")]
    pub cooldown: Duration,

    #[command(flatten)]
    pub run: BenchArgs,
}

/// The run flags (long names) that a sweep refuses besides the outputs
/// [`SinkFlags::each`] marks so (the sweep's check says why for each).
const REFUSED: [&str; 11] = [
    "rate",
    "rate-profile",
    "duration",
    "timeseries",
    "thread-timeseries",
    "timeseries-interval",
    "histogram",
    "interval",
    "shard",
    "start-at",
    "dashboard-linger",
];

/// The long names of every run flag a sweep refuses.
pub fn refused() -> Vec<&'static str> {
    let outputs = SinkFlags::default()
        .each()
        .into_iter()
        .filter(|(o, _)| matches!(o.in_sweep, InSweep::Refuses(_)))
        .map(|(o, _)| o.flag.trim_start_matches('-'));
    outputs.chain(REFUSED).collect()
}

/// `2%` or `0.5%` as a fraction.
fn parse_percent(s: &str) -> Result<f64, String> {
    let n = s
        .trim()
        .strip_suffix('%')
        .ok_or_else(|| format!("'{s}' is not a percentage; write e.g. 2%"))?;
    let v: f64 = n
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage; write e.g. 2%"))?;
    if !(v > 0.0 && v < 100.0) {
        return Err(format!("'{s}': the resolution is above 0% and below 100%"));
    }
    Ok(v / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{parse, Command};

    /// Regression: `metron sweep --help` listed `--timeseries-interval`,
    /// which only sets what `--timeseries` prints, and the sweep refuses
    /// that. The help lists no flag the sweep refuses, and every run flag
    /// it takes.
    #[test]
    fn the_sweeps_help_lists_no_flag_it_refuses() {
        let help = crate::cli::sweep_command().render_long_help().to_string();
        // The long names each flag's entry begins with (`-c, --connections
        // <N>`), not those its description mentions.
        let listed: Vec<&str> = help
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with('-'))
            .flat_map(|l| l.split([' ', ',', '=', '[']).take(3))
            .filter_map(|w| w.strip_prefix("--"))
            .collect();
        for flag in refused() {
            assert!(!listed.contains(&flag), "--{flag}:\n{help}");
        }
        for flag in ["slo", "connections", "sse", "json", "from"] {
            assert!(listed.contains(&flag), "--{flag}: {listed:?}");
        }
    }

    #[test]
    fn a_sweep_takes_every_run_flag() {
        let cmd = parse([
            "metron",
            "sweep",
            "--slo",
            "p99<10ms",
            "--from",
            "1k",
            "--to",
            "8k",
            "-c",
            "50",
            "--resolution",
            "5%",
            "--step-duration",
            "3s",
            "--lag-allowance",
            "5ms",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let Command::Sweep(s) = cmd else {
            panic!("not a sweep")
        };
        assert_eq!((s.from, s.to, s.resolution), (1000.0, 8000.0, 0.05));
        assert_eq!(s.step_duration, Duration::from_secs(3));
        assert_eq!(s.cooldown, Duration::from_secs(2));
        assert_eq!(s.run.connections, crate::cli::Connections::Fixed(50));
        assert!(s.run.slo.is_some());
        assert_eq!(s.run.lag_allowance, Some(Duration::from_millis(5)));
        assert_eq!(
            parse_percent("2"),
            Err("'2' is not a percentage; write e.g. 2%".into())
        );
    }
}

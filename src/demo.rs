//! `metron demo`: a short rate-mode run against the built-in target, which
//! stops answering once for a moment, to show what coordinated omission
//! hides. Corrected and uncorrected percentiles are printed side by side.

use std::io::Write;
use std::time::Duration;

use clap::{Args, Parser};

use metron_core::cli::config::Config;
use metron_core::cli::units::{parse_duration, parse_si_f64};
use metron_core::cli::BenchArgs;
use metron_core::engine::Stop;
use metron_core::report::units::format_time_us;
use metron_core::stats::RunStats;
use metron_serve::{ServeConfig, Server, StallPlan};

use crate::Error;

/// `metron demo`: see what coordinated omission hides, in ten seconds.
#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Duration of the demo run
    #[arg(short = 'd', long = "duration", default_value = "10s", value_parser = parse_duration, value_name = "T")]
    pub duration: Duration,

    /// Request rate of the demo run
    #[arg(short = 'R', long = "rate", default_value = "2000", value_parser = parse_si_f64, value_name = "R")]
    pub rate: f64,

    /// How long the target stalls, once, 40% into the run
    #[arg(long = "stall-for", default_value = "1.4s", value_parser = parse_duration, value_name = "T")]
    pub stall_for: Duration,
}

const PERCENTILES: [f64; 8] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];

/// Where the stall starts, as a share of the run.
const STALL_AT: f64 = 0.4;

pub fn run(args: &DemoArgs, out: &mut dyn Write) -> Result<(), Error> {
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
    let stall_at = args.duration.mul_f64(STALL_AT);
    let stall = StallPlan::once(stall_at, args.stall_for).map_err(invalid)?;
    // A stall still on when the run ends leaves nothing to compare.
    if stall_at + args.stall_for >= args.duration {
        let longest = args.duration.mul_f64(1.0 - STALL_AT);
        let shortest = args.stall_for.div_f64(1.0 - STALL_AT);
        return Err(invalid(format!(
            "--stall-for {} does not end within the {} run (it starts {} in); use --stall-for below {} or -d above {}",
            secs(args.stall_for),
            secs(args.duration),
            secs(stall_at),
            secs(longest),
            secs(shortest),
        ))
        .into());
    }
    let server = Server::start(ServeConfig {
        stall: Some(stall),
        ..ServeConfig::default()
    })?;
    let url = format!("http://{}/", server.addr());
    // The stalled requests are the point of the demo: they must be
    // answered and measured, not given up on at the default timeout.
    let timeout = args.stall_for + Duration::from_secs(2);
    let bench = BenchArgs::try_parse_from([
        "metron".to_string(),
        "-t2".into(),
        "-c20".into(),
        format!("-d{}ms", args.duration.as_millis()),
        format!("-R{}", args.rate),
        format!("--timeout={}ms", timeout.as_millis()),
        url.clone(),
    ])
    .expect("the demo's own flags parse");
    let cfg = Config::from_args(&bench)?;
    writeln!(
        out,
        "metron demo: the built-in target at {url} answers at once, except that {} into the run it\n\
         stops answering for {} (like a GC pause or a stopped process). metron sends {} requests/s on\n\
         a fixed schedule regardless.\n",
        secs(stall_at),
        secs(args.stall_for),
        args.rate
    )?;
    let stop = Stop::new();
    let _signals = metron_core::signals::stop_on_interrupt(stop.clone())?;
    let outcome = metron_core::bench_config(&cfg, &stop, out)?;
    side_by_side(out, &outcome.stats)?;
    explain(out, &outcome.stats, args)?;
    server.shutdown();
    Ok(())
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

fn side_by_side(out: &mut dyn Write, s: &RunStats) -> std::io::Result<()> {
    writeln!(out, "\n  Percentile    Corrected  Uncorrected")?;
    for p in PERCENTILES {
        let c = s.latency.value_at_percentile(p) as f64;
        let u = s.uncorrected.value_at_percentile(p) as f64;
        writeln!(
            out,
            "  {:>9.3}%  {:>10}  {:>11}",
            p,
            format_time_us(c),
            format_time_us(u)
        )?;
    }
    Ok(())
}

fn explain(out: &mut dyn Write, s: &RunStats, args: &DemoArgs) -> std::io::Result<()> {
    let stalled = (args.stall_for.as_secs_f64() * args.rate).round();
    let c99 = format_time_us(s.latency.value_at_percentile(99.0) as f64);
    let u99 = format_time_us(s.uncorrected.value_at_percentile(99.0) as f64);
    writeln!(
        out,
        "\nCorrected latency runs from the moment each request was due on the schedule, so the ~{stalled} requests\n\
         that fell due during the {} stall carry the wait a real user would have had (p99 {c99}).\n\
         Uncorrected latency runs from the moment a request was actually written: while the server was\n\
         stalled every connection was busy, nothing more was sent, and the wait went unrecorded (p99 {u99}) --\n\
         this is coordinated omission.\n\
         Trust the corrected column; a wide gap between the two means the server stalled, or that the\n\
         load generator could not keep its schedule (check the Send lag line).",
        secs(args.stall_for)
    )
}

//! `metron demo`: a short rate-mode run against the built-in target, which
//! stops answering once for a moment, to show what coordinated omission
//! hides. Corrected and uncorrected percentiles are printed side by side.

use std::io::Write;
use std::time::Duration;

use clap::{Args, Parser};

use metron_core::cli::config::Config;
use metron_core::cli::BenchArgs;
use metron_core::engine::Stop;
use metron_core::http::h2::DEFAULT_MAX_STREAMS;
use metron_core::stats::RunStats;
use metron_core::units::format_time_us;
use metron_core::units::{parse_duration, parse_si_f64};
use metron_serve::{BadCert, Http2, Http3, ServeConfig, Server, StallPlan};

use crate::Error;

/// `metron demo`'s one line, in its help and its man page.
pub const ABOUT: &str =
    "Load a built-in target that stalls once, and show corrected vs uncorrected latency.";

/// `metron demo`: see what coordinated omission hides, in ten seconds.
#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Duration of the demo run [default: 10s, or longer to fit --stall-for]
    #[arg(short = 'd', long = "duration", value_parser = parse_duration, value_name = "T")]
    pub duration: Option<Duration>,

    /// Request rate of the demo run
    #[arg(short = 'R', long = "rate", default_value = "2000", value_parser = parse_si_f64, value_name = "R")]
    pub rate: f64,

    /// How long the target stalls, once, 40% into the run; the demo waits it out, however long
    #[arg(long = "stall-for", default_value = "1.4s", value_parser = parse_duration, value_name = "T")]
    pub stall_for: Duration,

    /// Speak HTTP/2 (h2c) to the target: each connection carries up to 100 requests at once
    #[arg(long = "http2", visible_alias = "h2", conflicts_with = "http3")]
    pub http2: bool,

    /// Speak HTTP/3 over QUIC to the target (TLS with a generated certificate, so -k): each connection carries up to 100 requests at once
    #[arg(long = "http3", visible_alias = "h3")]
    pub http3: bool,
}

impl DemoArgs {
    /// The multiplexing protocol asked for, by name, if any.
    fn multiplexed(&self) -> Option<&'static str> {
        match (self.http2, self.http3) {
            (true, _) => Some("HTTP/2"),
            (_, true) => Some("HTTP/3"),
            _ => None,
        }
    }
}

/// Connections of the demo run.
const CONNECTIONS: usize = 20;

/// HTTP/2 streams per connection in the demo run (`-m`'s default).
const STREAMS: usize = DEFAULT_MAX_STREAMS as usize;

const PERCENTILES: [f64; 8] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];

/// Where the stall starts, as a share of the run.
const STALL_AT: f64 = 0.4;

/// Where the stall ends at the latest, as a share of a run whose length
/// the demo chooses: the rest shows the server recovering.
const STALL_ENDS_BY: f64 = 0.8;

/// The run's length when `-d` is not given.
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// The run's length: `-d` as given, which must leave the stall time to
/// end, or else 10 s, lengthened to whole seconds for a long stall so that
/// the demo waits out any stall (README, "Two commands").
fn duration(args: &DemoArgs) -> Result<Duration, String> {
    let Some(d) = args.duration else {
        let fits = args
            .stall_for
            .div_f64(STALL_ENDS_BY - STALL_AT)
            .as_secs_f64()
            .ceil();
        return Ok(DEFAULT_DURATION.max(Duration::from_secs_f64(fits)));
    };
    let stall_at = d.mul_f64(STALL_AT);
    // A stall still on when the run ends leaves nothing to compare.
    if stall_at + args.stall_for >= d {
        return Err(format!(
            "--stall-for {} does not end within the {} run (it starts {} in); use --stall-for below {}, -d above {}, or no -d to let the run fit the stall",
            secs(args.stall_for),
            secs(d),
            secs(stall_at),
            secs(d.mul_f64(1.0 - STALL_AT)),
            secs(args.stall_for.div_f64(1.0 - STALL_AT)),
        ));
    }
    Ok(d)
}

pub fn run(args: &DemoArgs, out: &mut dyn Write) -> Result<(), Error> {
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
    let duration = duration(args).map_err(invalid)?;
    let stall_at = duration.mul_f64(STALL_AT);
    let stall = StallPlan::once(stall_at, args.stall_for).map_err(invalid)?;
    let server = Server::start(ServeConfig {
        stall: Some(stall),
        http2: args.http2.then(Http2::default),
        http3: args.http3.then(Http3::default),
        // QUIC is always encrypted: a certificate of the moment, which
        // the run skips verifying (-k).
        tls: args.http3.then_some(BadCert::Untrusted),
        ..ServeConfig::default()
    })?;
    let scheme = if args.http3 { "https" } else { "http" };
    let url = format!("{scheme}://{}/", server.addr());
    // The stalled requests are the point of the demo: they must be
    // answered and measured, not given up on at the default timeout.
    let timeout = args.stall_for + Duration::from_secs(2);
    let mut argv = vec![
        "metron".to_string(),
        "-t2".into(),
        format!("-c{CONNECTIONS}"),
        format!("-d{}ms", duration.as_millis()),
        format!("-R{}", args.rate),
        format!("--timeout={}ms", timeout.as_millis()),
    ];
    if args.http2 {
        argv.extend(["--http2".into(), format!("-m{STREAMS}")]);
    }
    if args.http3 {
        argv.extend(["--http3".into(), "-k".into(), format!("-m{STREAMS}")]);
    }
    argv.push(url.clone());
    let bench = BenchArgs::try_parse_from(argv).expect("the demo's own flags parse");
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
    if let Some(protocol) = args.multiplexed() {
        let streams = CONNECTIONS * STREAMS;
        let found = if s.counters.queued == 0 {
            format!(
                "Here every request found a free stream, so the uncorrected column saw the whole stall\n\
                 (p99 {u99}): with streams to spare, {protocol} leaves nothing to omit. Coordinated omission\n\
                 comes back once all {streams} streams are busy (a higher -R, or a longer --stall-for)."
            )
        } else {
            format!(
                "{} requests found all {streams} streams busy and went out late; their wait is the part the\n\
                 uncorrected column leaves out (p99 {u99}): coordinated omission, later and smaller than\n\
                 over HTTP/1.1, but still there.",
                s.counters.queued
            )
        };
        return writeln!(
            out,
            "\nCorrected latency runs from the moment each request was due on the schedule, so the ~{stalled} requests\n\
             that fell due during the {} stall carry the wait a real user would have had (p99 {c99}).\n\
             Over {protocol} a due request needs only a free stream, not an idle connection: during the stall\n\
             metron went on sending on schedule into {CONNECTIONS} connections x {STREAMS} streams.\n\
             {found}\n\
             Trust the corrected column; the Send lag line says how long requests waited for a stream.",
            secs(args.stall_for),
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cli: &[&str]) -> DemoArgs {
        let mut argv = vec!["metron", "demo"];
        argv.extend_from_slice(cli);
        match crate::parse(argv).unwrap() {
            crate::Command::Demo(args) => args,
            other => panic!("not the demo: {other:?}"),
        }
    }

    #[test]
    fn the_default_run_is_ten_seconds() {
        assert_eq!(duration(&args(&[])), Ok(Duration::from_secs(10)));
        assert_eq!(
            duration(&args(&["--stall-for", "4s"])),
            Ok(Duration::from_secs(10))
        );
    }

    /// Without -d the demo waits out any stall: the run grows to fit it,
    /// with a fifth of the run left to show the recovery.
    #[test]
    fn without_d_the_run_grows_to_fit_a_long_stall() {
        let d = duration(&args(&["--stall-for", "9s"])).unwrap();
        assert_eq!(d, Duration::from_secs(23));
        assert!(d.mul_f64(STALL_AT) + Duration::from_secs(9) <= d.mul_f64(STALL_ENDS_BY));
        let d = duration(&args(&["--stall-for", "1h"])).unwrap();
        assert_eq!(d, Duration::from_secs(9000));
    }

    #[test]
    fn a_given_d_is_kept_or_refused_with_the_fixes_named() {
        assert_eq!(
            duration(&args(&["-d", "3s", "--stall-for", "1s"])),
            Ok(Duration::from_secs(3))
        );
        let e = duration(&args(&["-d", "2s", "--stall-for", "3s"])).unwrap_err();
        assert!(e.contains("does not end within the 2.0s run"), "{e}");
        assert!(e.contains("or no -d to let the run fit the stall"), "{e}");
    }
}

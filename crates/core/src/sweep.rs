//! `metron sweep`: the highest rate that meets an SLO.
//!
//! Each step is a full measured run at a constant rate, judged as `--slo`
//! judges a run. Rates double from `--from` until a step fails the SLO or
//! `--to` is reached; then the bracket between the highest rate that met
//! it and the lowest that did not is halved until it is narrower than
//! `--resolution`. A step in which the generator fell behind ends the
//! sweep: the server was not offered that load, so the limit found would
//! be metron's, not the server's. So does a step whose objective measured
//! nothing (a first event, when no response carried one).

use std::io::{self, Write};
use std::sync::Arc;
use std::time::Duration;

use crate::cli::config::{Config, ConfigError};
use crate::cli::outputs::InSweep;
use crate::cli::sweep::SweepArgs;
use crate::cli::BenchArgs;
use crate::engine::Stop;
use crate::report::html::render_sweep;
use crate::report::sweep::{
    judged_columns, rate_in, write_header, write_row, SweepConfig, SweepDocument, SweepStep,
    SweepVisits, SWEEP_SCHEMA,
};
use crate::report::text;
use crate::run::sink::{json_text, write_file, write_json};
use crate::run::{bench_config, describe, run_facts, Error};
use crate::schedule::MAX_RATE;
use crate::stats::codec::encode;
use crate::stats::{summary, StopCause};
use crate::units;
use crate::verdict::{generator_limit, Slo, SloReport, Verdict};

/// Warm-up of each step unless `--warmup` says otherwise.
pub const STEP_WARMUP: Duration = Duration::from_secs(5);
/// Most steps a sweep runs; bisection to any resolution above 0.01%
/// needs far fewer.
const MAX_STEPS: usize = 64;

/// Runs the sweep, printing a row per step and the conclusion. Exit
/// status (through the error): 0 when some rate met the SLO, 3 when none
/// did, 4 when the generator was the limit or a step could not be judged.
pub fn run(args: &SweepArgs, out: &mut dyn Write) -> Result<(), Error> {
    let (slo, base) = check(args)?;
    let started = std::time::Instant::now();
    let stop = Stop::new();
    let _signals = crate::signals::stop_on_interrupt(stop.clone())?;
    let first = step_config(&base, args.from)?;
    let run = &first.run;
    // The steps' runs are configured without the objective (the sweep
    // judges them itself), so its terms are checked against the first.
    crate::cli::config::check_slo_measured(&slo, run).map_err(Error::Config)?;
    // A flow's rate counts visits.
    let what = match crate::engine::has_flow(run)? {
        true => "visits",
        false => "requests",
    };
    writeln!(
        out,
        "Sweeping {} from {} to {}: SLO {}, steps of {} ({} warm-up), resolution {}%",
        run.url,
        rate_in(args.from, what),
        rate_in(args.to, what),
        slo.spec,
        units::format_run_duration(args.step_duration),
        units::format_run_duration(run.warmup),
        args.resolution * 100.0
    )?;
    text::write_connections_line(
        out,
        run.threads,
        run.connections(),
        run.protocols.banner(None).as_deref(),
    )?;
    if let Some(c) = &run.calls {
        text::write_call_line(out, &c.method, c.streaming)?;
    }
    if let Some(g) = run.growth {
        text::write_growth_line(out, g.max, g.from_open_files)?;
    }
    // Phases the SLO bounds (first events, say) get columns beside the
    // whole-response latency: the figure each verdict judged.
    let judged = judged_columns(&slo.spec);
    write_header(out, &judged)?;
    out.flush()?;
    let mut search = Search::new(args.from, args.to, args.resolution);
    let mut steps: Vec<SweepStep> = Vec::new();
    let mut unjudged: Option<Unjudged> = None;
    // The server's fastest response over every step so far: at a rate it
    // cannot take, every response of a step is slow, and only the earlier
    // steps show that the connections were not what held it back.
    let mut fastest: Option<u64> = None;
    while let Some(rate) = search.next() {
        if !steps.is_empty() {
            pause(args.cooldown, &stop);
        }
        if stop.is_stopped() {
            break;
        }
        let cfg = step_config(&base, rate)?;
        let (step, limited) = match run_step(&cfg, &slo, &stop, rate, &mut fastest) {
            // Ctrl-C cut this step short: its figures are of a shorter run
            // than the rest and would be judged as if whole, so it is left
            // out and the sweep ends with the steps that finished.
            Err(_) if interrupted(&stop) => {
                writeln!(
                    out,
                    "  {:>4} {:>9}  interrupted, left out",
                    steps.len() + 1,
                    units::format_metric(rate)
                )?;
                break;
            }
            step => step?,
        };
        write_row(out, steps.len() + 1, &step, &judged)?;
        out.flush()?;
        let (verdict, reason) = (step.slo.verdict, step.slo.reason.clone());
        steps.push(step);
        if stop.is_stopped() {
            break;
        }
        match (verdict, reason) {
            // Past a rate the generator could not offer, or at which the
            // objective measured nothing, no step can be judged.
            (Verdict::Inconclusive, Some(why)) => {
                unjudged = Some(Unjudged {
                    rate,
                    why,
                    generator: limited,
                });
                break;
            }
            (Verdict::Met, _) => search.met(rate),
            _ => search.failed(rate),
        }
    }
    let conclusion = conclusion(&search, unjudged.as_ref(), stop.is_stopped(), what);
    writeln!(out, "{conclusion}")?;
    if args.run.sinks.json.is_some() || args.run.sinks.html.is_some() {
        let doc = SweepDocument {
            schema: SWEEP_SCHEMA,
            kind: "sweep".to_string(),
            metron_version: env!("CARGO_PKG_VERSION").to_string(),
            config: SweepConfig {
                slo: slo.spec.clone(),
                from: args.from,
                to: args.to,
                resolution: args.resolution,
                step_duration_s: args.step_duration.as_secs_f64(),
                cooldown_s: args.cooldown.as_secs_f64(),
                run: describe(&first.run),
            },
            steps,
            highest: search.best,
            conclusion: conclusion.clone(),
            interrupted: interrupted(&stop),
        };
        write_outputs(args, &doc, out)?;
    }
    if let Some(i) = stop.stopped() {
        return Err(Error::Interrupted {
            cause: i.1,
            after: started.elapsed(),
        });
    }
    match (search.best, unjudged) {
        (_, Some(u)) => Err(Error::Sweep(
            format!(
                "the sweep stopped at {}, where {}",
                rate_in(u.rate, what),
                match u.generator {
                    true => "the generator, not the server, was the limit",
                    false => "the SLO could not be judged",
                }
            ),
            4,
        )),
        (None, None) => Err(Error::Sweep("no rate met the SLO".into(), 3)),
        (Some(_), None) => Ok(()),
    }
}

/// A step the sweep ended on, inconclusive: at `rate`, for `why`;
/// `generator`: the generator limited the load (otherwise the objective
/// measured nothing there, such as a first event when none came).
struct Unjudged {
    rate: f64,
    why: String,
    generator: bool,
}

/// Whether a signal (Ctrl-C, SIGTERM) stopped the sweep.
fn interrupted(stop: &Stop) -> bool {
    matches!(
        stop.stopped(),
        Some((_, StopCause::Interrupt | StopCause::Terminate))
    )
}

/// The sweep's flags, checked: the SLO it needs, the range, and the run
/// flags the sweep sets itself refused. Returns the SLO and the run flags
/// each step starts from.
fn check(args: &SweepArgs) -> Result<(Slo, BenchArgs), Error> {
    let usage = |why: &str| Error::Config(ConfigError::Sweep(why.to_string()));
    let Some(slo) = args.run.slo.clone() else {
        return Err(usage(
            "needs --slo SPEC, the objective each step is judged by, e.g. --slo p99<50ms",
        ));
    };
    if !(args.from > 0.0 && args.from <= args.to && args.to <= MAX_RATE) {
        return Err(usage(&format!(
            "--from {} --to {}: give rates with 0 < --from <= --to <= 1G",
            args.from, args.to
        )));
    }
    let run = &args.run;
    if let Some(what) = refusals(run).next() {
        return Err(usage(&format!("does not take {what}")));
    }
    if args.step_duration <= run.warmup.unwrap_or(STEP_WARMUP) {
        return Err(usage(&format!(
            "--step-duration {:?} leaves nothing after the {:?} warm-up; lengthen it or shorten --warmup",
            args.step_duration,
            run.warmup.unwrap_or(STEP_WARMUP)
        )));
    }
    let mut base = run.clone();
    base.duration = Some(args.step_duration);
    base.warmup = Some(run.warmup.unwrap_or(STEP_WARMUP));
    base.slo = None;
    base.sinks.json = None;
    base.sinks.html = None;
    base.latency = false;
    base.u_latency = false;
    Ok((slo, base))
}

/// The run flags given that a sweep sets itself or has no use for, each
/// with why, in the order they are reported.
fn refusals(run: &BenchArgs) -> impl Iterator<Item = String> {
    let named = |list: [(bool, &'static str); 3]| {
        list.into_iter()
            .filter(|(given, _)| *given)
            .map(|(_, what)| what.to_string())
    };
    let outputs = run
        .sinks
        .each()
        .into_iter()
        .filter_map(|(o, given)| match o.in_sweep {
            InSweep::Refuses(why) if given => Some(format!("{} ({why})", o.flag)),
            _ => None,
        });
    let schedule = [
        (
            run.rate.is_some(),
            "-R (each step's rate comes from --from and --to)",
        ),
        (
            run.rate_profile.is_some(),
            "--rate-profile (steps hold constant rates)",
        ),
        (run.duration.is_some(), "-d (use --step-duration)"),
    ];
    let rest = [
        (
            run.timeseries
                || run.thread_timeseries
                || run.timeseries_interval.is_some()
                || run.histogram,
            "--timeseries, --thread-timeseries, --timeseries-interval and --histogram (per run \
             outputs)",
        ),
        (
            run.interval.is_some(),
            "--interval (the sweep keeps no time series)",
        ),
        (
            run.shard.is_some() || run.start_at.is_some(),
            "--shard and --start-at (a sweep runs on one machine)",
        ),
    ];
    named(schedule).chain(outputs).chain(named(rest))
}

/// The configuration of the step at `rate`.
fn step_config(base: &BenchArgs, rate: f64) -> Result<Config, Error> {
    let mut args = base.clone();
    args.rate = Some(rate);
    Ok(Config::from_args(&args)?)
}

/// Runs one step with its report discarded, and judges it; also whether
/// the generator, not the server, limited its load.
fn run_step(
    cfg: &Config,
    slo: &Slo,
    stop: &Arc<Stop>,
    rate: f64,
    fastest: &mut Option<u64>,
) -> Result<(SweepStep, bool), Error> {
    let outcome = bench_config(cfg, stop, &mut io::sink())?;
    *fastest = match (*fastest, outcome.stats.fastest_us) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut facts = run_facts(&cfg.run, &outcome, cfg.lag_allowance);
    facts.fastest_us = *fastest;
    let judged: SloReport = slo.judge(&facts);
    let limited = generator_limit(&facts).is_some();
    let s = &outcome.stats;
    let h = s.with_unfinished();
    let at = |p| summary::percentile(&h, p);
    let c = &s.counters;
    let step = SweepStep {
        rate,
        achieved: s.visits_per_sec().unwrap_or_else(|| s.requests_per_sec()),
        p50: at(50.0),
        p99: at(99.0),
        p999: at(99.9),
        max: summary::maximum(&h),
        errors: c.errors.lost_requests() + c.errors.status,
        due: c.due,
        send_lag_p99: summary::percentile(&s.send_lag, 99.0),
        slo: judged,
        corrected: encode(&s.latency),
        unfinished: encode(&s.unfinished),
        visits: s.visits.as_ref().map(|v| {
            let mut h = v.duration.clone();
            crate::stats::add_histogram(&mut h, &v.unfinished);
            SweepVisits {
                due: v.due(),
                completed: v.completed,
                failed: v.failed_total(),
                in_flight: v.in_flight,
                never_started: v.never_started,
                p99: summary::percentile(&h, 99.0),
            }
        }),
    };
    Ok((step, limited))
}

/// Waits out the cooldown, or until Ctrl-C.
fn pause(cooldown: Duration, stop: &Stop) {
    let until = std::time::Instant::now() + cooldown;
    while !stop.is_stopped() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// The sweep's last line, its rates in `what`.
fn conclusion(search: &Search, unjudged: Option<&Unjudged>, stopped: bool, what: &str) -> String {
    let best = search.best.map(|r| rate_in(r, what));
    match (unjudged, best) {
        (Some(u), best) => format!(
            "{} at {}: {}{}",
            match u.generator {
                true => "the generator, not the server, is the limit",
                false => "the SLO could not be judged",
            },
            rate_in(u.rate, what),
            u.why,
            best.map_or(String::new(), |b| format!(
                "; highest rate meeting the SLO before it: {b}"
            ))
        ),
        (None, Some(b)) if stopped => {
            format!("interrupted; highest rate meeting the SLO so far: {b}")
        }
        (None, Some(b)) if search.best == Some(search.to) && search.fail.is_none() => {
            format!("highest rate meeting the SLO: {b} (the top of the sweep, --to)")
        }
        (None, Some(b)) => format!("highest rate meeting the SLO: {b}"),
        (None, None) if stopped => "interrupted before any rate met the SLO".to_string(),
        (None, None) => format!(
            "no rate met the SLO: not even the lowest tried, {}",
            rate_in(search.from, what)
        ),
    }
}

/// The search over rates: doubling from the first until a failure or the
/// top, then bisecting the bracket.
#[derive(Debug)]
struct Search {
    from: f64,
    to: f64,
    resolution: f64,
    /// The highest rate that met the SLO, and the lowest that failed.
    best: Option<f64>,
    fail: Option<f64>,
    /// The next rate to try, if any.
    pending: Option<f64>,
    tried: usize,
}

impl Search {
    fn new(from: f64, to: f64, resolution: f64) -> Search {
        Search {
            from,
            to,
            resolution,
            best: None,
            fail: None,
            pending: Some(from),
            tried: 0,
        }
    }

    fn next(&mut self) -> Option<f64> {
        if self.tried >= MAX_STEPS {
            return None;
        }
        self.tried += 1;
        self.pending.take()
    }

    fn met(&mut self, rate: f64) {
        self.best = Some(self.best.map_or(rate, |b| b.max(rate)));
        self.plan();
    }

    fn failed(&mut self, rate: f64) {
        self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
        self.plan();
    }

    /// Picks the next rate: double while nothing failed, then halve the
    /// bracket until it is narrow enough.
    fn plan(&mut self) {
        self.pending = match (self.best, self.fail) {
            (Some(b), None) if b < self.to => Some((b * 2.0).min(self.to)),
            (Some(b), Some(f)) if (f - b) / b > self.resolution => Some((b + f) / 2.0),
            _ => None,
        };
    }
}

/// `--json` and `--html` of the sweep.
fn write_outputs(args: &SweepArgs, doc: &SweepDocument, out: &mut dyn Write) -> Result<(), Error> {
    let sinks = &args.run.sinks;
    if let Some(path) = &sinks.json {
        if sinks.json_on_stdout() {
            out.write_all(json_text(doc)?.as_bytes())?;
        } else {
            write_json(path, doc)?;
        }
    }
    if let Some(path) = &sinks.html {
        write_file("--html", path, render_sweep(doc).as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server whose capacity is `cap`: the sweep's rates, met or not.
    fn sweep(cap: f64, from: f64, to: f64, resolution: f64) -> (Vec<f64>, Option<f64>) {
        let mut s = Search::new(from, to, resolution);
        let mut tried = Vec::new();
        while let Some(r) = s.next() {
            tried.push(r);
            if r <= cap {
                s.met(r)
            } else {
                s.failed(r)
            }
        }
        (tried, s.best)
    }

    #[test]
    fn doubling_then_bisection_brackets_the_capacity() {
        let (tried, best) = sweep(4000.0, 1000.0, 64_000.0, 0.05);
        assert_eq!(&tried[..4], [1000.0, 2000.0, 4000.0, 8000.0]);
        let best = best.unwrap();
        assert!((3800.0..=4000.0).contains(&best), "{best} {tried:?}");
        let (_, best) = sweep(3900.0, 1000.0, 64_000.0, 0.02);
        assert!((3900.0 * 0.98..=3900.0).contains(&best.unwrap()));
    }

    /// What `metron sweep --help` hides is what its check refuses.
    #[test]
    fn every_flag_hidden_from_the_help_is_refused() {
        for flag in crate::cli::sweep::refused() {
            let value = match flag {
                "rate" => Some("5"),
                "rate-profile" => Some("1k:1s"),
                "duration" | "interval" | "dashboard-linger" | "timeseries-interval" => Some("1s"),
                "shard" => Some("0/2"),
                "start-at" => Some("2000000000"),
                "hlog" | "csv" => Some("out"),
                _ => None,
            };
            let long = format!("--{flag}");
            let mut words = vec![
                "metron", "sweep", "--slo", "p99<1ms", "--from", "1", "--to", "2",
            ];
            words.push(&long);
            words.extend(value);
            words.push("http://127.0.0.1:1/");
            let Ok(crate::cli::Command::Sweep(args)) = crate::cli::parse(&words) else {
                panic!("{words:?} does not parse");
            };
            let Err(e) = check(&args) else {
                panic!("{long} is not refused");
            };
            assert!(e.to_string().contains("does not take"), "{long}: {e}");
        }
    }

    #[test]
    fn the_top_and_the_bottom() {
        let (tried, best) = sweep(1e9, 100.0, 1000.0, 0.02);
        assert_eq!(tried, [100.0, 200.0, 400.0, 800.0, 1000.0]);
        assert_eq!(best, Some(1000.0));
        let (tried, best) = sweep(50.0, 100.0, 1000.0, 0.02);
        assert_eq!((tried, best), (vec![100.0], None));
    }
}

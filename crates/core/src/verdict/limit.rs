//! Whether the generator itself kept the schedule: without that, a run's
//! verdict can be neither a pass nor a fail, and the text report warns.
//! [`RunFacts`] is what a verdict needs of a run besides its statistics.

use std::time::Duration;

use crate::schedule::Load;
use crate::stats::{summary, RunStats};
use crate::units::{format_rate, format_time_us};

/// What a verdict needs to know of a run besides its statistics.
pub struct RunFacts<'a> {
    pub stats: &'a RunStats,
    pub load: &'a Load,
    pub threads: usize,
    /// The most connections the run could open: `-c`, or
    /// `--max-connections` where the pool grows on demand (`pool_flag`
    /// names which, for the advice).
    pub connections: usize,
    pub pool_flag: &'static str,
    /// Requests one connection carries at once: 1 over HTTP/1.1, `-m`
    /// over HTTP/2.
    pub per_connection: u32,
    /// The fastest response known of the server (µs): this run's, or
    /// lower from earlier runs against it (a sweep's earlier steps).
    pub fastest_us: Option<u64>,
    /// `--lag-allowance`, when given (see [`lag_allowance_us`]).
    pub lag_allowance: Option<Duration>,
}

/// Send lag below this never warrants a warning: the operating system's
/// scheduling alone can delay a send that much.
const LAG_TOLERANCE_US: f64 = 1000.0;

/// Why the generator, not the server, limited the load, if it did: it
/// left requests late although connections were free (its own CPU), left
/// them unsent with connections free, or had too few connections to carry
/// the rate even had every response come as fast as the fastest one did.
/// A server that stalls fills every connection too, but its fastest
/// response stays fast, so it is judged, not excused.
pub fn generator_limit(run: &RunFacts) -> Option<String> {
    let stats = run.stats;
    let rate = request_rate(stats, run.load.rate()?);
    let c = &stats.counters;
    let a = &c.at_end;
    if c.missed_at_start > 0 {
        return Some(format!(
            "{} requests of the measured window were due before the run began (it started after \
             --start-at): the schedule was not sent in full; start metron earlier, or lengthen \
             --warmup to cover the lateness",
            c.missed_at_start
        ));
    }
    if c.never_sent > 0 && a.busy + a.down + a.resting + a.stopped_threads == 0 {
        return Some(format!(
            "{} due requests were never sent although connections were free: the generator \
             fell behind its schedule; add threads with -t or give metron more CPU",
            c.never_sent
        ));
    }
    let sent = c.due.saturating_sub(c.never_sent);
    let queued = c.queued * 100 > sent;
    let lag_p99 = summary::value_at_percentile(&stats.send_lag, 99.0) as f64;
    let allowed = lag_allowance_us(run.threads, rate, run.lag_allowance);
    if lag_p99 > allowed && !queued {
        return Some(format!(
            "send lag p99 {} is above the {} allowed while connections were free: the \
             generator itself sent late; add threads with -t or give metron more CPU (or, on \
             a shared machine, allow more with --lag-allowance)",
            format_time_us(lag_p99),
            format_time_us(allowed)
        ));
    }
    if let (true, Some(fastest)) = (queued, run.fastest_us) {
        let fastest_s = fastest.max(1) as f64 / 1e6;
        let slots = run.connections as f64 * f64::from(run.per_connection.max(1));
        let carried = slots / fastest_s;
        // The profile is the whole run's; this instance sends its part.
        let part = run.load.shard().count() as f64;
        let peak = run.load.profile().map_or(rate, |p| {
            let top = p
                .phases()
                .iter()
                .fold(0.0_f64, |m, ph| m.max(ph.from).max(ph.to));
            request_rate(stats, top / part)
        });
        if peak > carried {
            let flag = run.pool_flag;
            let needed = (peak * fastest_s / f64::from(run.per_connection.max(1))).ceil();
            return Some(format!(
                "{flag} {} cannot carry {} requests/s: even at the fastest response seen ({}) \
                 the connections carry at most {:.0} requests/s; raise {flag} to at least \
                 {needed:.0}",
                run.connections,
                format_rate(peak),
                format_time_us(fastest_s * 1e6),
                carried
            ));
        }
    }
    None
}

/// The requests due per second at `rate`: the rate itself, but a flow's
/// rate counts visits, each bringing its steps, so there it is scaled by
/// the requests that fell due per visit started (not per visit due: those
/// that never started brought none, and would shrink the rate asked to
/// what a stalled server let through).
pub fn request_rate(stats: &RunStats, rate: f64) -> f64 {
    match &stats.visits {
        Some(v) if v.started > 0 => rate * (stats.counters.due as f64 / v.started as f64).max(1.0),
        _ => rate,
    }
}

/// The send lag tolerated at the 99th percentile: `given`
/// (`--lag-allowance`), else one interval of a thread's schedule (each
/// thread sends every `threads / rate` seconds), but never less than
/// `LAG_TOLERANCE_US`.
pub fn lag_allowance_us(threads: usize, rate: f64, given: Option<Duration>) -> f64 {
    if let Some(t) = given {
        return t.as_secs_f64() * 1e6;
    }
    let interval = threads as f64 / rate * 1e6;
    if interval.is_finite() {
        interval.max(LAG_TOLERANCE_US)
    } else {
        LAG_TOLERANCE_US
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ThreadStats;

    /// One thread at 1000/s whose send lag p99 is 5 ms, with connections
    /// free: late by the default allowance (1 ms), kept by a 10 ms one.
    #[test]
    fn the_lag_allowance_moves_the_generators_limit() {
        let mut t = ThreadStats::default();
        t.send_lag.record_n(10, 98).unwrap();
        t.send_lag.record_n(5000, 2).unwrap();
        t.counters.due = 100;
        t.counters.completed = 100;
        let stats = RunStats::merge(vec![t], std::time::Duration::from_secs(1));
        let load = Load::from_rate(Some(1000.0));
        let facts = |lag_allowance| RunFacts {
            stats: &stats,
            load: &load,
            threads: 1,
            connections: 10,
            pool_flag: "-c",
            per_connection: 1,
            fastest_us: Some(100),
            lag_allowance,
        };
        let why = generator_limit(&facts(None)).expect("late by the default");
        assert!(why.contains("above the 1.00ms allowed"), "{why}");
        assert!(why.contains("--lag-allowance"), "{why}");
        assert_eq!(
            generator_limit(&facts(Some(Duration::from_millis(10)))),
            None
        );
        let why = generator_limit(&facts(Some(Duration::from_millis(2)))).unwrap();
        assert!(why.contains("above the 2.00ms allowed"), "{why}");
        assert_eq!(lag_allowance_us(1, 1000.0, None), 1000.0);
        assert_eq!(lag_allowance_us(4, 1000.0, None), 4000.0);
        assert_eq!(
            lag_allowance_us(4, 1000.0, Some(Duration::from_millis(7))),
            7000.0
        );
    }

    /// A flow at 100 visits/s of three steps each asks 300 requests/s: one
    /// connection whose fastest answer took 5 ms carries 200, so the
    /// generator's pool, not the server, is the limit, named in requests.
    #[test]
    fn a_flows_pool_is_judged_by_the_requests_its_visits_bring() {
        let mut t = ThreadStats::default();
        t.counters.due = 300;
        t.counters.completed = 150;
        t.counters.queued = 150;
        t.visits = Some(crate::stats::VisitStats {
            started: 100,
            completed: 50,
            in_flight: 50,
            ..Default::default()
        });
        let stats = RunStats::merge(vec![t], std::time::Duration::from_secs(1));
        let load = Load::from_rate(Some(100.0));
        let facts = RunFacts {
            stats: &stats,
            load: &load,
            threads: 1,
            connections: 1,
            pool_flag: "-c",
            per_connection: 1,
            fastest_us: Some(5000),
            lag_allowance: None,
        };
        assert_eq!(request_rate(&stats, 100.0), 300.0);
        let why = generator_limit(&facts).expect("the pool is too small");
        assert!(why.contains("-c 1 cannot carry 300.00 requests/s"), "{why}");
        assert!(why.contains("raise -c to at least 2"), "{why}");
        // A pool that may grow is bounded by --max-connections: that is
        // the flag to raise.
        let grown = RunFacts {
            pool_flag: "--max-connections",
            ..facts
        };
        let why = generator_limit(&grown).expect("the pool is too small");
        assert!(
            why.starts_with("--max-connections 1 cannot carry")
                && why.contains("raise --max-connections to at least 2"),
            "{why}"
        );
    }
}

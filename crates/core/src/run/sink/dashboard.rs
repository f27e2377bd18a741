//! `--dashboard`: the live page, listening (and its address printed)
//! before the run starts, fed each interval as it closes and the workers'
//! totals about once a second, given the text report at the end, and kept
//! up after the run for `--dashboard-linger`, or until Ctrl-C when a
//! terminal is attached. Without one (a CI job, a pipeline, a service)
//! nobody can press Ctrl-C, so without `--dashboard-linger` the page
//! closes with the run rather than keep the process alive for ever.

use std::io;
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::feed::{Ended, Sink};
use super::names::EndpointNames;
use crate::cli::config::Config;
use crate::dashboard::Dashboard;
use crate::engine::progress::Totals;
use crate::engine::Stop;
use crate::run::describe::describe;
use crate::run::error::Error;
use crate::run::intended::Intended;
use crate::script::StepNames;
use crate::stats::IntervalStats;
use crate::units::format_run_duration;

struct Live {
    dashboard: Dashboard,
    /// The schedule, to count the requests intended in each interval.
    intended: Intended,
    linger: Option<Duration>,
    /// Whose figures each point carries.
    endpoints: EndpointNames,
}

pub fn open(cfg: &Config) -> Result<Option<Box<dyn Sink>>, Error> {
    let Some(addr) = &cfg.outputs.sinks.dashboard else {
        return Ok(None);
    };
    let config = serde_json::to_string(&describe(&cfg.run)).map_err(io::Error::other)?;
    let tokens = cfg.run.llm.is_some();
    let d = Dashboard::start(addr, config, tokens, cfg.run.load.shard()).map_err(|why| {
        Error::Dashboard {
            addr: addr.clone(),
            why,
        }
    })?;
    let _ = writeln!(std::io::stderr(), "Dashboard: http://{}/", d.addr());
    if d.is_exposed() {
        let _ = writeln!(
            std::io::stderr(),
            "Warning: the dashboard listens on {}: anyone who can reach it can see this run \
             (--dashboard=127.0.0.1:PORT keeps it on this machine)",
            d.addr()
        );
    }
    let intended = Intended::new(&cfg.run);
    if intended.is_paced() {
        d.paced();
    }
    Ok(Some(Box::new(Live {
        dashboard: d,
        intended,
        linger: cfg.outputs.sinks.dashboard_linger,
        endpoints: EndpointNames::of(cfg),
    })))
}

impl Sink for Live {
    fn ticks(&self) -> bool {
        true
    }

    fn tick(&mut self, totals: Totals) {
        self.dashboard.outstanding(totals.in_flight, totals.waiting);
    }

    fn wants_intervals(&self) -> bool {
        true
    }

    fn steps(&mut self, names: &Arc<StepNames>) {
        self.endpoints.take_steps(names);
        self.dashboard.visits();
    }

    fn intervals(&mut self, intervals: &[IntervalStats]) -> Result<(), Error> {
        let names = self.endpoints.now();
        for iv in intervals {
            let intended = self.intended.count(iv.start(), iv.length);
            self.dashboard.interval(iv, intended, &names);
        }
        Ok(())
    }

    fn finish(&mut self, end: &mut Ended) -> Result<(), Error> {
        // The gauges' last sample was taken while the run went: from now
        // on they are the report's, what was in flight and never sent at
        // its end, so that a Prometheus scraping after the run has the
        // ledger the report has.
        let c = &end.outcome.stats.counters;
        let waiting = match &end.outcome.stats.visits {
            // A flow's gauge counts visits (see `Dashboard::visits`).
            Some(v) => v.never_started,
            None => c.never_sent,
        };
        self.dashboard.outstanding(c.in_flight, waiting);
        self.dashboard.finish(end.report.to_string());
        Ok(())
    }

    /// Keeps the page up after the run: for `--dashboard-linger`, or until
    /// Ctrl-C from a terminal. After a run that Ctrl-C ended, the next
    /// Ctrl-C exits at once.
    fn linger(&self, stop: &Stop) {
        let d = &self.dashboard;
        let terminal = at_the_keyboard(&io::stdin()) || at_the_keyboard(&io::stdout());
        let how = match stay(self.linger, terminal) {
            Stay::For(t) => format!("for {}", format_run_duration(t)),
            Stay::UntilCtrlC => "until Ctrl-C".to_string(),
            Stay::No => {
                let _ = writeln!(
                    std::io::stderr(),
                    "Dashboard: closed with the run, as no terminal's Ctrl-C can reach it \
                     (--dashboard-linger T keeps it up for T)"
                );
                return;
            }
        };
        let _ = writeln!(
            std::io::stderr(),
            "Dashboard: the report stays at http://{}/ {how}",
            d.addr()
        );
        let until = self.linger.map(|t| Instant::now() + t);
        let stopped_before = stop.is_stopped();
        while until.is_none_or(|end| Instant::now() < end) && (stopped_before || !stop.is_stopped())
        {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// How long the page stays up after the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stay {
    For(Duration),
    UntilCtrlC,
    /// Not at all: it closes with the run.
    No,
}

/// Whether `fd` is the terminal this process's Ctrl-C comes from: a
/// terminal whose foreground is this process's group. A job started with
/// `&` from an interactive shell still has the terminal on stdin, but
/// Ctrl-C goes to the shell's foreground, never to it.
fn at_the_keyboard(fd: &impl AsRawFd) -> bool {
    let fd = fd.as_raw_fd();
    // SAFETY: the calls only ask whether `fd` is a terminal and read the
    // process groups; a descriptor that is not a terminal gives -1.
    unsafe { libc::isatty(fd) == 1 && libc::tcgetpgrp(fd) == libc::getpgrp() }
}

/// `--dashboard-linger T` says; without it, until Ctrl-C when `terminal`
/// (stdin or stdout is one, so someone can press it), else not at all.
fn stay(linger: Option<Duration>, terminal: bool) -> Stay {
    match (linger, terminal) {
        (Some(t), _) => Stay::For(t),
        (None, true) => Stay::UntilCtrlC,
        (None, false) => Stay::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_terminal_the_page_closes_with_the_run_unless_told() {
        let t = Duration::from_secs(5);
        assert_eq!(stay(None, true), Stay::UntilCtrlC);
        assert_eq!(stay(None, false), Stay::No);
        assert_eq!(stay(Some(t), false), Stay::For(t));
        assert_eq!(stay(Some(t), true), Stay::For(t));
    }
}

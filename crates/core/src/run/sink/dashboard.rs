//! `--dashboard`: the live page, listening (and its address printed)
//! before the run starts, fed each interval as it closes and the workers'
//! totals about once a second, given the text report at the end, and kept
//! up after the run for `--dashboard-linger` or until Ctrl-C.

use std::io;
use std::time::{Duration, Instant};

use super::feed::{Ended, Sink};
use crate::cli::config::Config;
use crate::dashboard::Dashboard;
use crate::engine::progress::Totals;
use crate::engine::Stop;
use crate::run::describe::describe;
use crate::run::error::Error;
use crate::run::intended::Intended;
use crate::stats::IntervalStats;
use crate::units::format_run_duration;

struct Live {
    dashboard: Dashboard,
    /// The schedule, to count the requests intended in each interval.
    intended: Intended,
    linger: Option<Duration>,
}

pub fn open(cfg: &Config) -> Result<Option<Box<dyn Sink>>, Error> {
    let Some(addr) = &cfg.outputs.sinks.dashboard else {
        return Ok(None);
    };
    let config = serde_json::to_string(&describe(&cfg.run)).map_err(io::Error::other)?;
    let d = Dashboard::start(addr, config).map_err(|why| Error::Dashboard {
        addr: addr.clone(),
        why,
    })?;
    eprintln!("Dashboard: http://{}/", d.addr());
    if d.is_exposed() {
        eprintln!(
            "Warning: the dashboard listens on {}: anyone who can reach it can see this run \
             (--dashboard=127.0.0.1:PORT keeps it on this machine)",
            d.addr()
        );
    }
    Ok(Some(Box::new(Live {
        dashboard: d,
        intended: Intended::new(&cfg.run),
        linger: cfg.outputs.sinks.dashboard_linger,
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

    fn intervals(&mut self, intervals: &[IntervalStats]) -> Result<(), Error> {
        for iv in intervals {
            let intended = self.intended.count(iv.start(), iv.length);
            self.dashboard.interval(iv, intended);
        }
        Ok(())
    }

    fn finish(&mut self, end: &mut Ended) -> Result<(), Error> {
        self.dashboard.finish(end.report.to_string());
        Ok(())
    }

    /// Keeps the page up after the run: for `--dashboard-linger`, or until
    /// Ctrl-C. After a run that Ctrl-C ended, the next Ctrl-C exits at
    /// once.
    fn linger(&self, stop: &Stop) {
        let d = &self.dashboard;
        let how = match self.linger {
            Some(t) => format!("for {}", format_run_duration(t)),
            None => "until Ctrl-C".to_string(),
        };
        eprintln!("Dashboard: the report stays at http://{}/ {how}", d.addr());
        let until = self.linger.map(|t| Instant::now() + t);
        let stopped_before = stop.is_stopped();
        while until.map_or(true, |end| Instant::now() < end)
            && (stopped_before || !stop.is_stopped())
        {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

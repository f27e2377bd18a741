//! What every output is fed: the [`Sink`] trait, whose steps follow a
//! run from its start to its end, and the run's result as the outputs
//! take it ([`Ended`]), with the JSON document built once for all of
//! them.

use std::cell::OnceCell;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::cli::config::Config;
use crate::engine::progress::Totals;
use crate::engine::{Outcome, Stop};
use crate::report::json::Document;
use crate::run::describe::describe;
use crate::run::error::Error;
use crate::run::intended::Intended;
use crate::script::StepNames;
use crate::stats::IntervalStats;
use crate::verdict::SloReport;

/// An output fed by a run. Every step has a default that ignores it, so
/// that an output implements only what it uses.
pub trait Sink {
    /// The run is about to start, its banner out: an output written as
    /// the run goes creates its file now.
    fn start(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// Whether it wants [`Sink::tick`].
    fn ticks(&self) -> bool {
        false
    }

    /// About once a second: the workers' totals so far.
    fn tick(&mut self, _totals: Totals) {}

    /// Whether it wants the intervals as they close.
    fn wants_intervals(&self) -> bool {
        false
    }

    /// A flow's step names, by index as the intervals' endpoints have
    /// them (a list that grows during the run), before the window starts.
    fn steps(&mut self, _names: &Arc<StepNames>) {}

    /// The measured window starts at `at` (wall clock), before any
    /// interval.
    fn window_starts(&mut self, _at: SystemTime) -> Result<(), Error> {
        Ok(())
    }

    /// Intervals of the statistics, merged over the threads, in order and
    /// each once, as they close (the last cut short as the run ends).
    fn intervals(&mut self, _intervals: &[IntervalStats]) -> Result<(), Error> {
        Ok(())
    }

    /// The run is over and its text report printed.
    fn finish(&mut self, _end: &mut Ended) -> Result<(), Error> {
        Ok(())
    }

    /// Everything else is out (the script's `done()` included): an output
    /// that stays up after the run does so now.
    fn linger(&self, _stop: &Stop) {}
}

/// The end of a run, as the outputs take it.
pub struct Ended<'a> {
    pub cfg: &'a Config,
    pub outcome: &'a Outcome,
    pub slo: Option<&'a SloReport>,
    /// The text report after the banner, as printed.
    pub report: &'a str,
    /// The command's standard output (`--json -` writes there).
    pub stdout: &'a mut dyn Write,
    /// The document of the run, made for the first output that wants it.
    document: OnceCell<Document>,
}

impl<'a> Ended<'a> {
    pub fn new(
        cfg: &'a Config,
        outcome: &'a Outcome,
        slo: Option<&'a SloReport>,
        report: &'a str,
        stdout: &'a mut dyn Write,
    ) -> Ended<'a> {
        Ended {
            cfg,
            outcome,
            slo,
            report,
            stdout,
            document: OnceCell::new(),
        }
    }

    /// The run's JSON document: its description, statistics, verdict and
    /// the requests intended in each interval of its series.
    pub fn document(&self) -> &Document {
        self.document.get_or_init(|| {
            let (cfg, outcome) = (self.cfg, self.outcome);
            let mut doc = Document::new(
                describe(&cfg.run),
                &outcome.protocol,
                &outcome.stats,
                outcome.started_at + cfg.run.warmup,
            );
            doc.slo = self.slo.cloned();
            doc.start_offset_s = outcome.start.map(|s| s.late.as_secs_f64());
            let mut intended = Intended::new(&cfg.run);
            let interval = outcome.stats.history.interval();
            for (i, p) in doc.series.points.iter_mut().enumerate() {
                let start = interval * i as u32;
                let length = p.length_s.map_or(interval, Duration::from_secs_f64);
                p.intended = intended.count(start, length);
            }
            doc
        })
    }
}

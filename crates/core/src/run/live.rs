//! What shows while the workers run: the progress line (on a terminal,
//! without `--quiet`), the rows of `--thread-timeseries`, and every output
//! fed as the run goes. The main thread is the engine's watcher; an output
//! that fails is dropped and its error reported once the run is over.

use std::io::{self, IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::error::Error;
use super::printed;
use super::progress::Line;
use super::sink::Sink;
use crate::cli::config::Config;
use crate::engine::progress::Totals;
use crate::engine::{self, Outcome, Stop, Watch};
use crate::report::series::write_thread_rows;
use crate::script::{MainScript, StepNames};
use crate::stats::{IntervalStats, Row};

/// Runs the engine's three stages with `sinks` fed as the run goes. The
/// script's main state comes back for `done()`.
pub fn run(
    cfg: &Config,
    stop: &Arc<Stop>,
    text: &mut dyn Write,
    sinks: &mut Vec<Box<dyn Sink>>,
) -> Result<(Outcome, Option<MainScript>), Error> {
    let (o, run) = (&cfg.outputs, &cfg.run);
    for s in sinks.iter_mut() {
        s.start()?;
    }
    let mut live = Live {
        line: (!o.quiet && io::stderr().is_terminal()).then(|| Line::new(run.duration)),
        rows: o.thread_timeseries.then_some(o.timeseries_interval),
        text,
        sinks,
        failed: None,
    };
    if let Some(at) = run.start_at {
        // Connect shortly before the start, not long before.
        let connect_at = at.checked_sub(engine::CONNECT_AHEAD).unwrap_or(at);
        engine::wait_for(connect_at, stop);
    }
    // Always watched: the main thread takes the intervals as they close,
    // which keeps a long run's memory flat.
    let mut prepared = engine::prepare(run, stop, Some(&live as &dyn Watch))?;
    printed::write_banner(live.text, cfg, prepared.hosts(), prepared.runs_visits())?;
    // Flushed before the threads' scripts can print.
    live.text.flush()?;
    let script = prepared.script.take();
    let result = prepared.start().collect(Some(&mut live as &mut dyn Watch));
    if let Some(line) = live.line.as_mut() {
        line.clear();
    }
    let outcome = result?;
    match live.failed {
        Some(e) => Err(e),
        None => Ok((outcome, script)),
    }
}

/// The engine's watcher.
struct Live<'a> {
    line: Option<Line>,
    /// The interval of `--thread-timeseries`.
    rows: Option<Duration>,
    /// Where the banner and the rows go.
    text: &'a mut dyn Write,
    sinks: &'a mut Vec<Box<dyn Sink>>,
    /// The first failed write of a row or of an output.
    failed: Option<Error>,
}

impl Live<'_> {
    /// Tells every output `tell`; one that fails is dropped.
    fn feed(&mut self, mut tell: impl FnMut(&mut dyn Sink) -> Result<(), Error>) {
        let failed = &mut self.failed;
        self.sinks.retain_mut(|s| match tell(s.as_mut()) {
            Ok(()) => true,
            Err(e) => {
                failed.get_or_insert(e);
                false
            }
        });
    }
}

impl Watch for Live<'_> {
    fn ticks(&self) -> bool {
        self.line.is_some() || self.sinks.iter().any(|s| s.ticks())
    }

    fn tick(&mut self, totals: Totals, at: Duration) {
        if let Some(line) = self.line.as_mut() {
            line.show(totals, at);
        }
        for s in self.sinks.iter_mut() {
            s.tick(totals);
        }
    }

    fn rows_every(&self) -> Option<Duration> {
        self.rows
    }

    fn rows(&mut self, rows: &[Row]) {
        if self.rows.is_none() || self.failed.is_some() {
            return;
        }
        // Rows may go to the terminal the progress line is on.
        if let Some(line) = self.line.as_mut() {
            line.clear();
        }
        let out = &mut *self.text;
        let written = write_thread_rows(out, rows).and_then(|()| out.flush());
        self.failed = written.err().map(Error::from);
        if let Some(line) = self.line.as_mut() {
            line.restore();
        }
    }

    fn intervals_wanted(&self) -> bool {
        self.sinks.iter().any(|s| s.wants_intervals())
    }

    fn steps(&mut self, names: &Arc<StepNames>) {
        for s in self.sinks.iter_mut() {
            s.steps(names);
        }
    }

    fn window_starts(&mut self, at: SystemTime) {
        self.feed(|s| s.window_starts(at));
    }

    fn intervals(&mut self, intervals: &[IntervalStats]) {
        self.feed(|s| s.intervals(intervals));
    }
}

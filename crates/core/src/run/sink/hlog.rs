//! `--hlog FILE`, written as the run goes: the file is created when the
//! run starts, the header written when the measured window starts, and
//! each interval appended and flushed as it closes, so that `tail -f` and
//! the HdrHistogram tools read a run in progress and a killed run leaves
//! every closed interval on disk.

use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;
use std::time::SystemTime;

use super::feed::Sink;
use super::file::OutputFile;
use super::names::EndpointNames;
use crate::cli::config::Config;
use crate::report::hlog::LogWriter;
use crate::run::error::Error;
use crate::script::StepNames;
use crate::stats::IntervalStats;

struct Hlog {
    file: OutputFile,
    comment: String,
    endpoints: EndpointNames,
    state: State,
}

enum State {
    /// Before the run starts (and after a header that failed).
    Waiting,
    /// Created, waiting for the measured window to write its header.
    Created(File),
    Writing(LogWriter<BufWriter<File>>),
}

pub fn open(cfg: &Config) -> Result<Option<Box<dyn Sink>>, Error> {
    let Some(path) = &cfg.outputs.sinks.hlog else {
        return Ok(None);
    };
    Ok(Some(Box::new(Hlog {
        file: OutputFile::checked("--hlog", path)?,
        comment: format!("metron {} {}", env!("CARGO_PKG_VERSION"), cfg.run.url),
        endpoints: EndpointNames::of(cfg),
        state: State::Waiting,
    })))
}

impl Sink for Hlog {
    fn start(&mut self) -> Result<(), Error> {
        self.state = State::Created(self.file.create()?);
        Ok(())
    }

    fn wants_intervals(&self) -> bool {
        true
    }

    fn steps(&mut self, names: &Arc<StepNames>) {
        self.endpoints.take_steps(names);
    }

    /// Writes the header; interval times count from `at`.
    fn window_starts(&mut self, at: SystemTime) -> Result<(), Error> {
        let State::Created(file) = std::mem::replace(&mut self.state, State::Waiting) else {
            return Ok(());
        };
        let out = BufWriter::new(file);
        let mut log = LogWriter::start(out, at, &self.comment, &self.endpoints.now())
            .map_err(|e| self.file.failed(e))?;
        log.flush().map_err(|e| self.file.failed(e))?;
        self.state = State::Writing(log);
        Ok(())
    }

    /// Appends intervals and flushes them to the file.
    fn intervals(&mut self, intervals: &[IntervalStats]) -> Result<(), Error> {
        let State::Writing(log) = &mut self.state else {
            return Ok(());
        };
        // A step gets its lines from the interval the visits first took it
        // in on.
        log.endpoints(&self.endpoints.now());
        intervals
            .iter()
            .try_for_each(|iv| log.interval(iv))
            .and_then(|()| log.flush())
            .map_err(|why| self.file.failed(why))
    }
}

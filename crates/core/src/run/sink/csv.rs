//! `--csv FILE`, written as the run goes: the header when the run starts,
//! then a row per interval as it closes (and one per endpoint, or step,
//! that saw anything in it), flushed, so that a spreadsheet or `tail -f`
//! follows the run.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Arc;

use super::feed::Sink;
use super::file::OutputFile;
use super::names::EndpointNames;
use crate::cli::config::Config;
use crate::report::csv::{write_endpoint_row, write_header, write_row};
use crate::report::json::{EndpointPoint, Point};
use crate::run::error::Error;
use crate::run::intended::Intended;
use crate::script::StepNames;
use crate::stats::IntervalStats;

struct Csv {
    file: OutputFile,
    out: Option<BufWriter<File>>,
    /// The schedule, to count the requests intended in each interval.
    intended: Intended,
    interval_s: f64,
    /// Whether the rows count tokens (`--llm`).
    tokens: bool,
    /// Whose rows follow each interval's.
    endpoints: EndpointNames,
}

pub fn open(cfg: &Config) -> Result<Option<Box<dyn Sink>>, Error> {
    let Some(path) = &cfg.outputs.sinks.csv else {
        return Ok(None);
    };
    Ok(Some(Box::new(Csv {
        file: OutputFile::checked("--csv", path)?,
        out: None,
        intended: Intended::new(&cfg.run),
        interval_s: cfg.run.interval.as_secs_f64(),
        tokens: cfg.run.llm.is_some(),
        endpoints: EndpointNames::of(cfg),
    })))
}

impl Sink for Csv {
    fn start(&mut self) -> Result<(), Error> {
        let mut out = BufWriter::new(self.file.create()?);
        write_header(&mut out)
            .and_then(|()| out.flush())
            .map_err(|why| self.file.failed(why))?;
        self.out = Some(out);
        Ok(())
    }

    fn wants_intervals(&self) -> bool {
        true
    }

    fn steps(&mut self, names: &Arc<StepNames>) {
        self.endpoints.take_steps(names);
    }

    fn intervals(&mut self, intervals: &[IntervalStats]) -> Result<(), Error> {
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        let (intended, interval_s, tokens) = (&mut self.intended, self.interval_s, self.tokens);
        let names = self.endpoints.now();
        intervals
            .iter()
            .try_for_each(|iv| {
                let point = Point::of(iv, intended.count(iv.start(), iv.length), tokens);
                write_row(out, &point, interval_s)?;
                EndpointPoint::all(iv, &names)
                    .iter()
                    .try_for_each(|e| write_endpoint_row(out, &point, e, interval_s))
            })
            .and_then(|()| out.flush())
            .map_err(|why| self.file.failed(why))
    }
}

//! `--html FILE`: the run's page, drawn from its document once the run is
//! over.

use std::path::Path;

use super::feed::{Ended, Sink};
use super::file::OutputFile;
use crate::cli::config::Config;
use crate::report::html;
use crate::report::json::Document;
use crate::run::error::Error;

const FLAG: &str = "--html";

struct Html(OutputFile);

pub fn open(cfg: &Config) -> Result<Option<Box<dyn Sink>>, Error> {
    match &cfg.outputs.sinks.html {
        Some(path) => Ok(Some(Box::new(Html(OutputFile::checked(FLAG, path)?)))),
        None => Ok(None),
    }
}

impl Sink for Html {
    fn finish(&mut self, end: &mut Ended) -> Result<(), Error> {
        self.0.write(html::render(end.document()).as_bytes())
    }
}

/// Writes the page of `doc` (a saved or merged document) to the file
/// `--html` names.
pub fn write(path: &Path, doc: &Document) -> Result<(), Error> {
    super::file::write_file(FLAG, path, html::render(doc).as_bytes())
}

//! `--json FILE`: the run's document, written once the run is over; with
//! `--json -` on standard output, which then carries nothing else.

use std::io;
use std::path::Path;

use serde::Serialize;

use super::feed::{Ended, Sink};
use super::file::OutputFile;
use crate::cli::config::Config;
use crate::run::error::Error;

const FLAG: &str = "--json";

enum Json {
    File(OutputFile),
    Stdout,
}

pub fn open(cfg: &Config) -> Result<Option<Box<dyn Sink>>, Error> {
    let sinks = &cfg.outputs.sinks;
    let Some(path) = &sinks.json else {
        return Ok(None);
    };
    let json = match sinks.json_on_stdout() {
        true => Json::Stdout,
        false => Json::File(OutputFile::checked(FLAG, path)?),
    };
    Ok(Some(Box::new(json)))
}

impl Sink for Json {
    fn finish(&mut self, end: &mut Ended) -> Result<(), Error> {
        let text = json_text(end.document())?;
        match self {
            Json::File(file) => file.write(text.as_bytes()),
            Json::Stdout => {
                end.stdout.write_all(text.as_bytes())?;
                Ok(end.stdout.flush()?)
            }
        }
    }
}

/// A document (a run's, a merge's, a sweep's) as `--json` writes it:
/// indented, with a final newline.
pub fn json_text(doc: &impl Serialize) -> Result<String, Error> {
    Ok(serde_json::to_string_pretty(doc).map_err(io::Error::other)? + "\n")
}

/// Writes `doc` to the file `--json` names.
pub fn write(path: &Path, doc: &impl Serialize) -> Result<(), Error> {
    super::file::write_file(FLAG, path, json_text(doc)?.as_bytes())
}

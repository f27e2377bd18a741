//! The outputs a run feeds besides its text report, each a [`Sink`] in a
//! file of its own: the JSON document (`json.rs`), the HTML page
//! (`html.rs`), the interval log (`hlog.rs`), the CSV rows (`csv.rs`) and
//! the live page (`dashboard.rs`).
//!
//! A sink is fed one stream: the intervals of the statistics as every
//! thread has closed them, then the run's result ([`Ended`]). It never
//! sees the engine or another sink; adding an output is a file here, its
//! row in `cli::outputs` (its kind, flag and sweep policy), and its arm in
//! [`opener`], which the compiler holds to every kind.

mod csv;
mod dashboard;
mod feed;
mod file;
mod hlog;
mod html;
mod json;
mod names;

use super::error::Error;
use crate::cli::config::Config;
use crate::cli::outputs::Kind;

pub use feed::{Ended, Sink};
pub use file::write_file;
pub use html::write as write_html;
pub use json::{json_text, write as write_json};

/// Opens one output when its flag asks for it: checks that its file can
/// be written, or starts what must be up before the run.
type Open = fn(&Config) -> Result<Option<Box<dyn Sink>>, Error>;

/// What opens an output of `kind`.
fn opener(kind: Kind) -> Open {
    match kind {
        Kind::Json => json::open,
        Kind::Html => html::open,
        Kind::Hlog => hlog::open,
        Kind::Csv => csv::open,
        Kind::Dashboard => dashboard::open,
    }
}

/// The outputs the configuration asks for, each opened, in the order of
/// their flags: before the run and its banner, so that a file that cannot
/// be written fails it before anything is sent.
pub fn open(cfg: &Config) -> Result<Vec<Box<dyn Sink>>, Error> {
    let mut sinks = Vec::new();
    for (output, asked) in cfg.outputs.sinks.each() {
        if asked {
            sinks.extend(opener(output.kind)(cfg)?);
        }
    }
    Ok(sinks)
}

/// Tells every output that the run is over, in their order; the first
/// that fails ends the command.
pub fn finish(sinks: &mut [Box<dyn Sink>], mut end: Ended) -> Result<(), Error> {
    sinks.iter_mut().try_for_each(|s| s.finish(&mut end))
}

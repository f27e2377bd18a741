//! Everything that can end a command early, each with the fix to try,
//! and the process's exit status for it.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::config::ConfigError;
use crate::engine::{EngineError, Outcome};
use crate::report::hlog::HlogError;
use crate::stats::StopCause;
use crate::units::format_time_us;
use crate::verdict::{SloReport, Verdict};

/// Everything that can end a command early.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("{0}")]
    Log(#[from] HlogError),
    #[error("cannot read {}: {why}", path.display())]
    Input { path: PathBuf, why: String },
    #[error("metron merge: {0}")]
    Merge(String),
    #[error("cannot write {flag} {}: {why}{}", path.display(), output_hint(why))]
    Output {
        flag: &'static str,
        path: PathBuf,
        why: io::Error,
    },
    #[error("--dashboard={addr}: cannot listen there: {why}; give HOST:PORT on this machine, e.g. --dashboard=127.0.0.1:9090, or a free port")]
    Dashboard { addr: String, why: io::Error },
    /// The run was judged against `--slo` and did not pass (its report,
    /// verdict included, is out).
    #[error("SLO {verdict}{}", reason.as_ref().map(|why| format!(": {why}")).unwrap_or_default())]
    Slo {
        verdict: Verdict,
        reason: Option<String>,
        status: u8,
    },
    /// A sweep ended without a rate, or at the generator's limit; its
    /// table and conclusion are out.
    #[error("{0}")]
    Sweep(String, u8),
    /// Requests failed and none completed: the report, with the errors by
    /// cause, is out, but a script checking the exit status alone must
    /// not take the run for a measurement.
    /// `what`: the run's unit (`request`, a WebSocket `message` or
    /// `subscription`).
    #[error("no {what} completed ({errors}); the report above says why")]
    NothingCompleted { what: &'static str, errors: String },
    /// A signal ended the run early; the report of what ran is out.
    #[error("stopped by {} after {}; the report covers what ran", cause.describe(), format_time_us(after.as_micros() as f64))]
    Interrupted { cause: StopCause, after: Duration },
}

impl Error {
    /// The error of a verdict that is not a pass; `None` for a pass.
    pub fn unless_met(slo: Option<SloReport>) -> Option<Error> {
        slo.filter(|s| s.exit_status != 0).map(|s| Error::Slo {
            verdict: s.verdict,
            reason: s.reason,
            status: s.exit_status,
        })
    }

    /// The process's exit status for this error: 128 plus the signal's
    /// number for a run a signal ended (130 for Ctrl-C, 143 for SIGTERM),
    /// as shells report a process the signal ended; 1 for the rest.
    pub fn exit_status(&self) -> u8 {
        match self {
            Error::Interrupted { cause, .. } => match cause {
                StopCause::Interrupt => 130,
                StopCause::Terminate => 143,
                _ => 1,
            },
            Error::Slo { status, .. } | Error::Sweep(_, status) => *status,
            Error::NothingCompleted { .. } => 5,
            _ => 1,
        }
    }

    /// The file at `path` could not be read as it should, for `why`.
    pub fn input(path: &Path, why: impl ToString) -> Error {
        Error::Input {
            path: path.to_path_buf(),
            why: why.to_string(),
        }
    }

    /// Writing the output file of `flag` at `path` failed.
    pub fn output(flag: &'static str, path: &Path, why: io::Error) -> Error {
        Error::Output {
            flag,
            path: path.to_path_buf(),
            why,
        }
    }
}

/// How the run ends: a signal's stop is reported by the exit status,
/// after everything else, and so is a verdict that is not a pass; a
/// script's `thread:stop()` in every thread is its own choice.
pub fn ending(outcome: Outcome, slo: Option<SloReport>) -> Result<Outcome, Error> {
    if let Some(i) = outcome.stats.interruption {
        if matches!(i.cause, StopCause::Interrupt | StopCause::Terminate) {
            return Err(Error::Interrupted {
                cause: i.cause,
                after: i.after,
            });
        }
    }
    match Error::unless_met(slo) {
        Some(failed) => Err(failed),
        None => Ok(outcome),
    }
}

/// The fix to suggest for a result file that cannot be written.
fn output_hint(why: &io::Error) -> &'static str {
    match why.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => {
            "; check that the directory exists and is writable"
        }
        io::ErrorKind::StorageFull => "; free some space or write elsewhere",
        io::ErrorKind::IsADirectory => "; name a file, not a directory",
        _ => "",
    }
}

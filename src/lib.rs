//! The `metron` binary's library: the load generator ([`metron_core`],
//! re-exported whole, so `metron::engine` and the rest read as before), the
//! built-in target server ([`serve`], the `metron-serve` crate), and the two
//! commands that need the server: `metron serve` and `metron demo`.
//!
//! # Layout
//! - [`serve_args`]: `metron serve`'s flags, turned into a
//!   [`serve::ServeConfig`].
//! - [`demo`]: a ten-second show of what coordinated omission hides.
//! - [`manual`]: shell completions and man pages, from the same commands.
//! - [`parse`] and [`run`]: the command line, with `serve`, `demo`,
//!   `completions` and `man` recognised here and every other command
//!   handed to the load generator.
//!
//! The load generator never depends on the server (docs/ARCHITECTURE.md,
//! tests/layers.rs): this crate is the one place both meet.

pub mod demo;
pub mod manual;
pub mod serve_args;

pub use metron_core::*;
pub use metron_serve as serve;

use std::ffi::OsString;
use std::io::{self, Write};

use demo::DemoArgs;
use manual::{CompletionsArgs, ManArgs};
use metron_core::cli::{first_word, subcommand, Versioned};
use serve_args::ServeArgs;

/// What the user asked metron to do.
#[derive(Debug)]
pub enum Command {
    /// A command of the load generator: bench, report or merge.
    Load(metron_core::cli::Command),
    /// Run the built-in target server.
    Serve(Box<ServeArgs>),
    /// Run a short rate-mode test against the built-in target with a stall.
    Demo(DemoArgs),
    /// Print a shell's completion script.
    Completions(CompletionsArgs),
    /// Write the man pages into a directory.
    Man(ManArgs),
}

/// Everything that can end a command early.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Load(#[from] metron_core::Error),
    #[error("{0}")]
    Serve(#[from] serve::ServeError),
}

impl Error {
    /// Standard output closed by its reader (`metron ... | head`).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Load(metron_core::Error::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe)
    }

    /// The process's exit status for this error (see
    /// [`metron_core::Error::exit_status`]).
    pub fn exit_status(&self) -> u8 {
        match self {
            Error::Load(e) => e.exit_status(),
            Error::Serve(_) => 1,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Load(e.into())
    }
}

impl From<metron_core::cli::config::ConfigError> for Error {
    fn from(e: metron_core::cli::config::ConfigError) -> Error {
        Error::Load(e.into())
    }
}

/// Parses the whole command line (including the program name): `serve`,
/// `demo`, `completions` and `man` here, anything else by the load
/// generator, so that a bare URL stays the default, as in wrk.
pub fn parse(args: impl IntoIterator<Item = impl Into<OsString>>) -> Result<Command, clap::Error> {
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    match first_word(&args) {
        Some("serve") => {
            subcommand::<Versioned<ServeArgs>>(&args, "metron serve", serve_args::ABOUT)
                .map(|c| Command::Serve(Box::new(c.args)))
        }
        Some("demo") => subcommand::<Versioned<DemoArgs>>(&args, "metron demo", demo::ABOUT)
            .map(|c| Command::Demo(c.args)),
        Some("completions") => subcommand::<Versioned<CompletionsArgs>>(
            &args,
            "metron completions",
            manual::COMPLETIONS_ABOUT,
        )
        .map(|c| Command::Completions(c.args)),
        Some("man") => subcommand::<Versioned<ManArgs>>(&args, "metron man", manual::MAN_ABOUT)
            .map(|c| Command::Man(c.args)),
        _ => metron_core::cli::parse(args).map(Command::Load),
    }
}

/// Runs one command, writing its report to `out`.
pub fn run(cmd: Command, out: &mut dyn Write) -> Result<(), Error> {
    match cmd {
        Command::Load(cmd) => Ok(metron_core::run(cmd, out)?),
        Command::Serve(args) => {
            let cfg = serve::ServeConfig::try_from(*args).map_err(serve::ServeError::Config)?;
            Ok(serve::run(cfg)?)
        }
        Command::Demo(args) => demo::run(&args, out),
        Command::Completions(args) => Ok(manual::print_completions(&args, out)?),
        Command::Man(args) => Ok(manual::write_man_pages(&args, out)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subcommands_are_found_by_their_first_word() {
        assert!(matches!(
            parse(["metron", "demo"]).unwrap(),
            Command::Demo(_)
        ));
        assert!(matches!(
            parse(["metron", "serve", "--listen", "127.0.0.1:0"]).unwrap(),
            Command::Serve(_)
        ));
        assert!(matches!(
            parse(["metron", "http://127.0.0.1:1/"]).unwrap(),
            Command::Load(metron_core::cli::Command::Bench(_))
        ));
    }
}

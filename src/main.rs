//! The `metron` binary: parse, run, map the outcome to an exit code.

use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cmd = match metron::parse(std::env::args_os()) {
        Ok(cmd) => cmd,
        // A mistake is one line; --help and --version print as they are.
        Err(e) if e.use_stderr() => {
            let _ = writeln!(std::io::stderr(), "metron: {}", metron::cli::error_line(&e));
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    let mut out = Stdout(io::stdout().lock());
    match metron::run(cmd, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`metron ... | head`) is the reader's choice, not an error.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            let _ = writeln!(std::io::stderr(), "metron: {e}");
            ExitCode::from(e.exit_status())
        }
    }
}

/// Standard output whose errors say that it was standard output that
/// failed (a full disk, say), keeping their kind: a closed pipe stays one.
struct Stdout<W>(W);

impl<W: Write> Write for Stdout<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(on_stdout)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(on_stdout)
    }
}

fn on_stdout(e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("cannot write the report to standard output: {e}"),
    )
}

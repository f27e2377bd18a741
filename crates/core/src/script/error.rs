//! The one error type of the script module, and the reduction of mlua's
//! errors to a single line.
//!
//! A script error ends the run, and the user reads it on a terminal, so it
//! must say three things on one line: which script, which hook (or loading)
//! and what Lua said, with Lua's `file:LINE:` kept. mlua appends tracebacks
//! and wraps errors raised in Rust callbacks; this file undoes both, and
//! adds the script line a Rust callback was called from, which Lua itself
//! does not add to errors raised outside Lua code.

use std::fmt;
use std::io;

/// Where in a script's life an error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Compiling or running the script's main chunk.
    Load,
    Setup,
    Init,
    Request,
    /// Building the static request with `wrk.request()`.
    StaticRequest,
    Response,
    Delay,
    Done,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Load => "while loading",
            Stage::Setup => "in setup()",
            Stage::Init => "in init()",
            Stage::Request => "in request()",
            Stage::StaticRequest => "in wrk.request()",
            Stage::Response => "in response()",
            Stage::Delay => "in delay()",
            Stage::Done => "in done()",
        })
    }
}

/// Anything a script did wrong, or a script that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read script {file}: {source}")]
    Read {
        file: String,
        #[source]
        source: io::Error,
    },
    /// Lua raised an error (syntax, runtime, or from one of our functions).
    #[error("script error {stage} ({file}): {message}")]
    Lua {
        stage: Stage,
        file: String,
        /// One line, starting with `file:LINE:` where Lua knows the line.
        message: String,
    },
    /// A hook ran but returned a value of the wrong type. `location` is
    /// `file:LINE` of the hook's definition.
    #[error("script error {stage} ({file}): {location}: expected {expected}, got {found}")]
    Return {
        stage: Stage,
        file: String,
        location: String,
        expected: &'static str,
        found: &'static str,
    },
}

impl ScriptError {
    pub(crate) fn lua(stage: Stage, file: &str, error: &mlua::Error) -> ScriptError {
        ScriptError::Lua {
            stage,
            file: file.to_owned(),
            message: one_line(error),
        }
    }

    /// The stage this error belongs to, if it came from running the script.
    pub fn stage(&self) -> Option<Stage> {
        match self {
            ScriptError::Read { .. } => None,
            ScriptError::Lua { stage, .. } | ScriptError::Return { stage, .. } => Some(*stage),
        }
    }
}

/// Lua's message for `error`, on one line, without mlua's decorations.
pub(crate) fn one_line(error: &mlua::Error) -> String {
    match error {
        mlua::Error::RuntimeError(message) | mlua::Error::MemoryError(message) => {
            first_line(message).to_owned()
        }
        mlua::Error::SyntaxError { message, .. } => first_line(message).to_owned(),
        mlua::Error::CallbackError { traceback, cause } => from_callback(traceback, cause),
        other => first_line(&other.to_string()).to_owned(),
    }
}

/// An error raised by Rust code that Lua called. The innermost callback is
/// where it went wrong, and its traceback names the script line that called
/// it; Lua's own messages (from Lua code further in) already carry a line.
fn from_callback(traceback: &str, cause: &mlua::Error) -> String {
    if let mlua::Error::CallbackError { .. } = cause {
        return one_line(cause);
    }
    let message = one_line(cause);
    match caller_location(traceback) {
        Some(location) if !message.starts_with(location) => format!("{location}: {message}"),
        _ => message,
    }
}

/// The first `chunk:LINE` frame of a Lua traceback, skipping C frames and
/// the Lua glue mlua puts around userdata fields (`__mlua_index`, ...).
fn caller_location(traceback: &str) -> Option<&str> {
    traceback.lines().skip(1).find_map(|frame| {
        let frame = frame.trim_start();
        let (chunk, rest) = frame.split_once(':')?;
        let (line, _) = rest.split_once(':')?;
        let is_line = !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit());
        let ours = chunk != "[C]" && !chunk.starts_with("__mlua");
        (is_line && ours).then(|| &frame[..chunk.len() + 1 + line.len()])
    })
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn runtime_errors_lose_their_traceback() {
        let error = mlua::Error::RuntimeError(
            "a.lua:3: boom\nstack traceback:\n\t[C]: in ?\n\ta.lua:3: in main chunk".into(),
        );
        assert_eq!(one_line(&error), "a.lua:3: boom");
    }

    #[test]
    fn callback_errors_gain_the_calling_line() {
        let error = mlua::Error::CallbackError {
            traceback: "stack traceback:\n\t[C]: in function 'set'\n\t__mlua_newindex:8: in ?\n\
                        \ts.lua:7: in function 'setup'"
                .into(),
            cause: Arc::new(mlua::Error::runtime("bad address")),
        };
        assert_eq!(one_line(&error), "s.lua:7: bad address");
    }

    #[test]
    fn nested_callback_errors_use_the_innermost() {
        let inner = mlua::Error::CallbackError {
            traceback: "stack traceback:\n\t[C]: in ?\n\tb.lua:2: in function 'f'".into(),
            cause: Arc::new(mlua::Error::runtime("inner")),
        };
        let outer = mlua::Error::CallbackError {
            traceback: "stack traceback:\n\ta.lua:9: in main chunk".into(),
            cause: Arc::new(inner),
        };
        assert_eq!(one_line(&outer), "b.lua:2: inner");
    }

    #[test]
    fn display_is_one_line_naming_stage_and_file() {
        let error = ScriptError::lua(
            Stage::Request,
            "auth.lua",
            &mlua::Error::RuntimeError("auth.lua:12: oops\nstack traceback:\n\t...".into()),
        );
        assert_eq!(
            error.to_string(),
            "script error in request() (auth.lua): auth.lua:12: oops"
        );
        assert_eq!(error.stage(), Some(Stage::Request));
    }

    #[test]
    fn wrong_return_type_says_what_was_expected() {
        let error = ScriptError::Return {
            stage: Stage::Delay,
            file: "d.lua".into(),
            location: "d.lua:3".into(),
            expected: "a number of milliseconds",
            found: "table",
        };
        assert_eq!(
            error.to_string(),
            "script error in delay() (d.lua): d.lua:3: expected a number of milliseconds, got table"
        );
    }
}

//! The one error type of the script module, and the reduction of mlua's
//! errors to a single line.
//!
//! A script error ends the run, and the user reads it on a terminal, so it
//! must say three things on one line: which script, which hook (or loading)
//! and what Lua said, with Lua's `file:LINE:` kept. mlua appends tracebacks
//! and wraps errors raised in Rust callbacks; this file undoes both, and
//! adds the script line where Lua itself gives none: a Rust callback's
//! caller, and an error raised without a position (`error(msg, 0)`, or a
//! value that is not a string, such as `error()` or `error({})`).

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
    /// `event(data)`, for each event of a streamed response (`--sse`).
    Event,
    /// `message(data, binary)`, for each WebSocket message received.
    Message,
    Delay,
    Done,
    /// A visit's `flow(visit)`.
    Flow,
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
            Stage::Event => "in event()",
            Stage::Message => "in message()",
            Stage::Delay => "in delay()",
            Stage::Done => "in done()",
            Stage::Flow => "in flow()",
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
    /// `request()` returned a string that is not whole HTTP requests.
    /// `location` is `file:LINE` of its definition.
    #[error("script error in request() ({file}): {location}: returned bytes that are not whole HTTP requests: {why}; return HTTP/1.x requests, as wrk.format() builds them from valid fields (over WebSocket, a message: wrk.format(nil, nil, nil, message))")]
    NotHttp {
        file: String,
        location: String,
        why: String,
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
            ScriptError::NotHttp { .. } => Some(Stage::Request),
        }
    }
}

/// Lua's message for `error`, on one line, without mlua's decorations.
pub(crate) fn one_line(error: &mlua::Error) -> String {
    match error {
        mlua::Error::RuntimeError(message) => with_location(message),
        mlua::Error::MemoryError(message) => first_line(message).to_owned(),
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

/// A runtime error's first line. Lua starts it with `chunk:LINE:` unless
/// the error was raised without a position; then the traceback mlua
/// appends tells where it was raised.
fn with_location(message: &str) -> String {
    let first = first_line(message);
    let located = frames(message).any(|(chunk, _)| starts_with_location(first, chunk));
    match caller_location(message) {
        Some(location) if !located => format!("{location}: {first}"),
        _ => first.to_owned(),
    }
}

/// `text` starts with `chunk:LINE:`, as Lua's positioned messages do.
fn starts_with_location(text: &str, chunk: &str) -> bool {
    text.strip_prefix(chunk).and_then(line_number).is_some()
}

/// The length of `:LINE` when `text` starts with `:LINE:`.
fn line_number(text: &str) -> Option<usize> {
    let rest = text.strip_prefix(':')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && rest[digits..].starts_with(':')).then_some(1 + digits)
}

/// The first `chunk:LINE` frame of a Lua traceback, skipping C frames and
/// the Lua glue mlua puts around userdata fields (`__mlua_index`, ...).
fn caller_location(text: &str) -> Option<&str> {
    frames(text).find_map(|(chunk, location)| {
        // `[metron]` is the flow API's own Lua (`http.get` and the like):
        // the line to fix is the script's, which called it.
        let ours = chunk != "[C]" && chunk != "[metron]" && !chunk.starts_with("__mlua");
        ours.then_some(location)
    })
}

/// The frames of the traceback in `text` (what follows its
/// `stack traceback:` line) that name a line: each as its chunk and its
/// `chunk:LINE`.
fn frames(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines()
        .skip_while(|l| l.trim() != "stack traceback:")
        .skip(1)
        .filter_map(|frame| {
            // `chunk:LINE: in ...`; the chunk (a path) may hold colons.
            let frame = frame.trim_start();
            frame.match_indices(':').find_map(|(at, _)| {
                let len = line_number(&frame[at..])?;
                Some((&frame[..at], &frame[..at + len]))
            })
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

    /// `error(msg, 0)`, `error()` and `error({})` carry no position; the
    /// traceback gives the line that raised them.
    #[test]
    fn errors_without_a_position_gain_the_raising_line() {
        let traceback = "\nstack traceback:\n\t[C]: in ?\n\t[C]: in function 'error'\n\
                         \ta.lua:3: in function 'init'";
        for value in ["no position", "nil", "table: 0x5555"] {
            let error = mlua::Error::RuntimeError(format!("{value}{traceback}"));
            assert_eq!(one_line(&error), format!("a.lua:3: {value}"));
        }
        // error(msg, 2) points at the caller: that position is kept.
        let error = mlua::Error::RuntimeError(format!("a.lua:9: raised for the caller{traceback}"));
        assert_eq!(one_line(&error), "a.lua:9: raised for the caller");
        // A chunk name with a colon in it is still recognised.
        let traceback = "\nstack traceback:\n\t[C]: in ?\n\t/t/a:b.lua:3: in main chunk";
        let error = mlua::Error::RuntimeError(format!("/t/a:b.lua:3: boom{traceback}"));
        assert_eq!(one_line(&error), "/t/a:b.lua:3: boom");
        let error = mlua::Error::RuntimeError(format!("boom{traceback}"));
        assert_eq!(one_line(&error), "/t/a:b.lua:3: boom");
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

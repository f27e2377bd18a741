//! Everything Lua: wrk's scripting API on LuaJIT, so that wrk's scripts run
//! unchanged.
//!
//! # States and their order
//! One main state runs `setup(thread)` for each thread before the run and
//! `done(summary, latency, requests)` after it. Each worker thread has its
//! own state, loaded from the same script. [`MainScript::create_thread`]
//! does, for thread `i`: make its state and run the script in it, call
//! `setup(thread)` in the main state, then `init(args)` in the new state
//! (`args[0]` is the URL, the script's arguments follow). All of this
//! happens on the main OS thread before any worker starts.
//!
//! # Hot path
//! A [`ThreadScript`] finds out once which hooks its state defines and
//! keeps them as functions, so a request costs one Lua call, not a global
//! lookup. Without `request()` the request is static: `wrk.request()` is
//! called once and the bytes are reused, so a script that only sets
//! `wrk.method`, `wrk.path`, `wrk.headers` or `wrk.body` costs no Lua call
//! per request. Only with `response()` defined does the engine need to
//! capture heads and bodies.
//!
//! # Choices where wrk is vague or wrong
//! - Scripts get every library LuaJIT has, `ffi` and `debug` included, as
//!   they do under wrk.
//! - `wrk.format` does not add fields to the caller's headers table, and
//!   orders fields deterministically (see `wrk.rs`).
//! - Tables crossing states keep keys and values as they are (wrk2 swaps
//!   them); cycles, deep nesting and functions are errors (see `copy.rs`).
//! - `thread:get`/`thread:set` from the main state reach a worker's state
//!   before and after the run; during it they report an error instead of
//!   waiting for the worker.
//! - `response()` sees each header name once; a repeated field keeps its
//!   last value, as under wrk.
//! - `delay()` must return a number; a negative or NaN delay counts as 0.
//! - Statistics objects: see `stats.rs` for `#obj`, `obj(i)` and `obj[i]`.
//!
//! # Files
//! - `main_script.rs`: the main state, `setup()` and `done()`.
//! - `thread_script.rs`: a worker's state and its per-request hooks.
//! - `thread.rs`: the `thread` object and the slot a worker's state lives in.
//! - `copy.rs`: copying values between states.
//! - `wrk.rs`: the `wrk` table; `net.rs`: lookup, connect and the clock.
//! - `flow.rs` and `flow.lua`: visits, `flow(visit)` as coroutines, with
//!   `http.*` and `think`.
//! - `stats.rs`: `done()`'s arguments; `cjson/`: the `cjson` module.
//! - `error.rs`: [`ScriptError`], one line per failure.
//! - `stdout.rs`: the scripts' standard output kept in order with metron's.

mod cjson;
mod copy;
mod error;
mod flow;
mod main_script;
mod net;
mod stats;
pub mod stdout;
mod thread;
mod thread_script;
mod wrk;

use std::path::Path;

use mlua::{Function, Lua, LuaOptions, StdLib, Value};

pub use error::{ScriptError, Stage};
pub use flow::{Next, StepNames, MAX_STEPS};
pub use main_script::MainScript;
pub use thread_script::ThreadScript;

use thread::ThreadRef;

/// What the script's `wrk` table describes: the target and the default
/// request. `headers` are the command line's `-H` fields, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptTarget {
    pub scheme: String,
    pub host: String,
    pub port: u16,
    /// The request's method and path (`GET` and the URL's path, or a
    /// `--grpc` call's), and its body, if it has one.
    pub method: String,
    pub path: String,
    pub body: Option<Vec<u8>>,
    /// `host[:port]` as the `Host` field carries it.
    pub authority: String,
    /// The URL as given; `args[0]` of `init(args)`.
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// Send the script's `print`, `io.write` and `io.stdout` to standard
    /// error: standard output carries the JSON document (`--json -`).
    pub print_to_stderr: bool,
}

/// A script's code, read once and run in every state.
struct Source {
    /// The path as the user gave it, for messages and the chunk name.
    file: String,
    code: Vec<u8>,
}

impl std::fmt::Debug for Source {
    /// The file and the code's size: the code itself would flood a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("file", &self.file)
            .field("bytes", &self.code.len())
            .finish()
    }
}

impl Source {
    fn read(path: &Path) -> Result<Source, ScriptError> {
        let file = path.display().to_string();
        match std::fs::read(path) {
            Ok(code) => Ok(Source { file, code }),
            Err(source) => Err(ScriptError::Read { file, source }),
        }
    }

    /// A new state with the standard libraries, `wrk`, `cjson`, and the
    /// script's main chunk run.
    fn new_state(
        &self,
        target: &ScriptTarget,
        thread: Option<ThreadRef>,
        seed: u64,
    ) -> Result<Lua, ScriptError> {
        // SAFETY: wrk opens every library for its scripts, `ffi` and
        // `debug` included, and scripts written for it use them. A script
        // is the user's own code, run with the user's rights; it gets the
        // same power here as under wrk.
        let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::default()) };
        let load_error = |e: mlua::Error| ScriptError::lua(Stage::Load, &self.file, &e);
        wrk::install(&lua, target, thread).map_err(load_error)?;
        flow::install(&lua, seed).map_err(load_error)?;
        cjson::register(&lua).map_err(load_error)?;
        if target.print_to_stderr {
            stdout::to_stderr(&lua).map_err(load_error)?;
        }
        // "@path" makes Lua name the file in messages: `path:LINE: ...`.
        let chunk = lua.load(&self.code[..]).set_name(format!("@{}", self.file));
        chunk.exec().map_err(load_error)?;
        Ok(lua)
    }
}

/// The global `name` if it is a function (wrk ignores other values).
fn hook(lua: &Lua, name: &str) -> Option<Function> {
    match lua.globals().get::<Value>(name) {
        Ok(Value::Function(f)) => Some(f),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Scripts written to temporary files, and a target to point them at.

    use std::ops::Deref;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::ScriptTarget;

    /// A script written to a directory of its own, removed with it.
    pub(crate) struct ScriptFile(PathBuf);

    impl Deref for ScriptFile {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for ScriptFile {
        fn drop(&mut self) {
            if let Some(dir) = self.0.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    /// Writes `code` to a fresh file named `name`, which lasts as long as
    /// what this returns.
    pub(crate) fn script_file(name: &str, code: &str) -> ScriptFile {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "metron-script-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, code).unwrap();
        ScriptFile(path)
    }

    pub(crate) fn target() -> ScriptTarget {
        ScriptTarget {
            scheme: "http".into(),
            host: "127.0.0.1".into(),
            port: 8080,
            method: "GET".into(),
            path: "/".into(),
            body: None,
            authority: "127.0.0.1:8080".into(),
            url: "http://127.0.0.1:8080/".into(),
            headers: Vec::new(),
            print_to_stderr: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{script_file, target};
    use super::*;

    fn load(name: &str, code: &str) -> Result<Lua, ScriptError> {
        let path = script_file(name, code);
        Source::read(&path)?.new_state(&target(), None, 0)
    }

    #[test]
    fn hooks_are_found_only_when_they_are_functions() {
        let lua = load("h.lua", "function request() end response = 5").unwrap();
        assert!(hook(&lua, "request").is_some());
        assert!(hook(&lua, "response").is_none());
        assert!(hook(&lua, "delay").is_none());
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let path = script_file("broken.lua", "x = 1\nfunction (\n");
        let error = Source::read(&path)
            .unwrap()
            .new_state(&target(), None, 0)
            .unwrap_err();
        let text = error.to_string();
        let file = path.display().to_string();
        assert!(
            text.starts_with(&format!("script error while loading ({file}): {file}:2: ")),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
    }

    #[test]
    fn runtime_errors_while_loading_name_the_line() {
        let error = load("rt.lua", "local t = nil\nlocal x = t.field").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("rt.lua:2: attempt to index"), "{text}");
        assert!(!text.contains('\n'), "{text}");
    }

    #[test]
    fn missing_files_say_so() {
        let error = Source::read(Path::new("/nonexistent/x.lua")).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("cannot read script /nonexistent/x.lua: "),
            "{error}"
        );
    }

    #[test]
    fn scripts_get_luajit_libraries() {
        let lua = load(
            "libs.lua",
            "ok = jit ~= nil and bit ~= nil and require('ffi') ~= nil",
        )
        .unwrap();
        assert!(lua.globals().get::<bool>("ok").unwrap());
    }
}

//! One standard output in the order things were written. A script writes
//! through the C library's `stdout` (LuaJIT's `print`, `io.write` and
//! `io.stdout` use it), metron through Rust's: two buffers in front of one
//! file descriptor. Left alone, the C library buffers everything when
//! stdout is a file or a pipe, and what a script printed in `init()` would
//! come out after the report. So its stdout is made line-buffered before
//! any script runs, and metron empties it before each of its own writes
//! (catching an `io.write` without a newline); metron's own text is flushed
//! before any hook can run.
//!
//! With `--json -` standard output carries the document alone, and the
//! scripts' `print`, `io.write` and `io.stdout` go to standard error.

use std::io::{self, Write};
use std::sync::Once;

use mlua::Lua;

extern "C" {
    /// The C library's standard output stream (a global of C's stdio).
    static mut stdout: *mut libc::FILE;
}

/// Makes the C library's stdout line-buffered, once per process, before
/// any script has written to it.
pub fn line_buffered() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: `stdout` is the C library's own stream, valid for the
        // whole process; setvbuf with a null buffer lets it allocate.
        unsafe {
            libc::setvbuf(stdout, std::ptr::null_mut(), libc::_IOLBF, 8192);
        }
    });
}

/// Writes out what scripts left in the C library's stdout buffer.
pub fn flush() {
    // SAFETY: fflush locks the stream; any thread may call it.
    unsafe {
        libc::fflush(stdout);
    }
}

/// A writer for metron's own output to standard output: before each write
/// it writes out what scripts printed so far, so the two keep their order.
pub struct AfterScripts<'a>(pub &'a mut dyn Write);

impl Write for AfterScripts<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        flush();
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Sends a state's `print`, `io.write` and `io.stdout` to standard error.
pub(crate) fn to_stderr(lua: &Lua) -> mlua::Result<()> {
    lua.load(
        r##"
        local stderr, select = io.stderr, select
        io.output(stderr)
        io.stdout = stderr
        -- print as LuaJIT's: arguments through the global tostring, tabs
        -- between them, a newline after.
        function print(...)
          for i = 1, select("#", ...) do
            if i > 1 then stderr:write("\t") end
            stderr:write(tostring((select(i, ...))))
          end
          stderr:write("\n")
        end
        "##,
    )
    .set_name("=metron")
    .exec()
}

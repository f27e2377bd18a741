//! An output's file: checked before the run, so that a path that cannot
//! be written fails the run before anything is sent, and named by its
//! flag in every error.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::run::error::Error;

/// An output file and the flag that named it.
pub struct OutputFile {
    flag: &'static str,
    path: PathBuf,
}

impl OutputFile {
    /// `flag`'s file, once its directory is known to take it.
    pub fn checked(flag: &'static str, path: &Path) -> Result<OutputFile, Error> {
        check_writable(flag, path)?;
        Ok(OutputFile {
            flag,
            path: path.to_path_buf(),
        })
    }

    /// Creates (or empties) the file.
    pub fn create(&self) -> Result<File, Error> {
        File::create(&self.path).map_err(|why| self.failed(why))
    }

    /// Writes the whole file at once.
    pub fn write(&self, bytes: &[u8]) -> Result<(), Error> {
        write_file(self.flag, &self.path, bytes)
    }

    /// Writing it failed, for `why`.
    pub fn failed(&self, why: io::Error) -> Error {
        Error::output(self.flag, &self.path, why)
    }
}

/// Writes the file of `flag` at `path` whole.
pub fn write_file(flag: &'static str, path: &Path, bytes: &[u8]) -> Result<(), Error> {
    std::fs::write(path, bytes).map_err(|why| Error::output(flag, path, why))
}

/// Fails when the directory of `path` does not exist or cannot be
/// written.
fn check_writable(flag: &'static str, path: &Path) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let fail = |why: io::Error| Error::output(flag, path, why);
    if !dir.is_dir() {
        let why = format!("there is no directory {}", dir.display());
        return Err(fail(io::Error::new(io::ErrorKind::NotFound, why)));
    }
    let c_dir = CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| fail(io::Error::from(io::ErrorKind::InvalidInput)))?;
    // SAFETY: access() reads the NUL-terminated path and nothing else.
    if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK) } != 0 {
        return Err(fail(io::Error::last_os_error()));
    }
    Ok(())
}

//! Files the tests write and read back: scratch directories, scripts
//! written for one test, the JSON documents, interval logs and CSV rows
//! a run leaves.

use std::path::{Path, PathBuf};
use std::process::Command;

use metron::report::hlog::{read_log, LogEntry};
use serde::de::DeserializeOwned;

/// A fresh directory for one test's files, removed when dropped.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("metron-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes, once per test process, the scratch directories that test
/// processes no longer running left behind (a test cannot know it is the
/// last to use them, so each run clears its predecessors').
fn sweep_stale() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rest = name
                .strip_prefix("metron-outputs-")
                .or_else(|| name.strip_prefix("metron-replay-"));
            let pid = rest.and_then(|r| r.split('-').next()?.parse::<u32>().ok());
            let gone = pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists());
            if gone {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
}

/// A file in this process's scratch directory for the outputs tests.
pub fn tmp(name: &str) -> std::path::PathBuf {
    sweep_stale();
    let dir = std::env::temp_dir().join(format!("metron-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A directory of its own for each test's files.
pub fn dir(test: &str) -> PathBuf {
    sweep_stale();
    let d = std::env::temp_dir().join(format!("metron-replay-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `text` to `name` in `dir`; returns its path as an argument.
pub fn write(dir: &Path, name: &str, text: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Writes a Lua script for one test; the caller removes it.
pub fn lua_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("metron-edges-{name}-{}.lua", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// The untagged (corrected latency) entries of an interval log.
pub fn corrected(log: &Path) -> Vec<LogEntry> {
    read_log(log)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.tag.is_none())
        .collect()
}

/// The rows of a CSV file as Python's csv module reads them: a list of
/// objects, numbers as numbers and empty cells as null.
pub fn csv_rows(path: &Path) -> Vec<serde_json::Value> {
    let script = "import csv, json, sys\n\
def cell(v):\n    if v == '': return None\n    try: f = float(v)\n    except ValueError: return v\n    return int(f) if f.is_integer() and '.' not in v else f\n\
rows = [{k: cell(v) for k, v in r.items()} for r in csv.DictReader(open(sys.argv[1], newline=''))]\n\
print(json.dumps(rows))";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script prints JSON")
}

/// A JSON file a run wrote (a document, a sweep's, a merge's), read as
/// `T`.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The published JSON Schema of a run's document (docs/result.schema.json)
/// checks `doc`: the errors, each with where it is.
pub fn schema_errors(doc: &serde_json::Value) -> Vec<String> {
    errors_against(include_str!("../../../docs/result.schema.json"), doc)
}

/// The published JSON Schema of a sweep's document
/// (docs/sweep.schema.json) checks `doc`.
pub fn sweep_schema_errors(doc: &serde_json::Value) -> Vec<String> {
    errors_against(include_str!("../../../docs/sweep.schema.json"), doc)
}

fn errors_against(schema: &str, doc: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_str(schema).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema itself is valid");
    validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

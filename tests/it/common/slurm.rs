//! A Slurm cluster, where there is one: its commands, the job array of
//! one run and what its tasks leave.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::*;

/// Runs a Slurm command, bounded by coreutils' `timeout` (a client whose
/// controller does not answer retries for a long while).
pub fn slurm(cmd: &str, args: &[&str]) -> Output {
    let child = Command::new("timeout")
        .arg("20")
        .arg(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("timeout (coreutils) runs");
    wait_bounded(child, Duration::from_secs(30))
}

/// Why there is no cluster to submit to, if there is none: `sinfo` fails,
/// or shows no node ready for jobs (idle, or mixed: partly allocated).
pub fn no_cluster() -> Option<String> {
    let o = slurm("sinfo", &["-h", "-o", "%t %N"]);
    if !o.status.success() {
        let why = match o.status.code() {
            Some(127) => "sinfo is not installed".to_string(),
            Some(124) => "sinfo did not answer within 20 s".to_string(),
            _ => format!("sinfo -h failed: {}", stderr(&o).trim()),
        };
        return Some(why);
    }
    let out = stdout(&o);
    let ready = out.lines().any(|l| {
        let state = l.split_whitespace().next().unwrap_or("");
        state == "idle" || state == "mix"
    });
    (!ready).then(|| format!("no node idle or mixed in sinfo: {:?}", out.trim()))
}

/// The submitted job: cancelled when dropped, so that a failing test
/// leaves nothing queued or running (cancelling a finished job is a
/// harmless error).
pub struct Job(pub String);

impl Drop for Job {
    fn drop(&mut self) {
        let _ = slurm("scancel", &[&self.0]);
    }
}

/// What the tasks printed (their `--output` files), for failure messages.
pub fn task_outputs(dir: &Path) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "out"));
    files.sort();
    files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            format!("--- {}\n{text}", p.display())
        })
        .collect()
}

/// A document's completed requests.
pub fn completed(doc: &Value) -> u64 {
    doc["counters"]["completed"]
        .as_u64()
        .unwrap_or_else(|| panic!("no counters.completed in {doc}"))
}

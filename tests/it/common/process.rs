//! metron and its server as processes: run with a given environment or
//! with standard output in a file, started as `metron serve` and stopped,
//! and read through /proc (worker threads' CPUs, resident memory).

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use super::{stderr, wait_bounded};

/// Cpus_allowed_list of each metron-worker thread of `pid`.
pub fn worker_cpus(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut cpus = Vec::new();
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("metron-worker") {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        if let Some(line) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            cpus.push(line.split_whitespace().nth(1).unwrap_or("").to_string());
        }
    }
    cpus
}

/// Resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs the binary with its standard output written to a file (the case
/// where the C library buffers a script's output), and returns what the
/// file holds and what went to standard error.
pub fn run_to_file(name: &str, args: &[&str]) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("metron-lua-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let file = std::fs::File::create(&path).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(args)
        .stdout(file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let o = wait_bounded(child, std::time::Duration::from_secs(60));
    assert!(o.status.success(), "{}", stderr(&o));
    (std::fs::read_to_string(&path).unwrap(), stderr(&o))
}

/// Runs the binary with `env` set (and the other trust variables unset),
/// within a minute.
pub fn metron_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_metron"));
    cmd.args(args)
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    wait_bounded(
        cmd.spawn().expect("the binary runs"),
        Duration::from_secs(60),
    )
}

/// Starts `metron serve` with `args` on a free port; returns the process
/// and the URL it announced.
pub fn serve_command(args: &[&str]) -> (std::process::Child, String) {
    serve_on("127.0.0.1:0", args)
}

/// Starts `metron serve --listen ADDR` with `args`; returns the process
/// and the URL it announced.
pub fn serve_on(addr: &str, args: &[&str]) -> (std::process::Child, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(["serve", "--listen", addr])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().trim_start_matches("metron serve listening on ");
    (child, format!("{url}/"))
}

/// Ends a process started by a test.
pub fn stop(mut child: std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

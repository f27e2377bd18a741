//! grpcio, Python's gRPC, as a target for `--grpc`: tests/grpc_server.py
//! serves greet.Greeter (tests/grpc/greet.proto) on a port of its own,
//! counts what it receives, and writes those counts to a file in its
//! directory when it is stopped (SIGTERM) or asked (SIGUSR1): the server's
//! account of a run. Also the schema's paths and a FileDescriptorSet
//! compiled from it by grpcio-tools' protoc.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::servers::{self, Process};

/// The test server.
pub const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc_server.py");
/// The schema it serves, for `--proto`.
pub const PROTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc/greet.proto");
/// The directory of [`PROTO`], for `--import-path` and protoc's `-I`.
pub const PROTO_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc");

/// The file the server writes its counts to, in its directory.
const COUNTS: &str = "counts.json";

/// Whether `python3` can import `module`: a failure under CI, which
/// installs `package` (.ci/run), a note elsewhere.
fn python_has(module: &str, package: &str) -> bool {
    let probe = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output();
    if probe.is_ok_and(|o| o.status.success()) {
        return true;
    }
    let why = format!("python3 cannot import {module}: python3 -m pip install {package}");
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("note: a gRPC check skipped: {why}");
    false
}

/// Whether grpcio is there to serve.
pub fn ready() -> bool {
    python_has("grpc", "grpcio")
}

/// Whether grpcio-tools is there to compile a descriptor set.
pub fn tools_ready() -> bool {
    python_has("grpc_tools.protoc", "grpcio-tools")
}

/// What the server received, as it wrote it.
#[derive(Debug, Default, Deserialize)]
pub struct Counts {
    /// Calls received, by method (`SayHello`, `Countdown`, `Collect`).
    pub calls: BTreeMap<String, u64>,
    /// SayHello calls it aborted with UNAVAILABLE as `fail_every` asked.
    pub failed: u64,
    /// SayHello calls by the name they carried.
    pub names: BTreeMap<String, u64>,
    /// Calls by each metadata field named `x-…`, as `name=value`.
    pub metadata: BTreeMap<String, u64>,
    /// Countdown replies sent.
    pub messages_sent: u64,
    /// With [`Grpcio::start_timed`]: when it finished each SayHello call
    /// (Unix seconds) and the name the call carried, in the order it
    /// finished them.
    #[serde(default)]
    pub finished: Vec<(f64, String)>,
}

impl Counts {
    /// Calls of `method` received.
    pub fn calls(&self, method: &str) -> u64 {
        self.calls.get(method).copied().unwrap_or(0)
    }

    /// The longest time between two SayHello calls it finished, and when
    /// the first of the two was (Unix seconds): a stop of the process
    /// shows here at its length.
    pub fn longest_silence(&self) -> (Duration, f64) {
        self.finished
            .windows(2)
            .map(|w| (Duration::from_secs_f64((w[1].0 - w[0].0).max(0.0)), w[0].0))
            .max_by(|a, b| a.0.cmp(&b.0))
            .unwrap_or_default()
    }
}

/// A running tests/grpc_server.py: killed, and its directory removed,
/// when dropped; [`Grpcio::stop`] ends it the way that keeps its counts.
pub struct Grpcio {
    pub process: Process,
    pub port: u16,
}

impl Grpcio {
    /// The server on a port of its own, or `None` where python3 or grpcio
    /// is missing (a failure under CI).
    pub fn start() -> Option<Grpcio> {
        Self::launch(false, None)
    }

    /// [`Grpcio::start`], keeping when it finished each SayHello call.
    pub fn start_timed() -> Option<Grpcio> {
        Self::launch(true, None)
    }

    /// [`Grpcio::start`] over TLS, with this PEM certificate and key.
    pub fn start_tls(cert: &str, key: &str) -> Option<Grpcio> {
        Self::launch(false, Some((cert, key)))
    }

    fn launch(times: bool, tls: Option<(&str, &str)>) -> Option<Grpcio> {
        if !ready() {
            return None;
        }
        let (process, [port]) = servers::start(
            servers::fresh_dir("grpcio"),
            |dir, [port]| {
                let mut cmd = Command::new("python3");
                cmd.arg(SERVER).arg(port.to_string()).arg(dir.join(COUNTS));
                // Enough threads for every call in flight at the rates the
                // tests use: a streaming call holds one for its length.
                cmd.args(["--workers", "64", "--lifetime", "600"]);
                if times {
                    cmd.arg("--times");
                }
                if let Some((cert, key)) = tls {
                    cmd.args(["--tls", cert, key]);
                }
                cmd
            },
            // It writes why it could not listen where its counts go.
            |dir| {
                std::fs::read_to_string(dir.join(COUNTS))
                    .unwrap_or_else(|_| "(it said nothing)".to_string())
            },
        );
        Some(Grpcio { process, port })
    }

    /// The URL metron is given: h2c with prior knowledge on the port.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its URL when it serves TLS ([`Grpcio::start_tls`]).
    pub fn https_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    fn signal(&self, sig: libc::c_int) {
        let pid = self.process.child.id() as libc::pid_t;
        // SAFETY: a plain kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "signal {sig}");
    }

    fn counts_file(&self) -> PathBuf {
        self.process.dir.join(COUNTS)
    }

    /// Its counts so far, while it goes on serving (SIGUSR1; it answers
    /// within a fifth of a second).
    pub fn counts(&self) -> Counts {
        let file = self.counts_file();
        let _ = std::fs::remove_file(&file);
        self.signal(libc::SIGUSR1);
        let start = Instant::now();
        while !file.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the gRPC server wrote no counts within 5 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        read_counts(&file)
    }

    /// Stops it (SIGTERM: it stops serving, then writes its counts) and
    /// returns its counts.
    pub fn stop(mut self) -> Counts {
        self.signal(libc::SIGTERM);
        let start = Instant::now();
        loop {
            if let Some(status) = self.process.child.try_wait().expect("it can be waited for") {
                assert!(status.success(), "the gRPC server exited with {status}");
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the gRPC server did not exit within 10 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        read_counts(&self.counts_file())
    }

    /// Stops its process (SIGSTOP) for `pause`, then lets it go on: a
    /// stall of known length in a server nobody here wrote. Returns how
    /// long it really was stopped.
    pub fn pause(&self, pause: Duration) -> Duration {
        let began = Instant::now();
        self.signal(libc::SIGSTOP);
        std::thread::sleep(pause);
        self.signal(libc::SIGCONT);
        began.elapsed()
    }
}

fn read_counts(file: &Path) -> Counts {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("the gRPC server wrote no counts: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("its counts: {e}: {text}"))
}

/// The schema compiled as users compile one for `--protoset`: grpcio-tools'
/// protoc, `--include_imports --descriptor_set_out`, into `dir`. `None`
/// where grpcio-tools is missing (a failure under CI).
pub fn protoset(dir: &Path) -> Option<PathBuf> {
    if !tools_ready() {
        return None;
    }
    let out = dir.join("greet.pb");
    let run = Command::new("python3")
        .args(["-m", "grpc_tools.protoc", "--include_imports"])
        .arg(format!("--descriptor_set_out={}", out.display()))
        .arg(format!("-I{PROTO_DIR}"))
        .arg(PROTO)
        .output()
        .expect("python3 runs");
    assert!(
        run.status.success(),
        "protoc: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    Some(out)
}

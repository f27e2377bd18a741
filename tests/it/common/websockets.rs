//! WebSocket servers nobody here wrote: Python's `websockets` library
//! (tests/ws/echo_server.py) and Go's gorilla/websocket (tests/ws/gorilla,
//! built from the Go module proxy): started on a port of the test's own,
//! their own count of the messages they received and sent read back,
//! stopped (SIGSTOP) and restarted on the same port.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::servers::{self, Process};

const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ws/echo_server.py");

/// Whether Python has `websockets`: a failure under CI, a note elsewhere.
pub fn ready() -> bool {
    let has = Command::new("python3")
        .args(["-c", "import websockets.asyncio.server"])
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs Python's websockets: python3 -m pip install websockets"
        );
        eprintln!("note: skipped: python3 -m pip install websockets to run it");
    }
    has
}

/// The server's own account: one line per connection as it ended.
#[derive(Debug, Default)]
pub struct Counts {
    pub connections: u64,
    pub received: u64,
    pub sent: u64,
    /// The close code of each connection, as the server saw it.
    pub closes: Vec<String>,
    /// Connections that agreed to permessage-deflate (Python's server).
    pub deflated: u64,
}

pub struct WebSockets {
    process: Option<Process>,
    pub port: u16,
    log: PathBuf,
    tls: Option<(PathBuf, PathBuf)>,
    /// gorilla/websocket's echo server, built: run instead of Python's.
    gorilla: Option<PathBuf>,
}

const GORILLA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ws/gorilla");

/// tests/ws/gorilla built once per test process (`go build`, its module
/// from the Go module proxy), or `None` where Go is missing (outside CI).
fn gorilla_binary() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = servers::fresh_dir("gorilla-build").join("gorilla-echo");
            let built = Command::new("go")
                .args(["build", "-mod=readonly", "-o"])
                .arg(&out)
                .arg(".")
                .current_dir(GORILLA)
                .output();
            match built {
                Ok(o) if o.status.success() => Some(out),
                Ok(o) => panic!(
                    "go build of tests/ws/gorilla failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(e) => {
                    assert!(
                        std::env::var_os("CI").is_none(),
                        "CI needs Go to build gorilla/websocket's echo server: {e}"
                    );
                    eprintln!("note: skipped: Go is not installed ({e})");
                    None
                }
            }
        })
        .clone()
}

impl WebSockets {
    /// The server, or `None` where Python lacks `websockets` (outside CI).
    pub fn start(tls: Option<(PathBuf, PathBuf)>) -> Option<WebSockets> {
        if !ready() {
            return None;
        }
        Some(Self::launch(tls, None))
    }

    /// gorilla/websocket's echo example (`/echo`), or `None` where Go is
    /// missing (outside CI).
    pub fn gorilla() -> Option<WebSockets> {
        Some(Self::launch(None, Some(gorilla_binary()?)))
    }

    fn launch(tls: Option<(PathBuf, PathBuf)>, gorilla: Option<PathBuf>) -> WebSockets {
        let dir = servers::fresh_dir("websockets");
        let log = dir.join("counts.log");
        let (process, [port]) = servers::start(
            dir,
            |dir, [port]| {
                Self::command(
                    port,
                    &dir.join("counts.log"),
                    tls.as_ref(),
                    gorilla.as_deref(),
                )
            },
            |_| "(it said nothing)".to_string(),
        );
        WebSockets {
            process: Some(process),
            port,
            log,
            tls,
            gorilla,
        }
    }

    fn command(
        port: u16,
        log: &std::path::Path,
        tls: Option<&(PathBuf, PathBuf)>,
        gorilla: Option<&std::path::Path>,
    ) -> Command {
        if let Some(binary) = gorilla {
            let mut cmd = Command::new(binary);
            cmd.args(["-addr", &format!("127.0.0.1:{port}")])
                .arg("-log")
                .arg(log);
            return cmd;
        }
        let mut cmd = Command::new("python3");
        cmd.arg(SERVER)
            .args(["--port", &port.to_string()])
            .arg("--log")
            .arg(log);
        if let Some((cert, key)) = tls {
            cmd.arg("--tls").arg(cert).arg(key);
        }
        cmd
    }

    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls.is_some() { "wss" } else { "ws" };
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    fn pid(&self) -> libc::pid_t {
        self.process.as_ref().expect("running").child.id() as libc::pid_t
    }

    /// Stops the process (SIGSTOP) for `pause`; how long it really was.
    pub fn pause(&self, pause: Duration) -> Duration {
        let began = Instant::now();
        // SAFETY: signalling a child of ours by its pid.
        unsafe { libc::kill(self.pid(), libc::SIGSTOP) };
        std::thread::sleep(pause);
        unsafe { libc::kill(self.pid(), libc::SIGCONT) };
        began.elapsed()
    }

    /// Stops the server as an operator restarts one (SIGTERM: it closes
    /// every connection with 1001 going away and writes their counts),
    /// then starts it again on the same port after `down`.
    pub fn restart(&mut self, down: Duration) {
        let mut process = self.process.take().expect("running");
        // SAFETY: signalling a child of ours by its pid.
        unsafe { libc::kill(process.child.id() as libc::pid_t, libc::SIGTERM) };
        let exited = exits_within(&mut process.child, Duration::from_secs(10));
        assert!(exited, "the server did not stop within 10 s of SIGTERM");
        std::thread::sleep(down);
        let dir = process.dir.clone();
        // The directory holds the log: keep it past the old process.
        std::mem::forget(process);
        let gorilla = self.gorilla.as_deref();
        let mut child = Self::command(self.port, &self.log, self.tls.as_ref(), gorilla)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the server starts again");
        servers::wait_listening(&mut child, &[self.port], || "(it said nothing)".into())
            .expect("the server listens again on its port");
        self.process = Some(Process { child, dir });
    }

    /// Stops the server gracefully enough that every connection's line is
    /// written (metron has closed them all by then), and reads its counts.
    pub fn counts(&self) -> Counts {
        // Lines are written as connections end; give the last a moment.
        let text = servers::settled_log(&self.log);
        let mut c = Counts::default();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["received", r, "sent", s, "close", code, ref rest @ ..] = words[..] {
                c.connections += 1;
                c.received += r.parse::<u64>().unwrap();
                c.sent += s.parse::<u64>().unwrap();
                c.closes.push(code.to_string());
                c.deflated += u64::from(rest == ["deflate", "yes"]);
            }
        }
        c
    }
}

/// Whether `child` exits within `limit` (it is killed if not).
fn exits_within(child: &mut std::process::Child, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

//! Caddy as an HTTP/3 target: started on 127.0.0.1 as a plain process with
//! a home, data and log of its own (`admin off`, its internal authority
//! kept in its directory and never installed), serving HTTP/1.1, HTTP/2
//! and HTTP/3 on one port (TCP and UDP), its JSON access log read back as
//! the server's account of a run.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::*;

/// A running Caddy, killed and its directory removed on drop.
pub struct Caddy {
    pub process: servers::Process,
    pub port: u16,
}

impl Caddy {
    /// A running Caddy whose certificate is issued, or `None` where it is
    /// not installed.
    pub fn start() -> Option<Caddy> {
        let caddy = servers::tool("caddy", "caddy")?;
        let dir = servers::fresh_dir("caddy");
        let (process, [port]) = servers::start(
            dir,
            |dir, [port]| {
                std::fs::write(dir.join("Caddyfile"), caddyfile(dir, port)).unwrap();
                let mut cmd = Command::new(&caddy);
                cmd.args(["run", "--adapter", "caddyfile", "--config"]);
                cmd.arg(dir.join("Caddyfile"));
                // Its own home: nothing is read from or written to the
                // user's.
                for var in ["HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"] {
                    cmd.env(var, dir);
                }
                cmd
            },
            |dir| {
                let log = std::fs::read_to_string(dir.join("caddy.log")).unwrap_or_default();
                log.lines().last().unwrap_or("(no log)").to_string()
            },
        );
        let caddy = Caddy { process, port };
        caddy.wait_for_certificate();
        Some(caddy)
    }

    /// Caddy listens before its internal authority has issued the site's
    /// certificate: wait (bounded) until it is on disk and in use.
    fn wait_for_certificate(&self) {
        let cert = self
            .process
            .dir
            .join("data/certificates/local/127.0.0.1/127.0.0.1.crt");
        let start = Instant::now();
        while !cert.exists() {
            assert!(
                start.elapsed() < servers::STARTUP,
                "caddy issued no certificate within {:?}",
                servers::STARTUP
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // On disk is not yet in use: until Caddy has loaded it, a
        // handshake fails with internal_error. Wait until one succeeds.
        while !self.handshakes() {
            assert!(
                start.elapsed() < servers::STARTUP,
                "caddy completed no TLS handshake within {:?}",
                servers::STARTUP
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether a TLS handshake with it, verified against its authority,
    /// completes (openssl, which .ci/run installs).
    fn handshakes(&self) -> bool {
        Command::new("openssl")
            .args([
                "s_client",
                "-verify_return_error",
                "-servername",
                "127.0.0.1",
            ])
            .arg("-connect")
            .arg(format!("127.0.0.1:{}", self.port))
            .arg("-CAfile")
            .arg(self.cacert())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The root of Caddy's internal authority, for `--cacert`.
    pub fn cacert(&self) -> String {
        let root: PathBuf = self.process.dir.join("data/pki/authorities/local/root.crt");
        root.to_str().unwrap().to_string()
    }

    /// Requests logged so far. Caddy
    /// writes a request's line when it has finished with it, which may be
    /// just after the client saw the response: this waits (at most 3 s)
    /// until the log stops growing.
    pub fn access_log(&self) -> Vec<Logged> {
        let text = servers::settled_log(&self.process.dir.join("access.log"));
        text.lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
                let r = &v["request"];
                let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
                Logged {
                    proto: text(&r["proto"]),
                    method: text(&r["method"]),
                    uri: text(&r["uri"]),
                    status: v["status"].as_u64().unwrap_or_default() as u16,
                    ts: v["ts"].as_f64().unwrap_or_default(),
                }
            })
            .collect()
    }

    /// Stops Caddy's process (SIGSTOP) for `pause`, then lets it go on:
    /// a stall of known length in a server nobody here wrote. Returns how
    /// long it really was stopped.
    pub fn pause(&self, pause: Duration) -> Duration {
        let pid = self.process.child.id() as libc::pid_t;
        let began = Instant::now();
        // SAFETY: plain kill(2) calls on our own child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        std::thread::sleep(pause);
        assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
        began.elapsed()
    }
}

/// One line of the access log.
#[derive(Debug)]
pub struct Logged {
    /// `HTTP/3.0` for HTTP/3.
    pub proto: String,
    pub method: String,
    pub uri: String,
    pub status: u16,
    /// When Caddy finished with it, in Unix seconds.
    pub ts: f64,
}

/// The configuration: one site on 127.0.0.1:`port` with Caddy's internal
/// authority, answering `hello` to every request, and a JSON access log.
fn caddyfile(dir: &std::path::Path, port: u16) -> String {
    let d = dir.display();
    format!(
        "{{
	admin off
	skip_install_trust
	auto_https disable_redirects
	storage file_system {d}/data
	log {{
		output file {d}/caddy.log
	}}
	servers {{
		protocols h1 h2 h3
	}}
}}
https://127.0.0.1:{port} {{
	bind 127.0.0.1
	tls internal
	respond \"hello\" 200
	log {{
		output file {d}/access.log
		format json
	}}
}}
"
    )
}

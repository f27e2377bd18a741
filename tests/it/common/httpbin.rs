//! httpbin, the HTTP request-and-response service behind httpbin.org
//! (PyPI's `httpbin`), served by gunicorn as its users run it: a real
//! application nobody here wrote, with cookies, bearer tokens and slow
//! routes, whose access log records each request's cookie and
//! `Authorization` header.

use std::process::Command;

use super::servers::{self, Process};

/// Gunicorn's line per request: the request line, the status, and the
/// two headers a visit carries (`-` where absent).
const LOG_FORMAT: &str = "%(r)s|%(s)s|%({cookie}i)s|%({authorization}i)s";

pub struct Httpbin {
    process: Process,
    port: u16,
}

/// One request in httpbin's access log.
#[derive(Debug, Clone)]
pub struct Logged {
    pub path: String,
    pub status: u16,
    pub cookie: Option<String>,
    pub authorization: Option<String>,
}

impl Httpbin {
    /// httpbin under gunicorn (one worker of 16 threads, keep-alive) on a
    /// port of its own; `None` where python3 lacks httpbin or gunicorn (a
    /// failure under CI, which installs them).
    pub fn start() -> Option<Httpbin> {
        let probe = Command::new("python3")
            .args(["-c", "import httpbin, gunicorn"])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            let why = "python3 cannot import httpbin and gunicorn: python3 -m pip install httpbin gunicorn";
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("note: the httpbin check skipped: {why}");
            return None;
        }
        // Gunicorn from 24 on opens a control socket, by default one
        // shared by every gunicorn of the user: this one gets its own.
        let help = Command::new("python3")
            .args(["-m", "gunicorn", "--help"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let control_socket = help.contains("--control-socket");
        let (process, [port]) = servers::start(
            servers::fresh_dir("httpbin"),
            |dir, [port]| {
                let mut c = Command::new("python3");
                c.args([
                    "-m",
                    "gunicorn",
                    "--workers",
                    "1",
                    "--worker-class",
                    "gthread",
                ]);
                c.args(["--threads", "16", "--keep-alive", "30"]);
                c.arg("--bind").arg(format!("127.0.0.1:{port}"));
                c.arg("--access-logfile").arg(dir.join("access.log"));
                c.arg("--access-logformat").arg(LOG_FORMAT);
                c.arg("--error-logfile").arg(dir.join("error.log"));
                if control_socket {
                    c.arg("--control-socket").arg(dir.join("gunicorn.ctl"));
                }
                c.arg("httpbin:app");
                c
            },
            |dir| std::fs::read_to_string(dir.join("error.log")).unwrap_or_default(),
        );
        Some(Httpbin { process, port })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The requests logged so far, in the order gunicorn finished them,
    /// once the log has stopped growing.
    pub fn access_log(&self) -> Vec<Logged> {
        let text = servers::settled_log(&self.process.dir.join("access.log"));
        text.lines()
            .map(|line| {
                let f: Vec<&str> = line.split('|').collect();
                assert_eq!(f.len(), 4, "an access log line: {line}");
                let path = f[0].split(' ').nth(1).unwrap_or_default().to_string();
                let header = |s: &str| (s != "-").then(|| s.to_string());
                Logged {
                    path,
                    status: f[1].parse().unwrap_or_default(),
                    cookie: header(f[2]),
                    authorization: header(f[3]),
                }
            })
            .collect()
    }
}

//! A real Prometheus (Debian's `prometheus`, run as a plain process with
//! a configuration and a data directory of the test's own) scraping
//! metron's `/metrics`, and its HTTP API.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Whether the `prometheus` binary is here: a failure under CI, which
/// must have it (see .ci/run), a note elsewhere. Returns whether the test
/// can go on.
pub fn ready() -> bool {
    if Command::new("prometheus")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have prometheus (Debian's package; see .ci/run)"
    );
    eprintln!("note: prometheus is not installed (apt-get install prometheus); the check skips");
    false
}

/// `n` loopback ports that nothing listens on now, from the range the
/// suite keeps for these processes (19400 to 19499); a port can still be
/// taken between this and its use, which then fails the test.
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<TcpListener> = (19400..19500u16)
        .filter_map(|p| TcpListener::bind(("127.0.0.1", p)).ok())
        .take(n)
        .collect();
    assert_eq!(held.len(), n, "not {n} free ports in 19400-19499");
    held.iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// A running Prometheus; stopped when dropped.
pub struct Prometheus {
    child: Child,
    pub addr: String,
}

impl Prometheus {
    /// Starts Prometheus on `127.0.0.1:port` scraping `targets`
    /// (`HOST:PORT` each, path /metrics) every second, with its
    /// configuration, data and log in `dir`; waits until it is ready.
    pub fn start(dir: &Path, port: u16, targets: &[String]) -> Prometheus {
        let config = dir.join("prometheus.yml");
        let list = targets
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: metron\n    static_configs:\n      - targets: [{list}]\n"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus { child, addr };
        let start = Instant::now();
        loop {
            if p.get("/-/ready").is_some_and(|(code, _)| code == 200) {
                return p;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "prometheus was not ready within 30 s: {}",
                std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until Prometheus scrapes `n` targets (each has an `up`
    /// series, 1 once it answers): it takes up the targets of its
    /// configuration some seconds after it starts, and what happens
    /// before then it never sees.
    pub fn wait_for_targets(&self, n: usize) {
        let start = Instant::now();
        loop {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64();
            if self.scalar("count(up)", t) == Some(n as f64) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "prometheus did not scrape {n} targets within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// One GET in HTTP/1.0 (so the body comes whole, not chunked, and
    /// the connection closes after it): the status code and the body, or
    /// `None` if nothing answered.
    fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut s = TcpStream::connect(&self.addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr).ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        let (head, body) = text.split_once("\r\n\r\n")?;
        let code = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((code, body.to_string()))
    }

    /// An API call: `path` with the `params` URL-encoded; its `data`, or
    /// the test fails naming the error Prometheus gave.
    pub fn api(&self, path: &str, params: &[(&str, &str)]) -> Value {
        let query: Vec<String> = params
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        let url = format!("{path}?{}", query.join("&"));
        let (code, body) = self
            .get(&url)
            .unwrap_or_else(|| panic!("prometheus did not answer {url}"));
        let v: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{url}: {code}, not JSON ({e}): {body}"));
        assert!(
            code == 200 && v["status"] == "success",
            "{params:?}: {code} {}: {}",
            v["errorType"],
            v["error"]
        );
        v["data"].clone()
    }

    /// An instant query at Unix time `at`: its result (a list of series
    /// with their `metric` labels and `value`).
    pub fn query(&self, expr: &str, at: f64) -> Vec<Value> {
        let data = self.api(
            "/api/v1/query",
            &[("query", expr), ("time", &at.to_string())],
        );
        data["result"].as_array().cloned().unwrap_or_default()
    }

    /// The one value of an instant query with one series, or `None` when
    /// it has none.
    pub fn scalar(&self, expr: &str, at: f64) -> Option<f64> {
        let result = self.query(expr, at);
        assert!(
            result.len() <= 1,
            "{expr}: more than one series: {result:?}"
        );
        result.first().map(value_of)
    }

    /// A range query from `start` to `end` (Unix times) every `step`
    /// seconds, as Grafana draws a graph: its series, each with `values`.
    pub fn query_range(&self, expr: &str, start: f64, end: f64, step: f64) -> Vec<Value> {
        let data = self.api(
            "/api/v1/query_range",
            &[
                ("query", expr),
                ("start", &start.to_string()),
                ("end", &end.to_string()),
                ("step", &step.to_string()),
            ],
        );
        data["result"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An instant vector sample's value: `[time, "value"]` (NaN for "NaN").
pub fn value_of(series: &Value) -> f64 {
    series["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no value in {series}"))
}

/// `text` percent-encoded for a query string: all but the unreserved
/// characters.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

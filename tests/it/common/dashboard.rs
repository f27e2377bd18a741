//! `--dashboard` from outside: the binary started with it, its address
//! read from stderr, and what its paths answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A run with `--dashboard` on a free port, its address read from what it
/// prints before the run starts; the rest of its stderr keeps coming on
/// the channel.
pub fn start(args: &[&str]) -> (Child, String, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the dashboard's address is printed first");
    let addr = line
        .strip_prefix("Dashboard: http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_string();
    (child, addr, rx)
}

/// One GET, the whole response's body (the server closes after it).
pub fn get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    (head.to_string(), body.to_string())
}

/// A JSON body, or the test fails naming it.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Parses Prometheus' text format (0.0.4) strictly enough to catch what a
/// scraper refuses: every sample's family has HELP and TYPE lines before
/// it, families are contiguous, names and labels are well formed, values
/// are numbers, and a summary's samples are its quantiles, sum and count.
/// Returns the samples as (name with labels, value).
pub fn prometheus(text: &str) -> Vec<(String, f64)> {
    let name_ok = |n: &str| {
        let mut cs = n.chars();
        cs.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut types = std::collections::HashMap::new();
    let mut helped = std::collections::HashSet::new();
    let mut done = std::collections::HashSet::new();
    let mut current = String::new();
    let mut samples = Vec::new();
    assert!(text.ends_with('\n'), "the text ends with a newline");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let (kind, name, tail) = (words.next(), words.next(), words.next());
            let name = name.unwrap_or_else(|| panic!("{line}"));
            assert!(name_ok(name), "{line}");
            match kind {
                Some("HELP") => assert!(helped.insert(name.to_string()), "two HELP: {line}"),
                Some("TYPE") => {
                    let t = tail.unwrap_or_default();
                    assert!(
                        ["counter", "gauge", "summary", "histogram", "untyped"].contains(&t),
                        "{line}"
                    );
                    assert!(
                        types.insert(name.to_string(), t.to_string()).is_none(),
                        "{line}"
                    );
                    if !current.is_empty() {
                        done.insert(std::mem::take(&mut current));
                    }
                    current = name.to_string();
                }
                _ => panic!("unknown comment: {line}"),
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line}"));
        let name = series.split('{').next().unwrap();
        assert!(name_ok(name), "{line}");
        if let Some(labels) = series.strip_prefix(name).filter(|l| !l.is_empty()) {
            let inner = labels
                .strip_prefix('{')
                .and_then(|l| l.strip_suffix('}'))
                .unwrap_or_else(|| panic!("{line}"));
            for pair in inner.split(',') {
                let (k, v) = pair.split_once('=').unwrap_or_else(|| panic!("{line}"));
                assert!(name_ok(k), "{line}");
                assert!(
                    v.len() >= 2 && v.starts_with('"') && v.ends_with('"'),
                    "{line}"
                );
            }
        }
        let family = [
            name,
            name.trim_end_matches("_sum"),
            name.trim_end_matches("_count"),
            name.trim_end_matches("_bucket"),
        ]
        .into_iter()
        .find(|f| types.contains_key(*f))
        .unwrap_or_else(|| panic!("no TYPE before {line}"));
        assert_eq!(family, current, "families are contiguous: {line}");
        assert!(!done.contains(family));
        assert!(helped.contains(family), "no HELP for {line}");
        if types[family] == "summary" && name == family {
            assert!(series.contains("quantile=\""), "{line}");
        }
        if types[family] == "histogram" {
            assert_ne!(name, family, "a histogram's samples have suffixes: {line}");
            assert_eq!(
                name.ends_with("_bucket"),
                series.contains("le=\""),
                "{line}"
            );
        }
        samples.push((series.to_string(), v));
    }
    samples
}

/// The dashboard page's source.
pub const PAGE: &str = include_str!("../../../crates/core/src/dashboard/page.html");

/// The top-level function `name` of the page's script, from its
/// `function` line to the closing brace at the start of a line.
pub fn page_function(name: &str) -> &'static str {
    let start = PAGE
        .find(&format!("\nfunction {name}("))
        .unwrap_or_else(|| panic!("the page defines {name}()"));
    let end = start + PAGE[start..].find("\n}\n").expect("the function ends") + 3;
    &PAGE[start..end]
}

/// Whether Node.js is here to run pieces of the page's script; CI must
/// have it, elsewhere the check is skipped with a note.
pub fn node_ready() -> bool {
    if Command::new("node").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have node to check the dashboard's script"
    );
    eprintln!("node is not installed; the dashboard's script check is skipped");
    false
}

/// Runs `script` under Node.js and returns what it printed.
pub fn node(script: &str) -> String {
    let out = Command::new("node")
        .args(["-e", script])
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

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

/// One sample of Prometheus' text format: its name, its labels in the
/// order written (values unescaped), and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if the sample has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A metric or label name as the text format allows it (a label's has no
/// colon, which `name_ok` lets through; none of metron's has one).
fn name_ok(n: &str) -> bool {
    let mut cs = n.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The labels between a sample's braces: `k="v"` pairs separated by
/// commas, values with `\\`, `\"` and `\n` escaped; `line` names the
/// sample when they are not well formed.
fn parse_labels(inner: &str, line: &str) -> Vec<(String, String)> {
    let mut labels: Vec<(String, String)> = Vec::new();
    let mut rest = inner;
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once("=\"")
            .unwrap_or_else(|| panic!("a label without =\"value\": {line}"));
        assert!(
            name_ok(key) && !key.contains(':'),
            "label name {key:?}: {line}"
        );
        assert!(
            labels.iter().all(|(k, _)| k != key),
            "label {key} twice: {line}"
        );
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => panic!("escape \\{other:?} in a label value: {line}"),
                },
                Some((_, '\n')) => panic!("a raw line feed in a label value: {line}"),
                Some((_, c)) => value.push(c),
                None => panic!("an unclosed label value: {line}"),
            }
        };
        labels.push((key.to_string(), value));
        rest = &after[end + 1..];
        if let Some(more) = rest.strip_prefix(',') {
            assert!(!more.is_empty(), "a trailing comma: {line}");
            rest = more;
        } else {
            assert!(rest.is_empty(), "labels not separated by commas: {line}");
        }
    }
    labels
}

/// Parses Prometheus' text format (0.0.4) strictly enough to catch what a
/// scraper refuses: every sample's family has HELP and TYPE lines before
/// it, families are contiguous, names and labels are well formed (values
/// quoted and escaped), values are numbers, a summary's samples are its
/// quantiles, sum and count, and each series of a histogram has buckets
/// in increasing `le` with counts that never fall, ending at `+Inf` with
/// its `_count`. Returns the samples.
pub fn samples(text: &str) -> Vec<Sample> {
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
        let labels = match series.strip_prefix(name).filter(|l| !l.is_empty()) {
            Some(braces) => parse_labels(
                braces
                    .strip_prefix('{')
                    .and_then(|l| l.strip_suffix('}'))
                    .unwrap_or_else(|| panic!("{line}")),
                line,
            ),
            None => Vec::new(),
        };
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
        let has = |key: &str| labels.iter().any(|(k, _)| k == key);
        if types[family] == "summary" && name == family {
            assert!(has("quantile"), "{line}");
        }
        if types[family] == "histogram" {
            assert_ne!(name, family, "a histogram's samples have suffixes: {line}");
            assert_eq!(name.ends_with("_bucket"), has("le"), "{line}");
        }
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value: v,
        });
    }
    check_histograms(&samples, &types);
    samples
}

/// Each histogram series (a family and its labels but `le`): buckets in
/// increasing `le`, counts that never fall, the last at `+Inf` and equal
/// to the series' `_count`.
fn check_histograms(samples: &[Sample], types: &std::collections::HashMap<String, String>) {
    type Key = (String, Vec<(String, String)>);
    let mut buckets: std::collections::BTreeMap<Key, Vec<(f64, f64)>> = Default::default();
    let mut counts: std::collections::BTreeMap<Key, f64> = Default::default();
    for s in samples {
        let others: Vec<(String, String)> = s
            .labels
            .iter()
            .filter(|(k, _)| k != "le")
            .cloned()
            .collect();
        if let Some(family) = s.name.strip_suffix("_bucket") {
            if types.get(family).map(String::as_str) == Some("histogram") {
                let le = s.label("le").unwrap();
                let le: f64 = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap_or_else(|_| panic!("le={le:?}: {s:?}"))
                };
                buckets
                    .entry((family.to_string(), others))
                    .or_default()
                    .push((le, s.value));
            }
        } else if let Some(family) = s.name.strip_suffix("_count") {
            if types.get(family).map(String::as_str) == Some("histogram") {
                counts.insert((family.to_string(), others), s.value);
            }
        }
    }
    assert_eq!(
        buckets.keys().collect::<Vec<_>>(),
        counts.keys().collect::<Vec<_>>(),
        "every histogram series has buckets and a count"
    );
    for (key, b) in &buckets {
        assert!(
            b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{key:?}: buckets out of order or falling: {b:?}"
        );
        assert_eq!(
            b.last().map(|l| l.0),
            Some(f64::INFINITY),
            "{key:?}: no +Inf bucket"
        );
        assert_eq!(
            b.last().unwrap().1,
            counts[key],
            "{key:?}: +Inf is not the count"
        );
    }
}

/// The text format parsed and checked as [`samples`] does, each sample as
/// (name with labels as written, value).
pub fn prometheus(text: &str) -> Vec<(String, f64)> {
    let parsed = samples(text);
    let series = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.rsplit_once(' ').unwrap().0.to_string());
    series.zip(parsed).map(|(s, p)| (s, p.value)).collect()
}

/// A JSON document's corrected latency at percentile `p` (one the
/// document lists, such as 99.0), in seconds.
pub fn corrected_percentile_s(doc: &serde_json::Value, p: f64) -> f64 {
    doc["latency"]["corrected"]["percentiles"]
        .as_array()
        .expect("percentiles in the document")
        .iter()
        .find(|pv| pv[0].as_f64() == Some(p))
        .and_then(|pv| pv[1].as_f64())
        .unwrap_or_else(|| panic!("no p{p} in the document"))
        / 1e6
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

//! Instances of one run on addresses of their own (`--shard`), and the
//! documents they leave.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hdrhistogram::Histogram;
use metron::serve::{ServeConfig, Server};
use serde_json::Value;

use super::*;

/// Instances of each sharded run.
pub const INSTANCES: usize = 3;

/// Test hosts: a network namespace for the target and one per instance,
/// joined by a bridge in the target's. Removed when dropped.
pub struct Hosts {
    pub target: String,
    pub instances: Vec<String>,
}

/// The test hosts' network: SUBNET.1 is the target, SUBNET.10 and up the
/// instances.
pub const SUBNET: &str = "10.213.0";

impl Hosts {
    /// The namespaces, or why they cannot be made here.
    pub fn create() -> Result<Hosts, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root".into());
        }
        let tag = std::process::id();
        let hosts = Hosts {
            target: format!("metron-t{tag}"),
            instances: (0..INSTANCES)
                .map(|i| format!("metron-{tag}-{i}"))
                .collect(),
        };
        let t = hosts.target.clone();
        let mut steps: Vec<Vec<String>> = vec![
            vec!["netns".into(), "add".into(), t.clone()],
            vec![
                "-n".into(),
                t.clone(),
                "link".into(),
                "set".into(),
                "lo".into(),
                "up".into(),
            ],
            words(&format!("-n {t} link add br0 type bridge")),
            words(&format!("-n {t} addr add {SUBNET}.1/24 dev br0")),
            words(&format!("-n {t} link set br0 up")),
        ];
        for (i, ns) in hosts.instances.iter().enumerate() {
            steps.push(words(&format!("netns add {ns}")));
            steps.push(words(&format!("-n {ns} link set lo up")));
            steps.push(words(&format!(
                "-n {t} link add v{i} type veth peer name eth0 netns {ns}"
            )));
            steps.push(words(&format!("-n {t} link set v{i} master br0 up")));
            steps.push(words(&format!(
                "-n {ns} addr add {SUBNET}.{}/24 dev eth0",
                10 + i
            )));
            steps.push(words(&format!("-n {ns} link set eth0 up")));
        }
        for step in steps {
            let out = Command::new("ip")
                .args(&step)
                .output()
                .map_err(|e| format!("ip: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "ip {}: {}",
                    step.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Ok(hosts)
    }

    /// Starts the target inside the target's namespace: the listening
    /// socket belongs to the namespace of the thread that opens it.
    pub fn serve(&self, cfg: ServeConfig) -> Server {
        let path = format!("/run/netns/{}", self.target);
        std::thread::spawn(move || {
            let ns = fs::File::open(&path).expect("the namespace exists");
            let entered =
                unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET) };
            assert_eq!(entered, 0, "setns: {}", std::io::Error::last_os_error());
            server(cfg)
        })
        .join()
        .expect("the target starts")
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in self.instances.iter().chain([&self.target]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// A command line as its words.
pub fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// A document's corrected latency histogram.
pub fn histogram(doc: &Value) -> Histogram<u64> {
    let text = doc["histograms"]["corrected"]
        .as_str()
        .expect("a histogram");
    metron::report::json::decode(text).expect("it decodes")
}

/// An empty directory of this process's for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metron-shard-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// One instance's run of the binary against `target`: one thread, two
/// connections, `flags`, and its document written to `json`.
pub fn instance_run(target: &Server, flags: &[&str], json: &Path) -> Output {
    let (json, u) = (json.to_str().expect("a UTF-8 path"), url(target, "/"));
    metron(&[&["-t", "1", "-c", "2"], flags, &["--json", json, &u]].concat())
}

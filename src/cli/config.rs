//! What the engine needs, derived once from what the user typed.
//!
//! [`Config::from_args`] checks every combination of flags, resolves the
//! target and spreads connections over threads. Each failure is a
//! [`ConfigError`] whose one-line message names the problem and the fix.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use rustls::sign::CertifiedKey;
use rustls::RootCertStore;

use super::pem::{self, PemError};
use super::BenchArgs;
use crate::http::request::{check_header_value, check_token};
use crate::replay::{Order, ReplayError, RequestSet, MAX_ENDPOINTS};

/// The longest run: far beyond any benchmark, far below where nanosecond
/// timestamps would overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// The server under test.
#[derive(Clone, Debug)]
pub struct Target {
    pub scheme: Scheme,
    /// Host as written in the URL (IPv6 literals without brackets).
    pub host: String,
    pub port: u16,
    /// Path and query, never empty.
    pub path: String,
    /// Value of the `Host` header: host, plus the port when not the default.
    pub authority: String,
    /// Every address the host resolved to, in resolver order.
    pub addrs: Vec<SocketAddr>,
}

/// A validated run configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub url: String,
    pub target: Target,
    pub threads: usize,
    /// Connections of each thread; they add up to `-c` exactly.
    pub conns_per_thread: Vec<usize>,
    pub duration: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    /// Total requests per second (rate mode), or `None` (closed loop).
    pub rate: Option<f64>,
    /// Headers from `-H`, in order.
    pub headers: Vec<(String, String)>,
    pub latency: bool,
    pub u_latency: bool,
    /// CPU of each thread, when pinned.
    pub affinity: Option<Vec<usize>>,
    /// How https hosts are authenticated, and how metron authenticates itself.
    pub tls: TlsOptions,
    pub max_head: usize,
    pub script: Option<PathBuf>,
    pub script_args: Vec<String>,
    /// `--requests`: the requests to replay instead of GET URL.
    pub replay: Option<Replay>,
    pub outputs: Outputs,
}

/// A requests file, loaded, and how to replay it.
#[derive(Clone, Debug)]
pub struct Replay {
    pub file: PathBuf,
    pub set: Arc<RequestSet>,
    pub order: Order,
    pub seed: u64,
    /// Statistics per endpoint.
    pub by_endpoint: bool,
}

/// How HTTPS connections are authenticated, from `-k`, `--cacert`,
/// `--cert` and `--key`; every file is read and checked here, before the
/// run. The same options apply to every https host of the run.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    pub trust: Trust,
    /// What to present to a server that asks for a client certificate.
    pub identity: Option<Identity>,
}

/// Which server certificates are accepted.
#[derive(Clone, Debug, Default)]
pub enum Trust {
    /// Those issued by an authority of the operating system's store (the
    /// default; see the README's HTTPS section for an empty store).
    #[default]
    System,
    /// `--cacert FILE`: those issued by an authority in FILE, and no
    /// other; the file replaces the system's store, as it does for curl.
    Authorities {
        file: PathBuf,
        roots: Arc<RootCertStore>,
    },
    /// `-k`: any certificate.
    Insecure,
}

/// `--cert` and `--key`, known to belong together.
#[derive(Clone, Debug)]
pub struct Identity {
    pub cert: PathBuf,
    pub key: Arc<CertifiedKey>,
}

/// What to produce besides the text report.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// `-` means stdout (the text report then goes to stderr).
    pub json: Option<PathBuf>,
    pub hlog: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// Intervals of the JSON time series and the interval log.
    pub interval: Duration,
    pub histogram: bool,
    pub timeseries: bool,
    pub thread_timeseries: bool,
    pub timeseries_interval: Duration,
    pub quiet: bool,
}

impl Outputs {
    /// The JSON document goes to stdout.
    pub fn json_on_stdout(&self) -> bool {
        self.json.as_deref() == Some(std::path::Path::new("-"))
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("invalid URL '{url}': {why}; write it as http://host[:port]/path")]
    Url { url: String, why: String },
    #[error("unsupported scheme '{0}': use http:// or https://")]
    Scheme(String),
    #[error("cannot resolve host '{host}': {why}; check the host name in the URL")]
    Resolve { host: String, why: String },
    #[error("-t 0: at least one thread is needed, e.g. -t 1")]
    NoThreads,
    #[error("-c {connections} is fewer than -t {threads}: every thread needs a connection; raise -c to at least {threads} or lower -t")]
    FewerConnections { connections: u64, threads: u64 },
    #[error("-d {0:?}: the test needs a positive duration, e.g. -d 10s")]
    NoDuration(Duration),
    #[error(
        "-d {0:?} is longer than a year: metron's clock arithmetic stops there; use a shorter -d"
    )]
    LongDuration(Duration),
    #[error(
        "-R {0}: the rate must be above zero (omit -R to run a closed loop as fast as possible)"
    )]
    NoRate(f64),
    #[error("-R {0:e}: above 1G requests/s the schedule's times would be less than 1 ns apart; use -R 1G or less, or omit -R for a closed loop")]
    HugeRate(f64),
    #[error("--warmup {warmup:?} is not shorter than -d {duration:?}: nothing would be measured; shorten --warmup or lengthen -d")]
    WarmupTooLong {
        warmup: Duration,
        duration: Duration,
    },
    #[error("--timeout {0:?}: the timeout must be above zero, e.g. --timeout 2s")]
    NoTimeout(Duration),
    #[error("-H '{0}': not a header; write it as 'Name: value'")]
    Header(String),
    #[error("-H '{header}': {why}; write it as 'Name: value'")]
    BadHeader { header: String, why: String },
    #[error("-a {cpus}: CPU {cpu} is not available to this process (it may use {available}); pick CPUs from that list")]
    Affinity {
        cpus: String,
        cpu: usize,
        available: String,
    },
    #[error("--max-head {0}: allow between 1k and 1G bytes of response head, e.g. --max-head 64k")]
    MaxHead(u64),
    #[error("{0}")]
    Requests(#[from] ReplayError),
    #[error("--requests goes to {hosts} hosts, so each of the {threads} threads needs {hosts} connections: raise -c to at least {needed} or lower -t")]
    HostConnections {
        hosts: usize,
        threads: usize,
        needed: usize,
    },
    #[error("--by-endpoint: the file has more than {MAX_ENDPOINTS} distinct endpoints; group requests with a \"name\" field")]
    Endpoints,
    #[error("{flag} needs --requests FILE")]
    NeedsRequests { flag: &'static str },
    #[error("--seed only changes a random order; add --requests-order random, or drop --seed")]
    SeedNeedsRandom,
    #[error("{flag} only applies to https:// hosts, and this run has none; drop {flag}, or load an https:// URL")]
    TlsUnused { flag: &'static str },
    #[error("{flag} needs {needs}")]
    TlsPair {
        flag: &'static str,
        needs: &'static str,
    },
    #[error("-k accepts any certificate, so --cacert {0} would never be used; drop one of them")]
    CacertInsecure(String),
    #[error("{0}")]
    Pem(#[from] PemError),
    #[error("--interval {0:?}: intervals must be at least 10ms, e.g. --interval 1s")]
    Interval(Duration),
    #[error("--timeseries-interval {0:?}: use a positive multiple of 10ms, e.g. 250ms")]
    SeriesInterval(Duration),
    #[error("{0:?} after the URL would go to a script's init(args), but there is no script; add -s FILE, or drop the extra words")]
    ArgsWithoutScript(String),
}

impl Config {
    pub fn from_args(args: &BenchArgs) -> Result<Config, ConfigError> {
        if args.threads == 0 {
            return Err(ConfigError::NoThreads);
        }
        if args.connections < args.threads {
            return Err(ConfigError::FewerConnections {
                connections: args.connections,
                threads: args.threads,
            });
        }
        if args.duration.is_zero() {
            return Err(ConfigError::NoDuration(args.duration));
        }
        if args.duration > MAX_DURATION {
            return Err(ConfigError::LongDuration(args.duration));
        }
        if let Some(r) = args.rate {
            if r <= 0.0 {
                return Err(ConfigError::NoRate(r));
            }
            if r > crate::schedule::MAX_RATE {
                return Err(ConfigError::HugeRate(r));
            }
        }
        if args.warmup >= args.duration {
            return Err(ConfigError::WarmupTooLong {
                warmup: args.warmup,
                duration: args.duration,
            });
        }
        if args.timeout.is_zero() {
            return Err(ConfigError::NoTimeout(args.timeout));
        }
        if let (None, Some(word)) = (&args.script, args.script_args.first()) {
            return Err(ConfigError::ArgsWithoutScript(word.clone()));
        }
        let headers: Vec<(String, String)> = args
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?;
        let outputs = outputs(args)?;
        let threads = args.threads as usize;
        let affinity = match &args.affinity {
            Some(cpus) => Some(check_affinity(&cpus.0)?),
            None => None,
        };
        let target = parse_target(&args.url)?;
        let conns_per_thread = spread(args.connections as usize, threads);
        let replay = replay(args, &target, &headers, &conns_per_thread)?;
        let hosts = match &replay {
            Some(r) => r.set.hosts(),
            None => std::slice::from_ref(&target),
        };
        let tls = tls_options(args, hosts)?;
        Ok(Config {
            url: args.url.clone(),
            target,
            threads,
            conns_per_thread,
            duration: args.duration,
            warmup: args.warmup,
            timeout: args.timeout,
            rate: args.rate,
            headers,
            latency: args.latency || args.u_latency,
            u_latency: args.u_latency,
            affinity,
            tls,
            max_head: max_head(args.max_head)?,
            script: args.script.clone(),
            script_args: args.script_args.clone(),
            replay,
            outputs,
        })
    }

    pub fn connections(&self) -> usize {
        self.conns_per_thread.iter().sum()
    }

    /// How the requests file is replayed, as the banner and the JSON
    /// document say it.
    pub fn replay_order(&self) -> Option<String> {
        let r = self.replay.as_ref()?;
        Some(match r.order {
            Order::Sequential => "in file order".to_string(),
            Order::Random => format!("in random order (--seed {})", r.seed),
        })
    }
}

/// Loads `--requests` and checks that every thread can reach every host.
fn replay(
    args: &BenchArgs,
    target: &Target,
    headers: &[(String, String)],
    conns_per_thread: &[usize],
) -> Result<Option<Replay>, ConfigError> {
    let Some(path) = &args.requests else {
        let flag = if args.by_endpoint {
            "--by-endpoint"
        } else if args.seed.is_some() {
            "--seed"
        } else if args.requests_order != Order::Sequential {
            "--requests-order"
        } else {
            return Ok(None);
        };
        return Err(ConfigError::NeedsRequests { flag });
    };
    if args.seed.is_some() && args.requests_order != Order::Random {
        return Err(ConfigError::SeedNeedsRandom);
    }
    let set = RequestSet::load(path, target, headers)?;
    let hosts = set.hosts().len();
    let fewest = conns_per_thread.iter().copied().min().unwrap_or(0);
    if fewest < hosts {
        let threads = conns_per_thread.len();
        return Err(ConfigError::HostConnections {
            hosts,
            threads,
            needed: hosts * threads,
        });
    }
    let too_many = set.too_many_endpoints();
    if args.by_endpoint && too_many {
        return Err(ConfigError::Endpoints);
    }
    let by_endpoint = args.by_endpoint || (!too_many && set.endpoints().len() >= 2);
    let seed = args.seed.unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        // Short enough to type back in as --seed.
        now.map_or(0, |d| d.as_nanos() as u64 % 1_000_000)
    });
    Ok(Some(Replay {
        file: path.clone(),
        set: Arc::new(set),
        order: args.requests_order,
        seed,
        by_endpoint,
    }))
}

/// Derives [`TlsOptions`]: refuses TLS flags that would do nothing, then
/// reads and checks their files.
fn tls_options(args: &BenchArgs, hosts: &[Target]) -> Result<TlsOptions, ConfigError> {
    match (&args.cert, &args.key) {
        (Some(_), None) => {
            let needs = "--key FILE, the private key of the certificate";
            return Err(ConfigError::TlsPair {
                flag: "--cert",
                needs,
            });
        }
        (None, Some(_)) => {
            let needs = "--cert FILE, the certificate the key belongs to";
            return Err(ConfigError::TlsPair {
                flag: "--key",
                needs,
            });
        }
        _ => {}
    }
    if !hosts.iter().any(|t| t.scheme == Scheme::Https) {
        let set = [
            (args.insecure, "-k"),
            (args.cacert.is_some(), "--cacert"),
            (args.cert.is_some(), "--cert"),
        ];
        if let Some(&(_, flag)) = set.iter().find(|(on, _)| *on) {
            return Err(ConfigError::TlsUnused { flag });
        }
    }
    let trust = match (&args.cacert, args.insecure) {
        (Some(file), true) => return Err(ConfigError::CacertInsecure(file.display().to_string())),
        (Some(file), false) => Trust::Authorities {
            file: file.clone(),
            roots: Arc::new(pem::authorities("--cacert", file)?),
        },
        (None, true) => Trust::Insecure,
        (None, false) => Trust::System,
    };
    let identity = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => Some(Identity {
            cert: cert.clone(),
            key: pem::certified_key(("--cert", cert), ("--key", key))?,
        }),
        _ => None,
    };
    Ok(TlsOptions { trust, identity })
}

fn max_head(bytes: u64) -> Result<usize, ConfigError> {
    if (1024..=1 << 30).contains(&bytes) {
        Ok(bytes as usize)
    } else {
        Err(ConfigError::MaxHead(bytes))
    }
}

fn outputs(args: &BenchArgs) -> Result<Outputs, ConfigError> {
    if args.interval < Duration::from_millis(10) {
        return Err(ConfigError::Interval(args.interval));
    }
    let step = crate::stats::SERIES_STEP.as_nanos();
    let ts = args.timeseries_interval;
    if ts.is_zero() || ts.as_nanos() % step != 0 {
        return Err(ConfigError::SeriesInterval(ts));
    }
    Ok(Outputs {
        json: args.json.clone(),
        hlog: args.hlog.clone(),
        html: args.html.clone(),
        interval: args.interval,
        histogram: args.histogram,
        timeseries: args.timeseries,
        thread_timeseries: args.thread_timeseries,
        timeseries_interval: ts,
        quiet: args.quiet,
    })
}

/// Spreads `total` over `parts` so the shares differ by at most one and add
/// up to `total` (wrk drops the remainder).
pub fn spread(total: usize, parts: usize) -> Vec<usize> {
    (0..parts)
        .map(|i| total / parts + usize::from(i < total % parts))
        .collect()
}

/// `"Name: value"` or `"Name:value"` (wrk silently drops the latter). The
/// name must be a token and the value free of control characters: a line
/// break in it would put a header of its own on the wire.
pub fn parse_header(h: &str) -> Result<(String, String), ConfigError> {
    let Some((name, value)) = h.split_once(':') else {
        return Err(ConfigError::Header(h.to_string()));
    };
    let value = value.trim_matches([' ', '\t']);
    let bad = |why: String| ConfigError::BadHeader {
        header: h.escape_debug().to_string(),
        why,
    };
    check_token(name).map_err(|why| bad(format!("its name {why}")))?;
    check_header_value(value).map_err(bad)?;
    Ok((name.to_string(), value.to_string()))
}

/// Parses and resolves the URL.
pub fn parse_target(raw: &str) -> Result<Target, ConfigError> {
    let mut target = parse_url(raw)?;
    resolve(&mut target)?;
    Ok(target)
}

/// Parses the URL; the target's addresses stay empty until [`resolve`].
pub fn parse_url(raw: &str) -> Result<Target, ConfigError> {
    if !raw.contains("://") {
        let why = "no scheme".to_string();
        return Err(ConfigError::Url {
            url: raw.to_string(),
            why,
        });
    }
    let url = url::Url::parse(raw).map_err(|e| ConfigError::Url {
        url: raw.to_string(),
        why: e.to_string(),
    })?;
    let scheme = match url.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => return Err(ConfigError::Scheme(other.to_string())),
    };
    let host = match url.host() {
        Some(url::Host::Ipv6(a)) => a.to_string(),
        Some(h) => h.to_string(),
        None => {
            return Err(ConfigError::Url {
                url: raw.to_string(),
                why: "no host".to_string(),
            })
        }
    };
    let bad = |why: &str| ConfigError::Url {
        url: raw.to_string(),
        why: why.to_string(),
    };
    // Sent nowhere, so refused rather than dropped without a word (and
    // kept out of the report, which prints the URL).
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "credentials in a URL are not sent; remove them and pass -H 'Authorization: ...'",
        ));
    }
    if url.port() == Some(0) {
        return Err(bad("port 0 is not a port to connect to"));
    }
    let default_port = if scheme == Scheme::Https { 443 } else { 80 };
    let port = url.port().unwrap_or(default_port);
    let host_part = url.host_str().unwrap_or(&host).to_string(); // keeps IPv6 brackets
    let authority = match url.port() {
        Some(p) => format!("{host_part}:{p}"),
        None => host_part,
    };
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok(Target {
        scheme,
        host,
        port,
        path,
        authority,
        addrs: Vec::new(),
    })
}

/// Looks up the target's host.
pub fn resolve(target: &mut Target) -> Result<(), ConfigError> {
    let host = &target.host;
    let why = |why: String| ConfigError::Resolve {
        host: host.clone(),
        why,
    };
    let addrs: Vec<SocketAddr> = (host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| why(e.to_string()))?
        .collect();
    if addrs.is_empty() {
        return Err(why("no addresses".to_string()));
    }
    target.addrs = addrs;
    Ok(())
}

/// CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

fn check_affinity(cpus: &[usize]) -> Result<Vec<usize>, ConfigError> {
    let allowed = allowed_cpus();
    let list = |v: &[usize]| {
        v.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    match cpus.iter().find(|c| !allowed.contains(c)) {
        Some(&cpu) => Err(ConfigError::Affinity {
            cpus: list(cpus),
            cpu,
            available: list(&allowed),
        }),
        None => Ok(cpus.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{parse, Command};

    fn config(args: &[&str]) -> Result<Config, String> {
        let mut v = vec!["metron"];
        v.extend_from_slice(args);
        match parse(v).map_err(|e| e.to_string())? {
            Command::Bench(b) => Config::from_args(&b).map_err(|e| e.to_string()),
            _ => unreachable!(),
        }
    }

    #[test]
    fn connections_remainder_is_spread_not_dropped() {
        assert_eq!(spread(10, 3), vec![4, 3, 3]);
        assert_eq!(spread(2, 2), vec![1, 1]);
        let c = config(&["-t3", "-c10", "http://127.0.0.1:1/"]).unwrap();
        assert_eq!(c.connections(), 10);
    }

    #[test]
    fn urls_of_every_shape() {
        let t = parse_target("http://127.0.0.1:8080/a/b?x=1&y=2").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a/b?x=1&y=2")
        );
        assert_eq!(t.authority, "127.0.0.1:8080");
        let t = parse_target("http://[::1]:9000").unwrap();
        assert_eq!((t.host.as_str(), t.path.as_str()), ("::1", "/"));
        assert_eq!(t.authority, "[::1]:9000");
        assert_eq!(t.addrs, vec!["[::1]:9000".parse().unwrap()]);
        let t = parse_target("https://127.0.0.1/").unwrap();
        assert_eq!(
            (t.scheme, t.port, t.authority.as_str()),
            (Scheme::Https, 443, "127.0.0.1")
        );
        let t = parse_target("http://localhost:81/").unwrap();
        assert!(!t.addrs.is_empty());
    }

    #[test]
    fn urls_that_cannot_be_honoured_are_refused() {
        let err = |u: &str| parse_url(u).unwrap_err().to_string();
        assert!(err("http://127.0.0.1:0/").contains("port 0 is not a port"));
        for u in ["http://user:secret@127.0.0.1/", "http://user@127.0.0.1/"] {
            assert!(err(u).contains("credentials in a URL are not sent"), "{u}");
        }
    }

    #[test]
    fn headers_with_or_without_a_space() {
        assert_eq!(parse_header("A: b").unwrap(), ("A".into(), "b".into()));
        assert_eq!(parse_header("A:b").unwrap(), ("A".into(), "b".into()));
        assert_eq!(
            parse_header("Auth: Bearer x:y").unwrap(),
            ("Auth".into(), "Bearer x:y".into())
        );
        assert!(parse_header("nocolon").is_err());
        assert!(parse_header(": v").is_err());
    }

    /// Regression: a line break in a -H value went on the wire and made a
    /// header of its own; other control characters failed mid-run.
    #[test]
    fn headers_that_would_break_the_request_are_refused() {
        let err = |h: &str| parse_header(h).unwrap_err().to_string();
        assert_eq!(
            err("X: a\r\nEvil: 1"),
            "-H 'X: a\\r\\nEvil: 1': its value has '\\r': no line breaks or other control \
             characters; write it as 'Name: value'"
        );
        assert!(err("X: a\u{7f}b").contains("control characters"));
        assert!(err("X Y: v").contains("its name \"X Y\" has ' '"));
        assert_eq!(parse_header("X:\tv\t").unwrap(), ("X".into(), "v".into()));
    }

    /// Every impossible combination gets one line naming the fix.
    #[test]
    fn bad_combinations_name_the_fix() {
        let cases: &[(&[&str], &str)] = &[
            (&["-t0", "http://127.0.0.1/"], "-t 0: at least one thread"),
            (
                &["-t4", "-c2", "http://127.0.0.1/"],
                "-c 2 is fewer than -t 4",
            ),
            (&["-d0", "http://127.0.0.1/"], "positive duration"),
            (
                &["-d", "10000000h", "http://127.0.0.1/"],
                "longer than a year",
            ),
            (&["-R0", "http://127.0.0.1/"], "rate must be above zero"),
            (
                &["-R", "1e30", "http://127.0.0.1/"],
                "-R 1e30: above 1G requests/s",
            ),
            (
                &["-d5s", "--warmup", "5s", "http://127.0.0.1/"],
                "shorten --warmup",
            ),
            (
                &["--timeout", "0", "http://127.0.0.1/"],
                "timeout must be above zero",
            ),
            (
                &["-H", "bogus", "http://127.0.0.1/"],
                "write it as 'Name: value'",
            ),
            (
                &["-a", "4096", "http://127.0.0.1/"],
                "CPU 4096 is not available",
            ),
            (&["--interval", "1ms", "http://127.0.0.1/"], "at least 10ms"),
            (&["--max-head", "10", "http://127.0.0.1/"], "--max-head 10"),
            (
                &["--timeseries-interval", "15ms", "http://127.0.0.1/"],
                "multiple of 10ms",
            ),
            (
                &["http://127.0.0.1/", "requests.json"],
                "\"requests.json\" after the URL would go to a script's init(args), but there is no script; add -s FILE",
            ),
            (
                &["http://127.0.0.1/", "--", "a"],
                "\"a\" after the URL would go to a script",
            ),
            (&["ftp://127.0.0.1/"], "unsupported scheme 'ftp'"),
            (
                &["--cert", "c.pem", "https://127.0.0.1/"],
                "--cert needs --key FILE",
            ),
            (
                &["-k", "http://127.0.0.1/"],
                "-k only applies to https:// hosts",
            ),
            (
                &["--cacert", "no-such-ca.pem", "https://127.0.0.1/"],
                "--cacert no-such-ca.pem: cannot read it",
            ),
            (&["127.0.0.1:80"], "invalid URL '127.0.0.1:80': no scheme"),
            (&["not a url"], "invalid URL 'not a url'"),
            (
                &["http://no-such-host.invalid/"],
                "cannot resolve host 'no-such-host.invalid'",
            ),
        ];
        for (args, want) in cases {
            let err = config(args).expect_err(&format!("{args:?} should fail"));
            assert!(err.contains(want), "{args:?}: got '{err}', want '{want}'");
            assert!(!err.contains('\n'), "{args:?}: message spans lines: {err}");
        }
    }

    #[test]
    fn u_latency_implies_latency() {
        let c = config(&["-U", "http://127.0.0.1/"]).unwrap();
        assert!(c.latency && c.u_latency);
    }
}

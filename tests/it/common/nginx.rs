//! nginx as a target: started on 127.0.0.1 with ports, files and logs of
//! its own, speaking h2c and h2 by ALPN, and its access log read back as
//! the server's account of a run.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use super::*;

/// What the access log says of each request, in this order.
pub const LOG_FORMAT: &str = "$connection $msec $request_time $status $server_protocol \
                          $request_method $request_uri $content_length";

/// Server options a test may change.
#[derive(Default)]
pub struct Options {
    /// Streams per connection before nginx sends GOAWAY (nginx's own
    /// default is 1000); unset, high enough never to be reached.
    pub keepalive_requests: Option<u32>,
    /// `/slow` is passed to this server over HTTP/1.1.
    pub upstream: Option<SocketAddr>,
    /// `/big` answers 100 KB at 50 KB/s (`limit_rate`): two seconds.
    pub big: bool,
    /// `/events` answers [`EVENTS`] server-sent events of 100 bytes each
    /// at 1000 bytes/s (`limit_rate`): one every 100 ms once the head is
    /// out.
    pub events: bool,
    /// nginx's `worker_connections` (its own listening sockets take some):
    /// the connections it takes at once; those beyond it are closed as
    /// they are accepted. Unset, 1024.
    pub worker_connections: Option<u32>,
    /// `/big-head` answers with a head of over [`BIG_HEAD`] bytes (a
    /// header of that many `a`s).
    pub big_head: bool,
}

/// The length of `/big-head`'s oversized header value.
pub const BIG_HEAD: usize = 2000;

/// Events in each `/events` response.
pub const EVENTS: usize = 10;

/// A running nginx, killed and its directory removed on drop.
pub struct Nginx {
    pub process: servers::Process,
    /// h2c with prior knowledge.
    pub h2c: u16,
    /// TLS offering h2 and http/1.1 by ALPN.
    pub tls: u16,
    /// TLS without HTTP/2: only http/1.1.
    pub tls_h1: u16,
    /// Plain HTTP/1.1.
    pub h1: u16,
}

impl Nginx {
    /// A running nginx, or `None` where it is not installed (see
    /// [`nginx_binary`]).
    pub fn start(opts: Options) -> Option<Nginx> {
        let nginx = servers::tool("nginx", "nginx")?;
        let version = Command::new(&nginx)
            .arg("-V")
            .output()
            .expect("nginx -V runs");
        assert!(
            String::from_utf8_lossy(&version.stderr).contains("--with-http_v2_module"),
            "{} lacks the http_v2 module these tests need; install Debian's nginx (apt-get install nginx)",
            nginx.display()
        );
        let dir = servers::fresh_dir("nginx");
        write_certificate(&dir);
        std::fs::create_dir_all(dir.join("files")).unwrap();
        std::fs::write(dir.join("files/big"), vec![b'x'; 100 * 1024]).unwrap();
        std::fs::write(dir.join("files/events"), event_stream()).unwrap();
        let (process, [h2c, tls, tls_h1, h1]) = servers::start(
            dir,
            |dir, [h2c, tls, tls_h1, h1]| {
                let conf = config(dir, &opts, [h2c, tls, tls_h1, h1]);
                std::fs::write(dir.join("nginx.conf"), conf).unwrap();
                command(&nginx, dir)
            },
            last_line,
        );
        Some(Nginx {
            process,
            h2c,
            tls,
            tls_h1,
            h1,
        })
    }

    pub fn h1_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.h1)
    }

    pub fn h2c_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.h2c)
    }

    pub fn tls_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.tls)
    }

    pub fn tls_h1_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.tls_h1)
    }

    /// Stops nginx gracefully, as `nginx -s quit` does: it sends GOAWAY,
    /// finishes the requests it has, and exits.
    pub fn quit(&self) {
        // SAFETY: a plain kill(2) of our own child.
        let pid = self.process.child.id() as libc::pid_t;
        assert_eq!(unsafe { libc::kill(pid, libc::SIGQUIT) }, 0);
    }

    /// The certificate nginx presents, for `--cacert`.
    pub fn cacert(&self) -> String {
        self.process
            .dir
            .join("cert.pem")
            .to_str()
            .unwrap()
            .to_string()
    }

    /// The access log so far. nginx writes a request's line when it has
    /// finished with it, which may be just after the client saw the
    /// response: this waits (at most 3 s) until the log stops growing.
    pub fn access_log(&self) -> Vec<Logged> {
        let text = servers::settled_log(&self.process.dir.join("access.log"));
        text.lines().map(Logged::parse).collect()
    }
}

/// The last line of nginx's error log in `dir`.
pub fn last_line(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
    log.lines()
        .last()
        .unwrap_or("(empty error log)")
        .to_string()
}

/// A self-signed certificate for 127.0.0.1 and its key, as nginx reads
/// them (and metron trusts it with `--cacert`).
pub fn write_certificate(dir: &Path) {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
        .expect("a certificate is generated");
    std::fs::write(dir.join("cert.pem"), ck.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), ck.key_pair.serialize_pem()).unwrap();
}

/// nginx's configuration: every file inside `dir`, one worker, no
/// daemon, on the ports h2c, TLS (h2 and http/1.1), TLS (http/1.1 only)
/// and plain HTTP/1.1; `/` answers 200 with 6 bytes, `/slow` asks the
/// upstream.
pub fn config(dir: &Path, opts: &Options, ports: [u16; 4]) -> String {
    let [h2c, tls, tls_h1, h1] = ports;
    let d = dir.display();
    let keepalive = opts.keepalive_requests.unwrap_or(1_000_000);
    let (upstream, slow) = match opts.upstream {
        Some(addr) => (
            format!("upstream target {{ server {addr}; keepalive 64; }}"),
            "location /slow { proxy_pass http://target; proxy_http_version 1.1; \
             proxy_set_header Connection \"\"; }"
                .to_string(),
        ),
        None => (String::new(), String::new()),
    };
    let big = if opts.big {
        format!("location = /big {{ root {d}/files; limit_rate 50k; }}")
    } else {
        String::new()
    };
    // Written as they are read, a buffer (and over TLS a record) of one
    // event at a time, so that each event leaves on its own at the
    // limited rate.
    let events = if opts.events {
        format!(
            "ssl_buffer_size 100; \
             location = /events {{ root {d}/files; default_type text/event-stream; \
             limit_rate 1000; postpone_output 0; sendfile off; output_buffers 1 100; }}"
        )
    } else {
        String::new()
    };
    let big_head = if opts.big_head {
        format!(
            "location = /big-head {{ add_header X-Big \"{}\"; return 200 \"hello\\n\"; }}",
            "a".repeat(BIG_HEAD)
        )
    } else {
        String::new()
    };
    let preamble = preamble_with(dir, LOG_FORMAT, opts.worker_connections.unwrap_or(1024));
    format!(
        "{preamble}
  keepalive_requests {keepalive};
  ssl_certificate {d}/cert.pem;
  ssl_certificate_key {d}/key.pem;
  {upstream}
  server {{
    listen 127.0.0.1:{h2c} http2;
    listen 127.0.0.1:{tls} ssl http2;
    listen 127.0.0.1:{tls_h1} ssl;
    listen 127.0.0.1:{h1};
    location / {{ return 200 \"hello\\n\"; }}
    {slow}
    {big}
    {events}
    {big_head}
  }}
}}
"
    )
}

/// [`EVENTS`] events of exactly 100 bytes: `data: event N xxx…` and the
/// blank line that ends it.
fn event_stream() -> Vec<u8> {
    (1..=EVENTS)
        .flat_map(|i| {
            let mut e = format!("data: event {i} ").into_bytes();
            e.resize(98, b'x');
            e.extend_from_slice(b"\n\n");
            e
        })
        .collect()
}

/// The start of every configuration the tests give nginx: one worker,
/// no daemon, every file inside `dir`, the access log in `log_format`;
/// the `http` block is left open.
pub fn preamble(dir: &Path, log_format: &str) -> String {
    preamble_with(dir, log_format, 1024)
}

/// [`preamble`] with `worker_connections` of nginx's, and above 1024 an
/// open-files limit of its own that covers them whatever this process's
/// is.
pub fn preamble_with(dir: &Path, log_format: &str, worker_connections: u32) -> String {
    let d = dir.display();
    // Left alone by default: a limit nginx could not set would be an alert
    // in its log.
    let files = match worker_connections {
        n if n > 1024 => format!("worker_rlimit_nofile {};", 2 * n + 64),
        _ => String::new(),
    };
    format!(
        "worker_processes 1;
{files}
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections {worker_connections}; }}
http {{
  log_format metron '{log_format}';
  access_log {d}/access.log metron;
  client_body_temp_path {d}/client_body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;"
    )
}

/// nginx with its configuration at `dir/nginx.conf`, in the foreground,
/// its files in `dir`.
pub fn command(nginx: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(nginx);
    cmd.arg("-p").arg(dir).arg("-e").arg(dir.join("error.log"));
    cmd.arg("-c").arg(dir.join("nginx.conf"));
    cmd.args(["-g", "daemon off; master_process off;"]);
    cmd
}

/// One line of the access log ([`LOG_FORMAT`]).
#[derive(Debug)]
pub struct Logged {
    pub connection: u64,
    /// When nginx finished the request, in milliseconds.
    pub end_ms: u64,
    /// How long nginx had it, from its first bytes, in milliseconds.
    pub took_ms: u64,
    pub status: u16,
    pub protocol: String,
    pub method: String,
    pub uri: String,
    pub content_length: Option<u64>,
}

impl Logged {
    pub fn parse(line: &str) -> Logged {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 8, "an access log line of 8 fields: {line}");
        let ms = |s: &str| (s.parse::<f64>().unwrap() * 1000.0).round() as u64;
        Logged {
            connection: f[0].parse().unwrap(),
            end_ms: ms(f[1]),
            took_ms: ms(f[2]),
            status: f[3].parse().unwrap(),
            protocol: f[4].to_string(),
            method: f[5].to_string(),
            uri: f[6].to_string(),
            content_length: f[7].parse().ok(),
        }
    }
}

/// Requests per connection, as nginx saw them.
pub fn per_connection(log: &[Logged]) -> BTreeMap<u64, usize> {
    let mut counts = BTreeMap::new();
    for l in log {
        *counts.entry(l.connection).or_default() += 1;
    }
    counts
}

/// The most requests nginx had at once, by the log's start and end times.
/// Times are whole milliseconds, so each request counts only from 1 ms
/// after its logged start to 1 ms before its logged end: two requests
/// this finds together really were.
pub fn most_at_once(log: &[&Logged]) -> usize {
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for l in log.iter().filter(|l| l.took_ms > 2) {
        let start = l.end_ms - l.took_ms;
        edges.push((start + 1, 1));
        edges.push((l.end_ms - 1, -1));
    }
    // At equal times, ends first: touching is not overlapping.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    most as usize
}

/// No request was lost, no connection failed, every response was a 200.
pub fn assert_clean(o: &metron::engine::Outcome) {
    assert_balanced(o);
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    assert_eq!(c.errors.connect, 0, "{c:?}");
    assert_eq!(c.errors.status, 0, "{c:?}");
    assert!(c.completed > 0, "{c:?}");
}

/// nginx answered every request metron completed, with 200 over HTTP/2.
/// Beyond those it saw only the requests still on the wire when the run
/// ended (at most `outstanding`, -c times -m), which nginx logs with 499 if
/// the client had gone before it answered. Nothing is sent after the
/// window, so there is nothing else.
pub fn assert_log_matches(o: &metron::engine::Outcome, log: &[Logged], outstanding: u64) {
    let c = &o.stats.counters;
    let answered = log.iter().filter(|l| l.status == 200).count() as u64;
    assert!(
        c.in_flight <= outstanding
            && answered >= c.completed
            && log.len() as u64 <= c.completed + c.in_flight,
        "nginx logged {} requests, {answered} answered; metron completed {}, {} on the wire at the end (at most {outstanding})",
        log.len(),
        c.completed,
        c.in_flight,
    );
    for l in log {
        assert!(matches!(l.status, 200 | 499), "{l:?}");
        assert_eq!(l.protocol, "HTTP/2.0", "{l:?}");
    }
}

/// The `protocol` of a short run's JSON document.
pub fn json_protocol(args: &[&str], url: &str) -> String {
    let mut argv = args.to_vec();
    argv.extend_from_slice(&["-t1", "-c1", "-R50", "-d1s", "--json", "-", url]);
    let out = metron(&argv);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    doc["protocol"]
        .as_str()
        .unwrap_or_else(|| panic!("no protocol in the JSON document: {}", doc["protocol"]))
        .to_string()
}

/// 200 requests a second for 1 s, shaped by the script `name`, to `path`
/// of a fresh nginx over h2c; returns nginx's log of them (`None` where
/// nginx is not installed).
pub fn scripted_run(name: &str, path: &str) -> Option<Vec<Logged>> {
    let ngx = Nginx::start(Options::default())?;
    let u = ngx.h2c_url(path);
    let s = script(name);
    let (o, _) = bench(&[
        "--http2", "-s", &s, "-t1", "-c1", "-m4", "-R200", "-d1s", &u,
    ]);
    assert_clean(&o);
    let log = ngx.access_log();
    assert_log_matches(&o, &log, 4);
    Some(log)
}

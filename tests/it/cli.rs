//! The binary as a user meets it: exit codes, one-line errors, the report.

use std::process::Command;

use crate::common::process::{serve_command, worker_cpus};
use crate::common::*;
use metron::serve::ServeConfig;

#[test]
fn version_flag_is_wrks() {
    let o = metron(&["-v"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("metron "));
}

/// Every subcommand takes `-v` and `--version` as the top level does, and
/// prints the very same line, even where it needs arguments otherwise.
#[test]
fn subcommands_print_the_same_version_line() {
    let line = stdout(&metron(&["--version"]));
    assert!(
        line.starts_with(&format!("metron {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );
    for sub in [
        "serve",
        "demo",
        "report",
        "merge",
        "sweep",
        "completions",
        "man",
    ] {
        for flag in ["-v", "--version"] {
            let o = metron(&[sub, flag]);
            assert!(o.status.success(), "{sub} {flag}: {}", stderr(&o));
            assert_eq!(stdout(&o), line, "{sub} {flag}");
        }
    }
}

/// `--version`: the version, the commit built from (what git says now,
/// when this is a git checkout), and every protocol compiled in.
#[test]
fn the_version_names_the_commit_and_the_protocols() {
    let o = metron(&["--version"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let head = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| stdout(&o).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let first = format!("metron {} (commit {head})", env!("CARGO_PKG_VERSION"));
    assert_eq!(text.lines().next(), Some(first.as_str()), "{text}");
    for protocol in ["HTTP/1.1", "HTTP/2", "HTTP/3", "gRPC", "TLS"] {
        assert!(text.contains(protocol), "{protocol} not in {text}");
    }
}

#[test]
fn usage_errors_are_one_line_with_a_non_zero_exit() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-t", "4", "-c", "2", "http://127.0.0.1:1/"],
            "-c 2 is fewer than -t 4",
        ),
        (
            &["-R", "0", "http://127.0.0.1:1/"],
            "rate must be above zero",
        ),
        (&["-d", "0", "http://127.0.0.1:1/"], "positive duration"),
        (
            &["--warmup", "20s", "http://127.0.0.1:1/"],
            "shorten --warmup",
        ),
        (&["ftp://127.0.0.1/"], "unsupported scheme 'ftp'"),
        (
            &["-H", "nocolon", "http://127.0.0.1:1/"],
            "-H 'nocolon': not a header; write it as 'Name: value'",
        ),
        (
            &["-H", ": v", "http://127.0.0.1:1/"],
            "-H ': v': its name is empty; write it as 'Name: value'",
        ),
        (&["-t0", "http://127.0.0.1:1/"], "-t 0: at least one thread"),
        (
            &["-H", "X: a\r\nEvil: 1", "http://127.0.0.1:1/"],
            "its value has '\\r': no line breaks",
        ),
        (&["-d", "400d", "http://127.0.0.1:1/"], "longer than a year"),
        (
            &["--timeout", "0", "http://127.0.0.1:1/"],
            "timeout must be above zero",
        ),
        (
            &["-a", "4096", "http://127.0.0.1:1/"],
            "CPU 4096 is not available",
        ),
        (
            &["--http3", "http://127.0.0.1:1/"],
            "--http3 runs over QUIC, which is always encrypted, and http://127.0.0.1:1 is not an https:// URL; write it as https://",
        ),
        (
            &["--alpn", "h3,h2", "https://127.0.0.1:1/"],
            "h3 runs over QUIC, not over TLS on TCP (use --http3 for it)",
        ),
        (
            &["-m", "8", "http://127.0.0.1:1/"],
            "add --http2 (or --alpn h2,http/1.1, or --http3), or drop -m",
        ),
        (
            &["--0rtt", "--http2", "https://127.0.0.1:1/"],
            "--0rtt sends requests as QUIC's early data, and this run does not speak HTTP/3; add --http3, or drop --0rtt",
        ),
        (
            &["--max-head", "10", "http://127.0.0.1:1/"],
            "--max-head 10: allow between 1k and 1G",
        ),
        (
            &["--interval", "1ms", "http://127.0.0.1:1/"],
            "at least 10ms",
        ),
        (
            &["--timeseries-interval", "15ms", "http://127.0.0.1:1/"],
            "multiple of 10ms",
        ),
        (
            &["--timeseries-interval", "1s", "http://127.0.0.1:1/"],
            "add one of them, or drop --timeseries-interval",
        ),
        (
            &["--interval", "2s", "http://127.0.0.1:1/"],
            "add one of them, or drop --interval",
        ),
        (
            &["127.0.0.1:8080/"],
            "invalid URL '127.0.0.1:8080/': no scheme",
        ),
        (&["http://[::1/"], "invalid URL 'http://[::1/'"),
        (
            &["http://no-such-host.invalid/"],
            "cannot resolve host 'no-such-host.invalid'",
        ),
        // A pin on another port than the URL's: no lookup of the name,
        // which only the pin knows (it said to give it with --resolve).
        (
            &[
                "--resolve",
                "app.test:8443:127.0.0.1",
                "https://app.test:9443/",
            ],
            "metron: --resolve pins app.test on port 8443, not on the URL's port 9443; write \
             --resolve app.test:9443:127.0.0.1, or correct the URL's port\n",
        ),
        (
            &["-s", "/nonexistent/x.lua", "http://127.0.0.1:1/"],
            "cannot read script /nonexistent/x.lua",
        ),
        (
            &["--seed", "1", "http://127.0.0.1:1/"],
            "--seed only seeds --arrival poisson and --requests-order random; add one of them",
        ),
        (
            &["--seed", "1", "--requests", "r.json", "http://127.0.0.1:1/"],
            "--seed only seeds --arrival poisson and --requests-order random; add one of them",
        ),
        (
            &["--requests", "/nonexistent/r.json", "http://127.0.0.1:1/"],
            "cannot read --requests",
        ),
        (
            &["--json", "/nonexistent/dir/r.json", "http://127.0.0.1:1/"],
            "cannot write --json /nonexistent/dir/r.json: there is no directory /nonexistent/dir",
        ),
        (
            &["demo", "-d", "2s", "--stall-for", "3s"],
            "--stall-for 3.0s does not end within the 2.0s run",
        ),
        (
            &["report", "/nonexistent/r.json"],
            "cannot read /nonexistent/r.json",
        ),
        (
            &["--proto", "x.proto", "http://127.0.0.1:1/"],
            "--proto only applies to --grpc calls",
        ),
        (
            &["--data", "{}", "http://127.0.0.1:1/"],
            "--data is a gRPC call's request or a WebSocket message; add --grpc package.Service/Method, load a ws:// URL",
        ),
        (
            &["--grpc", "a.B/C", "http://127.0.0.1:1/"],
            "--grpc a.B/C needs the schema of its messages: add --proto FILE",
        ),
        (
            &[
                "--grpc",
                "a.B/C",
                "--proto",
                "/nonexistent/a.proto",
                "http://127.0.0.1:1/",
            ],
            "cannot read --proto /nonexistent/a.proto",
        ),
        (
            &["merge", "/nonexistent/r.hlog"],
            "cannot read /nonexistent/r.hlog",
        ),
    ];
    for (args, want) in cases {
        let o = metron(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A -H of bytes that are not UTF-8 is named, not lost in a message about
/// "one or more arguments".
#[test]
fn a_header_that_is_not_utf8_names_the_header() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"X-Name: caf\xe9");
    let child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .arg("-H")
        .arg(bad)
        .arg("http://127.0.0.1:1/")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let o = wait_bounded(child, std::time::Duration::from_secs(60));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "invalid value 'X-Name: caf\u{fffd}' for '--header <H>': it is not UTF-8 text"
        ),
        "{err}"
    );
}

/// Flags that do not parse: exit status 2 and, like every other mistake,
/// one line (clap's own messages span up to seven).
#[test]
fn malformed_flags_are_one_line_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-c", "lots", "http://127.0.0.1:1/"],
            "'lots' is not a number",
        ),
        (
            &[],
            "required arguments were not provided: <URL>; usage: metron <URL>",
        ),
        (&["-R", "-5", "http://127.0.0.1:1/"], "'-5' is negative"),
        (
            &["--bogus", "http://127.0.0.1:1/"],
            "unexpected argument '--bogus'",
        ),
        (
            &["--conections", "10", "http://127.0.0.1:1/"],
            "unexpected argument '--conections' found (did you mean '--connections'?); usage: ",
        ),
        (
            &["--requests-order", "bogus", "http://127.0.0.1:1/"],
            "[possible values: sequential, random]",
        ),
        (
            &["-s", "a.lua", "--requests", "r.json", "http://127.0.0.1:1/"],
            "'--script <FILE>' cannot be used with '--requests <FILE>'",
        ),
        (&["serve", "--fault", "nope"], "unknown fault 'nope'"),
    ];
    for (args, want) in cases {
        let o = metron(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("metron: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn nothing_listening_is_an_error_exit() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = metron(&["-t1", "-c1", "-d1s", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot connect"), "{}", stderr(&o));
}

#[test]
fn a_run_prints_the_wrk2_report() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/index.html");
    let o = metron(&["-t1", "-c2", "-R100", "-d1s", "-L", &u]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with(&format!(
            "Running 1s test @ {u}\n  1 threads and 2 connections\n"
        )),
        "{out}"
    );
    for want in [
        "  Thread Stats   Avg      Stdev     Max   +/- Stdev\n",
        "  Latency Distribution (HdrHistogram - Recorded Latency)\n",
        " 50.000%",
        "  Detailed Percentile spectrum:\n",
        "#[Buckets =           27, SubBuckets     =         2048]\n",
        "  100 requests in 1.00s,",
        "Requests/sec:    100.00\n",
        "Transfer/sec:",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    assert!(!out.contains("nan"), "{out}");
}

/// Ctrl-C before the run began (here in the pre-flight, waiting up to
/// --timeout for a QUIC server that never answers) exits at once, saying
/// nothing was measured, instead of waiting out the check.
#[test]
fn interrupt_before_the_run_began_exits_at_once() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}/", silent.local_addr().unwrap());
    let child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args([
            "--http3",
            "-k",
            "-t1",
            "-c2",
            "-R10",
            "-d20s",
            "--timeout",
            "20s",
            &url,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    let sent = std::time::Instant::now();
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let o = wait_bounded(child, std::time::Duration::from_secs(10));
    assert!(sent.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).trim_end(),
        "metron: stopped by Ctrl-C before the run began: nothing was measured"
    );
}

/// Ctrl-C (SIGINT) and SIGTERM end the run early: the report covers what
/// ran and says where it stopped, and the exit status is 128 plus the
/// signal's number, as shells report a process a signal ended.
#[test]
fn interrupt_prints_the_report_for_what_ran() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    for (signal, name) in [(libc::SIGINT, "Ctrl-C"), (libc::SIGTERM, "SIGTERM")] {
        let child = Command::new(env!("CARGO_BIN_EXE_metron"))
            .args(["-t1", "-c2", "-R100", "-d30s", &url(&srv, "/")])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let o = wait_bounded(child, std::time::Duration::from_secs(5));
        assert_eq!(o.status.code(), Some(128 + signal), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("Requests/sec:"), "signal {signal}: {out}");
        assert!(
            out.contains(&format!(
                " of 30s ({name}): the figures cover the time that ran"
            )),
            "{out}"
        );
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!("metron: stopped by {name} after ")),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        let completed: u64 = out
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_suffix(" read")
                    .and_then(|l| l.split(' ').next()?.parse().ok())
            })
            .expect("a requests line");
        assert!(
            (100..=250).contains(&completed),
            "signal {signal}: {completed} requests in ~1.5 s at 100/s:\n{out}"
        );
    }
}

/// -a pins each worker thread to its CPU.
#[test]
fn affinity_pins_worker_threads() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(["-t2", "-c2", "-R10", "-d2s", "-a", "0", &url(&srv, "/")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        seen = worker_cpus(child.id());
        if seen.len() == 2 {
            break;
        }
    }
    let o = wait_bounded(child, std::time::Duration::from_secs(10));
    assert!(o.status.success());
    assert_eq!(seen, vec!["0".to_string(), "0".to_string()]);
}

#[test]
fn ipv6_literals_work() {
    let _g = serial();
    let Ok(srv) = metron::serve::Server::start(ServeConfig {
        listen: "[::1]:0".parse().unwrap(),
        ..ServeConfig::default()
    }) else {
        eprintln!("no IPv6 loopback on this machine; skipped");
        return;
    };
    let u = format!("http://[::1]:{}/", srv.addr().port());
    let (o, text) = bench(&["-t1", "-c1", "-R50", "-d1s", &u]);
    assert_eq!(o.stats.counters.completed, 50, "{text}");
    assert!(text.starts_with(&format!("Running 1s test @ {u}\n")));
}

/// The README's first command: the demo runs and explains itself.
#[test]
fn the_demo_shows_corrected_and_uncorrected_side_by_side() {
    let _g = serial();
    // A stall longer than a run's default 2 s timeout: the demo waits it
    // out, so the stalled requests are measured, not lost.
    let o = metron(&["demo", "-d", "5s", "-R", "500", "--stall-for", "2.5s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("Socket errors"), "{out}");
    assert!(
        out.contains("  Percentile    Corrected  Uncorrected\n"),
        "{out}"
    );
    assert!(out.contains("this is coordinated omission"), "{out}");
    // The stall is in the corrected tail and absent from the uncorrected p90.
    let row = |p: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(p))
            .unwrap()
            .to_string()
    };
    let max = row("100.000%");
    let corrected_max = max.split_whitespace().nth(1).unwrap();
    let secs: f64 = corrected_max.strip_suffix('s').unwrap().parse().unwrap();
    assert!((2.4..3.5).contains(&secs), "{out}");
    assert!(
        !row("99.000%")
            .split_whitespace()
            .nth(1)
            .unwrap()
            .ends_with("us"),
        "{out}"
    );
    assert!(
        row("90.000%")
            .split_whitespace()
            .nth(2)
            .unwrap()
            .ends_with("us"),
        "{out}"
    );
}

/// `metron demo --http2` runs over HTTP/2: the banner and report say so,
/// and the stall shows in the corrected tail.
#[test]
fn the_demo_runs_over_http2() {
    let _g = serial();
    let o = metron(&[
        "demo",
        "--http2",
        "-d",
        "3s",
        "-R",
        "500",
        "--stall-for",
        "1s",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("  2 threads and 20 connections (HTTP/2, up to 100 streams each)\n"),
        "{out}"
    );
    assert!(out.contains("  Protocol: HTTP/2\n"), "{out}");
    assert!(!out.contains("Socket errors"), "{out}");
    assert!(
        out.contains("Over HTTP/2 a due request needs only a free stream"),
        "{out}"
    );
    let max = out
        .lines()
        .find(|l| l.trim_start().starts_with("100.000%"))
        .unwrap();
    let corrected_max = max.split_whitespace().nth(1).unwrap();
    // About the stall's second.
    let secs: f64 = match corrected_max.strip_suffix("ms") {
        Some(ms) => ms.parse::<f64>().expect(&out) / 1e3,
        None => corrected_max
            .strip_suffix('s')
            .unwrap()
            .parse()
            .expect(&out),
    };
    assert!((0.9..2.0).contains(&secs), "{out}");
    // 500/s never fills 2000 streams: the demo says the stall was seen.
    assert!(out.contains("every request found a free stream"), "{out}");
}

/// `metron serve` announces its address, answers, and stops on SIGTERM.
#[test]
fn serve_runs_until_terminated() {
    use std::io::{Read, Write};
    let (child, url) = serve_command(&["--body-size", "5"]);
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix('/'))
        .expect(&url)
        .to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 200 OK\r\n") && reply.ends_with("\r\n\r\nxxxxx"),
        "{reply}"
    );
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let o = wait_bounded(child, std::time::Duration::from_secs(5));
    assert!(o.status.success());
}

/// -c beyond the open-file limit is one line saying how to raise it; a
/// soft limit below the hard one is raised quietly.
#[test]
fn connections_beyond_the_open_file_limit_are_one_clear_error() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let (bin, u) = (env!("CARGO_BIN_EXE_metron"), url(&srv, "/"));
    let sh = |script: String| Command::new("sh").args(["-c", &script]).output().unwrap();
    // Soft and hard limit 256: a thousand connections cannot fit.
    let o = sh(format!("ulimit -n 256 && exec {bin} -t1 -c1000 -d1s {u}"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("-c 1000 needs about") && err.contains("ulimit -n"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // A pool allowed to grow that far is named by the flag that allows it.
    let o = sh(format!(
        "ulimit -n 256 && exec {bin} -t1 -c2 --max-connections 1000 -R10 -d1s {u}"
    ));
    let err = stderr(&o);
    assert!(
        err.contains("--max-connections 1000 needs about")
            && err.contains("or lower --max-connections"),
        "{err}"
    );
    // Only the soft limit is low: metron raises it and the run is clean.
    let o = sh(format!(
        "ulimit -Sn 64 && exec {bin} -t1 -c200 -R200 -d1s {u}"
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("  200 requests in 1.00s") && !out.contains("Socket errors"),
        "{out}"
    );
}

#[test]
fn local_ports_and_unreachable_networks_are_one_clear_error() {
    let _g = serial();
    let bin = env!("CARGO_BIN_EXE_metron");
    // A network namespace of the test's own: only loopback, with ten
    // local ports for outgoing connections; the server in it lives for at
    // most 20 s.
    let script = format!(
        "ip link set lo up && echo '40000 40009' > /proc/sys/net/ipv4/ip_local_port_range \
         && {{ timeout 20 {bin} serve --listen 127.0.0.1:8080 >/dev/null 2>&1 & }} \
         && server=$! && sleep 0.5 \
         && {bin} -t2 -c20 -d1s http://127.0.0.1:8080/; echo \"exit $?\"; \
         {bin} -t2 -c8 -R100 -d1s http://127.0.0.1:8080/; echo \"exit $?\"; \
         {bin} -t1 -c1 -d1s http://10.9.9.9:8080/; echo \"exit $?\"; \
         kill $server"
    );
    let o = std::process::Command::new("unshare")
        .args(["-n", "sh", "-c", &script])
        .output()
        .expect("unshare runs");
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        out.contains("exit 1") && out.contains("exit 0"),
        "{out}\n{err}"
    );
    let line = err
        .lines()
        .find(|l| l.contains("local ports"))
        .unwrap_or_default();
    assert!(
        line.contains("-c 20 opens 20 connections to 127.0.0.1:8080")
            && line.contains("only 10 local ports (40000-40009)")
            && line.contains("ip_local_port_range"),
        "{err}"
    );
    // The namespace has no route anywhere but loopback.
    assert!(
        err.contains("cannot connect to 10.9.9.9:8080: Network is unreachable"),
        "{err}"
    );
    // Eight fit: that run completes cleanly.
    assert!(
        out.contains("100 requests in 1.00s") && !out.contains("Socket errors"),
        "{out}"
    );
}

#[test]
fn a_closed_stdout_never_kills_the_process() {
    let _g = serial();
    // The reader of stdout is gone before the banner is written.
    let srv = server(ServeConfig::default());
    let (bin, u) = (env!("CARGO_BIN_EXE_metron"), url(&srv, "/"));
    let mut child = Command::new(bin)
        .args(["-t1", "-c4", "-R200", "-d1s", &u])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end at once: every write to stdout fails.
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), None, "killed by a signal: {status:?}");
    assert_eq!(
        status.code(),
        Some(0),
        "a closed stdout is the reader's choice"
    );
}

/// A report that cannot be written (a full disk) is an error that says it
/// was standard output, with exit status 1.
#[test]
fn a_full_stdout_is_named_in_the_error() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(["-t1", "-c1", "-R50", "-d300ms", &url(&srv, "/")])
        .stdout(full)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let o = wait_bounded(child, std::time::Duration::from_secs(20));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("metron: cannot write the report to standard output: No space left"),
        "{err}"
    );
}

//! The binary as a user meets it: exit codes, one-line errors, the report.

mod common;

use std::process::{Command, Output};

use common::*;
use metron::serve::ServeConfig;

fn metron(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn version_flag_is_wrks() {
    let o = metron(&["-v"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("metron "));
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
            "write it as 'Name: value'",
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

#[test]
fn malformed_flags_are_usage_errors() {
    let o = metron(&["-c", "lots", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'lots'"));
    let o = metron(&[]);
    assert_eq!(o.status.code(), Some(2));
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

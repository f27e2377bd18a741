//! Command lines and scripts as they circulate for wrk2 and its forks run
//! unedited: script arguments after the URL without `--`, lua-cjson's
//! module, threads moved between servers, and reports over every thread
//! (over HTTP/1.1 and HTTP/2 alike).

use std::collections::HashMap;

use crate::common::*;
use metron::serve::ServeConfig;

/// `wrk -t2 -c10 -d30s -L -s GET_Persist.lua URL requests.json TOKEN`:
/// the file and the token reach init(args) as args[1] and args[2].
#[test]
fn json_replay_takes_its_file_and_token_after_the_url() {
    let _g = serial();
    let srv = recording();
    let dir = TempDir::new("json-replay");
    let requests = dir.file(
        "requests.jsonl",
        concat!(
            r#"{"method":"GET","path":"/a?x=1"}"#,
            "\n",
            r#"{"method":"POST","path":"/b","body":"{\"k\":1}","headers":{"Content-Type":"application/json"}}"#,
            "\n",
        ),
    );
    let u = url(&srv, "/");
    let o = metron(&[
        "-t2",
        "-c10",
        "-d1s",
        "-R200",
        "-L",
        "-s",
        &script("json_replay.lua"),
        &u,
        &requests,
        "s3cret",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = srv.stats().recorded();
    assert!(got.len() >= 150, "only {} requests arrived", got.len());
    assert!(got
        .iter()
        .all(|r| r.header("authorization") == Some(&b"Bearer s3cret"[..])));
    let mut by_path: HashMap<(String, String), usize> = HashMap::new();
    for r in &got {
        *by_path
            .entry((r.method.clone(), r.path.clone()))
            .or_default() += 1;
        if r.method == "POST" {
            assert_eq!(r.body, br#"{"k":1}"#);
            assert_eq!(r.header("content-type"), Some(&b"application/json"[..]));
        }
    }
    let keys: Vec<_> = by_path.keys().cloned().collect();
    assert_eq!(by_path.len(), 2, "{keys:?}");
    assert!(by_path.contains_key(&("GET".into(), "/a?x=1".into())));
    assert!(by_path.contains_key(&("POST".into(), "/b".into())));
    assert!(stdout(&o).contains("Latency Distribution"));
}

/// `... -s multiple-endpoints.lua http://a/x http://b/y`: every URL reaches
/// init(args), and moving `wrk.thread.addr` sends the next connection to the
/// other server.
#[test]
fn a_thread_moves_between_the_servers_its_arguments_name() {
    let _g = serial();
    let (a, b) = (recording(), recording());
    let (ua, ub) = (url(&a, "/x"), url(&b, "/y"));
    let o = metron(&[
        "-t1",
        "-c1",
        "-d1s",
        "-R100",
        "-s",
        &script("multiple_endpoints.lua"),
        &ua,
        &ub,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (got_a, got_b) = (a.stats().recorded(), b.stats().recorded());
    assert!(
        got_a.iter().all(|r| r.path == "/x"),
        "server a got other paths"
    );
    assert!(
        got_b.iter().all(|r| r.path == "/y"),
        "server b got other paths"
    );
    assert!(
        got_a.len() >= 40 && got_b.len() >= 40,
        "{} and {}",
        got_a.len(),
        got_b.len()
    );
    assert!(
        got_a.len().abs_diff(got_b.len()) <= 1,
        "{} and {}",
        got_a.len(),
        got_b.len()
    );
}

per_protocol! {
    /// done() reaches the threads with `unpack(threads, 1, 2)` and reads the
    /// string globals each thread's init() set.
    fn done_reads_every_threads_string_globals(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig::default());
        let o = proto.metron_script(&srv, "thread_report.lua", &["-t2", "-c2", "-d1s", "-R100"], &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("worker-")).collect();
        assert_eq!(lines.len(), 2, "{out}");
        let answered: u64 = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let rest = l
                    .strip_prefix(&format!("worker-{} answered ", i + 1))
                    .unwrap_or_else(|| panic!("{out}"));
                rest.parse::<u64>().unwrap()
            })
            .sum();
        assert_eq!(answered, 100, "{out}");
    }
}

/// Extra words without a script would be silently dropped: they are an
/// error that says a script would receive them.
#[test]
fn words_after_the_url_without_a_script_are_refused() {
    let o = metron(&["-d1s", "http://127.0.0.1:9/", "requests.json", "TOKEN"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = one_line_error(&o);
    assert!(
        err.contains("\"requests.json\" after the URL would go to a script"),
        "{err}"
    );
}

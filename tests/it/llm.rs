//! `--llm` against model servers: PyPI's `fakellm` (an OpenAI-compatible
//! mock nobody on this project wrote, streaming one word a chunk and no
//! usage), and `metron serve --llm` with a set time to first token and
//! time per token, for the figures' ground truth.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use crate::common::servers::{self, Process};
use crate::common::*;
use metron::serve::{Llm, ServeConfig, Server, StallPlan};

/// The answer every prompt gets from fakellm: seven words, one a chunk.
const SEVEN: &str = "one two three four five six seven";

/// fakellm on a port of its own, answering every chat with [`SEVEN`];
/// `None` where python3 cannot import it (a failure under CI, which
/// installs it).
struct Fakellm {
    _process: Process,
    port: u16,
}

impl Fakellm {
    fn start() -> Option<Fakellm> {
        let probe = Command::new("python3")
            .args(["-c", "import fakellm"])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            let why = "python3 cannot import fakellm: python3 -m pip install fakellm";
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("note: the fakellm check skipped: {why}");
            return None;
        }
        let dir = servers::fresh_dir("fakellm");
        let config = format!(
            "version: 1\nrules:\n  - name: seven\n    when:\n      messages_contain: \"visit\"\n    respond:\n      content: \"{SEVEN}\"\n"
        );
        std::fs::write(dir.join("fakellm.yaml"), config).unwrap();
        let (process, [port]) = servers::start(
            dir,
            |dir, [port]| {
                let mut c = Command::new("python3");
                c.args(["-c", "from fakellm.cli import main; main()", "serve"]);
                c.args(["--host", "127.0.0.1", "--port", &port.to_string()]);
                c.arg("--config").arg(dir.join("fakellm.yaml"));
                c
            },
            |_| "fakellm did not start".to_string(),
        );
        Some(Fakellm {
            _process: process,
            port,
        })
    }

    /// The server's own record: `/_fakellm/stats`.
    fn stats(&self) -> serde_json::Value {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /_fakellm/stats HTTP/1.0\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = text.split_once("\r\n\r\n").expect("a head").1;
        serde_json::from_str(body).expect("JSON stats")
    }
}

/// Every request fakellm took is one metron sent, and every answer's
/// tokens are the seven words it streamed: counted one a chunk, since
/// fakellm gives no usage, and said so. The opening chunk that only names
/// the role and the closing one that only gives the finish reason are no
/// tokens.
#[test]
fn fakellms_own_counts_match_the_ledger_and_the_tokens() {
    let _g = serial();
    let Some(srv) = Fakellm::start() else {
        return;
    };
    let dir = servers::fresh_dir("fakellm-prompts");
    let prompts = dir.join("prompts.jsonl");
    let lines: String = (0..20)
        .map(|i| format!("{{\"prompt\": \"a visit number {i}\"}}\n"))
        .collect();
    std::fs::write(&prompts, lines).unwrap();
    let url = format!("http://127.0.0.1:{}/v1/chat/completions", srv.port);
    let (o, text) = bench(&[
        "-t1",
        "-c8",
        "-R20",
        "-d3s",
        "--llm",
        "--prompts",
        prompts.to_str().unwrap(),
        &url,
    ]);
    let l = o.stats.llm.as_ref().expect("--llm keeps token stats");
    let c = &o.stats.counters;
    let record = srv.stats();
    let taken = record["total_requests"].as_u64().unwrap();
    assert_eq!(record["by_rule"]["seven"].as_u64(), Some(taken), "{record}");
    assert_eq!(
        taken,
        c.completed + c.in_flight + c.errors.lost_requests(),
        "{text}"
    );
    assert!(l.responses >= 50, "{text}");
    assert_eq!(l.token_source(), "chunks", "{text}");
    assert_eq!(l.output_total, 7 * l.responses, "{text}");
    assert_eq!(
        (l.without_tokens, l.stream_errors, l.without_done),
        (0, 0, 0),
        "{text}"
    );
    // Six gaps an answer; the last chunk of text is followed by the
    // finish chunk, so TPOT's end is after it.
    assert_eq!(l.itl.len(), 6 * l.responses, "{text}");
    assert!(
        text.contains("counted one per chunk: the server gave no usage"),
        "{text}"
    );
}

/// `metron serve --llm` answering after `ttft`, then a token every `tpot`.
fn stand_in(ttft: Duration, tpot: Duration, stall: Option<StallPlan>) -> Server {
    server(ServeConfig {
        llm: Some(Llm {
            ttft,
            tpot,
            max_tokens: 16,
        }),
        stall,
        ..ServeConfig::default()
    })
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// At 100 requests/s on one thread, against a server whose first token
/// comes 100 ms after each request and every next one 10 ms after the
/// one before: TTFT p50 and TPOT p50 are the settings to within 2 %;
/// every answer's 16 tokens are the server's usage, which metron asked
/// for, and the server wrote exactly the tokens metron counted.
#[test]
fn ttft_and_tpot_are_the_servers_settings() {
    let _g = serial();
    let srv = stand_in(Duration::from_millis(100), Duration::from_millis(10), None);
    let (o, text) = bench(&[
        "-t1",
        "-c50",
        "-R100",
        "-d4s",
        "--llm",
        "--max-tokens",
        "16",
        &url(&srv, "/"),
    ]);
    let l = o.stats.llm.as_ref().expect("--llm keeps token stats");
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{text}");
    assert!(l.responses >= 350, "{text}");
    assert_eq!(l.token_source(), "usage", "{text}");
    assert_eq!(l.output_total, 16 * l.responses, "{text}");
    assert_eq!(l.output_tokens.max(), 16, "{text}");
    assert_eq!(
        l.input_total,
        srv.stats().prompt_tokens().min(l.input_total),
        "{text}"
    );
    // The server counts what it wrote, answers still streaming at the end
    // included; metron counts completed answers.
    assert!(srv.stats().completion_tokens() >= l.output_total, "{text}");
    assert_eq!(
        srv.stats().completions(),
        c.completed + c.in_flight,
        "{text}"
    );
    let ttft = ms(l.ttft.value_at_quantile(0.5));
    let tpot = ms(l.tpot.value_at_quantile(0.5));
    assert!((ttft - 100.0).abs() <= 2.0, "TTFT p50 {ttft} ms\n{text}");
    assert!((tpot - 10.0).abs() <= 0.2, "TPOT p50 {tpot} ms\n{text}");
    assert_eq!(l.itl.len(), 15 * l.responses, "{text}");
    assert!(text.contains("TTFT") && text.contains("TPOT"), "{text}");
}

/// The server stops for S = 1 s at 50 requests/s: every request due
/// during the stop gets its first token when it ends, so TTFT, timed from
/// the intended send time, follows the arithmetic of a stall (as latency
/// does in tests/it/rate.rs): p99 and p99.9 within 5 % of S of it.
#[test]
fn a_stall_shows_in_ttft_as_its_arithmetic_says() {
    let _g = serial();
    let stall = Duration::from_secs(1);
    let srv = stand_in(
        Duration::from_millis(20),
        Duration::from_millis(5),
        Some(StallPlan::once(Duration::from_millis(1500), stall).unwrap()),
    );
    let rate = 50.0;
    let (o, text) = bench(&[
        "-t1",
        "-c80",
        "-R50",
        "-d4s",
        "--llm",
        "--max-tokens",
        "4",
        &url(&srv, "/"),
    ]);
    let l = o.stats.llm.as_ref().expect("--llm keeps token stats");
    assert_eq!(o.stats.counters.errors.lost_requests(), 0, "{text}");
    let n = l.ttft.len() as f64;
    let f = stall.as_secs_f64() * rate / n;
    let s_us = stall.as_micros() as f64;
    for q in [0.99, 0.999] {
        let want = s_us * (1.0 - (1.0 - q) / f);
        let got = l.ttft.value_at_quantile(q) as f64;
        assert!(
            (got - want).abs() <= 0.05 * s_us,
            "TTFT p{}: got {got:.0} us, want {want:.0} us\n{text}",
            q * 100.0
        );
    }
}

/// llama.cpp's OpenAI-compatible server (PyPI's `llama-cpp-python`,
/// which builds llama.cpp from source) serving a tiny random-weight model
/// that tests/tiny_model.py writes with PyPI's `gguf`: the text is
/// nonsense, but the server's tokenizer, sampling and streaming are
/// llama.cpp's own. The model never emits its end-of-sequence token, so
/// every answer runs to `max_tokens`. `None` where the Python that has
/// them (`METRON_LLAMA_PYTHON`, else python3) cannot import them; CI
/// builds them and then sets `METRON_REQUIRE_LLAMA`, under which that is
/// a failure.
struct LlamaCpp {
    _process: Process,
    port: u16,
    log: std::path::PathBuf,
}

impl LlamaCpp {
    fn start() -> Option<LlamaCpp> {
        let python = std::env::var("METRON_LLAMA_PYTHON").unwrap_or_else(|_| "python3".into());
        let probe = Command::new(&python)
            .args(["-c", "import llama_cpp.server, gguf"])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            let why = format!("{python} cannot import llama_cpp.server and gguf: python3 -m pip install 'llama-cpp-python[server]' gguf");
            assert!(std::env::var_os("METRON_REQUIRE_LLAMA").is_none(), "{why}");
            eprintln!("note: the llama.cpp check skipped: {why}");
            return None;
        }
        let dir = servers::fresh_dir("llamacpp");
        let model = dir.join("tiny.gguf");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/tiny_model.py");
        let wrote = Command::new(&python)
            .arg(script)
            .arg(&model)
            .output()
            .unwrap();
        assert!(
            wrote.status.success(),
            "{}",
            String::from_utf8_lossy(&wrote.stderr)
        );
        let log = dir.join("server.log");
        let (process, [port]) = servers::start(
            dir,
            |dir, [port]| {
                // One request at a time, each to its end: the server's
                // default cuts a running answer short when another comes.
                let serve = format!(
                    "exec {python} -m llama_cpp.server --model {} --host 127.0.0.1 --port {port} \
                     --n_ctx 2048 --n_threads 1 --n_threads_batch 1 --interrupt_requests False \
                     2> {}",
                    dir.join("tiny.gguf").display(),
                    dir.join("server.log").display()
                );
                let mut c = Command::new("sh");
                c.args(["-c", &serve]);
                c
            },
            |dir| std::fs::read_to_string(dir.join("server.log")).unwrap_or_default(),
        );
        Some(LlamaCpp {
            _process: process,
            port,
            log,
        })
    }

    /// The server's own record: the tokens of each generation it ran, from
    /// llama.cpp's timing lines ("eval time = … / K runs" after a first
    /// token that the prompt's evaluation gives).
    fn generations(&self) -> Vec<u64> {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.lines()
            .filter(|l| l.contains(" eval time =") && !l.contains("prompt eval"))
            .filter_map(|l| {
                let runs = l.split(" / ").nth(1)?.split_whitespace().next()?;
                runs.parse::<u64>().ok().map(|k| k + 1)
            })
            .collect()
    }
}

/// Against llama.cpp's server: every completed answer carried the 16
/// tokens the server generated for it, each in a chunk of its own (the
/// server sends no usage when it streams, so metron counts chunks and
/// says so), and the server ran exactly one generation of 16 tokens per
/// request metron sent. TTFT is measured for every answer.
#[test]
fn llama_cpps_own_generations_match_the_tokens() {
    let _g = serial();
    let Some(srv) = LlamaCpp::start() else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/v1/chat/completions", srv.port);
    let (o, text) = bench(&[
        "-t1",
        "-c4",
        "-R4",
        "-d5s",
        "--llm",
        "--max-tokens",
        "16",
        "--prompt-words",
        "8",
        "--seed",
        "3",
        &url,
    ]);
    let l = o.stats.llm.as_ref().expect("--llm keeps token stats");
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{text}");
    assert!(l.responses >= 15, "{text}");
    assert_eq!(l.token_source(), "chunks", "{text}");
    assert_eq!(l.output_total, 16 * l.responses, "{text}");
    assert_eq!((l.without_tokens, l.without_done), (0, 0), "{text}");
    assert!(l.ttft.len() >= l.responses, "{text}");
    // Answers still streaming at the end run on to theirs: wait for them.
    let sent = c.completed + c.in_flight;
    let mut generations = srv.generations();
    for _ in 0..50 {
        if generations.len() as u64 >= sent {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        generations = srv.generations();
    }
    assert_eq!(generations.len() as u64, sent, "{generations:?}\n{text}");
    assert!(generations.iter().all(|&n| n == 16), "{generations:?}");
}

/// A saved document keeps what `--llm` asked and every token figure:
/// `metron report` prints the same LLM line and section as the run did.
#[test]
fn a_saved_run_reports_its_tokens_again() {
    let _g = serial();
    let srv = stand_in(Duration::from_millis(20), Duration::from_millis(2), None);
    let dir = servers::fresh_dir("llm-saved");
    let json = dir.join("run.json");
    let run = metron(&[
        "-t1",
        "-c4",
        "-R20",
        "-d2s",
        "--llm",
        "--model",
        "m1",
        "--max-tokens",
        "8",
        "--goodput",
        "ttft<1s",
        "--json",
        json.to_str().unwrap(),
        &url(&srv, "/"),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let again = metron(&["report", json.to_str().unwrap()]);
    assert!(again.status.success(), "{}", stderr(&again));
    let (live, saved) = (stdout(&run), stdout(&again));
    let line = |text: &str, start: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start} line in:\n{text}"))
            .to_string()
    };
    for start in [
        "LLM chat completions",
        "TTFT",
        "TPOT",
        "Tokens:",
        "Goodput:",
    ] {
        assert_eq!(line(&live, start), line(&saved, start), "{saved}");
    }
    assert!(
        line(&saved, "LLM chat").contains("model m1, max_tokens 8"),
        "{saved}"
    );
}

/// Every output of a run counts its tokens alike: the CSV's rows add up to
/// the JSON document's output tokens, the interval log carries a `tpot`
/// histogram per interval that adds up to the document's TPOT count, and
/// the HTML report has the LLM section with the text report's lines.
#[test]
fn every_output_carries_the_tokens() {
    let _g = serial();
    let srv = stand_in(Duration::from_millis(20), Duration::from_millis(2), None);
    let dir = servers::fresh_dir("llm-outputs");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (json, csv, hlog, html) = (
        path("r.json"),
        path("r.csv"),
        path("r.hlog"),
        path("r.html"),
    );
    let run = metron(&[
        "-t2",
        "-c4",
        "-R40",
        "-d3s",
        "--llm",
        "--max-tokens",
        "8",
        "--json",
        &json,
        "--csv",
        &csv,
        "--hlog",
        &hlog,
        "--html",
        &html,
        &url(&srv, "/"),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors = files::schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:#?}");
    let total = doc["llm"]["output_tokens_total"].as_u64().unwrap();
    assert!(total > 100 * 8, "{}", doc["llm"]);
    let points: u64 = doc["series"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["output_tokens"]
                .as_u64()
                .expect("every point counts tokens")
        })
        .sum();
    assert_eq!(points, total);
    let rows = std::fs::read_to_string(&csv).unwrap();
    let header: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
    let column = header.iter().position(|c| *c == "output_tokens").unwrap();
    let in_rows: u64 = rows
        .lines()
        .skip(1)
        .map(|r| r.split(',').nth(column).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(in_rows, total, "{rows}");
    let log = std::fs::read_to_string(&hlog).unwrap();
    let tpot_lines = log.lines().filter(|l| l.starts_with("Tag=tpot,")).count();
    assert!(tpot_lines >= 3, "{log}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2>LLM serving</h2>"), "{page}");
    let tokens = stdout(&run)
        .lines()
        .find(|l| l.trim_start().starts_with("Tokens:"))
        .unwrap()
        .trim()
        .to_string();
    assert!(
        page.contains(&format!("<p>{tokens}.</p>")),
        "{tokens}\n{page}"
    );
    // A run counted in tokens does not merge with one that is not.
    let plain = path("plain.json");
    let run = metron(&[
        "-t1",
        "-c1",
        "-R10",
        "-d1s",
        "--json",
        &plain,
        &url(&srv, "/v1/models"),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let merged = metron(&["merge", &json, &plain]);
    let line = one_line_error(&merged);
    assert!(
        line.contains("is of an --llm run, counted in tokens, and "),
        "{line}"
    );
    assert!(line.contains("merge only runs of one kind"), "{line}");
}

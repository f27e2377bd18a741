//! The flags of a load test as typed: wrk's, wrk2's and metron's own,
//! each with its help, and the values some of them take (`--arrival`,
//! `-a`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::{ArgAction, Parser, ValueHint};

use super::{choice, distributed, outputs, profile};
use crate::units::{parse_bytes, parse_duration, parse_si_f64, parse_si_u64};

pub use crate::http::ws::Shape;
pub use crate::schedule::Arrival;

/// How requests are spread over time in rate mode (`--arrival`): the
/// choices' words.
impl Arrival {
    pub const CHOICES: [(Arrival, &'static str, &'static str); 2] = [
        (
            Arrival::Constant,
            "constant",
            "one request every 1/R, as wrk2 sends",
        ),
        (
            Arrival::Poisson,
            "poisson",
            "exponential gaps from --seed: independent users",
        ),
    ];
}

const AFTER_HELP: &str = "\
Subcommands:
  metron serve [OPTIONS]   run the built-in target server (metron serve --help)
  metron demo  [OPTIONS]   show corrected vs uncorrected latency against a stalling target
  metron report FILE.json [--html OUT] [--csv OUT]
                           re-render the reports of a saved --json result
  metron merge FILE... [--json OUT] [--html OUT] [--slo SPEC]
                           one exact report from several instances' --json documents
                           (--shard parts), or a latency report from --hlog interval logs
  metron sweep --slo SPEC --from R1 --to R2 [OPTIONS] URL   the highest rate that meets an SLO
  metron completions SHELL print a completion script for bash, zsh or fish

Numbers accept SI suffixes (-c 1k, -R 2.5k); durations accept us, ms, s, m, h (-d 2m).
Words after the URL go to the script's init(args) as args[1], args[2], ...
(flags may still follow them; everything after -- goes to the script too).";

/// `-c`: a number of connections, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connections {
    Fixed(u64),
    /// One per thread at the start, growing on demand.
    Auto,
}

impl Connections {
    /// Connections at the start of a run of `threads` threads.
    pub fn initial(self, threads: u64) -> u64 {
        match self {
            Connections::Fixed(n) => n,
            Connections::Auto => threads,
        }
    }
}

fn parse_connections(s: &str) -> Result<Connections, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Connections::Auto);
    }
    parse_si_u64(s)
        .map(Connections::Fixed)
        .map_err(|why| format!("{why}; -c takes a number of connections or auto"))
}

/// Load-test a URL: `metron [OPTIONS] <URL> [SCRIPT ARGS...]`.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "metron",
    version = super::VERSION,
    about = "An HTTP benchmarking tool: wrk's command line and Lua API, wrk2's constant-rate latency model.",
    disable_version_flag = true,
    // As in wrk, a flag given twice takes its last value (-d 10s ... -d 30s).
    args_override_self = true,
    after_help = AFTER_HELP
)]
pub struct BenchArgs {
    /// Connections to keep open, in total over all threads; "auto": one per thread at the start, growing on demand (rate mode) up to the open-files limit
    #[arg(short = 'c', long = "connections", default_value = "10", value_parser = parse_connections, value_name = "N")]
    pub connections: Connections,

    /// Rate mode: open another connection whenever a due request finds every stream busy, up to N over all threads (they stay open)
    #[arg(long = "max-connections", value_parser = parse_si_u64, value_name = "N")]
    pub max_connections: Option<u64>,

    /// Duration of the test, e.g. 30s, 2m [default: 10s, or the length of --rate-profile]
    #[arg(short = 'd', long = "duration", value_parser = parse_duration, value_name = "T")]
    pub duration: Option<Duration>,

    /// Number of worker threads
    #[arg(short = 't', long = "threads", default_value = "2", value_parser = parse_si_u64, value_name = "N")]
    pub threads: u64,

    /// Lua script (wrk's API)
    #[arg(short = 's', long = "script", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub script: Option<PathBuf>,

    /// Add a header to every request: "Name: value" (repeatable)
    #[arg(short = 'H', long = "header", value_name = "H", value_parser = header_text())]
    pub headers: Vec<String>,

    /// Print the latency distribution and percentile spectrum
    #[arg(short = 'L', long = "latency")]
    pub latency: bool,

    /// Also print the uncorrected latency distribution (implies -L)
    #[arg(short = 'U', long = "u_latency")]
    pub u_latency: bool,

    /// Total requests per second over all threads (open model); fractions allowed. Without it: as fast as possible (closed loop)
    #[arg(short = 'R', long = "rate", value_parser = parse_si_f64, value_name = "R", allow_negative_numbers = true)]
    pub rate: Option<f64>,

    /// Count a request outstanding longer than this as a timeout and recycle its connection [default: 2s; 60s with --llm, whose answers stream for seconds]
    #[arg(long = "timeout", value_parser = parse_duration, value_name = "T")]
    pub timeout: Option<Duration>,

    /// A script's flow(visit): a visit running longer than this from its scheduled start ends, failed "timeout" (default: none; a visit still running at the end counts in flight)
    #[arg(long = "visit-timeout", value_parser = parse_duration, value_name = "T", requires = "script")]
    pub visit_timeout: Option<Duration>,

    /// Pin worker threads to these CPUs, round-robin: "0,1" or "0-3"
    #[arg(short = 'a', long = "affinity", value_parser = parse_cpu_list, value_name = "CPUS")]
    pub affinity: Option<CpuList>,

    /// Exclude requests intended in the first T of the run from every figure [default: 0s; each step of metron sweep: 5s]
    #[arg(long = "warmup", value_parser = parse_duration, value_name = "T")]
    pub warmup: Option<Duration>,

    /// Rate mode: how requests are spread over time [default: constant]
    #[arg(long = "arrival", value_parser = choice::choice(&Arrival::CHOICES), value_name = "PROCESS")]
    pub arrival: Option<Arrival>,

    /// Rate over time instead of -R: holds and linear ramps, "1k:30s,1k-5k:60s,5k:30s", or @FILE of "seconds,rate" rows
    #[arg(long = "rate-profile", value_parser = profile::parse_profile, value_name = "SPEC", conflicts_with = "rate")]
    pub rate_profile: Option<profile::ProfileSpec>,

    /// Judge the run: "p99<10ms,p99.9<50ms,errors<0.1%,rate>=99%"; exit status 0 met, 3 not met, 4 inconclusive. Terms: pNN<T or max<T (corrected latency), the same of a phase: ttfb_p99<T (time to first byte), connect_p99<T, tls_p99<T (https), first_event_p99<T and gap_p99<T (--sse, streamed calls), visit_p99<T (a flow's visits, start to end) and step.NAME.p99<T (a flow's step), ttft_p99<T, tpot_p99<T and itl_p99<T (--llm); errors<PCT%; rate>=PCT% (with -R); visits_failed<PCT%; goodput>=PCT% (--llm --goodput)
    #[arg(long = "slo", value_parser = crate::verdict::parse_slo, value_name = "SPEC")]
    pub slo: Option<crate::verdict::Slo>,

    /// Send lag p99 still taken as the generator keeping its schedule, for --slo's verdict, metron sweep's steps and the report's warning: above it (with connections free) a verdict is inconclusive [default: one interval of a thread's schedule, threads/R, at least 1ms]
    #[arg(long = "lag-allowance", value_parser = parse_duration, value_name = "T")]
    pub lag_allowance: Option<Duration>,

    /// Read each response body as server-sent events (text/event-stream): time the first event from the intended send time, every gap between events, and count them; a script's event(data) gets each event
    #[arg(long = "sse")]
    pub sse: bool,

    /// Every request is a streamed OpenAI-compatible completion (--llm or --llm=chat|completions; a URL without a path gets the API's usual one): time to first token, time per output token, inter-token latency and tokens, from the server's usage or one per chunk
    #[arg(
        long = "llm",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "auto",
        value_parser = choice::choice(&crate::llm::ApiChoice::CHOICES),
        value_name = "API"
    )]
    pub llm: Option<crate::llm::ApiChoice>,

    /// --llm: the "model" of every request (the served model's name; left out of the body without it)
    #[arg(long = "model", value_name = "NAME")]
    pub model: Option<String>,

    /// --llm: "max_tokens" of every request whose prompt names none
    #[arg(long = "max-tokens", value_parser = parse_si_u64, value_name = "N")]
    pub max_tokens: Option<u64>,

    /// --llm: ask the server to ignore end-of-sequence tokens, so answers run to --max-tokens (vLLM's and llama.cpp's "ignore_eos")
    #[arg(long = "ignore-eos")]
    pub ignore_eos: bool,

    /// --llm: fields added to every request's JSON body, replacing any of the same name: '{"temperature":0}'
    #[arg(long = "llm-body", value_parser = crate::llm::parse_body, value_name = "JSON")]
    pub llm_body: Option<serde_json::Map<String, serde_json::Value>>,

    /// --llm: do not ask for stream_options.include_usage (output tokens are then counted one per chunk)
    #[arg(long = "no-usage")]
    pub no_usage: bool,

    /// --llm: prompts from FILE: JSON Lines of {"prompt": ...} or {"messages": [...]} (each with an optional "max_tokens"), a ShareGPT JSON file, or one prompt a line; in order, or --requests-order random with --seed
    #[arg(long = "prompts", value_name = "FILE", value_hint = ValueHint::FilePath, conflicts_with = "prompt_words")]
    pub prompts: Option<PathBuf>,

    /// --llm: 1000 made-up prompts of N words each, or N-M to N+M words ("200±50" or "200+-50"), seeded by --seed [default: 32]
    #[arg(long = "prompt-words", value_parser = crate::llm::prompts::parse_words, value_name = "N[±M]")]
    pub prompt_words: Option<(u64, u64)>,

    /// --llm: the requests that count as good: "ttft<500ms,tpot<50ms,e2e<10s" (any of the three); the report gives their count, rate and share
    #[arg(long = "goodput", value_parser = crate::llm::parse_goodput, value_name = "SPEC")]
    pub goodput: Option<crate::stats::llm::Goodput>,

    /// Largest response head (status line and headers) accepted; a larger one is a read error
    #[arg(long = "max-head", default_value = "64k", value_parser = parse_bytes, value_name = "BYTES")]
    pub max_head: u64,

    /// Replay the requests in FILE (a JSON array, JSON Lines, or "[METHOD] URL" lines), cycling; paths go to URL's host
    #[arg(long = "requests", value_name = "FILE", value_hint = ValueHint::FilePath, conflicts_with = "script")]
    pub requests: Option<PathBuf>,

    /// Order of --requests [default: sequential]
    #[arg(
        long = "requests-order",
        value_parser = choice::choice(&crate::replay::Order::CHOICES),
        value_name = "ORDER"
    )]
    pub requests_order: Option<crate::replay::Order>,

    /// Seed of --arrival poisson and --requests-order random, so a run repeats (default: from the clock; the banner shows it)
    #[arg(long = "seed", value_name = "N")]
    pub seed: Option<u64>,

    /// Send part I of N of one schedule (requests k with k mod N = I, at the total -R): "I/N", or "auto/N" and "auto" to take I (and N) from a Kubernetes Indexed Job or a Slurm job array
    #[arg(long = "shard", value_parser = distributed::parse_shard, value_name = "I/N")]
    pub shard: Option<distributed::ShardSpec>,

    /// Start the schedule at this wall-clock time on every instance (Unix seconds or RFC 3339); metron connects, then waits for it
    #[arg(long = "start-at", value_parser = distributed::parse_start_at, value_name = "TIME")]
    pub start_at: Option<std::time::SystemTime>,

    /// Report statistics per endpoint of --requests (automatic when the file has 2 to 100)
    #[arg(long = "by-endpoint")]
    pub by_endpoint: bool,

    /// Speak HTTP/2: with prior knowledge (h2c) to http:// URLs, by ALPN offering only h2 to https:// ones
    #[arg(long = "http2", visible_alias = "h2", conflicts_with = "alpn")]
    pub http2: bool,

    /// Speak HTTP/3 over QUIC (UDP) to https:// URLs, offering h3 by ALPN
    #[arg(long = "http3", visible_alias = "h3", conflicts_with_all = ["alpn", "http2"])]
    pub http3: bool,

    /// --http3: send requests as 0-RTT early data on connections that resume an earlier one's TLS session, sent again if the server refuses them (only for requests safe to replay)
    #[arg(long = "0rtt")]
    pub zero_rtt: bool,

    /// HTTP/2 and HTTP/3: streams in flight per connection, never more than the server allows [default: 100]
    #[arg(short = 'm', long = "max-streams", value_parser = parse_si_u64, value_name = "N")]
    pub max_streams: Option<u64>,

    /// HTTPS: protocols to offer by ALPN, preferred first (h2, http/1.1); the server chooses, the report says which
    #[arg(long = "alpn", value_name = "LIST")]
    pub alpn: Option<String>,

    /// Connect to ADDR for HOST:PORT, while the TLS name and Host stay HOST (as curl's --resolve; repeatable; ADDR,ADDR for several)
    #[arg(long = "resolve", value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<String>,

    /// Skip TLS certificate verification
    #[arg(short = 'k', long = "insecure")]
    pub insecure: bool,

    /// Trust the certificate authorities in this PEM file instead of the system's store
    #[arg(long = "cacert", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub cacert: Option<PathBuf>,

    /// Client certificate for servers that require one (PEM: the certificate, then any intermediates); needs --key
    #[arg(long = "cert", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub cert: Option<PathBuf>,

    /// Private key of --cert (PEM: PKCS#8, RSA or SEC1)
    #[arg(long = "key", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub key: Option<PathBuf>,

    /// Make every request a gRPC call of METHOD (package.Service/Method, or package.Service.Method, or the path /package.Service/Method) over HTTP/2: h2c to http:// URLs, h2 to https:// ones; the schema from --proto or --protoset, the message from --data or --requests
    #[arg(long = "grpc", value_name = "METHOD", conflicts_with_all = ["alpn", "sse"])]
    pub grpc: Option<String>,

    /// --grpc: a .proto file defining the method and its messages, compiled at start (repeatable)
    #[arg(long = "proto", value_name = "FILE", value_hint = ValueHint::FilePath, conflicts_with = "protoset")]
    pub proto: Vec<PathBuf>,

    /// --grpc: a directory the .proto files' imports are found in (repeatable; each file's own directory is searched last)
    #[arg(long = "import-path", value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub import_path: Vec<PathBuf>,

    /// --grpc: a compiled FileDescriptorSet instead of --proto, as protoc --include_imports --descriptor_set_out=FILE writes it
    #[arg(long = "protoset", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub protoset: Option<PathBuf>,

    /// The message of every request: --grpc's in protobuf's JSON mapping [default: {}, every field at its default]; a ws:// URL's as given, or @FILE for a file's bytes [default: hello]
    #[arg(long = "data", value_name = "DATA", conflicts_with = "requests")]
    pub data: Option<String>,

    /// ws:// and wss:// URLs: send messages as binary frames, not text
    #[arg(long = "ws-binary")]
    pub ws_binary: bool,

    /// ws:// and wss:// URLs: what the server does with the messages [default: echo]; with push, --data (if given) is sent once per connection as its subscribe message, -R counts subscriptions, and --timeout bounds each subscription, so raise it
    #[arg(long = "ws", value_parser = choice::choice(&Shape::CHOICES), value_name = "SHAPE")]
    pub ws: Option<Shape>,

    /// ws:// and wss:// URLs, echo: match each answer to the message awaiting one whose FIELD (a JSON field; a dotted path through nested objects, a number picking an array's item) holds the same value, not to the oldest; other messages are counted as unasked
    #[arg(long = "ws-match", value_name = "FIELD")]
    pub ws_match: Option<String>,

    /// ws:// and wss:// URLs: offer permessage-deflate (RFC 7692): where the server agrees, every message goes compressed and compressed ones are read
    #[arg(long = "ws-deflate")]
    pub ws_deflate: bool,

    /// ws:// and wss:// URLs: send a ping on every open connection every T (the server's pongs are read and not timed)
    #[arg(long = "ws-ping", value_parser = parse_duration, value_name = "T")]
    pub ws_ping: Option<Duration>,

    /// --grpc: a successful call counts as an error unless FIELD of its reply (a dotted path through nested messages) holds VALUE, as protobuf's JSON mapping writes it (replies are then decoded)
    #[arg(long = "grpc-check", value_name = "FIELD=VALUE")]
    pub grpc_check: Option<String>,

    #[command(flatten)]
    pub sinks: outputs::SinkFlags,

    /// Length of the intervals of --json's time series, --html's charts, --hlog, --csv and --dashboard [default: 1s]
    #[arg(long = "interval", value_parser = parse_duration, value_name = "T")]
    pub interval: Option<Duration>,

    /// After the report: the corrected latency histogram, one count per 1 us from 0 to the last non-empty bin
    #[arg(long = "histogram")]
    pub histogram: bool,

    /// After the report: completed requests per interval, all threads together, one count a line
    #[arg(long = "timeseries")]
    pub timeseries: bool,

    /// During the run: completed requests per interval and thread, as each interval ends (THREAD | EPOCH | REQUESTS)
    #[arg(long = "thread-timeseries")]
    pub thread_timeseries: bool,

    /// Interval of --timeseries and --thread-timeseries (a multiple of 10ms; printed in ms) [default: 250ms]
    #[arg(long = "timeseries-interval", value_parser = parse_duration, value_name = "T")]
    pub timeseries_interval: Option<Duration>,

    /// No live progress line on stderr (it only shows on a terminal anyway)
    #[arg(long = "quiet")]
    pub quiet: bool,

    /// Print the version and exit
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    pub version: (),

    /// Target URL: http:// or https:// (ws:// or wss:// for WebSocket), host name or IP literal, port, path and query
    #[arg(value_name = "URL", value_hint = ValueHint::Url)]
    pub url: String,

    /// Arguments passed to the script's init(args): every plain word after
    /// the URL, as with wrk, and every word after --
    #[arg(value_name = "SCRIPT ARGS")]
    pub script_args: Vec<String>,
}

/// `-H` as text: bytes that are not UTF-8 are refused with the header
/// named (U+FFFD where the bad bytes were), where clap's own check would
/// only say that some argument was not UTF-8.
fn header_text() -> impl TypedValueParser<Value = String> {
    clap::builder::OsStringValueParser::new().try_map(|h: OsString| {
        h.into_string()
            .map_err(|_| "it is not UTF-8 text; write the header as 'Name: value' in UTF-8")
    })
}

/// CPUs named by `-a` (a newtype so that clap takes the list as one value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// A CPU list such as `0,1` or `0-3,6`.
pub fn parse_cpu_list(s: &str) -> Result<CpuList, String> {
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let bad = || format!("'{s}' is not a CPU list (write e.g. 0,1 or 0-3)");
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
            None => {
                let n: usize = part.parse().map_err(|_| bad())?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(format!("'{part}' is an empty CPU range (write low-high)"));
        }
        cpus.extend(lo..=hi);
    }
    Ok(CpuList(cpus))
}

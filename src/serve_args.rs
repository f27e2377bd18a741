//! `metron serve`'s flags, turned into the server's [`ServeConfig`].
//!
//! The flags are parsed by the shared unit parsers (`1k`, `250ms`, `4k`) so
//! they read like every other metron flag. The server itself knows nothing
//! of the command line: it is handed the plain config built here.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueHint};

use metron_core::cli::choice::choice;
use metron_core::units::{parse_bytes, parse_duration, parse_si_f64, parse_si_u64};
use metron_serve::{
    parse_fault, parse_h3_code, parse_probability, BadCert, Beyond, Capacity, FaultPlan, FaultSpec,
    Http2, Http3, Llm, Per, Probability, ServeConfig, Sse, StallPlan, MAX_H2_WINDOW, MAX_THREADS,
};

/// The long help of `--fault`: every fault by name.
const FAULT_HELP: &str = "Inject a fault in place of responses: NAME on every response, \
or NAME:P on each one with probability P (0 < P <= 1), e.g. --fault reset:0.2. \
See also --fault-every, --fault-per, --fault-seed; GET /fault/NAME injects one on request.

NAME is one of:
  close-before-head  read the request, then close without writing a byte
  close-mid-head     write the first half of the response head, then close
  close-mid-body     write the head and the first half of the body, then close
  reset              reset the connection (RST) without writing a byte
  never-answer       hold the connection open and write nothing, ever
  garbage            write bytes that are not HTTP, then close
  huge-head          write a valid 200 whose head is over 1 MiB, then close
  bad-status-line    write a response whose status code is not a number, then close
  bad-chunk          write a chunked body whose chunk size is not hex, then close
  short-body         write one body byte fewer than Content-Length says, then close
  trickle            write the response one byte at a time (see --trickle-interval)

Over HTTP/2 (--http2) each fault takes its stream form:
  close-before-head  close the connection, no GOAWAY, no frame for the stream
  close-mid-head     refused at start: a header block is sent whole
  close-mid-body     HEADERS and half the body's DATA, then close the connection (no GOAWAY)
  reset              reset the TCP connection (RST)
  never-answer       hold the stream open and unanswered; other streams are served
  garbage            write bytes that are not HTTP/2 frames on the connection, then close
  huge-head          a valid 200 whose header block is over 1 MiB
  bad-status-line    a connection error: GOAWAY with PROTOCOL_ERROR, then close
  bad-chunk          refused at start: HTTP/2 has no chunked coding
  short-body         DATA one byte shorter than content-length, then END_STREAM
  trickle            HEADERS, then the body one byte per DATA frame, each after --trickle-interval

Over HTTP/3 (--http3) likewise, on a request stream; the faults that end the connection
close it with a code of their own (CONNECTION_CLOSE):
  close-before-head  H3_NO_ERROR, no GOAWAY, no frame for the stream
  close-mid-body     HEADERS and half the body's DATA, then H3_NO_ERROR
  reset              H3_INTERNAL_ERROR
  garbage            H3_FRAME_ERROR
  bad-status-line    H3_GENERAL_PROTOCOL_ERROR
  close-mid-head and bad-chunk are refused at start, as over HTTP/2.
The faults that close or reset end every stream on the connection.";

/// `metron serve`'s one line, in its help and its man page.
pub const ABOUT: &str = "Run metron's built-in HTTP target server.";

/// `metron serve` flags.
#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// Address to listen on; port 0 lets the OS choose
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Worker threads serving connections
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_threads)]
    pub threads: usize,

    /// Fixed delay before every response (e.g. 2ms)
    #[arg(long, value_name = "D", default_value = "0", value_parser = parse_duration)]
    pub delay: Duration,

    /// Answer at most RPS requests per second over all connections, in arrival order (e.g. 4k)
    #[arg(long, value_name = "RPS", value_parser = parse_capacity, allow_negative_numbers = true)]
    pub capacity: Option<Capacity>,

    /// Body length of the default response (e.g. 512, 4k)
    #[arg(long, value_name = "BYTES", default_value = "0", value_parser = parse_bytes)]
    pub body_size: u64,

    /// Send the default response with Transfer-Encoding: chunked
    #[arg(long)]
    pub chunked: bool,

    /// Close each connection after its Nth response (sent with Connection: close)
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub close_every: Option<u64>,

    /// Serve at most N connections at once, turning those beyond away as --beyond-limit says (as a server past its connection limit does)
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub max_connections: Option<u64>,

    /// What a connection beyond --max-connections meets: close (at once, unanswered; a QUIC handshake refused) or hold (left unread, as a listen backlog does, until a connection closes; a QUIC handshake unanswered)
    #[arg(long, value_name = "WHAT", value_parser = choice(&Beyond::CHOICES), requires = "max_connections")]
    pub beyond_limit: Option<Beyond>,

    /// Stall periodically: one stall every D (first at --stall-at, default D)
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub stall_every: Option<Duration>,

    /// How long each stall lasts: no response byte is written meanwhile
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub stall_for: Option<Duration>,

    /// When the (first) stall starts, counted from server start
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub stall_at: Option<Duration>,

    /// Inject a fault: NAME on every response, or NAME:P with probability P (list: --help)
    #[arg(long, value_name = "NAME[:P]", value_parser = parse_fault, long_help = FAULT_HELP)]
    pub fault: Option<FaultSpec>,

    /// Inject the --fault on every Nth response (or connection) instead
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub fault_every: Option<u64>,

    /// What --fault counts and picks [default: response]
    #[arg(long, value_name = "UNIT", value_parser = choice(&Per::CHOICES))]
    pub fault_per: Option<Per>,

    /// Seed of the --fault NAME:P draws: the same seed picks the same responses [default: 0]
    #[arg(long, value_name = "N")]
    pub fault_seed: Option<u64>,

    /// Pause between the bytes of a trickled response (--fault trickle, /fault/trickle)
    #[arg(long, value_name = "D", default_value = "100ms", value_parser = parse_duration)]
    pub trickle_interval: Duration,

    /// Answer every successful response with N server-sent events (text/event-stream) instead of the --body-size/--chunked body, the last one `data: [DONE]`; 0 is off
    #[arg(long, value_name = "N", default_value = "0", value_parser = parse_si_u64)]
    pub sse: u64,

    /// Wait between an --sse response's head, which goes out at once, and its first event [default: 0ms]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub sse_first: Option<Duration>,

    /// Gap between --sse events, each due that long after the one before was due [default: 100ms]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub sse_gap: Option<Duration>,

    /// Serve an OpenAI-compatible stand-in model: POST /v1/chat/completions and /v1/completions answer with tokens timed by --llm-ttft and --llm-tpot (streamed with "stream": true), GET /v1/models lists it; other /v1/ paths are 404s, other paths served as without --llm
    #[arg(long)]
    pub llm: bool,

    /// Time from a request's arrival to its first --llm token [default: 100ms]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub llm_ttft: Option<Duration>,

    /// Time between --llm tokens, each due that long after the one before was due [default: 10ms]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub llm_tpot: Option<Duration>,

    /// Tokens in an --llm answer whose request names no max_tokens (at most 1M) [default: 16]
    #[arg(long, value_name = "N", value_parser = parse_si_u64)]
    pub llm_max_tokens: Option<u64>,

    /// Serve WebSocket (ws://, or wss:// with TLS) at GET /ws/echo, which echoes every message (delay=MS holds each back), and /ws/push, which sends messages on --sse's timetable (events=N&first=MS&gap=MS), then closes with 1000; close=CODE&after=N closes with CODE after N messages. Counts are printed on exit
    #[arg(long)]
    pub ws: bool,

    /// Serve HTTPS with a generated certificate that verifying clients reject
    #[arg(long, value_name = "CERT", value_parser = choice(&BadCert::CHOICES))]
    pub tls: Option<BadCert>,

    /// Serve HTTPS with the certificate chain in FILE (PEM, the server's own first); needs --tls-key
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub tls_cert: Option<PathBuf>,

    /// Private key of --tls-cert (PEM: PKCS#8, RSA or SEC1)
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub tls_key: Option<PathBuf>,

    /// Require a client certificate issued by an authority in FILE (PEM); needs --tls-cert or --tls
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub client_ca: Option<PathBuf>,

    /// Serve HTTP/2: with prior knowledge (h2c) in cleartext; over TLS, ALPN offers h2 and http/1.1
    #[arg(long)]
    pub http2: bool,

    /// Send GOAWAY after N streams on a connection, naming the Nth as the last processed
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub h2_goaway_after: Option<u64>,

    /// Reset each stream (RST_STREAM INTERNAL_ERROR) with probability P, instead of answering it
    #[arg(long, value_name = "P", value_parser = parse_probability)]
    pub h2_reset: Option<Probability>,

    /// Seed of the --h2-reset draws: the same seed resets the same streams [default: 0]
    #[arg(long, value_name = "N")]
    pub h2_reset_seed: Option<u64>,

    /// Error code of the --h2-reset resets, a name or a number: REFUSED_STREAM refuses them unprocessed [default: INTERNAL_ERROR]
    #[arg(long, value_name = "CODE", value_parser = parse_h2_code)]
    pub h2_reset_code: Option<u32>,

    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams a client may have open at once (0 refuses all)
    #[arg(long, value_name = "N", value_parser = parse_u32)]
    pub h2_max_streams: Option<u32>,

    /// Initial flow-control window of each stream and of the connection, for request bodies
    #[arg(long, value_name = "BYTES", value_parser = parse_window)]
    pub h2_window: Option<u32>,

    /// Serve HTTP/3 too, on UDP at the same address and port number as TCP; needs --tls or --tls-cert
    #[arg(long)]
    pub http3: bool,

    /// Send GOAWAY after N requests on a connection: those are answered, later ones refused, then it closes
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub h3_goaway_after: Option<u64>,

    /// Reset each request stream (H3_REQUEST_REJECTED, unprocessed) with probability P, instead of answering it
    #[arg(long, value_name = "P", value_parser = parse_probability)]
    pub h3_reset: Option<Probability>,

    /// Seed of the --h3-reset draws: the same seed resets the same streams [default: 0]
    #[arg(long, value_name = "N")]
    pub h3_reset_seed: Option<u64>,

    /// Error code of the --h3-reset resets, a name (H3_INTERNAL_ERROR, the H3_ optional) or a number; other codes than H3_REQUEST_REJECTED reset when the response is due [default: H3_REQUEST_REJECTED]
    #[arg(long, value_name = "CODE", value_parser = parse_h3_code)]
    pub h3_reset_code: Option<u64>,

    /// Request streams a client may have open at once on a connection (QUIC's stream limit) [default: 100]
    #[arg(long, value_name = "N", value_parser = parse_h3_streams)]
    pub h3_max_streams: Option<u32>,
}

impl TryFrom<ServeArgs> for ServeConfig {
    type Error = String;

    fn try_from(args: ServeArgs) -> Result<ServeConfig, String> {
        let stall = StallPlan::from_flags(args.stall_at, args.stall_for, args.stall_every)?;
        let fault = FaultPlan::from_flags(
            args.fault,
            args.fault_every,
            args.fault_per,
            args.fault_seed,
        )?;
        let http2 = Http2::from_flags(
            args.http2,
            args.h2_goaway_after,
            args.h2_reset,
            args.h2_reset_seed,
            args.h2_reset_code,
            args.h2_max_streams,
            args.h2_window,
        )?;
        let http3 = Http3::from_flags(
            args.http3,
            args.h3_goaway_after,
            args.h3_reset,
            args.h3_reset_seed,
            args.h3_reset_code,
            args.h3_max_streams,
        )?;
        let sse = Sse::from_flags(args.sse, args.sse_first, args.sse_gap)?;
        let llm = Llm::from_flags(args.llm, args.llm_ttft, args.llm_tpot, args.llm_max_tokens)?;
        let cfg = ServeConfig {
            listen: args.listen,
            threads: args.threads,
            delay: args.delay,
            capacity: args.capacity,
            body_size: args.body_size,
            chunked: args.chunked,
            close_every: args.close_every,
            max_connections: args.max_connections,
            beyond_limit: args.beyond_limit.unwrap_or_default(),
            stall,
            fault,
            trickle_interval: args.trickle_interval,
            tls: args.tls,
            tls_cert: args.tls_cert,
            tls_key: args.tls_key,
            client_ca: args.client_ca,
            http2,
            http3,
            sse,
            llm,
            ws: args.ws,
            record: 0,
        };
        cfg.check()?;
        Ok(cfg)
    }
}

fn parse_threads(s: &str) -> Result<usize, String> {
    let n = parse_positive(s)?;
    match usize::try_from(n) {
        Ok(n) if n <= MAX_THREADS => Ok(n),
        _ => Err(format!("'{s}' is more than {MAX_THREADS} threads")),
    }
}

fn parse_u32(s: &str) -> Result<u32, String> {
    let n = parse_si_u64(s)?;
    u32::try_from(n).map_err(|_| format!("'{s}' is more than {}", u32::MAX))
}

/// An HTTP/2 error code: its name (`REFUSED_STREAM`, any case) or its value.
fn parse_h2_code(s: &str) -> Result<u32, String> {
    metron_core::stats::http2::code_of(s)
        .or_else(|| s.parse().ok())
        .ok_or_else(|| {
            format!("'{s}' is not an HTTP/2 error code: give a name such as REFUSED_STREAM, or a number")
        })
}

/// `--h3-max-streams`: at least one stream, or no request could be sent.
fn parse_h3_streams(s: &str) -> Result<u32, String> {
    let n = parse_positive(s)?;
    u32::try_from(n).map_err(|_| format!("'{s}' is more than {}", u32::MAX))
}

/// An HTTP/2 window: 1 byte to 2^31 - 1, with units (`16`, `1k`).
fn parse_window(s: &str) -> Result<u32, String> {
    match u32::try_from(parse_bytes(s)?) {
        Ok(n) if (1..=MAX_H2_WINDOW).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' must be 1 to {MAX_H2_WINDOW} bytes")),
    }
}

/// `--capacity`: requests per second above 0, with SI suffixes and
/// fractions (`4k`, `0.5`).
fn parse_capacity(s: &str) -> Result<Capacity, String> {
    const FIX: &str = "--capacity takes requests per second above 0, e.g. 1000, 4k or 0.5";
    let rps = parse_si_f64(s).map_err(|why| format!("{why}; {FIX}"))?;
    Capacity::new(rps).map_err(|_| format!("'{s}' would serve nothing; {FIX}"))
}

fn parse_positive(s: &str) -> Result<u64, String> {
    match parse_si_u64(s)? {
        0 => Err(format!("'{s}' must be at least 1")),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn parse(argv: &[&str]) -> Result<ServeArgs, clap::Error> {
        let argv = std::iter::once("serve").chain(argv.iter().copied());
        Cli::try_parse_from(argv).map(|cli| cli.args)
    }

    fn config(argv: &[&str]) -> Result<ServeConfig, String> {
        ServeConfig::try_from(parse(argv).map_err(|e| e.to_string())?)
    }

    #[test]
    fn defaults_match_the_documentation() {
        let cfg = config(&[]).unwrap();
        assert_eq!(cfg.listen, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(cfg.threads, 1);
        assert_eq!(cfg.delay, Duration::ZERO);
        assert_eq!(cfg.capacity, None);
        assert_eq!(cfg.body_size, 0);
        assert!(!cfg.chunked);
        assert_eq!(cfg.close_every, None);
        assert_eq!(cfg.stall, None);
        assert_eq!(cfg.fault, None);
        assert_eq!(cfg.trickle_interval, Duration::from_millis(100));
        assert_eq!(cfg.tls, None);
        assert_eq!(cfg.http2, None);
        assert_eq!(cfg.http3, None);
        assert_eq!(cfg.sse, None);
        assert_eq!(cfg.llm, None);
        assert!(!cfg.ws);
        assert_eq!(cfg.record, 0);
        assert_eq!(
            cfg,
            ServeConfig {
                listen: cfg.listen,
                ..ServeConfig::default()
            }
        );
    }

    #[test]
    fn flags_take_units() {
        let cfg = config(&[
            "--listen=[::1]:0",
            "--threads=2",
            "--delay=2.5ms",
            "--body-size=4k",
            "--chunked",
            "--close-every=1k",
            "--stall-every=2s",
            "--stall-for=100ms",
        ])
        .unwrap();
        assert_eq!(cfg.listen, "[::1]:0".parse().unwrap());
        assert_eq!(cfg.threads, 2);
        assert_eq!(cfg.delay, Duration::from_micros(2500));
        assert_eq!(cfg.body_size, 4096);
        assert!(cfg.chunked);
        assert_eq!(cfg.close_every, Some(1000));
        let plan = cfg.stall.unwrap();
        assert_eq!(plan.at(), Duration::from_secs(2));
        assert_eq!(plan.every(), Some(Duration::from_secs(2)));
        assert_eq!(plan.length(), Duration::from_millis(100));
    }

    #[test]
    fn sse_flags_make_an_event_stream() {
        let ms = Duration::from_millis;
        let sse = |argv: &[&str]| config(argv).map(|cfg| cfg.sse);
        let want = |events, first, gap| Ok(Some(Sse { events, first, gap }));
        assert_eq!(sse(&["--sse=3"]), want(3, ms(0), ms(100)));
        assert_eq!(
            sse(&["--sse", "2", "--sse-first=1s"]),
            want(2, ms(1000), ms(100))
        );
        assert_eq!(
            sse(&[
                "--sse=1k",
                "--sse-first=20ms",
                "--sse-gap=50ms",
                "--body-size=4k"
            ]),
            want(1000, ms(20), ms(50))
        );
        assert_eq!(sse(&["--sse=0"]), Ok(None));
        for flag in ["--sse-first", "--sse-gap"] {
            let alone = sse(&[&format!("{flag}=50ms")]).unwrap_err();
            assert_eq!(
                alone,
                format!("{flag} needs --sse N (how many events each response sends)")
            );
        }
        assert!(parse(&["--sse=-1"]).is_err());
        assert!(parse(&["--sse=3", "--sse-gap=soon"]).is_err());
        assert!(parse(&["--sse=3", "--sse-first=soon"]).is_err());
        assert!(parse(&["--sse-events=3"]).is_err(), "the old name is gone");
    }

    #[test]
    fn llm_flags_make_a_stand_in_model() {
        let ms = Duration::from_millis;
        let llm = |argv: &[&str]| config(argv).map(|cfg| cfg.llm);
        let want = |ttft, tpot, max_tokens| {
            Ok(Some(Llm {
                ttft,
                tpot,
                max_tokens,
            }))
        };
        assert_eq!(llm(&["--llm"]), want(ms(100), ms(10), 16));
        assert_eq!(
            llm(&[
                "--llm",
                "--llm-ttft=1.5s",
                "--llm-tpot",
                "2ms",
                "--llm-max-tokens=1k"
            ]),
            want(ms(1500), ms(2), 1000)
        );
        assert_eq!(
            llm(&["--llm", "--llm-max-tokens=0", "--http2"]),
            want(ms(100), ms(10), 0)
        );
        assert_eq!(llm(&[]), Ok(None));
        assert!(parse(&["--llm", "--llm-ttft=soon"]).is_err());
        assert!(parse(&["--llm", "--llm-max-tokens=-1"]).is_err());
    }

    #[test]
    fn bad_llm_combinations_are_one_line_reasons() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--llm-ttft=1s"],
                "--llm-ttft needs --llm (the stand-in model server it sets up)",
            ),
            (&["--llm-tpot=1ms"], "--llm-tpot needs --llm"),
            (&["--llm-max-tokens=5"], "--llm-max-tokens needs --llm"),
            (
                &["--llm", "--sse=3"],
                "--llm and --sse both stream events in answers; drop --sse",
            ),
            (
                &["--llm", "--llm-max-tokens=2M"],
                "--llm-max-tokens must be at most 1000000, not 2000000",
            ),
        ];
        for (argv, want) in cases {
            let err = config(argv).unwrap_err();
            let first = err.lines().next().unwrap_or_default();
            assert!(first.contains(want), "{argv:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{argv:?}: one line: {err}");
        }
    }

    #[test]
    fn ws_serves_websocket_over_http1_only() {
        assert!(config(&["--ws"]).unwrap().ws);
        assert!(
            config(&["--ws", "--tls", "untrusted", "--http3"])
                .unwrap()
                .ws
        );
        assert!(!config(&[]).unwrap().ws);
        let err = config(&["--ws", "--http2"]).unwrap_err();
        assert_eq!(
            err,
            "--ws upgrades HTTP/1.1 connections and --http2 serves HTTP/2 on them (WebSocket over HTTP/2 is not served); drop --http2"
        );
    }

    #[test]
    fn bad_values_are_refused_with_a_reason() {
        assert!(parse(&["--threads=0"]).is_err());
        assert!(parse(&["--threads=100k"]).is_err());
        assert!(parse(&["--close-every=0"]).is_err());
        assert!(parse(&["--delay=5x"]).is_err());
        assert!(parse(&["--listen=nowhere"]).is_err());
        let alone = config(&["--stall-for=1s"]).unwrap_err().to_string();
        assert!(alone.contains("--stall-for needs"), "{alone}");
        let long = config(&["--stall-for=1s", "--stall-every=1s"]);
        let long = long.unwrap_err().to_string();
        assert!(long.contains("shorter than --stall-every"), "{long}");
    }

    #[test]
    fn capacity_takes_units_and_fractions_and_refuses_no_rate() {
        let rps = |arg: &str| config(&[arg]).map(|cfg| cfg.capacity.map(Capacity::rps));
        assert_eq!(rps("--capacity=4k"), Ok(Some(4000.0)));
        assert_eq!(rps("--capacity=2.5k"), Ok(Some(2500.0)));
        assert_eq!(rps("--capacity=0.5"), Ok(Some(0.5)));
        for bad in [
            "--capacity=0",
            "--capacity=-5",
            "--capacity=fast",
            "--capacity=4x",
        ] {
            let err = rps(bad).unwrap_err();
            let first = err.lines().next().unwrap_or_default();
            let fix = "--capacity takes requests per second above 0, e.g. 1000, 4k or 0.5";
            assert!(first.contains(fix), "{bad}: {err}");
        }
    }

    #[test]
    fn fault_flags_make_a_plan() {
        use metron_serve::{Fault, Probability};
        let cfg = config(&["--fault=close-mid-body", "--fault-every=3"]).unwrap();
        assert_eq!(cfg.fault, Some(FaultPlan::every(Fault::CloseMidBody, 3)));
        let cfg = config(&[
            "--fault",
            "reset:0.2",
            "--fault-seed",
            "42",
            "--fault-per",
            "connection",
        ])
        .unwrap();
        let p = Probability::new(0.2).unwrap();
        let plan = FaultPlan::chance(Fault::Reset, p, 42).per_connection();
        assert_eq!(cfg.fault, Some(plan));
        let cfg = config(&["--fault=trickle", "--trickle-interval=5ms", "--tls=expired"]).unwrap();
        assert_eq!(cfg.fault, Some(FaultPlan::every(Fault::Trickle, 1)));
        assert_eq!(cfg.trickle_interval, Duration::from_millis(5));
        assert_eq!(cfg.tls, Some(BadCert::Expired));
        assert_eq!(
            config(&["--tls=untrusted"]).unwrap().tls,
            Some(BadCert::Untrusted)
        );
    }

    #[test]
    fn http2_flags_make_settings() {
        use metron_serve::Pick;
        let cfg = config(&["--http2"]).unwrap();
        assert_eq!(cfg.http2, Some(Http2::default()));
        let cfg = config(&[
            "--http2",
            "--h2-goaway-after=3",
            "--h2-reset=0.25",
            "--h2-reset-seed=7",
            "--h2-reset-code=refused_stream",
            "--h2-max-streams=0",
            "--h2-window=1k",
            "--fault=reset",
            "--tls=untrusted",
        ])
        .unwrap();
        let p = Probability::new(0.25).unwrap();
        let want = Http2 {
            goaway_after: Some(3),
            reset: Some(Pick::Chance { p, seed: 7 }),
            reset_code: Some(7),
            max_streams: Some(0),
            window: Some(1024),
        };
        assert_eq!(cfg.http2, Some(want));
    }

    #[test]
    fn bad_http2_values_are_one_line_reasons() {
        let cases: &[(&[&str], &str)] = &[
            (&["--h2-goaway-after=2"], "--h2-goaway-after needs --http2"),
            (&["--h2-reset=0.5"], "--h2-reset needs --http2"),
            (
                &["--http2", "--h2-reset=0.5", "--h2-reset-code=NOPE"],
                "'NOPE' is not an HTTP/2 error code",
            ),
            (&["--h2-max-streams=8"], "--h2-max-streams needs --http2"),
            (&["--h2-window=16"], "--h2-window needs --http2"),
            (
                &["--http2", "--h2-reset-seed=1"],
                "--h2-reset-seed needs --h2-reset",
            ),
            (
                &["--http2", "--h2-goaway-after=0"],
                "'0' must be at least 1",
            ),
            (
                &["--http2", "--h2-reset=0"],
                "must be a probability above 0",
            ),
            (
                &["--http2", "--h2-reset=1.5"],
                "must be a probability above 0",
            ),
            (
                &["--http2", "--h2-window=0"],
                "must be 1 to 2147483647 bytes",
            ),
            (
                &["--http2", "--h2-window=2g"],
                "must be 1 to 2147483647 bytes",
            ),
            (
                &["--http2", "--h2-max-streams=5g"],
                "is more than 4294967295",
            ),
            (
                &["--http2", "--fault=close-mid-head"],
                "--fault close-mid-head has no HTTP/2 form",
            ),
            (
                &["--http2", "--fault=bad-chunk:0.5"],
                "--fault bad-chunk has no HTTP/2 form",
            ),
        ];
        for (argv, want) in cases {
            let err = config(argv).unwrap_err();
            let first = err.lines().next().unwrap_or_default();
            assert!(first.contains(want), "{argv:?}: {err}");
        }
    }

    #[test]
    fn http3_flags_make_settings() {
        use metron_serve::{Pick, H3_MAX_STREAMS};
        let cfg = config(&["--http3", "--tls=untrusted"]).unwrap();
        assert_eq!(cfg.http3, Some(Http3::default()));
        assert_eq!(cfg.http3.unwrap().max_streams, H3_MAX_STREAMS);
        let cfg = config(&[
            "--http3",
            "--http2",
            "--h3-goaway-after=3",
            "--h3-reset=0.25",
            "--h3-reset-seed=7",
            "--h3-reset-code=internal_error",
            "--h3-max-streams=8",
            "--tls=untrusted",
        ])
        .unwrap();
        let p = Probability::new(0.25).unwrap();
        let want = Http3 {
            goaway_after: Some(3),
            reset: Some(Pick::Chance { p, seed: 7 }),
            reset_code: Some(0x102),
            max_streams: 8,
        };
        assert_eq!(cfg.http3, Some(want));
        assert_eq!(cfg.http2, Some(Http2::default()));
        for (code, want) in [
            ("H3_REQUEST_REJECTED", 0x10b),
            ("request_cancelled", 0x10c),
            ("0x21", 0x21),
            ("268", 268),
        ] {
            let arg = format!("--h3-reset-code={code}");
            let cfg = config(&["--http3", "--tls=untrusted", "--h3-reset=1", &arg]).unwrap();
            assert_eq!(cfg.http3.unwrap().reset_code, Some(want), "{code}");
        }
    }

    #[test]
    fn bad_http3_values_are_one_line_reasons() {
        let tls = "--tls=untrusted";
        let cases: &[(&[&str], &str)] = &[
            (&["--http3"], "--http3 needs TLS"),
            (&["--h3-goaway-after=2"], "--h3-goaway-after needs --http3"),
            (&["--h3-reset=0.5"], "--h3-reset needs --http3"),
            (&["--h3-max-streams=8"], "--h3-max-streams needs --http3"),
            (
                &["--http3", tls, "--h3-reset-code=H3_REQUEST_REJECTED"],
                "--h3-reset-code needs --h3-reset",
            ),
            (
                &["--http3", tls, "--h3-reset-seed=1"],
                "--h3-reset-seed needs --h3-reset",
            ),
            (
                &["--http3", tls, "--h3-reset=0.5", "--h3-reset-code=NOPE"],
                "'NOPE' is not an HTTP/3 error code",
            ),
            (
                &["--http3", tls, "--h3-goaway-after=0"],
                "'0' must be at least 1",
            ),
            (
                &["--http3", tls, "--h3-max-streams=0"],
                "'0' must be at least 1",
            ),
            (
                &["--http3", tls, "--h3-max-streams=5g"],
                "is more than 4294967295",
            ),
            (
                &["--http3", tls, "--fault=bad-chunk"],
                "--fault bad-chunk has no HTTP/3 form",
            ),
        ];
        for (argv, want) in cases {
            let err = config(argv).unwrap_err();
            let first = err.lines().next().unwrap_or_default();
            assert!(first.contains(want), "{argv:?}: {err}");
        }
    }

    #[test]
    fn bad_fault_values_are_one_line_reasons() {
        let cases: &[(&[&str], &str)] = &[
            (&["--fault=nope"], "unknown fault 'nope'; expected one of"),
            (
                &["--fault=reset:2"],
                "above 0 and at most 1, e.g. reset:0.2",
            ),
            (
                &["--fault=reset", "--fault-every=0"],
                "'0' must be at least 1",
            ),
            (
                &["--fault=reset", "--fault-per=socket"],
                "invalid value 'socket'",
            ),
            (
                &["--fault=reset:0.5", "--fault-seed=x"],
                "invalid value 'x'",
            ),
            (&["--fault-every=2"], "--fault-every needs --fault"),
            (
                &["--fault=reset:0.5", "--fault-every=2"],
                "both say how often",
            ),
            (
                &["--fault=reset", "--fault-seed=1"],
                "only applies to a probability",
            ),
            (&["--trickle-interval=fast"], "invalid value 'fast'"),
            (&["--tls=valid"], "invalid value 'valid'"),
            (&["--tls-cert=c.pem"], "--tls-cert needs --tls-key FILE"),
            (&["--tls-key=k.pem"], "--tls-key needs --tls-cert FILE"),
            (
                &["--tls=untrusted", "--tls-cert=c.pem", "--tls-key=k.pem"],
                "both choose the certificate",
            ),
            (&["--client-ca=ca.pem"], "--client-ca needs HTTPS"),
        ];
        for (argv, want) in cases {
            let err = config(argv).unwrap_err();
            assert!(err.contains(want), "{argv:?}: {err}");
            let first = err.lines().next().unwrap_or_default();
            assert!(
                first.contains(want),
                "{argv:?}: the reason is on one line: {err}"
            );
        }
    }
}

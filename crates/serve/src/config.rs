//! What the server is asked to do: the plain struct that the command line
//! (`metron serve`'s flags, parsed outside this module) and the tests turn
//! into a running server.
//!
//! Checks that involve more than one flag live in [`StallPlan::from_flags`],
//! [`FaultPlan::from_flags`], [`Http2::from_flags`], [`Http3::from_flags`],
//! [`Sse::from_flags`] and [`Llm::from_flags`],
//! and the ones that also apply to a hand-built [`ServeConfig`] in
//! [`ServeConfig::check`]. Their messages name
//! the flags, which are the server's interface wherever they are parsed.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::capacity::Capacity;
use super::fault::{FaultPlan, Pick, Probability};
use super::plan::StallPlan;

/// The certificate a `--tls` server presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadCert {
    /// Self-signed: no client trusts its issuer.
    Untrusted,
    /// Self-signed and expired: valid only during the year 2000.
    Expired,
}

impl BadCert {
    /// Each certificate as `--tls` names it, with its one-line help.
    pub const CHOICES: [(BadCert, &'static str, &'static str); 2] = [
        (
            BadCert::Untrusted,
            "untrusted",
            "Self-signed: no client trusts its issuer",
        ),
        (
            BadCert::Expired,
            "expired",
            "Self-signed and expired: valid only during the year 2000",
        ),
    ];
}

/// What a server past `--max-connections` does to one more connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Beyond {
    /// Closes it at once, unanswered (a QUIC handshake refused), as nginx
    /// does past its `worker_connections`.
    #[default]
    Close,
    /// Leaves it waiting, never read (a QUIC handshake never answered),
    /// and serves it once a connection closes, as a server that stops
    /// accepting leaves connections in its listen backlog (h2o's
    /// `max-connections`).
    Hold,
}

impl Beyond {
    /// Each behaviour as `--beyond-limit` names it, with its one-line help.
    pub const CHOICES: [(Beyond, &'static str, &'static str); 2] = [
        (
            Beyond::Close,
            "close",
            "close it at once, unanswered, and refuse a QUIC handshake",
        ),
        (
            Beyond::Hold,
            "hold",
            "leave it waiting unread, as a listen backlog does, until a connection closes; leave a QUIC handshake unanswered",
        ),
    ];
}

/// Most worker threads a server may ask for; more is surely a typo.
pub const MAX_THREADS: usize = 1024;
/// Pause between the bytes of a trickled response, unless told otherwise.
pub const TRICKLE_INTERVAL: Duration = Duration::from_millis(100);
/// Wait between a server-sent event stream's head and its first event,
/// unless told otherwise: none, the first event follows the head at once.
pub const SSE_FIRST: Duration = Duration::ZERO;
/// Gap between the events of a server-sent event stream, unless told
/// otherwise.
pub const SSE_GAP: Duration = Duration::from_millis(100);
/// Time from a request's arrival to its first token under `--llm`,
/// unless told otherwise: a small model's time to first token.
pub const LLM_TTFT: Duration = Duration::from_millis(100);
/// Time between the tokens of an `--llm` answer, unless told otherwise.
pub const LLM_TPOT: Duration = Duration::from_millis(10);
/// Tokens in an `--llm` answer whose request names no `max_tokens`,
/// unless told otherwise.
pub const LLM_MAX_TOKENS: u64 = 16;
/// Most tokens one `--llm` answer may hold: a request asking for more is
/// refused (400), as real servers refuse one past their context, and a
/// non-streamed answer's text stays a few megabytes at most.
pub const MAX_LLM_TOKENS: u64 = 1_000_000;
/// Largest HTTP/2 flow-control window (2^31 - 1, RFC 9113 section 6.9.1).
pub const MAX_H2_WINDOW: u32 = (1 << 31) - 1;

/// Request streams a client may have open at once on an HTTP/3
/// connection unless `--h3-max-streams` says otherwise: the common
/// default of QUIC servers, so a client meets what it usually would.
pub const H3_MAX_STREAMS: u32 = 100;
/// Largest QUIC stream count or error code (a variable-length integer:
/// 2^62 - 1, RFC 9000 section 16).
const MAX_VARINT: u64 = (1 << 62) - 1;

/// HTTP/3's error codes by name (RFC 9114 section 8.1), for
/// `--h3-reset-code`.
pub const H3_CODES: [(&str, u64); 17] = [
    ("H3_NO_ERROR", 0x100),
    ("H3_GENERAL_PROTOCOL_ERROR", 0x101),
    ("H3_INTERNAL_ERROR", 0x102),
    ("H3_STREAM_CREATION_ERROR", 0x103),
    ("H3_CLOSED_CRITICAL_STREAM", 0x104),
    ("H3_FRAME_UNEXPECTED", 0x105),
    ("H3_FRAME_ERROR", 0x106),
    ("H3_EXCESSIVE_LOAD", 0x107),
    ("H3_ID_ERROR", 0x108),
    ("H3_SETTINGS_ERROR", 0x109),
    ("H3_MISSING_SETTINGS", 0x10a),
    ("H3_REQUEST_REJECTED", 0x10b),
    ("H3_REQUEST_CANCELLED", 0x10c),
    ("H3_REQUEST_INCOMPLETE", 0x10d),
    ("H3_MESSAGE_ERROR", 0x10e),
    ("H3_CONNECT_ERROR", 0x10f),
    ("H3_VERSION_FALLBACK", 0x110),
];
/// The error code of `--h3-reset`'s resets unless `--h3-reset-code` says
/// otherwise: the request was not processed, and may be sent again.
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
/// The HTTP/3 codes the server closes connections and resets streams with
/// (RFC 9114 section 8.1).
pub(crate) const H3_NO_ERROR: u64 = 0x100;
pub(crate) const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
pub(crate) const H3_INTERNAL_ERROR: u64 = 0x102;
pub(crate) const H3_FRAME_ERROR: u64 = 0x106;

/// An HTTP/3 error code from its name (`H3_REQUEST_REJECTED`, any case,
/// the `H3_` optional) or its number (decimal, or hex after `0x`).
pub fn parse_h3_code(s: &str) -> Result<u64, String> {
    let upper = s.to_ascii_uppercase();
    let named = H3_CODES
        .iter()
        .find(|(name, _)| *name == upper || name.strip_prefix("H3_") == Some(upper.as_str()));
    let number = match upper.strip_prefix("0X") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => upper.parse().ok(),
    };
    match named.map(|(_, code)| *code).or(number) {
        Some(code) if code <= MAX_VARINT => Ok(code),
        _ => Err(format!(
            "'{s}' is not an HTTP/3 error code: give a name such as H3_REQUEST_REJECTED, or a number"
        )),
    }
}

/// Everything a [`super::Server`] needs; tests build it directly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    /// Tokio worker threads (1 to [`MAX_THREADS`]).
    pub threads: usize,
    /// Added before every response, on top of a `/delay/MS` route's delay
    /// (with `capacity`, once the request's service is over).
    pub delay: Duration,
    /// Answer at most this many requests per second, over all connections,
    /// in the order they were read (`--capacity`; see `capacity`).
    pub capacity: Option<Capacity>,
    /// Body length of the default response.
    pub body_size: u64,
    /// Frame the default response with chunked transfer coding.
    pub chunked: bool,
    /// Close after every Nth response on a connection; `Some(0)` is invalid.
    pub close_every: Option<u64>,
    /// Serve at most this many connections at once: one beyond them is
    /// turned away as `beyond_limit` says, as a server past its connection
    /// limit does; `Some(0)` is invalid.
    pub max_connections: Option<u64>,
    /// What a connection beyond `max_connections` meets.
    pub beyond_limit: Beyond,
    pub stall: Option<StallPlan>,
    /// Faults injected in place of responses.
    pub fault: Option<FaultPlan>,
    /// Pause between the bytes of a trickled response.
    pub trickle_interval: Duration,
    /// Serve over TLS with this (rejectable) generated certificate.
    pub tls: Option<BadCert>,
    /// Serve over TLS with the certificate chain in this PEM file...
    pub tls_cert: Option<PathBuf>,
    /// ...and its private key, in this one.
    pub tls_key: Option<PathBuf>,
    /// Require client certificates issued by an authority in this PEM file.
    pub client_ca: Option<PathBuf>,
    /// Serve HTTP/2 (`--http2`), with these HTTP/2 faults and settings.
    pub http2: Option<Http2>,
    /// Serve HTTP/3 too (`--http3`), on UDP at the TCP listener's port
    /// number, with these HTTP/3 faults and settings; needs TLS.
    pub http3: Option<Http3>,
    /// Answer with a stream of server-sent events (`--sse`).
    pub sse: Option<Sse>,
    /// Serve an OpenAI-compatible stand-in model under `/v1/` (`--llm`).
    pub llm: Option<Llm>,
    /// Serve WebSocket at `/ws/echo` and `/ws/push` (`--ws`): HTTP/1.1
    /// upgrades, plain or over TLS.
    pub ws: bool,
    /// Inspection: with `record > 0` the server keeps the first `record`
    /// requests in full and counts requests per path. Both take a lock per
    /// request, so benchmarks leave it at 0.
    pub record: usize,
}

impl Default for ServeConfig {
    /// The flag defaults, except that the port is chosen by the OS: what a
    /// test wants, and never in the way of a server already on 8080.
    fn default() -> Self {
        ServeConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            threads: 1,
            delay: Duration::ZERO,
            capacity: None,
            body_size: 0,
            chunked: false,
            close_every: None,
            max_connections: None,
            beyond_limit: Beyond::Close,
            stall: None,
            fault: None,
            trickle_interval: TRICKLE_INTERVAL,
            tls: None,
            tls_cert: None,
            tls_key: None,
            client_ca: None,
            http2: None,
            http3: None,
            sse: None,
            llm: None,
            ws: false,
            record: 0,
        }
    }
}

/// What `--http2` and the `--h2-*` flags ask of HTTP/2 connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Http2 {
    /// GOAWAY after this many streams on a connection, naming the last of
    /// them as the last one processed (`--h2-goaway-after`).
    pub goaway_after: Option<u64>,
    /// Reset (RST_STREAM) the streams this picks instead of answering them
    /// (`--h2-reset`), counted server-wide.
    pub reset: Option<Pick>,
    /// The resets' error code (`--h2-reset-code`; INTERNAL_ERROR when
    /// unset). REFUSED_STREAM resets at once, before the request is served:
    /// the stream was never processed, and a client may send it again.
    pub reset_code: Option<u32>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS (`--h2-max-streams`).
    pub max_streams: Option<u32>,
    /// Initial flow-control window of every stream and of the connection,
    /// for what clients send (`--h2-window`).
    pub window: Option<u32>,
}

impl Http2 {
    /// What `--http2` and the `--h2-*` flags describe; the `--h2-*` flags
    /// need `--http2`.
    pub fn from_flags(
        http2: bool,
        goaway_after: Option<u64>,
        reset: Option<Probability>,
        reset_seed: Option<u64>,
        reset_code: Option<u32>,
        max_streams: Option<u32>,
        window: Option<u32>,
    ) -> Result<Option<Http2>, String> {
        for (given, flag) in [
            (reset_seed.is_some(), "--h2-reset-seed"),
            (reset_code.is_some(), "--h2-reset-code"),
        ] {
            if given && reset.is_none() {
                return Err(format!(
                    "{flag} needs --h2-reset P (the share of streams to reset)"
                ));
            }
        }
        let given = [
            (goaway_after.is_some(), "--h2-goaway-after"),
            (reset.is_some(), "--h2-reset"),
            (max_streams.is_some(), "--h2-max-streams"),
            (window.is_some(), "--h2-window"),
        ];
        if !http2 {
            return match given.iter().find(|(given, _)| *given) {
                Some((_, flag)) => Err(format!("{flag} needs --http2 (it is an HTTP/2 setting)")),
                None => Ok(None),
            };
        }
        let reset = reset.map(|p| Pick::Chance {
            p,
            seed: reset_seed.unwrap_or(0),
        });
        Ok(Some(Http2 {
            goaway_after,
            reset,
            reset_code,
            max_streams,
            window,
        }))
    }

    /// Rejects values a hand-built config may hold but the flags cannot.
    fn check(&self) -> Result<(), String> {
        if self.goaway_after == Some(0) {
            return Err("--h2-goaway-after must be at least 1".into());
        }
        if self.reset == Some(Pick::Every(0)) {
            return Err("--h2-reset must pick some streams".into());
        }
        match self.window {
            Some(w) if w == 0 || w > MAX_H2_WINDOW => Err(format!(
                "--h2-window must be 1 to {MAX_H2_WINDOW} bytes, not {w}"
            )),
            _ => Ok(()),
        }
    }
}

/// What `--http3` and the `--h3-*` flags ask of HTTP/3 connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Http3 {
    /// GOAWAY after this many request streams on a connection: those are
    /// answered, later ones refused, then the connection closes
    /// (`--h3-goaway-after`).
    pub goaway_after: Option<u64>,
    /// Reset the request streams this picks instead of answering them
    /// (`--h3-reset`), counted server-wide.
    pub reset: Option<Pick>,
    /// The resets' error code (`--h3-reset-code`; [`H3_REQUEST_REJECTED`]
    /// when unset). H3_REQUEST_REJECTED resets at once, before the request
    /// is served: the request was never processed.
    pub reset_code: Option<u64>,
    /// The QUIC limit on request streams open at once on a connection
    /// (`--h3-max-streams`).
    pub max_streams: u32,
}

impl Default for Http3 {
    fn default() -> Self {
        Http3 {
            goaway_after: None,
            reset: None,
            reset_code: None,
            max_streams: H3_MAX_STREAMS,
        }
    }
}

impl Http3 {
    /// What `--http3` and the `--h3-*` flags describe; the `--h3-*` flags
    /// need `--http3`.
    pub fn from_flags(
        http3: bool,
        goaway_after: Option<u64>,
        reset: Option<Probability>,
        reset_seed: Option<u64>,
        reset_code: Option<u64>,
        max_streams: Option<u32>,
    ) -> Result<Option<Http3>, String> {
        for (given, flag) in [
            (reset_seed.is_some(), "--h3-reset-seed"),
            (reset_code.is_some(), "--h3-reset-code"),
        ] {
            if given && reset.is_none() {
                return Err(format!(
                    "{flag} needs --h3-reset P (the share of streams to reset)"
                ));
            }
        }
        let given = [
            (goaway_after.is_some(), "--h3-goaway-after"),
            (reset.is_some(), "--h3-reset"),
            (max_streams.is_some(), "--h3-max-streams"),
        ];
        if !http3 {
            return match given.iter().find(|(given, _)| *given) {
                Some((_, flag)) => Err(format!("{flag} needs --http3 (it is an HTTP/3 setting)")),
                None => Ok(None),
            };
        }
        let reset = reset.map(|p| Pick::Chance {
            p,
            seed: reset_seed.unwrap_or(0),
        });
        Ok(Some(Http3 {
            goaway_after,
            reset,
            reset_code,
            max_streams: max_streams.unwrap_or(H3_MAX_STREAMS),
        }))
    }

    /// The error code of the resets `--h3-reset` makes.
    pub(crate) fn reset_code(&self) -> u64 {
        self.reset_code.unwrap_or(H3_REQUEST_REJECTED)
    }

    /// Rejects values a hand-built config may hold but the flags cannot.
    fn check(&self) -> Result<(), String> {
        if self.goaway_after == Some(0) {
            return Err("--h3-goaway-after must be at least 1".into());
        }
        if self.reset == Some(Pick::Every(0)) {
            return Err("--h3-reset must pick some streams".into());
        }
        if self.max_streams == 0 {
            return Err(
                "--h3-max-streams must be at least 1: a client cannot send a request on no stream"
                    .into(),
            );
        }
        match self.reset_code {
            Some(code) if code > MAX_VARINT => Err(format!(
                "--h3-reset-code must be at most {MAX_VARINT}, not {code}"
            )),
            _ => Ok(()),
        }
    }
}

/// What `--sse`, `--sse-first` and `--sse-gap` ask of the successful
/// responses: a `text/event-stream` body of `events` events in place of the
/// default body. The head goes out when a plain response's would, the
/// first event `first` after it, then one every `gap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sse {
    /// Events in each response, the last of them `data: [DONE]`; at
    /// least 1.
    pub events: u64,
    /// From the head to the first event.
    pub first: Duration,
    /// Between consecutive events, each due `gap` after the one before was
    /// due (not after it was written), so the gaps do not drift.
    pub gap: Duration,
}

impl Sse {
    /// What `--sse` (0 is off), `--sse-first` and `--sse-gap` describe;
    /// the timings need events to time.
    pub fn from_flags(
        events: u64,
        first: Option<Duration>,
        gap: Option<Duration>,
    ) -> Result<Option<Sse>, String> {
        if events == 0 {
            let given = [(first, "--sse-first"), (gap, "--sse-gap")];
            return match given.iter().find(|(given, _)| given.is_some()) {
                Some((_, flag)) => Err(format!(
                    "{flag} needs --sse N (how many events each response sends)"
                )),
                None => Ok(None),
            };
        }
        Ok(Some(Sse {
            events,
            first: first.unwrap_or(SSE_FIRST),
            gap: gap.unwrap_or(SSE_GAP),
        }))
    }
}

/// What `--llm` and the `--llm-*` flags ask of the stand-in model: when
/// each token of an answer is due, and how many tokens an answer holds
/// when its request does not say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Llm {
    /// From the request's arrival (once `--delay` or `--capacity` let its
    /// answer begin) to its first token (`--llm-ttft`).
    pub ttft: Duration,
    /// Between consecutive tokens, each due `tpot` after the one before
    /// was due (not after it was written), so the gaps do not drift
    /// (`--llm-tpot`).
    pub tpot: Duration,
    /// Tokens in an answer whose request names no `max_tokens` (nor
    /// `max_completion_tokens`); at most [`MAX_LLM_TOKENS`]
    /// (`--llm-max-tokens`).
    pub max_tokens: u64,
}

impl Default for Llm {
    /// The flag defaults.
    fn default() -> Self {
        Llm {
            ttft: LLM_TTFT,
            tpot: LLM_TPOT,
            max_tokens: LLM_MAX_TOKENS,
        }
    }
}

impl Llm {
    /// What `--llm` and the `--llm-*` flags describe; the `--llm-*` flags
    /// need `--llm`.
    pub fn from_flags(
        llm: bool,
        ttft: Option<Duration>,
        tpot: Option<Duration>,
        max_tokens: Option<u64>,
    ) -> Result<Option<Llm>, String> {
        if !llm {
            let given = [
                (ttft.is_some(), "--llm-ttft"),
                (tpot.is_some(), "--llm-tpot"),
                (max_tokens.is_some(), "--llm-max-tokens"),
            ];
            return match given.iter().find(|(given, _)| *given) {
                Some((_, flag)) => Err(format!(
                    "{flag} needs --llm (the stand-in model server it sets up)"
                )),
                None => Ok(None),
            };
        }
        let defaults = Llm::default();
        let llm = Llm {
            ttft: ttft.unwrap_or(defaults.ttft),
            tpot: tpot.unwrap_or(defaults.tpot),
            max_tokens: max_tokens.unwrap_or(defaults.max_tokens),
        };
        llm.check()?;
        Ok(Some(llm))
    }

    /// Rejects values a hand-built config may hold but the flags cannot.
    fn check(&self) -> Result<(), String> {
        if self.max_tokens > MAX_LLM_TOKENS {
            return Err(format!(
                "--llm-max-tokens must be at most {MAX_LLM_TOKENS}, not {}",
                self.max_tokens
            ));
        }
        Ok(())
    }
}

impl ServeConfig {
    /// Rejects values a hand-built config may hold but the flags cannot.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return Err(format!("--threads must be 1 to {MAX_THREADS}"));
        }
        if self.close_every == Some(0) {
            return Err("--close-every must be at least 1".to_string());
        }
        if self.max_connections == Some(0) {
            return Err("--max-connections must be at least 1".to_string());
        }
        if self.sse.is_some_and(|sse| sse.events == 0) {
            return Err("--sse must be at least 1 (or left out)".to_string());
        }
        self.check_llm()?;
        self.check_ws()?;
        self.check_tls()?;
        if let Some(plan) = &self.fault {
            plan.check()?;
        }
        self.check_http2()?;
        self.check_http3()
    }

    /// The stand-in model's settings make sense, and nothing else claims
    /// the streamed bodies it sends.
    fn check_llm(&self) -> Result<(), String> {
        let Some(llm) = &self.llm else {
            return Ok(());
        };
        if self.sse.is_some() {
            return Err(
                "--llm and --sse both stream events in answers; drop --sse (--llm streams tokens on its own routes)"
                    .into(),
            );
        }
        llm.check()
    }

    /// WebSocket's upgrade is HTTP/1.1's: a server that speaks HTTP/2 on
    /// its TCP connections never sees one.
    fn check_ws(&self) -> Result<(), String> {
        if self.ws && self.http2.is_some() {
            return Err(
                "--ws upgrades HTTP/1.1 connections and --http2 serves HTTP/2 on them (WebSocket over HTTP/2 is not served); drop --http2"
                    .into(),
            );
        }
        Ok(())
    }

    /// HTTP/3 has TLS to run on, its settings make sense, and so does the
    /// fault over HTTP/3.
    fn check_http3(&self) -> Result<(), String> {
        let Some(http3) = &self.http3 else {
            return Ok(());
        };
        if self.tls.is_none() && self.tls_cert.is_none() {
            return Err(
                "--http3 needs TLS (QUIC is always encrypted): add --tls untrusted, or --tls-cert FILE --tls-key FILE"
                    .into(),
            );
        }
        http3.check()?;
        let fault = self.fault.map(|plan| plan.fault);
        match fault.and_then(|f| f.no_http3_form().map(|why| (f, why))) {
            Some((fault, why)) => Err(format!(
                "--fault {fault} has no HTTP/3 form ({why}); pick another fault or drop --http3"
            )),
            None => Ok(()),
        }
    }

    /// The HTTP/2 settings make sense, and so does the fault over HTTP/2.
    fn check_http2(&self) -> Result<(), String> {
        let Some(http2) = &self.http2 else {
            return Ok(());
        };
        http2.check()?;
        let fault = self.fault.map(|plan| plan.fault);
        match fault.and_then(|f| f.no_http2_form().map(|why| (f, why))) {
            Some((fault, why)) => Err(format!(
                "--fault {fault} has no HTTP/2 form ({why}); pick another fault or drop --http2"
            )),
            None => Ok(()),
        }
    }

    /// The TLS options make one certificate, and a client CA needs TLS.
    fn check_tls(&self) -> Result<(), String> {
        match (&self.tls, &self.tls_cert, &self.tls_key) {
            (_, Some(_), None) => Err("--tls-cert needs --tls-key FILE, its private key".into()),
            (_, None, Some(_)) => {
                Err("--tls-key needs --tls-cert FILE, the certificate it belongs to".into())
            }
            (Some(_), Some(_), _) => {
                Err("--tls and --tls-cert both choose the certificate; drop one of them".into())
            }
            (None, None, _) if self.client_ca.is_some() => {
                Err("--client-ca needs HTTPS: add --tls-cert FILE --tls-key FILE (or --tls)".into())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FaultPlan;

    #[test]
    fn hand_built_configs_are_checked_too() {
        let zero_threads = ServeConfig {
            threads: 0,
            ..ServeConfig::default()
        };
        assert!(zero_threads.check().is_err());
        let never = ServeConfig {
            close_every: Some(0),
            ..ServeConfig::default()
        };
        assert!(never.check().is_err());
        let never_faulty = ServeConfig {
            fault: Some(FaultPlan::every(crate::Fault::Reset, 0)),
            ..ServeConfig::default()
        };
        assert!(never_faulty.check().is_err());
        let no_events = ServeConfig {
            sse: Some(Sse {
                events: 0,
                first: SSE_FIRST,
                gap: SSE_GAP,
            }),
            ..ServeConfig::default()
        };
        assert!(no_events.check().is_err());
        assert_eq!(ServeConfig::default().check(), Ok(()));
    }

    #[test]
    fn http2_settings_are_checked() {
        let with = |http2: Http2| ServeConfig {
            http2: Some(http2),
            ..ServeConfig::default()
        };
        assert_eq!(with(Http2::default()).check(), Ok(()));
        let cases = [
            (
                Http2 {
                    goaway_after: Some(0),
                    ..Http2::default()
                },
                "--h2-goaway-after must be at least 1",
            ),
            (
                Http2 {
                    window: Some(0),
                    ..Http2::default()
                },
                "--h2-window must be 1 to 2147483647 bytes, not 0",
            ),
            (
                Http2 {
                    window: Some(MAX_H2_WINDOW + 1),
                    ..Http2::default()
                },
                "--h2-window must be 1 to",
            ),
        ];
        for (http2, want) in cases {
            let err = with(http2).check().unwrap_err();
            assert!(err.contains(want), "{err}");
        }
        let cut = ServeConfig {
            fault: Some(FaultPlan::every(crate::Fault::CloseMidHead, 1)),
            ..with(Http2::default())
        };
        let err = cut.check().unwrap_err();
        assert!(
            err.starts_with("--fault close-mid-head has no HTTP/2 form"),
            "{err}"
        );
        let reset = ServeConfig {
            fault: Some(FaultPlan::every(crate::Fault::Reset, 1)),
            ..with(Http2::default())
        };
        assert_eq!(reset.check(), Ok(()));
    }

    #[test]
    fn h2_flags_need_http2() {
        let p = Probability::new(0.5).unwrap();
        assert_eq!(
            Http2::from_flags(false, None, None, None, None, None, None),
            Ok(None)
        );
        let cases = [
            (
                Http2::from_flags(false, Some(3), None, None, None, None, None),
                "--h2-goaway-after needs --http2",
            ),
            (
                Http2::from_flags(false, None, Some(p), None, None, None, None),
                "--h2-reset needs --http2",
            ),
            (
                Http2::from_flags(false, None, None, None, None, Some(4), None),
                "--h2-max-streams needs --http2",
            ),
            (
                Http2::from_flags(false, None, None, None, None, None, Some(16)),
                "--h2-window needs --http2",
            ),
            (
                Http2::from_flags(true, None, None, Some(1), None, None, None),
                "--h2-reset-seed needs --h2-reset",
            ),
            (
                Http2::from_flags(true, None, None, None, Some(7), None, None),
                "--h2-reset-code needs --h2-reset",
            ),
        ];
        for (result, want) in cases {
            let err = result.unwrap_err();
            assert!(err.contains(want), "{err}");
        }
        let all =
            Http2::from_flags(true, Some(3), Some(p), Some(9), Some(7), Some(4), Some(16)).unwrap();
        let want = Http2 {
            goaway_after: Some(3),
            reset: Some(Pick::Chance { p, seed: 9 }),
            reset_code: Some(7),
            max_streams: Some(4),
            window: Some(16),
        };
        assert_eq!(all, Some(want));
    }

    #[test]
    fn http3_needs_tls_and_sane_settings() {
        let tls = |http3: Http3| ServeConfig {
            http3: Some(http3),
            tls: Some(BadCert::Untrusted),
            ..ServeConfig::default()
        };
        assert_eq!(tls(Http3::default()).check(), Ok(()));
        let bare = ServeConfig {
            tls: None,
            ..tls(Http3::default())
        };
        let err = bare.check().unwrap_err();
        assert!(err.starts_with("--http3 needs TLS"), "{err}");
        let cases = [
            (
                Http3 {
                    goaway_after: Some(0),
                    ..Http3::default()
                },
                "--h3-goaway-after must be at least 1",
            ),
            (
                Http3 {
                    max_streams: 0,
                    ..Http3::default()
                },
                "--h3-max-streams must be at least 1",
            ),
            (
                Http3 {
                    reset_code: Some(1 << 62),
                    ..Http3::default()
                },
                "--h3-reset-code must be at most",
            ),
        ];
        for (http3, want) in cases {
            let err = tls(http3).check().unwrap_err();
            assert!(err.starts_with(want), "{err}");
        }
        let chunky = ServeConfig {
            fault: Some(FaultPlan::every(crate::Fault::BadChunk, 1)),
            ..tls(Http3::default())
        };
        let err = chunky.check().unwrap_err();
        assert!(
            err.starts_with("--fault bad-chunk has no HTTP/3 form"),
            "{err}"
        );
    }

    #[test]
    fn h3_flags_need_http3() {
        let p = Probability::new(0.5).unwrap();
        assert_eq!(
            Http3::from_flags(false, None, None, None, None, None),
            Ok(None)
        );
        let cases = [
            (
                Http3::from_flags(false, Some(3), None, None, None, None),
                "--h3-goaway-after needs --http3",
            ),
            (
                Http3::from_flags(false, None, Some(p), None, None, None),
                "--h3-reset needs --http3",
            ),
            (
                Http3::from_flags(false, None, None, None, None, Some(4)),
                "--h3-max-streams needs --http3",
            ),
            (
                Http3::from_flags(true, None, None, Some(1), None, None),
                "--h3-reset-seed needs --h3-reset",
            ),
            (
                Http3::from_flags(true, None, None, None, Some(0x10c), None),
                "--h3-reset-code needs --h3-reset",
            ),
        ];
        for (result, want) in cases {
            let err = result.unwrap_err();
            assert!(err.starts_with(want), "{err}");
        }
        let all = Http3::from_flags(true, Some(3), Some(p), Some(9), Some(0x10c), Some(4));
        let want = Http3 {
            goaway_after: Some(3),
            reset: Some(Pick::Chance { p, seed: 9 }),
            reset_code: Some(0x10c),
            max_streams: 4,
        };
        assert_eq!(all, Ok(Some(want)));
        let default = Http3::from_flags(true, None, None, None, None, None).unwrap();
        assert_eq!(default.map(|h3| h3.max_streams), Some(H3_MAX_STREAMS));
    }

    #[test]
    fn h3_codes_parse_by_name_or_number() {
        assert_eq!(
            parse_h3_code("H3_REQUEST_REJECTED"),
            Ok(H3_REQUEST_REJECTED)
        );
        assert_eq!(parse_h3_code("request_rejected"), Ok(0x10b));
        assert_eq!(parse_h3_code("h3_no_error"), Ok(0x100));
        assert_eq!(parse_h3_code("0x10E"), Ok(0x10e));
        assert_eq!(parse_h3_code("33"), Ok(33));
        for bad in ["", "NOPE", "H3_", "-1", "0x", "4611686018427387904"] {
            let err = parse_h3_code(bad).unwrap_err();
            assert!(err.contains("is not an HTTP/3 error code"), "{bad}: {err}");
        }
        // The table holds RFC 9114's codes, each once.
        for (i, (name, code)) in H3_CODES.iter().enumerate() {
            assert_eq!(*code, 0x100 + i as u64, "{name}");
            assert_eq!(parse_h3_code(name), Ok(*code));
        }
    }

    #[test]
    fn llm_flags_make_a_model_or_say_what_is_missing() {
        let ms = Duration::from_millis;
        assert_eq!(Llm::from_flags(false, None, None, None), Ok(None));
        assert_eq!(
            Llm::from_flags(true, None, None, None),
            Ok(Some(Llm::default()))
        );
        assert_eq!(
            Llm::default(),
            Llm {
                ttft: LLM_TTFT,
                tpot: LLM_TPOT,
                max_tokens: LLM_MAX_TOKENS
            }
        );
        let all = Llm::from_flags(true, Some(ms(5)), Some(ms(1)), Some(0));
        let want = Llm {
            ttft: ms(5),
            tpot: ms(1),
            max_tokens: 0,
        };
        assert_eq!(all, Ok(Some(want)));
        for (ttft, tpot, max, flag) in [
            (Some(ms(5)), None, None, "--llm-ttft"),
            (None, Some(ms(5)), None, "--llm-tpot"),
            (None, None, Some(3), "--llm-max-tokens"),
        ] {
            let err = Llm::from_flags(false, ttft, tpot, max).unwrap_err();
            let want = format!("{flag} needs --llm (the stand-in model server it sets up)");
            assert_eq!(err, want);
        }
        let over = Llm::from_flags(true, None, None, Some(MAX_LLM_TOKENS + 1));
        assert!(over
            .unwrap_err()
            .starts_with("--llm-max-tokens must be at most"));
    }

    #[test]
    fn llm_is_checked_in_a_hand_built_config_too() {
        let with = |llm: Llm, sse: Option<Sse>| ServeConfig {
            llm: Some(llm),
            sse,
            ..ServeConfig::default()
        };
        assert_eq!(with(Llm::default(), None).check(), Ok(()));
        let many = Llm {
            max_tokens: MAX_LLM_TOKENS + 1,
            ..Llm::default()
        };
        assert!(with(many, None).check().is_err());
        let sse = Sse {
            events: 2,
            first: SSE_FIRST,
            gap: SSE_GAP,
        };
        let err = with(Llm::default(), Some(sse)).check().unwrap_err();
        assert!(err.starts_with("--llm and --sse both"), "{err}");
    }

    #[test]
    fn sse_flags_make_a_stream_or_say_what_is_missing() {
        let ms = Duration::from_millis;
        assert_eq!(Sse::from_flags(0, None, None), Ok(None));
        let want = |first, gap| {
            Ok(Some(Sse {
                events: 3,
                first,
                gap,
            }))
        };
        assert_eq!(Sse::from_flags(3, None, None), want(SSE_FIRST, SSE_GAP));
        assert_eq!(
            Sse::from_flags(3, Some(ms(20)), None),
            want(ms(20), SSE_GAP)
        );
        assert_eq!(
            Sse::from_flags(3, None, Some(ms(50))),
            want(SSE_FIRST, ms(50))
        );
        let both = Sse::from_flags(3, Some(ms(20)), Some(ms(50)));
        assert_eq!(both, want(ms(20), ms(50)));
        for (first, gap, flag) in [
            (Some(ms(20)), None, "--sse-first"),
            (None, Some(ms(50)), "--sse-gap"),
            (Some(ms(20)), Some(ms(50)), "--sse-first"),
        ] {
            let err = Sse::from_flags(0, first, gap).unwrap_err();
            let want = format!("{flag} needs --sse N (how many events each response sends)");
            assert_eq!(err, want);
        }
    }
}

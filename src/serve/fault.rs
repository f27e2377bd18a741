//! Faults: the ways a failing server answers, which responses get them, and
//! the exact bytes each one writes.
//!
//! A load generator is pointed at servers that break, so the built-in
//! target can break on purpose: close before or in the middle of a
//! response, reset, go silent, send garbage, a malformed status line, a bad
//! chunk size, a body shorter than its length, a head too large to accept,
//! or a valid response one byte at a time. [`Fault`] names the behaviour,
//! [`FaultPlan`] says which responses (or connections) get it, and
//! [`FaultBytes`] writes what goes on the wire before the fault's ending
//! ([`After`]): keep going, close, reset, or hold the connection silently.
//!
//! Which responses are picked is a pure function of their position, so a
//! run can be repeated exactly: every Nth one, or the kth one with
//! probability p by the kth output of a SplitMix64 sequence from a seed.
//! No lock and no shared RNG state: just one counter per server.

use std::sync::OnceLock;

use super::reply::{Body, Encoder, Response};

/// What a faulty answer does instead of a good response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Reads the request, then closes without writing a byte.
    CloseBeforeHead,
    /// Writes the first half of the response head, then closes.
    CloseMidHead,
    /// Writes the head and the first half of the body, then closes. (A
    /// response without a body, to HEAD or a 204, is cut mid-head.)
    CloseMidBody,
    /// Resets the connection (RST, through `SO_LINGER` 0), no byte written.
    Reset,
    /// Never answers: holds the connection open and silent until the
    /// client gives up (every later request on it is ignored too).
    NeverAnswer,
    /// Writes bytes that are not HTTP at all, then closes.
    Garbage,
    /// Writes a valid response whose head is over 1 MiB, then closes.
    HugeHead,
    /// Writes a response whose status line is malformed, then closes.
    BadStatusLine,
    /// Writes a chunked response with a chunk size that is not hex, then
    /// closes.
    BadChunk,
    /// Writes one body byte fewer than its Content-Length says, then
    /// closes. (A response without a body loses the last byte of its head.)
    ShortBody,
    /// Writes the good response one byte at a time, with a pause
    /// (`--trickle-interval`) between bytes.
    Trickle,
}

/// Every fault with its name on the command line and in `/fault/NAME`.
const NAMES: [(Fault, &str); 11] = [
    (Fault::CloseBeforeHead, "close-before-head"),
    (Fault::CloseMidHead, "close-mid-head"),
    (Fault::CloseMidBody, "close-mid-body"),
    (Fault::Reset, "reset"),
    (Fault::NeverAnswer, "never-answer"),
    (Fault::Garbage, "garbage"),
    (Fault::HugeHead, "huge-head"),
    (Fault::BadStatusLine, "bad-status-line"),
    (Fault::BadChunk, "bad-chunk"),
    (Fault::ShortBody, "short-body"),
    (Fault::Trickle, "trickle"),
];

impl Fault {
    /// Every fault, in the order `--help` lists them.
    pub fn all() -> impl Iterator<Item = Fault> {
        NAMES.iter().map(|(f, _)| *f)
    }

    /// The fault called `name`, as written after `--fault` or `/fault/`.
    pub fn from_name(name: &str) -> Option<Fault> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(f, _)| *f)
    }

    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(f, _)| *f == self)
            .map_or("", |(_, n)| n)
    }

    /// What happens to the connection once the fault's bytes are written.
    pub(crate) fn after(self, base: &Response) -> After {
        match self {
            Fault::Reset => After::Reset,
            Fault::NeverAnswer => After::Hold,
            Fault::Trickle if !base.closes() => After::KeepOpen,
            _ => After::Close,
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a connection goes on after a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// The fault was a valid (if slow) response: serve the next request.
    KeepOpen,
    /// Close politely: FIN, then read on for a moment.
    Close,
    /// Close with a reset.
    Reset,
    /// Write nothing more and read until the client closes.
    Hold,
}

/// A probability above 0 and at most 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probability(f64);

// Never NaN: `new` refuses it.
impl Eq for Probability {}

impl Probability {
    pub fn new(p: f64) -> Result<Probability, String> {
        if p > 0.0 && p <= 1.0 {
            Ok(Probability(p))
        } else {
            Err(format!(
                "a probability must be above 0 and at most 1, not {p}"
            ))
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

/// Which of the responses (or connections) get the fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The Nth, 2Nth, 3Nth, … (`Every(1)` is every one).
    Every(u64),
    /// Each one independently with probability `p`, drawn from a sequence
    /// seeded with `seed`, so the same seed picks the same positions.
    Chance { p: Probability, seed: u64 },
}

/// What a [`FaultPlan`] counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Per {
    /// Responses, server-wide: each picked response is faulty.
    #[default]
    Response,
    /// Accepted connections: every response on a picked connection is
    /// faulty.
    Connection,
}

/// Which fault, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultPlan {
    pub fault: Fault,
    pub pick: Pick,
    pub per: Per,
}

impl FaultPlan {
    /// `fault` on every `n`th response.
    pub fn every(fault: Fault, n: u64) -> FaultPlan {
        FaultPlan {
            fault,
            pick: Pick::Every(n),
            per: Per::Response,
        }
    }

    /// `fault` on each response with probability `p`.
    pub fn chance(fault: Fault, p: Probability, seed: u64) -> FaultPlan {
        FaultPlan {
            fault,
            pick: Pick::Chance { p, seed },
            per: Per::Response,
        }
    }

    /// The same plan counting connections instead of responses.
    pub fn per_connection(self) -> FaultPlan {
        FaultPlan {
            per: Per::Connection,
            ..self
        }
    }

    /// Whether the `k`th response or connection (from 1) gets the fault.
    pub fn picks(&self, k: u64) -> bool {
        match self.pick {
            Pick::Every(n) => n > 0 && k % n == 0,
            Pick::Chance { p, seed } => unit_draw(seed, k) < p.get(),
        }
    }

    /// The plan the `--fault*` flags describe, if any.
    pub fn from_flags(
        spec: Option<FaultSpec>,
        every: Option<u64>,
        per: Option<Per>,
        seed: Option<u64>,
    ) -> Result<Option<FaultPlan>, String> {
        let Some(spec) = spec else {
            let without = [
                (every.is_some(), "--fault-every"),
                (per.is_some(), "--fault-per"),
                (seed.is_some(), "--fault-seed"),
            ];
            return match without.iter().find(|(given, _)| *given) {
                Some((_, flag)) => Err(format!("{flag} needs --fault (which fault to inject)")),
                None => Ok(None),
            };
        };
        let pick = match (spec.chance, every, seed) {
            (Some(_), Some(_), _) => {
                return Err(format!(
                    "--fault {spec} and --fault-every both say how often; give one of them"
                ))
            }
            (None, _, Some(_)) => {
                return Err("--fault-seed only applies to a probability, \
                            as in --fault reset:0.2"
                    .to_string())
            }
            (Some(p), None, seed) => Pick::Chance {
                p,
                seed: seed.unwrap_or(0),
            },
            (None, every, None) => Pick::Every(every.unwrap_or(1)),
        };
        Ok(Some(FaultPlan {
            fault: spec.fault,
            pick,
            per: per.unwrap_or_default(),
        }))
    }

    /// Rejects what a hand-built plan may hold but the flags cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.pick == Pick::Every(0) {
            return Err("--fault-every must be at least 1".to_string());
        }
        Ok(())
    }
}

/// The value of `--fault`: `NAME` or `NAME:P`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    pub fault: Fault,
    pub chance: Option<Probability>,
}

impl std::fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.chance {
            Some(p) => write!(f, "{}:{}", self.fault, p.get()),
            None => write!(f, "{}", self.fault),
        }
    }
}

/// Parses `--fault NAME[:P]`.
pub fn parse_fault(s: &str) -> Result<FaultSpec, String> {
    let (name, chance) = match s.split_once(':') {
        Some((name, p)) => (name, Some(p)),
        None => (s, None),
    };
    let Some(fault) = Fault::from_name(name) else {
        let names: Vec<_> = NAMES.iter().map(|(_, n)| *n).collect();
        return Err(format!(
            "unknown fault '{name}'; expected one of {}",
            names.join(", ")
        ));
    };
    let chance = match chance {
        None => None,
        Some(p) => Some(
            parse_probability(p)
                .map_err(|why| format!("in '{s}', the part after ':' {why}, e.g. {name}:0.2"))?,
        ),
    };
    Ok(FaultSpec { fault, chance })
}

fn parse_probability(s: &str) -> Result<Probability, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 1.0 => Probability::new(p),
        _ => Err("must be a probability above 0 and at most 1".to_string()),
    }
}

/// The `k`th draw of the SplitMix64 sequence seeded with `seed`, as a
/// number in [0, 1). SplitMix64's state after k steps is `seed + k·γ`, so
/// any draw is computed directly from its position.
fn unit_draw(seed: u64, k: u64) -> f64 {
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut z = seed.wrapping_add(k.wrapping_mul(GAMMA));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // The top 53 bits fill an f64's mantissa exactly.
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// What `garbage` writes: binary and text that no HTTP parser accepts.
pub(crate) const GARBAGE: &[u8] = b"\x00\x17\xfe\xff not HTTP \x01\x02\x03\r\n\r\n";
/// What `bad-status-line` writes: the code has letters O, not zeros.
pub(crate) const BAD_STATUS_LINE: &[u8] = b"HTTP/1.1 2OO OK\r\n\
    Content-Type: text/plain\r\nContent-Length: 0\r\n\r\n";
/// What `bad-chunk` writes: a chunk size of `zz`.
pub(crate) const BAD_CHUNK: &[u8] = b"HTTP/1.1 200 OK\r\n\
    Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n\
    zz\r\nxx\r\n0\r\n\r\n";
/// Padding fields of the `huge-head` response: so many, of so many bytes
/// each (`X-Pad: ` and CRLF included), 1 MiB in all. Few and long, so
/// that a client allowing a large head (`--max-head 2m`) can accept it.
const HUGE_FIELDS: usize = 16;
const HUGE_FIELD_LEN: usize = 64 * 1024;
/// The smallest body a body fault works on, so that it has a middle.
const MIN_FAULT_BODY: u64 = 2;

/// The `huge-head` response: a valid 200 with an empty body and a head
/// over 1 MiB, built once.
pub(crate) fn huge_head() -> &'static [u8] {
    static BYTES: OnceLock<Box<[u8]>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n".to_vec();
        for _ in 0..HUGE_FIELDS {
            out.extend_from_slice(b"X-Pad: ");
            out.resize(out.len() + HUGE_FIELD_LEN - 9, b'p');
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"Content-Length: 0\r\nConnection: close\r\n\r\n");
        out.into_boxed_slice()
    })
}

/// The bytes a fault writes, a bounded amount at a time like an
/// [`Encoder`], so that a cut-off body of any length streams through the
/// connection's output buffer.
#[derive(Debug)]
pub(crate) enum FaultBytes {
    /// Nothing at all.
    Nothing,
    /// Fixed bytes, from this position on.
    Fixed(&'static [u8], usize),
    /// The first `left` bytes of a response.
    Cut { encoder: Encoder, left: u64 },
    /// A whole response.
    Whole(Encoder),
}

impl FaultBytes {
    /// What `fault` writes in place of `base`, the response a healthy
    /// server would have sent.
    pub(crate) fn new(fault: Fault, base: Response) -> FaultBytes {
        match fault {
            Fault::CloseBeforeHead | Fault::Reset | Fault::NeverAnswer => FaultBytes::Nothing,
            Fault::Garbage => FaultBytes::Fixed(GARBAGE, 0),
            Fault::BadStatusLine => FaultBytes::Fixed(BAD_STATUS_LINE, 0),
            Fault::BadChunk => FaultBytes::Fixed(BAD_CHUNK, 0),
            Fault::HugeHead => FaultBytes::Fixed(huge_head(), 0),
            Fault::CloseMidHead => cut(base, base.head_len() / 2),
            Fault::CloseMidBody => match with_body(base) {
                Some(full) => cut(full, full.head_len() + payload_len(&full) / 2),
                None => cut(base, base.head_len() / 2),
            },
            Fault::ShortBody => match with_body(base) {
                Some(full) => {
                    let len = payload_len(&full);
                    let announced = Response {
                        body: Body::Length(len),
                        ..full
                    };
                    cut(announced, announced.head_len() + len - 1)
                }
                None => cut(base, base.head_len() - 1),
            },
            Fault::Trickle => FaultBytes::Whole(Encoder::new(base)),
        }
    }

    /// Appends to `out` until it holds at least `limit` bytes or the
    /// fault's bytes are all out; returns whether they are.
    pub(crate) fn fill(&mut self, out: &mut Vec<u8>, limit: usize) -> bool {
        match self {
            FaultBytes::Nothing => true,
            FaultBytes::Fixed(bytes, pos) => {
                let room = limit.saturating_sub(out.len()).max(1);
                let end = bytes.len().min(pos.saturating_add(room));
                out.extend_from_slice(&bytes[*pos..end]);
                *pos = end;
                *pos == bytes.len()
            }
            FaultBytes::Cut { encoder, left } => {
                let start = out.len();
                let room = limit.saturating_sub(start) as u64;
                let want = (*left).min(room.max(1));
                let done = encoder.fill(out, start + want as usize);
                let took = ((out.len() - start) as u64).min(*left);
                out.truncate(start + took as usize);
                *left -= took;
                *left == 0 || done
            }
            FaultBytes::Whole(encoder) => encoder.fill(out, limit),
        }
    }

    /// All of it at once, for tests.
    #[cfg(test)]
    pub(crate) fn into_bytes(mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while !self.fill(&mut out, usize::MAX) {}
        out
    }
}

fn cut(response: Response, bytes: u64) -> FaultBytes {
    FaultBytes::Cut {
        encoder: Encoder::new(response),
        left: bytes,
    }
}

/// `base` with a body a body fault can cut: at least [`MIN_FAULT_BODY`]
/// bytes, with an end the client can recognise (a length or chunks).
/// `None` for a response that may not have a body (HEAD, 204, 304): body
/// bytes there would not be read as a body at all, so body faults cut such
/// a response's head instead.
fn with_body(base: Response) -> Option<Response> {
    let body = match base.body {
        _ if base.head_only => return None,
        Body::Empty => return None,
        Body::Chunked { .. } => base.body,
        Body::Length(n) | Body::UntilClose(n) => Body::Length(n.max(MIN_FAULT_BODY)),
    };
    Some(Response { body, ..base })
}

/// The body's payload length (chunk framing not counted).
fn payload_len(response: &Response) -> u64 {
    match response.body {
        Body::Empty => 0,
        Body::Length(n) | Body::UntilClose(n) | Body::Chunked { len: n, .. } => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::reply::Connection;

    fn base(body: Body) -> Response {
        Response {
            status: 200,
            body,
            connection: Connection::Omit,
            head_only: false,
        }
    }

    fn bytes(fault: Fault, body: Body) -> String {
        String::from_utf8_lossy(&FaultBytes::new(fault, base(body)).into_bytes()).into_owned()
    }

    const HEAD_200: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n";

    #[test]
    fn names_round_trip() {
        for fault in Fault::all() {
            assert_eq!(Fault::from_name(fault.name()), Some(fault));
        }
        assert_eq!(Fault::from_name("Reset"), None);
    }

    #[test]
    fn silent_faults_write_nothing() {
        for fault in [Fault::CloseBeforeHead, Fault::Reset, Fault::NeverAnswer] {
            assert_eq!(bytes(fault, Body::Length(5)), "", "{fault}");
        }
    }

    #[test]
    fn fixed_faults_write_their_constants() {
        let garbage = FaultBytes::new(Fault::Garbage, base(Body::Length(5))).into_bytes();
        assert_eq!(garbage, b"\x00\x17\xfe\xff not HTTP \x01\x02\x03\r\n\r\n");
        assert_eq!(
            bytes(Fault::BadStatusLine, Body::Length(5)),
            "HTTP/1.1 2OO OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n"
        );
        assert_eq!(
            bytes(Fault::BadChunk, Body::Length(5)),
            format!("{HEAD_200}Transfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n")
        );
    }

    #[test]
    fn the_huge_head_is_a_valid_mebibyte_of_fields() {
        let head = bytes(Fault::HugeHead, Body::Length(5));
        assert!(head.len() > 1 << 20, "{}", head.len());
        let (fields, rest) = head.split_once("\r\n\r\n").unwrap();
        assert_eq!(rest, "", "no body");
        let mut lines = fields.split("\r\n");
        assert_eq!(lines.next(), Some("HTTP/1.1 200 OK"));
        assert_eq!(lines.next(), Some("Content-Type: text/plain"));
        let pad = format!("X-Pad: {}", "p".repeat(HUGE_FIELD_LEN - 9));
        for _ in 0..HUGE_FIELDS {
            assert!(lines.next() == Some(pad.as_str()));
        }
        let tail: Vec<_> = lines.collect();
        assert_eq!(tail, ["Content-Length: 0", "Connection: close"]);
        let mut parsed = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut parsed);
        let done = response.parse(head.as_bytes()).unwrap();
        assert_eq!(done, httparse::Status::Complete(head.len()));
    }

    #[test]
    fn close_mid_head_writes_half_the_head() {
        // The head is 64 bytes: 32 go out.
        let want = "HTTP/1.1 200 OK\r\nContent-Type: t";
        assert_eq!(bytes(Fault::CloseMidHead, Body::Length(0)), want);
        assert_eq!(base(Body::Length(0)).head_len(), 64);
    }

    #[test]
    fn close_mid_body_writes_the_head_and_half_the_body() {
        let length = format!("{HEAD_200}Content-Length: 10\r\n\r\nxxxxx");
        assert_eq!(bytes(Fault::CloseMidBody, Body::Length(10)), length);
        // An empty body grows to two bytes so that there is a middle.
        let empty = format!("{HEAD_200}Content-Length: 2\r\n\r\nx");
        assert_eq!(bytes(Fault::CloseMidBody, Body::Length(0)), empty);
        assert_eq!(bytes(Fault::CloseMidBody, Body::UntilClose(0)), empty);
        // Chunked: the first half of the payload's count of wire bytes.
        let chunked = Body::Chunked {
            len: 9,
            trailer: false,
        };
        let want = format!("{HEAD_200}Transfer-Encoding: chunked\r\n\r\n3\r\nx");
        assert_eq!(bytes(Fault::CloseMidBody, chunked), want);
    }

    #[test]
    fn short_body_writes_one_byte_less_than_it_announces() {
        let want = format!("{HEAD_200}Content-Length: 4\r\n\r\nxxx");
        assert_eq!(bytes(Fault::ShortBody, Body::Length(4)), want);
        let chunked = Body::Chunked {
            len: 4,
            trailer: true,
        };
        assert_eq!(bytes(Fault::ShortBody, chunked), want);
        let small = format!("{HEAD_200}Content-Length: 2\r\n\r\nx");
        assert_eq!(bytes(Fault::ShortBody, Body::Length(0)), small);
    }

    #[test]
    fn body_faults_cut_the_head_of_a_response_without_a_body() {
        let no_content = Response {
            status: 204,
            ..base(Body::Empty)
        };
        let head = Response {
            head_only: true,
            ..base(Body::Length(9))
        };
        let cut = |fault, response| {
            String::from_utf8(FaultBytes::new(fault, response).into_bytes()).unwrap()
        };
        // "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\n\r\n": 53 bytes.
        assert_eq!(
            cut(Fault::CloseMidBody, no_content),
            "HTTP/1.1 204 No Content\r\nC"
        );
        assert_eq!(
            cut(Fault::ShortBody, no_content),
            "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\n\r"
        );
        let head_bytes = format!("{HEAD_200}Content-Length: 9\r\n\r\n");
        assert_eq!(cut(Fault::CloseMidBody, head), head_bytes[..32]);
        assert_eq!(
            cut(Fault::ShortBody, head),
            head_bytes[..head_bytes.len() - 1]
        );
    }

    #[test]
    fn trickle_writes_the_whole_response() {
        let body = Body::Length(3);
        assert_eq!(
            bytes(Fault::Trickle, body),
            format!("{HEAD_200}Content-Length: 3\r\n\r\nxxx")
        );
    }

    #[test]
    fn long_cuts_stream_in_bounded_pieces() {
        let body = Body::Length(1_000_000);
        let whole = FaultBytes::new(Fault::CloseMidBody, base(body)).into_bytes();
        let mut piecewise = FaultBytes::new(Fault::CloseMidBody, base(body));
        let (mut sent, mut out) = (Vec::new(), Vec::new());
        while !piecewise.fill(&mut out, 4096) {
            assert!(out.len() <= 4096 + 64, "{}", out.len());
            sent.append(&mut out);
        }
        sent.append(&mut out);
        assert_eq!(sent, whole);
        assert_eq!(whole.len() as u64, base(body).head_len() + 500_000);
        let mut fixed = FaultBytes::new(Fault::HugeHead, base(body));
        let mut pieces = 0;
        out.clear();
        while !fixed.fill(&mut out, 64 * 1024) {
            out.clear();
            pieces += 1;
        }
        assert_eq!(pieces, 16);
    }

    #[test]
    fn only_broken_streams_end_the_connection() {
        let keep = base(Body::Length(1));
        let close = Response {
            connection: Connection::Close,
            ..keep
        };
        assert_eq!(Fault::Trickle.after(&keep), After::KeepOpen);
        assert_eq!(Fault::Trickle.after(&close), After::Close);
        assert_eq!(Fault::Reset.after(&keep), After::Reset);
        assert_eq!(Fault::NeverAnswer.after(&keep), After::Hold);
        for fault in [
            Fault::CloseBeforeHead,
            Fault::CloseMidHead,
            Fault::CloseMidBody,
            Fault::Garbage,
            Fault::HugeHead,
            Fault::BadStatusLine,
            Fault::BadChunk,
            Fault::ShortBody,
        ] {
            assert_eq!(fault.after(&keep), After::Close, "{fault}");
        }
    }

    #[test]
    fn every_n_picks_the_nth() {
        let plan = FaultPlan::every(Fault::Reset, 3);
        let picked: Vec<u64> = (1..=10).filter(|&k| plan.picks(k)).collect();
        assert_eq!(picked, [3, 6, 9]);
        assert!((1..=5).all(|k| FaultPlan::every(Fault::Reset, 1).picks(k)));
    }

    #[test]
    fn chance_is_repeatable_and_near_its_probability() {
        let p = Probability::new(0.2).unwrap();
        let plan = FaultPlan::chance(Fault::Reset, p, 7);
        let picked: Vec<u64> = (1..=20).filter(|&k| plan.picks(k)).collect();
        let again: Vec<u64> = (1..=20).filter(|&k| plan.picks(k)).collect();
        assert_eq!(picked, again);
        let other = FaultPlan::chance(Fault::Reset, p, 8);
        let differs = (1..=100).any(|k| plan.picks(k) != other.picks(k));
        assert!(differs, "the seed changes the picks");
        let hits = (1..=100_000).filter(|&k| plan.picks(k)).count();
        assert!((19_000..21_000).contains(&hits), "{hits}");
        let always = FaultPlan::chance(Fault::Reset, Probability::new(1.0).unwrap(), 0);
        assert!((1..=1000).all(|k| always.picks(k)));
    }

    #[test]
    fn draws_are_splitmix64() {
        // SplitMix64 from state 0: its first output is 0xE220A8397B1DCDAF.
        let first = 0xE220_A839_7B1D_CDAFu64;
        assert_eq!(unit_draw(0, 1), (first >> 11) as f64 / (1u64 << 53) as f64);
    }

    #[test]
    fn fault_values_parse_or_say_why_not() {
        let ok = |s: &str| parse_fault(s).unwrap();
        assert_eq!(
            ok("reset"),
            FaultSpec {
                fault: Fault::Reset,
                chance: None
            }
        );
        assert_eq!(ok("trickle:0.5").chance, Some(Probability(0.5)));
        assert_eq!(ok("garbage:1").chance, Some(Probability(1.0)));
        assert_eq!(ok("bad-chunk:1e-3").chance, Some(Probability(0.001)));
        let cases = [
            (
                "nope",
                "unknown fault 'nope'; expected one of close-before-head, ",
            ),
            ("", "unknown fault ''"),
            ("Reset", "unknown fault 'Reset'"),
            ("reset:", "the part after ':' must be a probability"),
            ("reset:0", "above 0 and at most 1, e.g. reset:0.2"),
            ("reset:1.5", "in 'reset:1.5', the part after ':'"),
            ("reset:-0.1", "above 0"),
            ("reset:NaN", "above 0"),
            ("reset:20%", "must be a probability"),
            ("reset:0.2:3", "must be a probability"),
        ];
        for (value, want) in cases {
            let err = parse_fault(value).unwrap_err();
            assert!(err.contains(want), "{value:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }

    #[test]
    fn fault_flags_combine_or_say_why_not() {
        let reset = Some(parse_fault("reset").unwrap());
        let chance = Some(parse_fault("reset:0.25").unwrap());
        let plan = |spec, every, per, seed| FaultPlan::from_flags(spec, every, per, seed);
        assert_eq!(plan(None, None, None, None), Ok(None));
        assert_eq!(
            plan(reset, None, None, None),
            Ok(Some(FaultPlan::every(Fault::Reset, 1)))
        );
        assert_eq!(
            plan(reset, Some(3), Some(Per::Connection), None),
            Ok(Some(FaultPlan::every(Fault::Reset, 3).per_connection()))
        );
        let p = Probability::new(0.25).unwrap();
        assert_eq!(
            plan(chance, None, None, Some(9)),
            Ok(Some(FaultPlan::chance(Fault::Reset, p, 9)))
        );
        assert_eq!(
            plan(chance, None, None, None),
            Ok(Some(FaultPlan::chance(Fault::Reset, p, 0)))
        );
        let refused = [
            (
                plan(None, Some(2), None, None),
                "--fault-every needs --fault",
            ),
            (
                plan(None, None, Some(Per::Response), None),
                "--fault-per needs --fault",
            ),
            (
                plan(None, None, None, Some(1)),
                "--fault-seed needs --fault",
            ),
            (
                plan(chance, Some(2), None, None),
                "--fault reset:0.25 and --fault-every both say how often",
            ),
            (
                plan(reset, None, None, Some(1)),
                "--fault-seed only applies to a probability",
            ),
        ];
        for (result, want) in refused {
            let err = result.unwrap_err();
            assert!(err.contains(want), "{err}");
        }
        assert!(FaultPlan::every(Fault::Reset, 0).check().is_err());
        assert_eq!(FaultPlan::every(Fault::Reset, 2).check(), Ok(()));
    }
}

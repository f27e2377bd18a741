//! Requests off the wire: the head through httparse, then the body by its
//! framing, one request after another from the connection's buffer.
//!
//! [`Reader`] is fed whatever bytes are buffered and says how many it used
//! and what they amounted to, so pipelined requests come out one at a time
//! and partial ones wait for more bytes. It keeps only what the reply needs
//! (route, method, version, connection wishes, and for `/private` whether
//! it holds a token the server signed); anything owned, like the path
//! string or a recorded copy, is made only while inspecting, or for an
//! `--llm` route, whose JSON body is read.

use super::body::{BodyDecoder, Both, Malformed, Sink};
use super::config::Sse;
use super::llm::{Call, Verb};
use super::reply::Reply;
use super::route::{path_of, Route};
use super::stats::{Capture, RecordedRequest, ServerStats};
use super::token::Key;
use super::upgrade::Upgrade;

/// Longest request head accepted.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Most header fields accepted in one head.
const MAX_HEADERS: usize = 100;

/// A parsed request head: what the reply depends on.
#[derive(Debug)]
pub(crate) struct Head {
    pub route: Route,
    pub head_only: bool,
    pub http10: bool,
    /// The client lets the connection persist after this request.
    pub keep_alive: bool,
    pub expect_continue: bool,
    /// A `/private` request holds a token the server signed (checked
    /// for no other route).
    pub authorized: bool,
    pub capture: Option<Capture>,
    /// With `--llm`, a request for a `/v1/` path, with its body (boxed:
    /// every other request's head stays as small as it was).
    pub llm: Option<Box<Call>>,
    /// With `--ws`, a request for a WebSocket endpoint, answered (boxed
    /// for the same reason).
    pub ws: Option<Box<Upgrade>>,
}

/// How the body following a head is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
}

/// What the bytes fed to a [`Reader`] amounted to.
#[derive(Debug)]
pub(crate) enum Event {
    /// Everything usable was used; more bytes are needed.
    NeedMore,
    /// A head asking `Expect: 100-continue` arrived; its body is pending.
    Continue,
    /// A complete request, body included.
    Request(Head),
    /// The bytes are not HTTP/1.x; answer 400 and close.
    Bad,
    /// The head runs past [`MAX_HEAD`]; answer 400 naming the limit and
    /// close.
    TooLarge,
}

impl Event {
    /// The 400 a [`Event::Bad`] or [`Event::TooLarge`] gets.
    pub(crate) fn bad_reply(&self) -> Reply {
        match self {
            Event::TooLarge => Reply::HeadTooLarge,
            _ => Reply::BadRequest,
        }
    }
}

/// Where the connection stands between requests.
#[derive(Debug)]
pub(crate) struct Reader {
    body: Option<(Head, BodyDecoder)>,
    /// The server's token key: a head's fields are gone once it is parsed,
    /// so `/private` checks its token then.
    key: Key,
    /// `--llm` is on: `/v1/` paths are calls, their bodies kept.
    llm: bool,
    /// `--ws` is on, `/ws/push` timed by `--sse`'s timetable if given:
    /// `/ws/` endpoints are upgrades.
    ws: Option<Option<Sse>>,
}

impl Reader {
    pub(crate) fn new(key: Key) -> Reader {
        Reader {
            body: None,
            key,
            llm: false,
            ws: None,
        }
    }

    /// The reader of a server that serves `--llm` (`on`) or not.
    pub(crate) fn with_llm(self, on: bool) -> Reader {
        Reader { llm: on, ..self }
    }

    /// The reader of a server that serves `--ws` (`on`, with `--sse`'s
    /// timetable if any) or not.
    pub(crate) fn with_ws(self, on: bool, sse: Option<Sse>) -> Reader {
        let ws = on.then_some(sse);
        Reader { ws, ..self }
    }

    /// Advances over the front of `buf`; returns the bytes used and what
    /// they amounted to.
    pub(crate) fn step(&mut self, buf: &[u8], stats: &ServerStats) -> (usize, Event) {
        match self.body.take() {
            Some((head, decoder)) => self.body_step(head, decoder, buf),
            None => self.head_step(buf, stats),
        }
    }

    fn head_step(&mut self, buf: &[u8], stats: &ServerStats) -> (usize, Event) {
        let (used, head, framing) = match parse_head(buf, stats, &self.key, self.llm, self.ws) {
            Parsed::Partial => return (0, Event::NeedMore),
            Parsed::Bad => return (0, Event::Bad),
            Parsed::TooLarge => return (0, Event::TooLarge),
            Parsed::Done(used, head, framing) => (used, head, framing),
        };
        let decoder = match framing {
            None | Some(Framing::Length(0)) => return (used, Event::Request(head)),
            Some(Framing::Length(n)) => BodyDecoder::Length(n),
            Some(Framing::Chunked) => BodyDecoder::chunked(),
        };
        let expect_continue = head.expect_continue;
        self.body = Some((head, decoder));
        if expect_continue {
            return (used, Event::Continue);
        }
        // The body may be buffered already.
        let (more, event) = self.step(&buf[used..], stats);
        (used + more, event)
    }

    fn body_step(
        &mut self,
        mut head: Head,
        mut decoder: BodyDecoder,
        buf: &[u8],
    ) -> (usize, Event) {
        let record = head.capture.as_mut().and_then(|c| c.record.as_mut());
        let call = head.llm.as_deref_mut().and_then(Call::sink);
        let mut keep = Both(record.map(|r| &mut r.body), call).wanted();
        match decoder.feed(buf, keep.as_mut().map(|k| k as &mut dyn Sink)) {
            Err(Malformed) => (0, Event::Bad),
            Ok((used, true)) => (used, Event::Request(head)),
            Ok((used, false)) => {
                self.body = Some((head, decoder));
                (used, Event::NeedMore)
            }
        }
    }
}

enum Parsed {
    Partial,
    Bad,
    TooLarge,
    Done(usize, Head, Option<Framing>),
}

fn parse_head(
    buf: &[u8],
    stats: &ServerStats,
    key: &Key,
    llm: bool,
    ws: Option<Option<Sse>>,
) -> Parsed {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    // A head is too large whether it came whole in one read or not.
    let used = match req.parse(buf) {
        Ok(httparse::Status::Complete(used)) if used > MAX_HEAD => return Parsed::TooLarge,
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => return Parsed::Partial,
        Ok(httparse::Status::Partial) => return Parsed::TooLarge,
        Err(_) => return Parsed::Bad,
    };
    match read_head(&req, stats, key, llm, ws) {
        Ok((head, framing)) => Parsed::Done(used, head, framing),
        Err(Malformed) => Parsed::Bad,
    }
}

/// What the reply needs from the head, and how the body is framed.
fn read_head(
    req: &httparse::Request<'_, '_>,
    stats: &ServerStats,
    key: &Key,
    llm: bool,
    ws: Option<Option<Sse>>,
) -> Result<(Head, Option<Framing>), Malformed> {
    let (method, target) = (req.method.unwrap_or(""), req.path.unwrap_or(""));
    let http10 = req.version == Some(0);
    let wishes = Wishes::of(req.headers)?;
    // HTTP/1.0 connections close unless the client asks otherwise.
    let keep_alive = !wishes.close && (wishes.keep_alive || !http10);
    let framing = wishes.framing()?;
    let route = Route::parse(target);
    let head = Head {
        route,
        head_only: method == "HEAD",
        http10,
        keep_alive,
        // An empty body needs no go-ahead.
        expect_continue: wishes.expect_continue && !http10 && framing.is_some(),
        authorized: route == Route::Private
            && key.admits(req.headers.iter().map(|f| (f.name, f.value))),
        capture: capture(req, stats),
        llm: llm
            .then(|| Call::of(target, Verb::of(method)).map(Box::new))
            .flatten(),
        ws: ws.and_then(|sse| {
            let fields = req.headers.iter().map(|f| (f.name, f.value));
            Upgrade::of(method, http10, target, fields, sse).map(Box::new)
        }),
    };
    Ok((head, framing))
}

/// The header fields that change how the server behaves.
#[derive(Debug, Default)]
struct Wishes {
    close: bool,
    keep_alive: bool,
    expect_continue: bool,
    length: Option<u64>,
    chunked: bool,
}

impl Wishes {
    fn of(fields: &[httparse::Header<'_>]) -> Result<Wishes, Malformed> {
        let mut wishes = Wishes::default();
        for field in fields {
            wishes.note(field.name, field.value)?;
        }
        Ok(wishes)
    }

    fn note(&mut self, name: &str, value: &[u8]) -> Result<(), Malformed> {
        if name.eq_ignore_ascii_case("connection") {
            for token in value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                self.close |= token.eq_ignore_ascii_case(b"close");
                self.keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            let n = content_length(value)?;
            // Repeated lengths must agree, or the framing is ambiguous.
            if self.length.is_some_and(|seen| seen != n) {
                return Err(Malformed);
            }
            self.length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // Only plain chunked is understood; anything else cannot be
            // framed, so it is refused rather than misread.
            if self.chunked || !value.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                return Err(Malformed);
            }
            self.chunked = true;
        } else if name.eq_ignore_ascii_case("expect") {
            self.expect_continue |= value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
        Ok(())
    }

    fn framing(&self) -> Result<Option<Framing>, Malformed> {
        match (self.chunked, self.length) {
            // Both at once is how requests get smuggled: refuse.
            (true, Some(_)) => Err(Malformed),
            (true, None) => Ok(Some(Framing::Chunked)),
            (false, Some(n)) => Ok(Some(Framing::Length(n))),
            (false, None) => Ok(None),
        }
    }
}

fn content_length(value: &[u8]) -> Result<u64, Malformed> {
    let value = value.trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Err(Malformed);
    }
    let text = std::str::from_utf8(value).map_err(|_| Malformed)?;
    text.parse().map_err(|_| Malformed)
}

/// The owned copies inspection wants; none when not inspecting.
fn capture(req: &httparse::Request<'_, '_>, stats: &ServerStats) -> Option<Capture> {
    let target = req.path.unwrap_or("");
    capture_with(stats, target, || RecordedRequest {
        method: req.method.unwrap_or("").to_string(),
        path: target.to_string(),
        version: req.version.unwrap_or(1),
        headers: req
            .headers
            .iter()
            .map(|h| (h.name.to_string(), h.value.to_vec()))
            .collect(),
        body: Vec::new(),
        received: std::time::Instant::now(),
    })
}

/// What inspection keeps of a request for `target`, whatever protocol
/// carried it: its path for the per-path counts, and the request `record`
/// makes while there is room for one. `None` when not inspecting.
pub(crate) fn capture_with(
    stats: &ServerStats,
    target: &str,
    record: impl FnOnce() -> RecordedRequest,
) -> Option<Capture> {
    if !stats.inspecting() {
        return None;
    }
    Some(Capture {
        path_key: path_of(target).to_string(),
        record: stats.wants_record().then(|| Box::new(record())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps a fresh reader over `wire`, returning every event but NeedMore
    /// and the bytes left unused.
    fn events(wire: &[u8], stats: &ServerStats) -> (Vec<Event>, usize) {
        let mut reader = Reader::new(Key::default());
        let (mut pos, mut seen) = (0, Vec::new());
        loop {
            let (used, event) = reader.step(&wire[pos..], stats);
            pos += used;
            match event {
                Event::NeedMore => return (seen, wire.len() - pos),
                Event::Bad | Event::TooLarge => {
                    seen.push(event);
                    return (seen, wire.len() - pos);
                }
                event => seen.push(event),
            }
        }
    }

    fn heads(wire: &[u8]) -> Vec<Head> {
        let (events, left) = events(wire, &ServerStats::new(0));
        assert_eq!(left, 0, "unused bytes");
        let only_requests = events.into_iter().map(|e| match e {
            Event::Request(head) => head,
            other => panic!("unexpected {other:?}"),
        });
        only_requests.collect()
    }

    fn is_bad(wire: &[u8]) -> bool {
        let (events, _) = events(wire, &ServerStats::new(0));
        matches!(events.last(), Some(Event::Bad))
    }

    fn is_too_large(wire: &[u8]) -> bool {
        let (events, _) = events(wire, &ServerStats::new(0));
        matches!(events.last(), Some(Event::TooLarge))
    }

    #[test]
    fn pipelined_requests_come_out_one_by_one() {
        let wire = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n\
            POST /status/201 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc\
            HEAD /eof HTTP/1.1\r\nConnection: close\r\n\r\n";
        let heads = heads(wire);
        let routes: Vec<_> = heads.iter().map(|h| h.route).collect();
        assert_eq!(routes, [Route::Default, Route::Status(201), Route::Eof]);
        assert!(heads[2].head_only && !heads[2].keep_alive);
        assert!(heads[0].keep_alive && !heads[0].head_only);
    }

    #[test]
    fn partial_requests_wait_for_more() {
        let stats = ServerStats::new(0);
        let mut reader = Reader::new(Key::default());
        let (used, event) = reader.step(b"GET / HTTP/1.1\r\nHo", &stats);
        assert!(matches!((used, event), (0, Event::NeedMore)));
        let wire = b"PUT / HTTP/1.1\r\nContent-Length: 4\r\n\r\nab";
        let (used, event) = reader.step(wire, &stats);
        assert!(matches!((used, event), (n, Event::NeedMore) if n == wire.len()));
        let (used, event) = reader.step(b"cdGET", &stats);
        assert!(matches!((used, event), (2, Event::Request(_))));
    }

    #[test]
    fn http10_closes_unless_asked_to_keep_alive() {
        let heads = heads(
            b"GET / HTTP/1.0\r\n\r\n\
              GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n\
              GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n",
        );
        let keep: Vec<_> = heads.iter().map(|h| h.keep_alive).collect();
        assert_eq!(keep, [false, true, false]);
        assert!(heads[0].http10 && !heads[2].http10);
    }

    #[test]
    fn expect_continue_is_announced_before_the_body() {
        let stats = ServerStats::new(0);
        let wire = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi";
        let (seen, left) = events(wire, &stats);
        assert_eq!(left, 0);
        assert!(matches!(seen[..], [Event::Continue, Event::Request(_)]));
        let empty = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n";
        assert!(matches!(events(empty, &stats).0[..], [Event::Request(_)]));
    }

    #[test]
    fn recorded_requests_keep_everything() {
        let stats = ServerStats::new(5);
        let wire = b"POST /up?x=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\
            3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let (mut events, _) = events(wire, &stats);
        let Some(Event::Request(head)) = events.pop() else {
            panic!()
        };
        let capture = head.capture.unwrap();
        assert_eq!(capture.path_key, "/up");
        let record = capture.record.unwrap();
        assert_eq!(
            (record.method.as_str(), record.path.as_str()),
            ("POST", "/up?x=1")
        );
        assert_eq!(record.header("host"), Some(&b"h"[..]));
        assert_eq!(record.body, b"abcde");
    }

    #[test]
    fn tokens_are_read_from_authorization_and_cookies() {
        let tokens = crate::token::Tokens::default();
        let token = tokens.mint();
        let mut reader = Reader::new(tokens.key().clone());
        let wire = format!(
            "GET /private HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\r\n\
             GET /private HTTP/1.1\r\ncookie: a=1; metron_token={token}\r\n\r\n\
             GET /private HTTP/1.1\r\nAuthorization: Bearer t1.0000000000000000\r\n\r\n\
             GET /private HTTP/1.1\r\n\r\n\
             GET / HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\r\n"
        );
        let stats = ServerStats::new(0);
        let mut rest = wire.as_bytes();
        let mut authorized = Vec::new();
        while let (used, Event::Request(head)) = reader.step(rest, &stats) {
            authorized.push(head.authorized);
            rest = &rest[used..];
        }
        assert_eq!(authorized, [true, true, false, false, false]);
        // A reader with another server's key signed none of them.
        let (_, event) = Reader::new(Key::default()).step(wire.as_bytes(), &stats);
        assert!(matches!(event, Event::Request(head) if !head.authorized));
    }

    #[test]
    fn nothing_is_captured_without_inspection() {
        let heads = heads(b"GET /x HTTP/1.1\r\n\r\n");
        assert!(heads[0].capture.is_none());
    }

    #[test]
    fn malformed_heads_are_bad() {
        assert!(is_bad(b"NOT HTTP\r\n\r\n"));
        assert!(is_bad(b"GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n"));
        assert!(is_bad(b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"));
        assert!(is_bad(
            b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
        ));
        assert!(is_bad(b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"));
        let both = b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n";
        assert!(is_bad(both));
        assert!(is_bad(
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nq\r\n"
        ));
        assert!(is_bad(b"\x00\x01\x02\x03"));
        let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
        assert!(is_bad(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()));
    }

    /// A head past the limit is too large, not merely bad, whether it
    /// is still coming or came whole.
    #[test]
    fn endless_heads_are_too_large() {
        let mut wire = b"GET / HTTP/1.1\r\nX-Pad: ".to_vec();
        wire.resize(MAX_HEAD + 1, b'a');
        assert!(is_too_large(&wire));
        assert!(!is_too_large(&wire[..MAX_HEAD]) && !is_bad(&wire[..MAX_HEAD]));
        let query = "a".repeat(160 * 1024);
        let whole = format!("GET /ws/echo?delay={query} HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(is_too_large(whole.as_bytes()));
        let (events, _) = events(whole.as_bytes(), &ServerStats::new(0));
        assert_eq!(
            events.last().map(Event::bad_reply),
            Some(Reply::HeadTooLarge)
        );
    }

    #[test]
    fn agreeing_lengths_are_accepted() {
        let wire = b"PUT / HTTP/1.1\r\nContent-Length: 1\r\ncontent-length: 1\r\n\r\nz";
        assert_eq!(heads(wire).len(), 1);
    }

    /// A small deterministic generator, so failures reproduce.
    struct Noise(u64);

    impl Noise {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Mangled requests and random bytes, fed in random splits, never
    /// panic the reader and never make it use bytes it was not given.
    #[test]
    fn hostile_bytes_never_panic() {
        let seeds: [&[u8]; 3] = [
            b"POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            b"GET /status/204 HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi",
            b"HEAD /delay/1.5 HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz",
        ];
        let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
        let stats = ServerStats::new(3);
        for round in 0..3000 {
            let mut wire = seeds[round % seeds.len()].repeat(2);
            for _ in 0..noise.below(6) {
                let at = noise.below(wire.len());
                wire[at] = noise.next() as u8;
            }
            if round % 10 == 0 {
                wire = (0..noise.below(300)).map(|_| noise.next() as u8).collect();
            }
            let mut reader = Reader::new(Key::default());
            let mut buffered = Vec::new();
            let mut rest = &wire[..];
            while !rest.is_empty() {
                let cut = 1 + noise.below(rest.len());
                buffered.extend_from_slice(&rest[..cut]);
                rest = &rest[cut..];
                loop {
                    let (used, event) = reader.step(&buffered, &stats);
                    assert!(used <= buffered.len());
                    buffered.drain(..used);
                    match event {
                        Event::NeedMore => break,
                        Event::Bad | Event::TooLarge => {
                            rest = &[];
                            break;
                        }
                        Event::Continue | Event::Request(_) => {}
                    }
                }
            }
        }
    }
}

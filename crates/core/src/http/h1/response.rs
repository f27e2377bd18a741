//! Incremental HTTP/1.1 response parser: one per connection, reused for every
//! response on it, on the hot path of every read.
//!
//! It owns the head parsing (status line and fields, through `httparse`), the
//! body framing decision of RFC 9112 §6.3, the keep-alive decision, and the
//! optional capture of status, fields and decoded body for scripting hooks.
//!
//! Reads split responses at arbitrary points and pipelining packs several
//! responses into one read, so the parser resumes anywhere and never consumes
//! a byte past the end of the current response. A head that arrives whole is
//! parsed where it lies; only a head split across reads is copied, and never
//! beyond `max_head` bytes. Bodies are only counted unless capture is on.
//!
//! The field helpers at the end are shared with request splitting, so that
//! both directions frame bodies by the same rules.

use super::chunked::{BadChunk, ChunkedDecoder};
use crate::http::capture::{Captured, DEFAULT_MAX_CAPTURE};

/// Fields per head; a fixed stack array keeps head parsing allocation-free.
pub const MAX_HEADERS: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("expected the response head to end with an empty line within the head size limit")]
    HeadTooLarge,
    #[error("expected at most {} header fields in a response head", MAX_HEADERS)]
    TooManyHeaders,
    #[error("expected an HTTP/1.x status line followed by well-formed header fields")]
    Malformed,
    #[error("expected a three-digit status code from 100 to 999")]
    BadStatus,
    #[error("expected Content-Length to be a single non-negative decimal integer")]
    BadContentLength,
    #[error("expected chunked framing: hex size, optional extensions, CRLF, data, CRLF")]
    BadChunk,
    #[error("expected the captured body to fit within the capture size limit")]
    BodyTooLarge,
    #[error("expected the rest of the response before the connection closed")]
    UnexpectedEof,
}

impl From<BadChunk> for ParseError {
    fn from(_: BadChunk) -> Self {
        ParseError::BadChunk
    }
}

impl From<httparse::Error> for ParseError {
    fn from(error: httparse::Error) -> Self {
        match error {
            httparse::Error::Status => ParseError::BadStatus,
            httparse::Error::TooManyHeaders => ParseError::TooManyHeaders,
            _ => ParseError::Malformed,
        }
    }
}

/// Outcome of one `feed` call. `Partial` always consumed all of its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    Partial { consumed: usize },
    Done { consumed: usize, done: Done },
}

/// Summary of a completed response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    pub status: u16,
    pub keep_alive: bool,
    /// Bytes of every head consumed, interim 1xx heads included.
    pub head_bytes: usize,
    /// Body bytes on the wire, chunk framing and trailers included.
    pub body_bytes: u64,
}

/// How the body of the current response is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyKind {
    None,
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Head,
    Body(BodyKind),
    /// The response completed and `start()` was not called yet.
    Idle(Done),
}

#[derive(Debug)]
pub struct ResponseParser {
    max_head: usize,
    max_capture: usize,
    capture_on: bool,
    head_request: bool,
    phase: Phase,
    /// A head split across reads; empty whenever the head is parsed in place.
    partial_head: Vec<u8>,
    seen: bool,
    head_bytes: usize,
    body_bytes: u64,
    status: u16,
    keep_alive: bool,
    captured: Captured,
    /// Decoded body bytes of the last `feed`, when streaming is on.
    streamed: Option<Vec<u8>>,
}

impl ResponseParser {
    /// `max_head`: largest allowed status line + headers, in bytes. The
    /// parser is ready for a first response to a non-HEAD request.
    pub fn new(max_head: usize) -> Self {
        Self {
            max_head,
            max_capture: DEFAULT_MAX_CAPTURE,
            capture_on: false,
            head_request: false,
            phase: Phase::Head,
            partial_head: Vec::new(),
            seen: false,
            head_bytes: 0,
            body_bytes: 0,
            status: 0,
            keep_alive: false,
            captured: Captured::default(),
            streamed: None,
        }
    }

    /// When on, the decoded (de-chunked) body bytes of each `feed` are
    /// handed out by [`ResponseParser::streamed`], to be read as they
    /// arrive, whatever capture keeps.
    pub fn set_streaming(&mut self, on: bool) {
        self.streamed = on.then(Vec::new);
    }

    /// The decoded body bytes the last `feed` took (streaming only); the
    /// caller reads and clears them.
    pub fn streamed(&mut self) -> Option<&mut Vec<u8>> {
        self.streamed.as_mut()
    }

    /// When on, the head (status, fields) and the decoded body of each
    /// response are kept for inspection; when off, nothing is buffered except
    /// a head split across reads.
    pub fn set_capture(&mut self, on: bool) {
        self.capture_on = on;
    }

    /// Largest decoded body kept while capturing; a longer body fails with
    /// `BodyTooLarge` (the buffer may overshoot by at most one `feed`).
    pub fn set_max_capture(&mut self, bytes: usize) {
        self.max_capture = bytes;
    }

    /// Begin the next response. `head_request`: the request was HEAD, so the
    /// response has no body.
    pub fn start(&mut self, head_request: bool) {
        self.head_request = head_request;
        self.phase = Phase::Head;
        self.partial_head.clear();
        self.seen = false;
        self.head_bytes = 0;
        self.body_bytes = 0;
        self.status = 0;
        self.keep_alive = false;
        self.captured.clear();
    }

    /// Consumes bytes of the current response. Bytes after a completed
    /// response are not consumed: they belong to the next pipelined response,
    /// so the caller calls `start()` and feeds them again. Feeding a completed
    /// response before `start()` repeats its `Done` and consumes nothing.
    /// After an error the byte stream cannot be trusted: drop the connection.
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, ParseError> {
        if let Phase::Idle(done) = self.phase {
            return Ok(Feed::Done { consumed: 0, done });
        }
        let mut consumed = 0;
        // Loops only over interim 1xx heads, each of which consumed bytes.
        while matches!(self.phase, Phase::Head) {
            let (n, complete) = self.feed_head(&data[consumed..])?;
            consumed += n;
            self.seen |= n > 0;
            if !complete {
                return Ok(Feed::Partial { consumed });
            }
        }
        let (n, finished) = self.feed_body(&data[consumed..])?;
        consumed += n;
        self.seen |= n > 0;
        Ok(if finished {
            Feed::Done {
                consumed,
                done: self.finish(),
            }
        } else {
            Feed::Partial { consumed }
        })
    }

    /// The peer closed the connection. Completes a body delimited by close;
    /// otherwise `UnexpectedEof`, unless no byte of the current response was
    /// seen, which is a clean close between responses: `Ok(None)`, or the
    /// unfinished head is already wrong, which is that head's error.
    pub fn eof(&mut self) -> Result<Option<Done>, ParseError> {
        match self.phase {
            Phase::Body(BodyKind::UntilClose) => Ok(Some(self.finish())),
            Phase::Idle(_) => Ok(None),
            _ if !self.seen => Ok(None),
            Phase::Head => Err(self.unfinished_head_error()),
            Phase::Body(_) => Err(ParseError::UnexpectedEof),
        }
    }

    /// A head split across reads is parsed again only once it could have
    /// ended, so bytes that are already wrong may sit in the buffer
    /// unparsed; parsing them now gives the verdict one read would have.
    fn unfinished_head_error(&self) -> ParseError {
        let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
        match httparse::Response::new(&mut fields).parse(&self.partial_head) {
            Err(error) => error.into(),
            // Any head in the buffer is unfinished, or it would have been
            // parsed when its last byte came.
            Ok(_) => ParseError::UnexpectedEof,
        }
    }

    /// True if any byte of the current response has been consumed.
    pub fn in_progress(&self) -> bool {
        self.seen
    }

    /// Status of the last parsed head; for a completed response, valid until
    /// the next `start()`.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Captured fields (name, value) in the order received; empty unless
    /// capture is on. Valid until the next `start()`.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.captured.fields()
    }

    /// [`ResponseParser::headers`], owned: what a test or the fuzz target
    /// keeps of one parse to compare it with another.
    pub fn headers_owned(&self) -> Vec<(String, Vec<u8>)> {
        self.headers()
            .map(|(n, v)| (n.to_string(), v.to_vec()))
            .collect()
    }

    /// Captured decoded (de-chunked) body; empty unless capture is on.
    pub fn body(&self) -> &[u8] {
        self.captured.body()
    }

    /// Everything captured of the current (or just completed) response.
    pub fn captured(&self) -> &Captured {
        &self.captured
    }

    /// Returns the bytes consumed and whether a head was completed.
    fn feed_head(&mut self, data: &[u8]) -> Result<(usize, bool), ParseError> {
        if data.is_empty() {
            return Ok((0, false));
        }
        if self.partial_head.is_empty() {
            self.head_in_place(data)
        } else {
            self.head_buffered(data)
        }
    }

    /// The fast path: parse straight out of the read buffer, and only copy
    /// when the head turns out to continue in a later read.
    fn head_in_place(&mut self, data: &[u8]) -> Result<(usize, bool), ParseError> {
        let window = &data[..data.len().min(self.max_head)];
        let full = window.len() >= self.max_head;
        match self.parse_head(window, full)? {
            Some(len) => Ok((len, true)),
            None => {
                // Not full, so `window` is all of `data`.
                self.partial_head.extend_from_slice(window);
                Ok((window.len(), false))
            }
        }
    }

    fn head_buffered(&mut self, data: &[u8]) -> Result<(usize, bool), ParseError> {
        let old = self.partial_head.len();
        let take = data.len().min(self.max_head.saturating_sub(old));
        self.partial_head.extend_from_slice(&data[..take]);
        let full = self.partial_head.len() >= self.max_head;
        // Re-parsing only when a head could have ended keeps a head that
        // trickles in byte by byte linear instead of quadratic.
        if !full && !has_head_end(&self.partial_head, old) {
            return Ok((take, false));
        }
        let buffer = std::mem::take(&mut self.partial_head);
        let parsed = self.parse_head(&buffer, full);
        self.partial_head = buffer;
        match parsed? {
            Some(len) => {
                self.partial_head.clear();
                // The buffered prefix held no complete head, so `len > old`.
                Ok((len.saturating_sub(old), true))
            }
            None => Ok((take, false)),
        }
    }

    /// Parses a head from the start of `buffer`; `full` means `buffer` holds
    /// `max_head` bytes, so an unfinished head can never fit.
    fn parse_head(&mut self, buffer: &[u8], full: bool) -> Result<Option<usize>, ParseError> {
        let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut fields);
        match response.parse(buffer)? {
            httparse::Status::Complete(len) => {
                self.on_head(&response, len)?;
                Ok(Some(len))
            }
            httparse::Status::Partial if full => Err(ParseError::HeadTooLarge),
            httparse::Status::Partial => Ok(None),
        }
    }

    fn on_head(
        &mut self,
        response: &httparse::Response<'_, '_>,
        len: usize,
    ) -> Result<(), ParseError> {
        let status = response.code.ok_or(ParseError::Malformed)?;
        if !(100..=999).contains(&status) {
            return Err(ParseError::BadStatus);
        }
        self.head_bytes = self.head_bytes.saturating_add(len);
        self.status = status;
        if self.capture_on {
            self.captured.clear_fields();
            for field in response.headers.iter() {
                self.captured.push_field(field.name, field.value);
            }
        }
        if is_interim(status) {
            // Phase stays `Head`: the final response follows.
            return Ok(());
        }
        let fields = FieldSummary::scan(response.headers);
        let kind = self.body_kind(status, &fields)?;
        let http11 = response.version.unwrap_or(1) >= 1;
        self.keep_alive =
            fields.keep_alive(http11) && status != 101 && kind != BodyKind::UntilClose;
        self.phase = Phase::Body(kind);
        Ok(())
    }

    /// RFC 9112 §6.3, in its order of precedence.
    fn body_kind(&self, status: u16, fields: &FieldSummary) -> Result<BodyKind, ParseError> {
        if self.head_request || matches!(status, 101 | 204 | 304) {
            return Ok(BodyKind::None);
        }
        if fields.transfer_encoding {
            return Ok(if fields.chunked {
                BodyKind::Chunked(ChunkedDecoder::new())
            } else {
                BodyKind::UntilClose
            });
        }
        match fields.content_length()? {
            Some(length) => Ok(BodyKind::Length(length)),
            None => Ok(BodyKind::UntilClose),
        }
    }

    /// Returns the body bytes consumed and whether the body ended.
    fn feed_body(&mut self, data: &[u8]) -> Result<(usize, bool), ParseError> {
        let Phase::Body(kind) = &mut self.phase else {
            return Ok((0, true));
        };
        let out = match self.streamed.as_mut() {
            Some(streamed) => Some(streamed),
            None => self.capture_on.then(|| self.captured.body_mut()),
        };
        let from = out.as_ref().map_or(0, |o| o.len());
        let fed = match kind {
            BodyKind::None => Ok((0, true)),
            BodyKind::Length(remaining) => Ok(take_length(remaining, data, out)),
            BodyKind::Chunked(decoder) => decoder.decode(data, out).map_err(ParseError::from),
            BodyKind::UntilClose => {
                if let Some(out) = out {
                    out.extend_from_slice(data);
                }
                Ok((data.len(), false))
            }
        };
        // Streamed and captured both: the capture gets the same bytes.
        if let (Some(streamed), true) = (self.streamed.as_ref(), self.capture_on) {
            self.captured
                .body_mut()
                .extend_from_slice(&streamed[from..]);
        }
        // Before a framing error: the data captured came before it on the
        // wire, so whichever error comes first is reported, however the
        // bytes were split into reads.
        if self.captured.body().len() > self.max_capture {
            return Err(ParseError::BodyTooLarge);
        }
        let (n, finished) = fed?;
        self.body_bytes = self.body_bytes.saturating_add(n as u64);
        Ok((n, finished))
    }

    fn finish(&mut self) -> Done {
        let done = Done {
            status: self.status,
            keep_alive: self.keep_alive,
            head_bytes: self.head_bytes,
            body_bytes: self.body_bytes,
        };
        self.phase = Phase::Idle(done);
        done
    }
}

/// 101 is excluded: it ends HTTP/1.1 on this connection, so it is final.
fn is_interim(status: u16) -> bool {
    (100..200).contains(&status) && status != 101
}

fn take_length(remaining: &mut u64, data: &[u8], out: Option<&mut Vec<u8>>) -> (usize, bool) {
    let take = usize::try_from(*remaining).map_or(data.len(), |r| r.min(data.len()));
    if let Some(out) = out {
        out.extend_from_slice(&data[..take]);
    }
    *remaining -= take as u64;
    (take, *remaining == 0)
}

/// Whether bytes appended from `from` on complete a possible head end
/// (`\n\n` or `\n\r\n`), which every complete head ends with.
fn has_head_end(buffer: &[u8], from: usize) -> bool {
    let tail = &buffer[from.saturating_sub(2)..];
    tail.windows(2).any(|w| w == b"\n\n") || tail.windows(3).any(|w| w == b"\n\r\n")
}

/// What the framing and connection fields of one head say.
#[derive(Debug, Default)]
pub(crate) struct FieldSummary {
    pub(crate) transfer_encoding: bool,
    /// The last transfer coding is chunked.
    pub(crate) chunked: bool,
    length: Option<u64>,
    bad_length: bool,
    close: bool,
    keep_alive_token: bool,
}

impl FieldSummary {
    pub(crate) fn scan(headers: &[httparse::Header<'_>]) -> Self {
        let mut summary = Self::default();
        for header in headers {
            summary.add(header.name.as_bytes(), header.value);
        }
        summary
    }

    fn add(&mut self, name: &[u8], value: &[u8]) {
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            self.transfer_encoding = true;
            if let Some(last) = last_list_item(value) {
                self.chunked = last.eq_ignore_ascii_case(b"chunked");
            }
        } else if name.eq_ignore_ascii_case(b"content-length") {
            self.add_length(value);
        } else if name.eq_ignore_ascii_case(b"connection") {
            self.close |= has_token(value, b"close");
            self.keep_alive_token |= has_token(value, b"keep-alive");
        }
    }

    fn add_length(&mut self, value: &[u8]) {
        if self.bad_length {
            return;
        }
        match merge_content_length(self.length, value) {
            Some(length) => self.length = Some(length),
            None => self.bad_length = true,
        }
    }

    /// The agreed Content-Length, if any field gave one.
    pub(crate) fn content_length(&self) -> Result<Option<u64>, ParseError> {
        if self.bad_length {
            Err(ParseError::BadContentLength)
        } else {
            Ok(self.length)
        }
    }

    /// HTTP/1.1 persists unless told to close; HTTP/1.0 only if asked to.
    fn keep_alive(&self, http11: bool) -> bool {
        !self.close && (http11 || self.keep_alive_token)
    }
}

/// Folds one Content-Length value (possibly a list such as `5, 5`) into
/// what earlier fields said; `None` if invalid or disagreeing.
fn merge_content_length(seen: Option<u64>, value: &[u8]) -> Option<u64> {
    let mut merged = seen;
    for item in value.split(|&b| b == b',') {
        let length = parse_decimal(trim_ows(item))?;
        if merged.is_some_and(|m| m != length) {
            return None;
        }
        merged = Some(length);
    }
    merged
}

fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        acc.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|item| trim_ows(item).eq_ignore_ascii_case(token))
}

fn last_list_item(value: &[u8]) -> Option<&[u8]> {
    value
        .rsplit(|&b| b == b',')
        .map(trim_ows)
        .find(|item| !item.is_empty())
}

fn trim_ows(bytes: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = bytes.iter().position(|b| !is_ows(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything observable about one completed response.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Seen {
        done: Done,
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
        body: Vec<u8>,
    }

    /// Everything observable about feeding one wire buffer, then EOF.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Trace {
        responses: Vec<Seen>,
        /// Total consumed; only compared when no error occurred.
        consumed: usize,
        error: Option<ParseError>,
    }

    struct Setup<'a> {
        max_head: usize,
        capture: bool,
        /// Whether each successive request was HEAD; missing entries: false.
        head_requests: &'a [bool],
        eof: bool,
    }

    const PLAIN: Setup<'static> = Setup {
        max_head: 1024,
        capture: false,
        head_requests: &[],
        eof: true,
    };

    const CAPTURE: Setup<'static> = Setup {
        capture: true,
        ..PLAIN
    };

    /// Feeds `wire` whole, split at every point, and one byte at a time,
    /// asserts all runs observe the same thing, and returns that.
    fn check(wire: &[u8], setup: &Setup<'_>) -> Trace {
        let whole = drive(&[wire], setup);
        for cut in 0..=wire.len() {
            let (a, b) = wire.split_at(cut);
            assert_eq!(drive(&[a, b], setup), whole, "split at {cut}");
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(drive(&bytes, setup), whole, "one byte at a time");
        whole
    }

    fn drive(chunks: &[&[u8]], setup: &Setup<'_>) -> Trace {
        let mut parser = ResponseParser::new(setup.max_head);
        parser.set_capture(setup.capture);
        let mut heads = setup.head_requests.iter().copied();
        parser.start(heads.next().unwrap_or(false));
        let mut trace = Trace {
            responses: Vec::new(),
            consumed: 0,
            error: None,
        };
        for chunk in chunks {
            let mut rest = *chunk;
            loop {
                match parser.feed(rest) {
                    Ok(Feed::Partial { consumed }) => {
                        assert_eq!(consumed, rest.len(), "Partial consumes everything");
                        assert!(consumed == 0 || parser.in_progress());
                        trace.consumed += consumed;
                        break;
                    }
                    Ok(Feed::Done { consumed, done }) => {
                        trace.consumed += consumed;
                        trace.responses.push(observe(&parser, done));
                        parser.start(heads.next().unwrap_or(false));
                        rest = &rest[consumed..];
                        if rest.is_empty() {
                            break;
                        }
                    }
                    Err(error) => return failed(trace, error),
                }
            }
        }
        if setup.eof {
            match parser.eof() {
                Ok(Some(done)) => trace.responses.push(observe(&parser, done)),
                Ok(None) => {}
                Err(error) => return failed(trace, error),
            }
        }
        trace
    }

    fn failed(mut trace: Trace, error: ParseError) -> Trace {
        trace.consumed = 0;
        trace.error = Some(error);
        trace
    }

    fn observe(parser: &ResponseParser, done: Done) -> Seen {
        Seen {
            done,
            status: parser.status(),
            headers: parser.headers_owned(),
            body: parser.body().to_vec(),
        }
    }

    fn done(status: u16, keep_alive: bool, head_bytes: usize, body_bytes: u64) -> Done {
        Done {
            status,
            keep_alive,
            head_bytes,
            body_bytes,
        }
    }

    fn dones(trace: &Trace) -> Vec<Done> {
        trace.responses.iter().map(|r| r.done).collect()
    }

    fn error_of(wire: &[u8], setup: &Setup<'_>) -> Option<ParseError> {
        let trace = check(wire, setup);
        trace.error
    }

    #[test]
    fn content_length_body() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let trace = check(wire, &PLAIN);
        assert_eq!(dones(&trace), [done(200, true, 38, 5)]);
        assert_eq!(trace.consumed, 43);
        assert_eq!(trace.error, None);
    }

    #[test]
    fn zero_content_length_completes_at_head() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(dones(&check(wire, &PLAIN)), [done(200, true, 38, 0)]);
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                     5;name=val\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n";
        let trace = check(wire, &CAPTURE);
        assert_eq!(dones(&trace), [done(200, true, 47, 54)]);
        assert_eq!(trace.responses[0].body, b"hello world");
        assert_eq!(trace.consumed, wire.len());
    }

    #[test]
    fn transfer_encoding_overrides_content_length() {
        let wire =
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n\
                     2\r\nhi\r\n0\r\n\r\n";
        let trace = check(wire, &CAPTURE);
        assert_eq!(dones(&trace), [done(200, true, 74, 12)]);
        assert_eq!(trace.responses[0].body, b"hi");
    }

    #[test]
    fn transfer_encoding_not_ending_in_chunked_reads_until_close() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 2\r\n\r\nabcdef";
        let trace = check(wire, &CAPTURE);
        assert_eq!(dones(&trace), [done(200, false, 72, 6)]);
        assert_eq!(trace.responses[0].body, b"abcdef");
    }

    #[test]
    fn until_close_completes_at_eof() {
        let wire = b"HTTP/1.1 200 OK\r\nServer: t\r\n\r\nsome body";
        let trace = check(wire, &PLAIN);
        assert_eq!(dones(&trace), [done(200, false, 30, 9)]);
        assert_eq!(trace.consumed, 39);
    }

    #[test]
    fn until_close_without_eof_stays_partial() {
        let wire = b"HTTP/1.1 200 OK\r\n\r\nabc";
        let setup = Setup {
            eof: false,
            ..PLAIN
        };
        let trace = check(wire, &setup);
        assert_eq!(dones(&trace), []);
        assert_eq!(trace.consumed, 22);
    }

    #[test]
    fn head_request_has_no_body() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n\
                     HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let setup = Setup {
            head_requests: &[true, false],
            ..PLAIN
        };
        let trace = check(wire, &setup);
        assert_eq!(
            dones(&trace),
            [done(200, true, 38, 0), done(200, true, 38, 5)]
        );
        assert_eq!(trace.consumed, wire.len());
    }

    #[test]
    fn no_content_and_not_modified_have_no_body() {
        let wire = b"HTTP/1.1 204 No Content\r\n\r\n\
                     HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n\
                     HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n";
        let trace = check(wire, &PLAIN);
        assert_eq!(
            dones(&trace),
            [
                done(204, true, 27, 0),
                done(304, true, 49, 0),
                done(204, true, 55, 0)
            ]
        );
    }

    #[test]
    fn interim_responses_are_skipped() {
        let wire = b"HTTP/1.1 100 Continue\r\n\r\n\
                     HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n\
                     HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let trace = check(wire, &CAPTURE);
        assert_eq!(dones(&trace), [done(200, true, 25 + 57 + 38, 2)]);
        let seen = &trace.responses[0];
        assert_eq!(seen.status, 200);
        assert_eq!(
            seen.headers,
            [("Content-Length".to_string(), b"2".to_vec())]
        );
        assert_eq!(seen.body, b"ok");
    }

    #[test]
    fn eof_after_interim_response_is_unexpected() {
        let wire = b"HTTP/1.1 100 Continue\r\n\r\n";
        assert_eq!(error_of(wire, &PLAIN), Some(ParseError::UnexpectedEof));
    }

    #[test]
    fn switching_protocols_is_final_without_body() {
        let wire = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x00";
        let setup = Setup {
            eof: false,
            ..PLAIN
        };
        let trace = check(wire, &setup);
        assert_eq!(dones(&trace), [done(101, false, 77, 0)]);
    }

    #[test]
    fn http10_keep_alive_rules() {
        let close = b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\na";
        assert_eq!(dones(&check(close, &PLAIN)), [done(200, false, 38, 1)]);
        let keep = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\na";
        assert_eq!(dones(&check(keep, &PLAIN)), [done(200, true, 62, 1)]);
        let until_close = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nab";
        assert_eq!(
            dones(&check(until_close, &PLAIN)),
            [done(200, false, 43, 2)]
        );
    }

    #[test]
    fn connection_close_token() {
        let wire = b"HTTP/1.1 200 OK\r\nConnection: upgrade, CLOSE\r\nContent-Length: 1\r\n\r\na";
        assert_eq!(dones(&check(wire, &PLAIN)), [done(200, false, 66, 1)]);
        let not_token = b"HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 1\r\n\r\na";
        assert_eq!(dones(&check(not_token, &PLAIN)), [done(200, true, 58, 1)]);
    }

    #[test]
    fn two_pipelined_responses() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none\
                     HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\ntwo";
        let trace = check(wire, &CAPTURE);
        assert_eq!(
            dones(&trace),
            [done(200, true, 38, 3), done(404, true, 45, 3)]
        );
        assert_eq!(trace.responses[0].body, b"one");
        assert_eq!(trace.responses[1].body, b"two");
        assert_eq!(trace.consumed, wire.len());
    }

    #[test]
    fn three_pipelined_responses_of_mixed_framing() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na\
                     HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n\
                     HTTP/1.1 204 No Content\r\n\r\n";
        let trace = check(wire, &CAPTURE);
        assert_eq!(
            dones(&trace),
            [
                done(200, true, 38, 1),
                done(200, true, 47, 11),
                done(204, true, 27, 0)
            ]
        );
        let bodies: Vec<&[u8]> = trace.responses.iter().map(|r| &r.body[..]).collect();
        assert_eq!(bodies, [&b"a"[..], b"b", b""]);
        assert_eq!(trace.consumed, wire.len());
    }

    #[test]
    fn feed_stops_at_end_of_response() {
        let mut parser = ResponseParser::new(1024);
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1";
        let first = done(200, true, 38, 1);
        assert_eq!(
            parser.feed(wire),
            Ok(Feed::Done {
                consumed: 39,
                done: first
            })
        );
        assert_eq!(
            parser.feed(&wire[39..]),
            Ok(Feed::Done {
                consumed: 0,
                done: first
            })
        );
        parser.start(false);
        assert!(!parser.in_progress());
        assert_eq!(parser.feed(&wire[39..]), Ok(Feed::Partial { consumed: 8 }));
        assert!(parser.in_progress());
    }

    #[test]
    fn leading_blank_lines_count_as_head() {
        let wire = b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(dones(&check(wire, &PLAIN)), [done(200, true, 40, 0)]);
    }

    #[test]
    fn status_line_without_reason() {
        let wire = b"HTTP/1.1 503\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(dones(&check(wire, &CAPTURE)), [done(503, true, 35, 0)]);
    }

    #[test]
    fn head_too_large() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        let exact = Setup {
            max_head: wire.len(),
            ..PLAIN
        };
        assert_eq!(dones(&check(wire, &exact)), [done(200, true, 38, 0)]);
        let smaller = Setup {
            max_head: wire.len() - 1,
            ..PLAIN
        };
        assert_eq!(error_of(wire, &smaller), Some(ParseError::HeadTooLarge));
    }

    #[test]
    fn head_too_large_buffers_at_most_max_head() {
        let mut parser = ResponseParser::new(16);
        assert_eq!(
            parser.feed(b"HTTP/1.1 200 OK\r\n"),
            Err(ParseError::HeadTooLarge)
        );
        let mut parser_split = ResponseParser::new(16);
        assert_eq!(
            parser_split.feed(b"HTTP/1.1 200"),
            Ok(Feed::Partial { consumed: 12 })
        );
        assert_eq!(
            parser_split.feed(b" OK\r\nX: y\r\n"),
            Err(ParseError::HeadTooLarge)
        );
        assert_eq!(parser_split.partial_head.len(), 16);
        parser.start(false);
        assert!(parser.partial_head.is_empty());
    }

    #[test]
    fn too_many_headers() {
        let mut wire = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            wire.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        wire.extend_from_slice(b"\r\n");
        let setup = Setup {
            max_head: 4096,
            ..PLAIN
        };
        assert_eq!(error_of(&wire, &setup), Some(ParseError::TooManyHeaders));
    }

    #[test]
    fn malformed_status_lines() {
        let bad_status = [
            &b"HTTP/1.1 20 OK\r\n\r\n"[..],
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTP/1.1 abc OK\r\n\r\n",
            b"HTTP/1.1 099 Low\r\n\r\n",
        ];
        for wire in bad_status {
            assert_eq!(
                error_of(wire, &PLAIN),
                Some(ParseError::BadStatus),
                "{wire:?}"
            );
        }
        let malformed = [
            &b"HTTX/1.1 200 OK\r\n\r\n"[..],
            b"HTTP/2 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nBad Name: v\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n",
        ];
        for wire in malformed {
            assert_eq!(
                error_of(wire, &PLAIN),
                Some(ParseError::Malformed),
                "{wire:?}"
            );
        }
    }

    #[test]
    fn bad_chunk_sizes() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for size in [&b"zz\r\n"[..], b"10000000000000000\r\n", b"5\nhello\n"] {
            let wire = [head.as_slice(), size].concat();
            assert_eq!(
                error_of(&wire, &PLAIN),
                Some(ParseError::BadChunk),
                "{size:?}"
            );
        }
    }

    #[test]
    fn eof_before_body_ends_is_unexpected() {
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello";
        assert_eq!(error_of(short, &PLAIN), Some(ParseError::UnexpectedEof));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n";
        assert_eq!(error_of(chunked, &PLAIN), Some(ParseError::UnexpectedEof));
        let mid_head = b"HTTP/1.1 200 OK\r\nContent-";
        assert_eq!(error_of(mid_head, &PLAIN), Some(ParseError::UnexpectedEof));
    }

    #[test]
    fn eof_before_any_byte_is_clean() {
        let mut parser = ResponseParser::new(64);
        assert_eq!(parser.eof(), Ok(None));
        assert_eq!(parser.feed(b""), Ok(Feed::Partial { consumed: 0 }));
        assert_eq!(parser.eof(), Ok(None));
        assert_eq!(check(b"", &PLAIN).responses, []);
    }

    #[test]
    fn content_length_validation() {
        let same = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nok";
        assert_eq!(dones(&check(same, &PLAIN)), [done(200, true, 60, 2)]);
        for value in [
            "1, 2",
            "-1",
            "+1",
            "",
            "1 2",
            "0x10",
            "18446744073709551616",
        ] {
            let wire = format!("HTTP/1.1 200 OK\r\nContent-Length: {value}\r\n\r\n");
            let error = error_of(wire.as_bytes(), &PLAIN);
            assert_eq!(error, Some(ParseError::BadContentLength), "{value:?}");
        }
        let conflict = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok";
        assert_eq!(
            error_of(conflict, &PLAIN),
            Some(ParseError::BadContentLength)
        );
    }

    #[test]
    fn capture_on_keeps_headers_and_body() {
        let wire = b"HTTP/1.1 201 Created\r\ncontent-type: text/plain\r\nX-Empty:\r\n\
                     Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let trace = check(wire, &CAPTURE);
        let seen = &trace.responses[0];
        assert_eq!(seen.status, 201);
        let expected = [
            ("content-type", &b"text/plain"[..]),
            ("X-Empty", b""),
            ("Transfer-Encoding", b"chunked"),
        ];
        let headers: Vec<(&str, &[u8])> = seen
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect();
        assert_eq!(headers, expected);
        assert_eq!(seen.body, b"abc");
    }

    #[test]
    fn capture_off_keeps_no_body() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let trace = check(wire, &PLAIN);
        let seen = &trace.responses[0];
        assert_eq!(seen.status, 200);
        assert_eq!(seen.headers, []);
        assert_eq!(seen.body, b"");
        let mut parser = ResponseParser::new(1024);
        let _ = parser.feed(wire);
        assert_eq!(parser.captured.body_mut().capacity(), 0);
        assert!(parser.partial_head.is_empty());
    }

    #[test]
    fn capture_is_bounded() {
        let mut parser = ResponseParser::new(1024);
        parser.set_capture(true);
        parser.set_max_capture(4);
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(parser.feed(wire), Err(ParseError::BodyTooLarge));
        parser.start(false);
        parser.set_max_capture(5);
        assert!(matches!(
            parser.feed(wire),
            Ok(Feed::Done { consumed: 43, .. })
        ));
        assert_eq!(parser.body(), b"hello");
    }

    #[test]
    fn errors_say_what_was_expected() {
        assert_eq!(
            ParseError::TooManyHeaders.to_string(),
            "expected at most 64 header fields in a response head"
        );
        assert_eq!(
            ParseError::BadContentLength.to_string(),
            "expected Content-Length to be a single non-negative decimal integer"
        );
    }

    /// Mutated responses fed in random splits must end in a result, never a
    /// panic, and `Partial` must still consume everything it is given.
    #[test]
    fn mutated_input_never_panics() {
        let seeds: [&[u8]; 3] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.0 204 x\r\n\r\n",
            b"HTTP/1.1 100 C\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;e\r\nabc\r\n0\r\nT: v\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..3000 {
            let mut wire = seeds[round % seeds.len()].to_vec();
            for _ in 0..1 + next() % 3 {
                let at = (next() % wire.len() as u64) as usize;
                wire[at] = b"0aF;:\r\n \x00\xff-,"[(next() % 12) as usize];
            }
            let cut = (next() % (wire.len() as u64 + 1)) as usize;
            let setup = Setup {
                max_head: 16 + (next() % 80) as usize,
                capture: round % 2 == 0,
                head_requests: &[],
                eof: true,
            };
            drive(&[&wire[..cut], &wire[cut..]], &setup);
        }
    }

    #[test]
    fn field_helpers() {
        assert_eq!(trim_ows(b" \tab c\t "), b"ab c");
        assert_eq!(trim_ows(b"  "), b"");
        assert_eq!(last_list_item(b"gzip, chunked ,"), Some(&b"chunked"[..]));
        assert_eq!(parse_decimal(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(merge_content_length(Some(3), b"3"), Some(3));
        assert_eq!(merge_content_length(Some(3), b"4"), None);
    }

    /// Regression: a captured chunked body that overran the capture limit
    /// before a framing error was `BodyTooLarge` when read in small pieces
    /// but `BadChunk` when read at once, because the decoder's error was
    /// returned before the capture limit was looked at.
    #[test]
    fn capture_overrun_before_bad_chunk_is_body_too_large_in_any_reads() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\nabcdefgh\r\nzz\r\n";
        let error_in = |reads: &[&[u8]]| {
            let mut parser = ResponseParser::new(1024);
            parser.set_capture(true);
            parser.set_max_capture(4);
            reads.iter().find_map(|read| parser.feed(read).err())
        };
        assert_eq!(error_in(&[wire]), Some(ParseError::BodyTooLarge));
        for cut in 0..=wire.len() {
            let (a, b) = wire.split_at(cut);
            assert_eq!(
                error_in(&[a, b]),
                Some(ParseError::BodyTooLarge),
                "cut {cut}"
            );
        }
        // Bad framing before the limit is reached stays `BadChunk`.
        let early =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\nzz\r\n8\r\nabcdefgh";
        assert_eq!(error_in(&[early]), Some(ParseError::BadChunk));
    }

    /// Regression: a bad head left without its end was reported as soon as
    /// it was seen when it came in one read, but as `UnexpectedEof` at EOF
    /// when it came in several, since a buffered head is parsed again only
    /// once it could have ended.
    #[test]
    fn eof_gives_a_split_bad_head_the_verdict_of_one_read() {
        assert_eq!(
            error_of(b"HTTP/1.1 2x", &PLAIN),
            Some(ParseError::BadStatus)
        );
        let bad_name = b"HTTP/1.1 200 OK\r\nBad Name: v";
        assert_eq!(error_of(bad_name, &PLAIN), Some(ParseError::Malformed));
        let after_interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTX/1.1";
        assert_eq!(error_of(after_interim, &PLAIN), Some(ParseError::Malformed));
        let cut_short = b"HTTP/1.1 200 OK\r\nContent-";
        assert_eq!(error_of(cut_short, &PLAIN), Some(ParseError::UnexpectedEof));
    }
}

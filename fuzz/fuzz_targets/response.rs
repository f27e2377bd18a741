//! The response parser on arbitrary bytes in arbitrary reads.
//!
//! Input: a max_head byte, a flags byte (capture, EOF at the end, and
//! whether each of the first six requests was HEAD), a capture limit byte,
//! then split points (see `take_splits`) and the wire bytes.
//!
//! Checked: the same bytes fed whole, in the chosen reads and one byte at a
//! time give the same responses (status, fields, body, `Done`) and the same
//! outcome, error kind included; `Partial` consumes all it is given; a completed response repeats
//! its `Done` until `start()`; with capture off the parser holds no more heap
//! than a head of `max_head` bytes can need; and nothing panics after an
//! error.

#![no_main]

use libfuzzer_sys::fuzz_target;
use metron::http::{Done, Feed, ParseError, ResponseParser};
use metron_fuzz::{live, pieces, take_splits, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Responses whose HEAD flag an input chooses; later ones are not HEAD.
const HEAD_FLAGS: usize = 6;

struct Setup {
    max_head: usize,
    capture: bool,
    max_capture: Option<usize>,
    eof: bool,
    head_flags: u8,
}

impl Setup {
    fn take(data: &[u8]) -> Option<(Setup, &[u8])> {
        let (&[head, flags, capture_limit], rest) = data.split_first_chunk::<3>()?;
        let head = usize::from(head);
        let setup = Setup {
            // Tiny limits (even 0) as well as realistic ones up to ~6 KiB.
            max_head: if head < 64 { head } else { 64 + (head - 64) * 32 },
            capture: flags & 1 != 0,
            max_capture: (capture_limit != 255).then_some(usize::from(capture_limit) * 4),
            eof: flags & 2 != 0,
            head_flags: flags >> 2,
        };
        Some((setup, rest))
    }

    fn is_head(&self, response: usize) -> bool {
        response < HEAD_FLAGS && self.head_flags >> response & 1 != 0
    }
}

/// Everything observable about one completed response.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    done: Done,
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

/// Everything observable about feeding one wire, then (maybe) EOF.
#[derive(Debug)]
struct Trace {
    responses: Vec<Seen>,
    consumed: usize,
    error: Option<ParseError>,
}

/// A parser with the heap it holds counted across every call into it.
struct Counted {
    parser: ResponseParser,
    held: isize,
}

impl Counted {
    fn call<T>(&mut self, f: impl FnOnce(&mut ResponseParser) -> T) -> T {
        let before = live() as isize;
        let out = f(&mut self.parser);
        self.held += live() as isize - before;
        out
    }
}

fn drive(reads: &[&[u8]], setup: &Setup) -> Trace {
    let mut p = Counted {
        parser: ResponseParser::new(setup.max_head),
        held: 0,
    };
    p.parser.set_capture(setup.capture);
    if let Some(bytes) = setup.max_capture {
        p.parser.set_max_capture(bytes);
    }
    let mut trace = Trace {
        responses: Vec::new(),
        consumed: 0,
        error: None,
    };
    p.call(|p| p.start(setup.is_head(0)));
    for read in reads {
        let mut rest = *read;
        loop {
            let fed = p.call(|p| p.feed(rest));
            check_memory(&p, setup);
            match fed {
                Ok(Feed::Partial { consumed }) => {
                    assert_eq!(consumed, rest.len(), "Partial consumes everything");
                    assert!(consumed == 0 || p.parser.in_progress());
                    trace.consumed += consumed;
                    break;
                }
                Ok(Feed::Done { consumed, done }) => {
                    assert!(consumed <= rest.len());
                    trace.consumed += consumed;
                    let again = p.call(|p| p.feed(&rest[consumed..]));
                    assert_eq!(again, Ok(Feed::Done { consumed: 0, done }), "Done repeats");
                    trace.responses.push(observe(&p.parser, done, setup));
                    p.call(|p| p.start(setup.is_head(trace.responses.len())));
                    rest = &rest[consumed..];
                    if rest.is_empty() {
                        break;
                    }
                }
                Err(error) => return failed(p, trace, error, rest),
            }
        }
    }
    if setup.eof {
        match p.call(|p| p.eof()) {
            Ok(Some(done)) => trace.responses.push(observe(&p.parser, done, setup)),
            Ok(None) => {}
            Err(error) => return failed(p, trace, error, &[]),
        }
    }
    trace
}

/// With capture off the only heap the parser keeps is the copy of a head
/// split across reads, at most `max_head` bytes; a `Vec` that grew to hold
/// it may have up to twice that (and at least 8 bytes) of capacity.
fn check_memory(p: &Counted, setup: &Setup) {
    if !setup.capture {
        let bound = (2 * setup.max_head).max(8) as isize;
        assert!(
            p.held <= bound,
            "parser holds {} bytes with max_head {}",
            p.held,
            setup.max_head
        );
    }
}

/// After an error the caller drops the connection; calls made anyway must
/// still not panic (their results mean nothing).
fn failed(mut p: Counted, mut trace: Trace, error: ParseError, rest: &[u8]) -> Trace {
    let _ = p.parser.feed(rest);
    let _ = p.parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    let _ = p.parser.eof();
    p.parser.start(false);
    let _ = p.parser.feed(rest);
    let _ = p.parser.eof();
    trace.consumed = 0;
    trace.error = Some(error);
    trace
}

fn observe(parser: &ResponseParser, done: Done, setup: &Setup) -> Seen {
    assert_eq!(parser.status(), done.status);
    assert!((100..=999).contains(&done.status), "{done:?}");
    assert!(
        done.status == 101 || !(100..200).contains(&done.status),
        "an interim response is never final: {done:?}"
    );
    let seen = Seen {
        done,
        status: parser.status(),
        headers: parser.headers_owned(),
        body: parser.body().to_vec(),
    };
    if setup.capture {
        // Decoded bytes never outnumber the wire bytes they came from.
        assert!(seen.body.len() as u64 <= done.body_bytes, "{done:?}");
    } else {
        assert!(seen.headers.is_empty() && seen.body.is_empty());
    }
    seen
}

/// A head split across reads is parsed again only once it could have ended
/// (or fills `max_head`, or the stream ends), so while the stream is open a
/// bad head can be reported by a run that read it at once and not yet by
/// one that read it in pieces. At EOF every run has parsed it.
fn head_error(error: ParseError) -> bool {
    matches!(
        error,
        ParseError::Malformed
            | ParseError::BadStatus
            | ParseError::TooManyHeaders
            | ParseError::HeadTooLarge
    )
}

fn assert_agree(a: &Trace, b: &Trace, eof: bool, what: &str) {
    assert_eq!(a.responses, b.responses, "{what}: responses");
    match (a.error, b.error) {
        (None, None) => assert_eq!(a.consumed, b.consumed, "{what}: consumed"),
        (Some(x), Some(y)) => assert_eq!(x, y, "{what}: errors"),
        (Some(x), None) | (None, Some(x)) => {
            assert!(!eof && head_error(x), "{what}: {x:?} in one run only")
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((setup, rest)) = Setup::take(data) else {
        return;
    };
    let (cuts, wire) = take_splits(rest);
    let whole = drive(&[wire], &setup);
    let split = drive(&pieces(wire, &cuts), &setup);
    assert_agree(&whole, &split, setup.eof, "whole vs split");
    let bytes: Vec<&[u8]> = wire.chunks(1).collect();
    let bytewise = drive(&bytes, &setup);
    assert_agree(&whole, &bytewise, setup.eof, "whole vs byte by byte");
    if whole.error.is_none() {
        assert!(whole.consumed <= wire.len());
    }
});

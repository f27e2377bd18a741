//! The HTTP/2 client session on arbitrary server bytes.
//!
//! Input: a byte choosing how many requests are open (0 to 7) and whether
//! a script reads responses (capture), then split points (see
//! `take_splits`) and the server's bytes, which follow an empty SETTINGS
//! frame so that requests can open.
//!
//! Checked: nothing panics; every request opened comes out exactly once,
//! as a response, a loss or unprocessed, or is still in flight for the
//! connection to count when it ends; the same bytes fed whole, in the
//! chosen reads and one byte at a time give the same outcomes; what the
//! session asks to send stays within a bound of what it received (no
//! amplification); and a finished session takes no request.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use metron::http::h2::{Http2, Settings};
use metron::http::{Event, Request, Session};
use metron_fuzz::{pieces, take_splits};

/// An empty SETTINGS frame: the server's preface.
const SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

/// What became of each request, in order, and how it ended.
#[derive(Debug, PartialEq, Eq)]
struct Trace {
    events: Vec<String>,
    left: Vec<u32>,
    finished: bool,
}

fn drive(reads: &[&[u8]], requests: u32, capture: bool) -> Trace {
    let mut s = Http2::new(Settings {
        capture,
        ..Settings::default()
    });
    let mut sent = s.transmit(0).len();
    s.transmitted(sent);
    s.handle(SETTINGS, 0);
    let get = Request::new(Bytes::from_static(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"), false);
    let mut opened = 0;
    for tag in 0..requests {
        if s.open(&get, tag, 0).is_ok() {
            opened += 1;
        }
    }
    let mut events = Vec::new();
    let mut answered = Vec::new();
    let mut received = 0;
    for read in reads {
        s.handle(read, 0);
        received += read.len();
        take(&mut s, &mut events, &mut answered);
        let out = s.transmit(0).len();
        s.transmitted(out);
        sent += out;
        // Acks, window updates and resets answer what came, a few frames
        // for each one received: never more than a constant times it.
        assert!(
            sent <= 4096 + 16 * received + 64 * opened as usize,
            "{sent} bytes out for {received} in"
        );
    }
    s.handle_eof(0);
    take(&mut s, &mut events, &mut answered);
    let mut left = Vec::new();
    s.drain(&mut left);
    for &t in &left {
        assert!(!answered.contains(&t), "request {t} came out twice");
    }
    assert_eq!(answered.len() + left.len(), opened as usize, "every request comes out once");
    let finished = s.is_finished();
    assert!(finished, "the end of the stream finishes the session");
    assert!(s.open(&get, 99, 0).is_err(), "a finished session takes no request");
    Trace {
        events,
        left,
        finished,
    }
}

/// Takes the session's events, noting which requests they give back.
fn take(s: &mut Http2<u32>, events: &mut Vec<String>, answered: &mut Vec<u32>) {
    while let Some(e) = s.poll_event() {
        let tag = match &e {
            Event::Response { tag, .. } | Event::Lost { tag, .. } | Event::Unprocessed { tag } => {
                Some(*tag)
            }
            _ => None,
        };
        if let Some(t) = tag {
            assert!(!answered.contains(&t), "request {t} came out twice");
            answered.push(t);
        }
        if let Event::Response { .. } = e {
            // Capture keeps what it read; without it nothing is kept.
            let c = s.captured();
            let _ = (c.fields().count(), c.body().len());
        }
        events.push(format!("{e:?}"));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    let requests = u32::from(shape % 8);
    let capture = shape & 8 != 0;
    let (cuts, wire) = take_splits(rest);
    let whole = drive(&[wire], requests, capture);
    let split = drive(&pieces(wire, &cuts), requests, capture);
    assert_eq!(whole, split, "whole vs split");
    let bytes: Vec<&[u8]> = wire.chunks(1).collect();
    assert_eq!(whole, drive(&bytes, requests, capture), "whole vs byte by byte");
});

//! The chunked decoder on arbitrary bytes in arbitrary reads, against a
//! plain reference decoder written from RFC 9112 §7.1 and the limits the
//! decoder documents.
//!
//! Input: a padding switch, split points (see `take_splits`), then the wire
//! bytes. When the switch's low bit is set, two more `u16`s say where in the
//! wire to repeat a byte and how many times, so that inputs of a few bytes
//! reach the 4 KiB extension and 16 KiB trailer limits (libFuzzer's inputs
//! stay at 4 KiB and under).
//!
//! Checked: the decoder agrees with the reference (so when it says done, what
//! it consumed is a well-formed chunked body ending in its terminator, and the
//! decoded bytes are that body's data); the same bytes fed whole, in the
//! chosen reads and one byte at a time decode alike; decoding without output
//! frames alike; decoded length <= consumed <= input length; an unfinished
//! body consumes every read; calls after the end or an error do not panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use metron::http::h1::chunked::{BadChunk, MAX_EXTENSION_BYTES, MAX_SIZE_DIGITS, MAX_TRAILER_BYTES};
use metron::http::ChunkedDecoder;
use metron_fuzz::{pieces, take_splits};

/// What a whole input is, as a chunked body.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// A complete body of `consumed` bytes, decoding to `data`.
    Done { consumed: usize, data: Vec<u8> },
    /// A correct prefix of a body, whose data so far is `data`.
    Short { data: Vec<u8> },
    Bad,
}

/// One step of the reference: a result, or the input ran out.
enum Step<T> {
    Ok(T),
    Short,
    Bad,
}

/// The line starting at `at`, without its CR, and whether the CR was there.
fn line(wire: &[u8], at: usize) -> (&[u8], bool) {
    let rest = &wire[at..];
    match rest.iter().position(|&b| b == b'\r') {
        Some(cr) => (&rest[..cr], true),
        None => (rest, false),
    }
}

fn forbidden(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// A size line: hex digits, optional whitespace, then an optional `;` and
/// extension up to CR. Every check holds for a prefix too, so a line cut
/// short is `Short` exactly when nothing in it is wrong yet.
fn size_line(text: &[u8], complete: bool) -> Step<u64> {
    let digits = text.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits > usize::from(MAX_SIZE_DIGITS) {
        return Step::Bad;
    }
    if digits == 0 {
        return if text.is_empty() && !complete {
            Step::Short
        } else {
            Step::Bad
        };
    }
    let rest = &text[digits..];
    let space = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    match rest[space..].split_first() {
        None => {}
        Some((b';', ext)) if ext.len() <= MAX_EXTENSION_BYTES && !ext.iter().any(|&b| forbidden(b)) => {}
        Some(_) => return Step::Bad,
    }
    if !complete {
        return Step::Short;
    }
    let hex = std::str::from_utf8(&text[..digits]).unwrap();
    Step::Ok(u64::from_str_radix(hex, 16).unwrap())
}

/// Whether the LF after a CR at `cr` is there.
fn lf_after(wire: &[u8], cr: usize) -> Step<()> {
    match wire.get(cr + 1) {
        None => Step::Short,
        Some(b'\n') => Step::Ok(()),
        Some(_) => Step::Bad,
    }
}

fn reference(wire: &[u8]) -> Outcome {
    let mut data = Vec::new();
    let mut at = 0;
    macro_rules! step {
        ($e:expr) => {
            match $e {
                Step::Ok(v) => v,
                Step::Short => return Outcome::Short { data },
                Step::Bad => return Outcome::Bad,
            }
        };
    }
    loop {
        let (text, complete) = line(wire, at);
        let size = step!(size_line(text, complete));
        step!(lf_after(wire, at + text.len()));
        at += text.len() + 2;
        if size == 0 {
            break;
        }
        let available = (wire.len() - at) as u64;
        if available < size {
            data.extend_from_slice(&wire[at..]);
            return Outcome::Short { data };
        }
        let end = at + size as usize;
        data.extend_from_slice(&wire[at..end]);
        at = end;
        match wire.get(at) {
            None => return Outcome::Short { data },
            Some(b'\r') => {}
            Some(_) => return Outcome::Bad,
        }
        step!(lf_after(wire, at));
        at += 2;
    }
    // Trailer lines, counted together with their CRs, up to an empty line.
    let mut trailer = 0;
    loop {
        let (text, complete) = line(wire, at);
        if text.is_empty() && complete {
            step!(lf_after(wire, at));
            return Outcome::Done {
                consumed: at + 2,
                data,
            };
        }
        trailer += text.len() + usize::from(complete);
        if trailer > MAX_TRAILER_BYTES || text.iter().any(|&b| forbidden(b)) {
            return Outcome::Bad;
        }
        if !complete {
            return Outcome::Short { data };
        }
        step!(lf_after(wire, at + text.len()));
        at += text.len() + 2;
    }
}

/// Feeds `reads` in turn, as a response parser would.
fn decode(reads: &[&[u8]], keep: bool) -> Result<(usize, bool, Vec<u8>), BadChunk> {
    let mut decoder = ChunkedDecoder::new();
    let mut out = Vec::new();
    let mut consumed = 0;
    for read in reads {
        let result = decoder.decode(read, keep.then_some(&mut out));
        let (n, done) = match result {
            Ok(r) => r,
            Err(e) => {
                let _ = decoder.decode(read, Some(&mut out));
                return Err(e);
            }
        };
        consumed += n;
        assert!(n <= read.len());
        if done {
            assert!(decoder.is_done());
            let again = decoder.decode(&read[n..], Some(&mut out));
            assert_eq!(again, Ok((0, true)), "a finished body takes nothing more");
            return Ok((consumed, true, out));
        }
        assert_eq!(n, read.len(), "an unfinished body consumes everything");
    }
    Ok((consumed, false, out))
}

/// Longest run of repeated bytes: past the trailer limit with room to spare.
const MAX_PAD: usize = MAX_TRAILER_BYTES + 2 * MAX_EXTENSION_BYTES;

/// Takes the padding switch (and where and how much, when it is on).
fn take_padding(data: &[u8]) -> Option<(Option<(usize, usize)>, &[u8])> {
    let (&switch, rest) = data.split_first()?;
    if switch & 1 == 0 {
        return Some((None, rest));
    }
    let (&[a0, a1, n0, n1], rest) = rest.split_first_chunk::<4>()?;
    let at = usize::from(u16::from_le_bytes([a0, a1]));
    let len = usize::from(u16::from_le_bytes([n0, n1])) % (MAX_PAD + 1);
    Some((Some((at, len)), rest))
}

/// `wire` with its byte at `at` (modulo its length) repeated `len` times.
fn padded(wire: &[u8], padding: Option<(usize, usize)>) -> Vec<u8> {
    let mut out = wire.to_vec();
    if let Some((at, len)) = padding.filter(|_| !wire.is_empty()) {
        let at = at % wire.len();
        let run = vec![wire[at]; len];
        out.splice(at..at, run);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((padding, rest)) = take_padding(data) else {
        return;
    };
    let (cuts, wire) = take_splits(rest);
    let wire = &padded(wire, padding)[..];
    let whole = decode(&[wire], true);
    let expected = match reference(wire) {
        Outcome::Done { consumed, data } => Ok((consumed, true, data)),
        Outcome::Short { data } => Ok((wire.len(), false, data)),
        Outcome::Bad => Err(BadChunk),
    };
    assert_eq!(whole, expected, "decoder vs reference");
    if let Ok((consumed, _, out)) = &whole {
        assert!(out.len() <= *consumed && *consumed <= wire.len());
    }
    assert_eq!(decode(&pieces(wire, &cuts), true), whole, "whole vs split");
    let bytes: Vec<&[u8]> = wire.chunks(1).collect();
    assert_eq!(decode(&bytes, true), whole, "whole vs byte by byte");
    let framing = decode(&pieces(wire, &cuts), false).map(|(n, done, _)| (n, done));
    assert_eq!(framing, whole.map(|(n, done, _)| (n, done)), "without output");
});

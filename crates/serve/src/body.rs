//! Request bodies: consuming exactly the bytes a request's framing says are
//! its body, by Content-Length or by chunked transfer coding.
//!
//! The decoder works on whatever the connection has buffered and reports how
//! much it used, so a body of any size streams through a small buffer; an
//! incomplete chunk-size or trailer line is simply left in the buffer until
//! more bytes arrive. Bytes are copied out only when something wants them
//! (a [`Sink`]): a recorded request, or an `--llm` route, which reads the
//! JSON it is sent.
//!
//! This decoder is kept apart from the load generator's
//! (`metron-core`'s `http::h1::chunked`) on purpose. The two sides want opposite
//! things: the load generator is strict (a bare LF ends no line there) so a
//! broken server is reported, not hidden, while this target accepts a bare
//! LF and lets whatever a client sends reach its counters, so the tests and
//! `metron serve` measure clients rather than refuse them. Sharing one would
//! also make the server depend on the load generator, which it must not
//! (docs/ARCHITECTURE.md).

/// Longest chunk-size line (with extensions) or trailer line accepted.
const MAX_LINE: usize = 4096;
/// Most trailer bytes accepted after the last chunk.
const MAX_TRAILERS: usize = 64 * 1024;

/// Where the bytes of a request body go as they are read, when anything
/// wants them.
pub(crate) trait Sink {
    /// Takes the next bytes of the body.
    fn take(&mut self, bytes: &[u8]);
}

/// A recorded request's copy of its body.
impl Sink for Vec<u8> {
    fn take(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Two sinks fed the same bytes, either of them absent: a recorded
/// request's copy (inspection) and an `--llm` route's, say.
pub(crate) struct Both<'a, A, B>(pub Option<&'a mut A>, pub Option<&'a mut B>);

impl<A: Sink, B: Sink> Sink for Both<'_, A, B> {
    fn take(&mut self, bytes: &[u8]) {
        if let Some(a) = self.0.as_deref_mut() {
            a.take(bytes);
        }
        if let Some(b) = self.1.as_deref_mut() {
            b.take(bytes);
        }
    }
}

impl<A, B> Both<'_, A, B> {
    /// Itself, unless neither sink is there: then the body's bytes are
    /// skipped, never copied.
    pub(crate) fn wanted(self) -> Option<Self> {
        (self.0.is_some() || self.1.is_some()).then_some(self)
    }
}

/// The body's bytes do not follow its framing; the connection is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Malformed;

/// Progress through one request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyDecoder {
    /// This many body bytes are still to come.
    Length(u64),
    Chunked(Chunked),
}

/// Where a chunked body stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chunked {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(u64),
    /// Expecting the CRLF that closes a chunk's data.
    DataEnd,
    /// After the last chunk, reading trailer lines; so many bytes so far.
    Trailers(usize),
    Done,
}

impl BodyDecoder {
    pub(crate) fn chunked() -> BodyDecoder {
        BodyDecoder::Chunked(Chunked::Size)
    }

    /// Consumes body bytes from the front of `buf`, handing the payload
    /// to `keep` if given. Returns the bytes used and whether the body is
    /// complete.
    pub(crate) fn feed(
        &mut self,
        buf: &[u8],
        keep: Option<&mut dyn Sink>,
    ) -> Result<(usize, bool), Malformed> {
        match self {
            BodyDecoder::Length(left) => Ok(take_length(left, buf, keep)),
            BodyDecoder::Chunked(state) => feed_chunked(state, buf, keep),
        }
    }
}

fn take_length(left: &mut u64, buf: &[u8], keep: Option<&mut dyn Sink>) -> (usize, bool) {
    let used = take(left, buf.len());
    if let Some(keep) = keep {
        keep.take(&buf[..used]);
    }
    (used, *left == 0)
}

/// Takes up to `available` of the `left` bytes still expected.
fn take(left: &mut u64, available: usize) -> usize {
    let used = usize::try_from(*left).map_or(available, |l| l.min(available));
    *left -= used as u64;
    used
}

fn feed_chunked(
    state: &mut Chunked,
    buf: &[u8],
    mut keep: Option<&mut dyn Sink>,
) -> Result<(usize, bool), Malformed> {
    let mut pos = 0;
    while *state != Chunked::Done {
        let rest = &buf[pos..];
        let used = match state {
            Chunked::Size => size_line(state, rest)?,
            Chunked::Data(left) => {
                let used = take(left, rest.len());
                if let Some(keep) = keep.as_deref_mut() {
                    keep.take(&rest[..used]);
                }
                if *left == 0 {
                    *state = Chunked::DataEnd;
                }
                used
            }
            Chunked::DataEnd => data_end(state, rest)?,
            Chunked::Trailers(seen) => {
                let seen = *seen;
                trailer_line(state, seen, rest)?
            }
            Chunked::Done => 0,
        };
        if used == 0 && *state != Chunked::Done {
            return Ok((pos, false)); // needs more bytes
        }
        pos += used;
    }
    Ok((pos, true))
}

/// Reads `<hex size>[;extensions]\r\n`.
fn size_line(state: &mut Chunked, buf: &[u8]) -> Result<usize, Malformed> {
    let Some((line, used)) = line(buf)? else {
        return Ok(0);
    };
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let after = &line[digits..];
    let extension_or_end = after.is_empty() || matches!(after[0], b';' | b' ' | b'\t');
    if digits == 0 || !extension_or_end {
        return Err(Malformed);
    }
    let size = parse_hex(&line[..digits])?;
    *state = match size {
        0 => Chunked::Trailers(0),
        n => Chunked::Data(n),
    };
    Ok(used)
}

fn parse_hex(digits: &[u8]) -> Result<u64, Malformed> {
    let text = std::str::from_utf8(digits).map_err(|_| Malformed)?;
    u64::from_str_radix(text, 16).map_err(|_| Malformed)
}

/// Reads the CRLF (or bare LF) after a chunk's data.
fn data_end(state: &mut Chunked, buf: &[u8]) -> Result<usize, Malformed> {
    let used = match buf {
        [] | [b'\r'] => return Ok(0),
        [b'\r', b'\n', ..] => 2,
        [b'\n', ..] => 1,
        _ => return Err(Malformed),
    };
    *state = Chunked::Size;
    Ok(used)
}

/// Skips one trailer line; an empty line ends the body.
fn trailer_line(state: &mut Chunked, seen: usize, buf: &[u8]) -> Result<usize, Malformed> {
    let Some((line, used)) = line(buf)? else {
        return Ok(0);
    };
    let seen = seen + used;
    if seen > MAX_TRAILERS {
        return Err(Malformed);
    }
    *state = if line.is_empty() {
        Chunked::Done
    } else {
        Chunked::Trailers(seen)
    };
    Ok(used)
}

/// The first line of `buf` without its line ending, and the bytes it used;
/// `None` while the line is incomplete.
fn line(buf: &[u8]) -> Result<Option<(&[u8], usize)>, Malformed> {
    let Some(end) = buf.iter().take(MAX_LINE).position(|&b| b == b'\n') else {
        return if buf.len() >= MAX_LINE {
            Err(Malformed)
        } else {
            Ok(None)
        };
    };
    let line = &buf[..end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    Ok(Some((line, end + 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` to a fresh decoder in pieces of `step` bytes, the way a
    /// connection would (unused bytes stay buffered for the next round).
    fn decode(mut decoder: BodyDecoder, wire: &[u8], step: usize) -> Result<Vec<u8>, Malformed> {
        let mut body = Vec::new();
        let mut buffered = Vec::new();
        for piece in wire.chunks(step) {
            buffered.extend_from_slice(piece);
            let (used, done) = decoder.feed(&buffered, Some(&mut body))?;
            buffered.drain(..used);
            if done {
                assert!(buffered.is_empty(), "left over: {buffered:?}");
                return Ok(body);
            }
        }
        panic!("body incomplete after {wire:?}");
    }

    #[test]
    fn length_bodies_stop_at_their_length() {
        let mut decoder = BodyDecoder::Length(3);
        let mut body = Vec::new();
        assert_eq!(decoder.feed(b"ab", Some(&mut body)), Ok((2, false)));
        assert_eq!(decoder.feed(b"cGET", Some(&mut body)), Ok((1, true)));
        assert_eq!(body, b"abc");
    }

    #[test]
    fn chunked_bodies_decode_in_any_split() {
        let wire = b"5\r\nload \r\n4;ext=1\r\ngen \r\nC\r\nrated\r\n\r\nok.\r\n0\r\nX-T: 1\r\n\r\n";
        for step in 1..wire.len() {
            let body = decode(BodyDecoder::chunked(), wire, step).unwrap();
            assert_eq!(body, b"load gen rated\r\n\r\nok.", "step {step}");
        }
    }

    #[test]
    fn chunked_decoding_leaves_the_next_request_alone() {
        let mut decoder = BodyDecoder::chunked();
        let wire = b"1\r\na\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
        let (used, done) = decoder.feed(wire, None).unwrap();
        assert!(done);
        assert_eq!(&wire[used..], b"GET / HTTP/1.1\r\n");
    }

    #[test]
    fn bare_line_feeds_are_tolerated() {
        let body = decode(BodyDecoder::chunked(), b"2\nhi\n0\n\n", 64).unwrap();
        assert_eq!(body, b"hi");
    }

    #[test]
    fn broken_framing_is_malformed() {
        for wire in [
            &b"zz\r\n"[..],
            b"\r\n",
            b"4x\r\n",
            b"2\r\nhiX\r\n",
            b"11111111111111111\r\n",
        ] {
            let mut decoder = BodyDecoder::chunked();
            assert_eq!(decoder.feed(wire, None), Err(Malformed), "{wire:?}");
        }
        let endless = vec![b'1'; MAX_LINE + 1];
        assert_eq!(BodyDecoder::chunked().feed(&endless, None), Err(Malformed));
    }

    #[test]
    fn endless_trailers_are_malformed() {
        let mut decoder = BodyDecoder::chunked();
        assert_eq!(decoder.feed(b"0\r\n", None), Ok((3, false)));
        let line = b"X-Pad: 0123456789012345678901234567890123456789\r\n";
        let result = (0..MAX_TRAILERS).find_map(|_| match decoder.feed(line, None) {
            Ok((used, false)) => {
                assert_eq!(used, line.len());
                None
            }
            other => Some(other),
        });
        assert_eq!(result, Some(Err(Malformed)));
    }
}

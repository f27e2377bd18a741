//! Incremental decoder for the chunked transfer coding (RFC 9112 §7.1).
//!
//! It is a hand-written byte-level state machine rather than a parser over a
//! buffered line because chunk framing arrives split at arbitrary points, and
//! this sits on the hot path of every chunked response: the decoder keeps no
//! buffer at all, steps byte by byte only through the short framing lines and
//! skips over chunk data in bulk.
//!
//! Line endings are strict: every framing line and trailer line must end in
//! CRLF, and a bare LF is a `BadChunk` error. RFC 9112 only lets recipients
//! relax this for start lines and field lines, and lenient chunk framing is a
//! known source of message-desync bugs, so a load generator that accepts it
//! would hide a broken server instead of reporting it.
//!
//! Everything a hostile peer could stretch is bounded: size digits, extension
//! bytes per size line and the total trailer section.

/// The body's chunked framing is broken: the one way decoding fails. The
/// decoder owns this error, so that the response parser and request
/// splitting, which both use it, depend on the decoder and not on each
/// other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected chunked framing: hex size, optional extensions, CRLF, data, CRLF")]
pub struct BadChunk;

/// Sixteen hex digits fill a `u64`, so capping the digit count rules out
/// overflow without a checked shift on every digit (leading zeros count too).
pub const MAX_SIZE_DIGITS: u8 = 16;
/// Extensions are skipped, never stored; the cap stops a peer from stalling
/// the connection on an endless size line.
pub const MAX_EXTENSION_BYTES: usize = 4096;
/// Trailers are skipped, never stored; the cap bounds how long the decoder
/// can be kept in the trailer section.
pub const MAX_TRAILER_BYTES: usize = 16 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Hex digits of a chunk size.
    Size,
    /// Whitespace after the size digits, before `;` or CR.
    SizeSpace,
    /// A chunk extension, skipped up to CR.
    Extension,
    /// The LF that ends a size line.
    SizeLf,
    /// Chunk data with this many bytes still to come.
    Data(u64),
    /// The CRLF that ends chunk data.
    DataCr,
    DataLf,
    /// Start of a trailer line, or the CR of the empty line ending the body.
    TrailerStart,
    /// Inside a trailer line, skipped up to CR.
    TrailerLine,
    TrailerLf,
    /// The LF of the empty line that ends the body.
    FinalLf,
    Done,
}

/// Decoder for one chunked body; `Copy` and small so the response parser can
/// keep it inline in its framing enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkedDecoder {
    state: State,
    size: u64,
    digits: u8,
    /// Extension bytes on the current size line.
    extension: usize,
    /// Trailer bytes so far, across all trailer lines.
    trailer: usize,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkedDecoder {
    pub const fn new() -> Self {
        Self {
            state: State::Size,
            size: 0,
            digits: 0,
            extension: 0,
            trailer: 0,
        }
    }

    /// True once the final CRLF after the last chunk (and trailers) was read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes framing and data from `data`, appending decoded data to `out`
    /// when given. Returns the bytes consumed and whether the body ended;
    /// bytes after the end are left unconsumed because they belong to the
    /// next pipelined message. When the body has not ended, all of `data` was
    /// consumed.
    pub fn decode(
        &mut self,
        data: &[u8],
        mut out: Option<&mut Vec<u8>>,
    ) -> Result<(usize, bool), BadChunk> {
        let mut at = 0;
        while at < data.len() && self.state != State::Done {
            if let State::Data(remaining) = self.state {
                at += self.take_data(&data[at..], remaining, out.as_deref_mut());
            } else {
                self.step(data[at])?;
                at += 1;
            }
        }
        Ok((at, self.is_done()))
    }

    fn take_data(&mut self, data: &[u8], remaining: u64, out: Option<&mut Vec<u8>>) -> usize {
        let take = usize::try_from(remaining).map_or(data.len(), |r| r.min(data.len()));
        if let Some(out) = out {
            out.extend_from_slice(&data[..take]);
        }
        // `take` never exceeds `remaining`, so this cannot wrap.
        let left = remaining - take as u64;
        self.state = if left == 0 {
            State::DataCr
        } else {
            State::Data(left)
        };
        take
    }

    fn step(&mut self, byte: u8) -> Result<(), BadChunk> {
        self.state = match self.state {
            State::Size => self.size_byte(byte)?,
            State::SizeSpace => size_space_byte(byte)?,
            State::Extension => self.extension_byte(byte)?,
            State::SizeLf => expect(byte, b'\n', self.after_size_line())?,
            State::DataCr => expect(byte, b'\r', State::DataLf)?,
            State::DataLf => expect(byte, b'\n', self.next_size())?,
            State::TrailerStart if byte == b'\r' => State::FinalLf,
            State::TrailerStart | State::TrailerLine => self.trailer_byte(byte)?,
            State::TrailerLf => expect(byte, b'\n', State::TrailerStart)?,
            State::FinalLf => expect(byte, b'\n', State::Done)?,
            // `decode` handles these without stepping; staying put is harmless.
            State::Data(_) | State::Done => self.state,
        };
        Ok(())
    }

    fn size_byte(&mut self, byte: u8) -> Result<State, BadChunk> {
        if let Some(value) = hex_value(byte) {
            if self.digits == MAX_SIZE_DIGITS {
                return Err(BadChunk);
            }
            self.size = (self.size << 4) | u64::from(value);
            self.digits += 1;
            return Ok(State::Size);
        }
        if self.digits == 0 {
            return Err(BadChunk);
        }
        size_space_byte(byte)
    }

    fn extension_byte(&mut self, byte: u8) -> Result<State, BadChunk> {
        if byte == b'\r' {
            return Ok(State::SizeLf);
        }
        self.extension += 1;
        if self.extension > MAX_EXTENSION_BYTES || is_forbidden_in_line(byte) {
            return Err(BadChunk);
        }
        Ok(State::Extension)
    }

    fn trailer_byte(&mut self, byte: u8) -> Result<State, BadChunk> {
        self.trailer += 1;
        if self.trailer > MAX_TRAILER_BYTES {
            return Err(BadChunk);
        }
        match byte {
            b'\r' => Ok(State::TrailerLf),
            _ if is_forbidden_in_line(byte) => Err(BadChunk),
            _ => Ok(State::TrailerLine),
        }
    }

    fn after_size_line(&self) -> State {
        if self.size == 0 {
            State::TrailerStart
        } else {
            State::Data(self.size)
        }
    }

    fn next_size(&mut self) -> State {
        self.size = 0;
        self.digits = 0;
        self.extension = 0;
        State::Size
    }
}

/// After the size digits only optional whitespace, then `;` or CR may follow.
fn size_space_byte(byte: u8) -> Result<State, BadChunk> {
    match byte {
        b' ' | b'\t' => Ok(State::SizeSpace),
        b';' => Ok(State::Extension),
        b'\r' => Ok(State::SizeLf),
        _ => Err(BadChunk),
    }
}

fn expect(byte: u8, wanted: u8, next: State) -> Result<State, BadChunk> {
    if byte == wanted {
        Ok(next)
    } else {
        Err(BadChunk)
    }
}

/// A bare LF (strict line endings) or another control byte inside a line.
fn is_forbidden_in_line(byte: u8) -> bool {
    (byte < 0x20 && byte != b'\t') || byte == 0x7f
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `wire` whole, then split at every point and one byte at a
    /// time, asserting every run agrees; returns the whole-input result.
    fn decode_all_splits(wire: &[u8]) -> Result<(usize, bool, Vec<u8>), BadChunk> {
        let whole = decode_chunks(&[wire]);
        for cut in 0..=wire.len() {
            let (a, b) = wire.split_at(cut);
            assert_eq!(decode_chunks(&[a, b]), whole, "split at {cut}");
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(decode_chunks(&bytes), whole, "one byte at a time");
        whole
    }

    fn decode_chunks(chunks: &[&[u8]]) -> Result<(usize, bool, Vec<u8>), BadChunk> {
        let mut decoder = ChunkedDecoder::new();
        let mut out = Vec::new();
        let mut consumed = 0;
        for chunk in chunks {
            let (n, done) = decoder.decode(chunk, Some(&mut out))?;
            consumed += n;
            if done {
                return Ok((consumed, true, out));
            }
            assert_eq!(n, chunk.len(), "an unfinished body consumes everything");
        }
        Ok((consumed, false, out))
    }

    #[test]
    fn decodes_simple_body() {
        let wire = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        assert_eq!(
            decode_all_splits(wire),
            Ok((wire.len(), true, b"hello world".to_vec()))
        );
    }

    #[test]
    fn leaves_bytes_after_the_body() {
        let wire = b"3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n";
        assert_eq!(decode_all_splits(wire), Ok((13, true, b"abc".to_vec())));
    }

    #[test]
    fn skips_extensions_and_trailers() {
        let wire = b"4;name=value\r\nWiki\r\nA ; a=1;b=\"x y\"\r\n0123456789\r\n\
                     0;last\r\nExpires: never\r\nX-Sum: 1\r\n\r\n";
        assert_eq!(
            decode_all_splits(wire),
            Ok((wire.len(), true, b"Wiki0123456789".to_vec()))
        );
    }

    #[test]
    fn accepts_uppercase_hex_and_leading_zeros() {
        let wire = b"000B\r\nhello world\r\n00\r\n\r\n";
        assert_eq!(
            decode_all_splits(wire),
            Ok((wire.len(), true, b"hello world".to_vec()))
        );
    }

    #[test]
    fn unfinished_body_consumes_everything() {
        assert_eq!(
            decode_all_splits(b"5\r\nhel"),
            Ok((6, false, b"hel".to_vec()))
        );
    }

    #[test]
    fn works_without_output() {
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(
            decoder.decode(b"2\r\nok\r\n0\r\n\r\nX", None),
            Ok((12, true))
        );
        assert!(decoder.is_done());
    }

    #[test]
    fn rejects_non_hex_size() {
        assert_eq!(decode_all_splits(b"zz\r\n"), Err(BadChunk));
        assert_eq!(decode_all_splits(b"5x\r\nhello"), Err(BadChunk));
        assert_eq!(decode_all_splits(b"\r\n"), Err(BadChunk));
        assert_eq!(decode_all_splits(b";ext\r\n"), Err(BadChunk));
    }

    #[test]
    fn rejects_more_than_sixteen_size_digits() {
        let sixteen = b"ffffffffffffffff\r\nab";
        assert_eq!(
            decode_all_splits(sixteen),
            Ok((sixteen.len(), false, b"ab".to_vec()))
        );
        assert_eq!(decode_all_splits(b"10000000000000000\r\n"), Err(BadChunk));
        assert_eq!(decode_all_splits(b"00000000000000001\r\n"), Err(BadChunk));
    }

    #[test]
    fn rejects_bare_lf() {
        assert_eq!(decode_all_splits(b"5\nhello"), Err(BadChunk));
        assert_eq!(decode_all_splits(b"5;x\nhello"), Err(BadChunk));
        assert_eq!(decode_all_splits(b"1\r\na\n0"), Err(BadChunk));
        assert_eq!(decode_all_splits(b"0\r\nA: b\n\r\n"), Err(BadChunk));
        assert_eq!(decode_all_splits(b"0\r\n\n"), Err(BadChunk));
    }

    #[test]
    fn rejects_data_longer_than_size() {
        assert_eq!(decode_all_splits(b"3\r\nabcd\r\n"), Err(BadChunk));
    }

    #[test]
    fn bounds_extension_length() {
        let mut wire = b"1;".to_vec();
        wire.extend_from_slice(&[b'x'; MAX_EXTENSION_BYTES]);
        wire.extend_from_slice(b"\r\na\r\n0\r\n\r\n");
        assert_eq!(decode_chunks(&[&wire]).map(|r| r.2), Ok(b"a".to_vec()));
        wire.insert(2, b'x');
        assert_eq!(decode_chunks(&[&wire]), Err(BadChunk));
    }

    #[test]
    fn bounds_trailer_length() {
        let mut wire = b"0\r\nX: ".to_vec();
        wire.extend_from_slice(&[b'y'; MAX_TRAILER_BYTES - 4]);
        wire.extend_from_slice(b"\r\n\r\n");
        assert_eq!(decode_chunks(&[&wire]), Ok((wire.len(), true, Vec::new())));
        wire.insert(4, b'y');
        assert_eq!(decode_chunks(&[&wire]), Err(BadChunk));
    }
}

//! HTTP/2 frames (RFC 9113 §4, §6) as the client session reads and writes
//! them: a frame header parsed in place from the read buffer, and writers
//! that append whole frames to the session's output.

/// Frame types.
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

/// Flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

/// SETTINGS identifiers.
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// Error codes (RFC 9113 §7).
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The client connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The smallest SETTINGS_MAX_FRAME_SIZE, and the default.
pub const MIN_MAX_FRAME: u32 = 16_384;
/// The largest SETTINGS_MAX_FRAME_SIZE allowed.
pub const MAX_MAX_FRAME: u32 = (1 << 24) - 1;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// Every window's size before SETTINGS or WINDOW_UPDATE change it.
pub const INITIAL_WINDOW: u32 = 65_535;
/// The length of a frame header.
pub const HEADER_LEN: usize = 9;

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// Parses the header at the start of `bytes`, if all nine bytes are
    /// there.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Option<Head> {
        let h: &[u8; HEADER_LEN] = bytes.get(..HEADER_LEN)?.try_into().ok()?;
        Some(Head {
            len: usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        })
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Appends a frame header.
#[inline]
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    let s = stream.to_be_bytes();
    out.extend_from_slice(&[
        (len >> 16) as u8,
        (len >> 8) as u8,
        len as u8,
        kind,
        flags,
        s[0],
        s[1],
        s[2],
        s[3],
    ]);
}

/// Appends a SETTINGS frame with these (identifier, value) pairs.
pub fn put_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    put_head(out, settings.len() * 6, SETTINGS, 0, 0);
    for &(id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, SETTINGS, ACK, 0);
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    put_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn put_ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    put_head(out, payload.len(), PING, ACK, 0);
    out.extend_from_slice(payload);
}

/// Appends a header block as HEADERS and, where the block is longer than
/// the peer's largest frame, CONTINUATION frames.
pub fn put_headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max: usize) {
    let end = if end_stream { END_STREAM } else { 0 };
    let mut chunks = block.chunks(max.max(1));
    let first = chunks.next().unwrap_or_default();
    let more = block.len() > first.len();
    let flags = end | if more { 0 } else { END_HEADERS };
    put_head(out, first.len(), HEADERS, flags, stream);
    out.extend_from_slice(first);
    let mut rest = chunks.peekable();
    while let Some(chunk) = rest.next() {
        let flags = if rest.peek().is_none() {
            END_HEADERS
        } else {
            0
        };
        put_head(out, chunk.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(chunk);
    }
}

/// Appends one DATA frame.
pub fn put_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    put_head(
        out,
        data.len(),
        DATA,
        if end_stream { END_STREAM } else { 0 },
        stream,
    );
    out.extend_from_slice(data);
}

/// The payload of a HEADERS or DATA frame without its padding (and, for
/// HEADERS, without the priority fields); `None` when the padding is
/// longer than the frame allows (a connection error, §6.1).
pub fn unpad<'a>(head: &Head, payload: &'a [u8]) -> Option<&'a [u8]> {
    let mut body = payload;
    let mut pad = 0;
    if head.has(PADDED) {
        let (&n, rest) = body.split_first()?;
        pad = usize::from(n);
        body = rest;
    }
    if head.kind == HEADERS && head.has(PRIORITY_FLAG) {
        body = body.get(5..)?;
    }
    body.get(..body.len().checked_sub(pad)?)
}

/// The big-endian `u32` at the start of `bytes` (callers check lengths).
pub fn be_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// Reads the SETTINGS_MAX_CONCURRENT_STREAMS of a SETTINGS payload, if it
/// sets one (the pre-flight's question).
pub fn max_concurrent_streams(payload: &[u8]) -> Option<u32> {
    payload
        .chunks_exact(6)
        .filter(|e| u16::from_be_bytes([e[0], e[1]]) == SETTINGS_MAX_CONCURRENT_STREAMS)
        .map(|e| be_u32(&e[2..]))
        .next_back()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips() {
        let mut out = Vec::new();
        put_head(&mut out, 0x12_3456, HEADERS, END_HEADERS, 0x8000_0003);
        assert_eq!(out, [0x12, 0x34, 0x56, 1, 4, 0x80, 0, 0, 3]);
        // The reserved bit is ignored on reading.
        let h = Head::parse(&out).unwrap();
        assert_eq!((h.len, h.kind, h.flags, h.stream), (0x12_3456, 1, 4, 3));
        assert_eq!(Head::parse(&out[..8]), None);
    }

    #[test]
    fn a_long_block_continues_in_continuation_frames() {
        let mut out = Vec::new();
        put_headers(&mut out, 1, &[7; 10], true, 4);
        let mut frames = Vec::new();
        let mut at = 0;
        while let Some(h) = Head::parse(&out[at..]) {
            frames.push((h.kind, h.flags, h.len));
            at += HEADER_LEN + h.len;
        }
        assert_eq!(
            frames,
            [
                (HEADERS, END_STREAM, 4),
                (CONTINUATION, 0, 4),
                (CONTINUATION, END_HEADERS, 2)
            ]
        );
        let mut one = Vec::new();
        put_headers(&mut one, 1, &[7; 3], false, 4);
        assert_eq!(one[4], END_HEADERS);
    }

    #[test]
    fn padding_and_priority_are_stripped_or_refused() {
        let head = |kind, flags| Head {
            len: 0,
            kind,
            flags,
            stream: 1,
        };
        assert_eq!(
            unpad(&head(DATA, PADDED), &[2, b'a', 0, 0]),
            Some(&b"a"[..])
        );
        assert_eq!(unpad(&head(DATA, PADDED), &[4, b'a', 0, 0]), None);
        assert_eq!(unpad(&head(DATA, PADDED), &[]), None);
        let prio = [0, 0, 0, 1, 16, b'b'];
        assert_eq!(unpad(&head(HEADERS, PRIORITY_FLAG), &prio), Some(&b"b"[..]));
        assert_eq!(unpad(&head(DATA, PRIORITY_FLAG), b"xy"), Some(&b"xy"[..]));
    }

    #[test]
    fn the_servers_stream_limit_is_read_from_its_settings() {
        let mut out = Vec::new();
        put_settings(&mut out, &[(SETTINGS_INITIAL_WINDOW_SIZE, 9), (3, 128)]);
        assert_eq!(max_concurrent_streams(&out[HEADER_LEN..]), Some(128));
        assert_eq!(
            max_concurrent_streams(&out[HEADER_LEN..HEADER_LEN + 6]),
            None
        );
    }
}

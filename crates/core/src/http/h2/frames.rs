//! A light scan of the frames the server sends, beside the HTTP/2 library
//! that decodes them: it reads only the 9-byte frame headers (and the
//! first 8 bytes of a GOAWAY), to learn what the library does not tell.
//!
//! - How many bytes each response took on the wire, frame headers
//!   included, so that the statistics count what was received.
//! - The last stream id of a GOAWAY, which says which requests the server
//!   never processed and may be sent again.
//! - Whether the server speaks HTTP/2 at all: its first frame must be
//!   SETTINGS. A server that answers the preface in HTTP/1.1 gets a clear
//!   error instead of a frame-size complaint.

/// Frame types (RFC 9113 §6) the scan acts on.
pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const CONTINUATION: u8 = 0x9;
/// The ACK flag of SETTINGS and PING.
const ACK: u8 = 0x1;
/// Every frame starts with a header this long.
pub(crate) const HEADER_LEN: usize = 9;

/// What the scan saw, in wire order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// A frame began: its type, stream and size on the wire (header
    /// included). Its payload may still be on its way.
    Frame { kind: u8, stream: u32, len: u64 },
    /// A GOAWAY frame: streams above `last_stream` were never processed.
    GoAway { last_stream: u32, code: u32 },
    /// The first frame is not the server's SETTINGS: what came instead.
    NotHttp2(String),
}

/// The scan's place in the byte stream, kept between reads.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    header: [u8; HEADER_LEN],
    have: usize,
    /// Payload bytes of the current frame still to come.
    left: u64,
    kind: u8,
    /// The start of the current GOAWAY's payload, while it is collected.
    goaway: [u8; 8],
    goaway_have: usize,
    /// A frame header was read: the first one was checked.
    started: bool,
    /// The first frame (the server's SETTINGS) began and is still coming.
    in_first: bool,
    /// The server's first SETTINGS came whole.
    settled: bool,
}

impl Frames {
    /// Scans `bytes`, the next part of what the server sent.
    pub(crate) fn scan(&mut self, mut bytes: &[u8], mut each: impl FnMut(Seen)) {
        while !bytes.is_empty() {
            if self.left > 0 {
                let n = usize::try_from(self.left).map_or(bytes.len(), |l| l.min(bytes.len()));
                if self.kind == GOAWAY {
                    self.collect_goaway(&bytes[..n], &mut each);
                }
                self.left -= n as u64;
                bytes = &bytes[n..];
                self.settle();
                continue;
            }
            let n = (HEADER_LEN - self.have).min(bytes.len());
            self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have == HEADER_LEN {
                self.have = 0;
                if !self.frame(&mut each) {
                    return;
                }
                self.settle();
            }
        }
    }

    /// A whole frame header is in `self.header`. False when the stream is
    /// not HTTP/2 and the scan stops.
    fn frame(&mut self, each: &mut impl FnMut(Seen)) -> bool {
        let h = self.header;
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]);
        let (kind, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        if !self.started {
            self.started = true;
            if kind != SETTINGS || flags & ACK != 0 || stream != 0 || len % 6 != 0 {
                each(Seen::NotHttp2(describe(&h)));
                // Nothing after this is read as frames.
                self.left = u64::MAX;
                self.kind = 0xff;
                return false;
            }
            self.in_first = true;
        }
        self.kind = kind;
        self.left = u64::from(len);
        self.goaway_have = 0;
        each(Seen::Frame {
            kind,
            stream,
            len: HEADER_LEN as u64 + u64::from(len),
        });
        true
    }

    /// The first frame's payload is all in: the server's SETTINGS arrived.
    fn settle(&mut self) {
        if self.in_first && self.left == 0 {
            self.in_first = false;
            self.settled = true;
        }
    }

    /// The server's first SETTINGS frame came whole (the library applies
    /// it as it reads it).
    pub(crate) fn settled(&self) -> bool {
        self.settled
    }

    fn collect_goaway(&mut self, payload: &[u8], each: &mut impl FnMut(Seen)) {
        if self.goaway_have == self.goaway.len() {
            return;
        }
        let n = (self.goaway.len() - self.goaway_have).min(payload.len());
        self.goaway[self.goaway_have..self.goaway_have + n].copy_from_slice(&payload[..n]);
        self.goaway_have += n;
        if self.goaway_have == self.goaway.len() {
            let g = self.goaway;
            each(Seen::GoAway {
                last_stream: u32::from_be_bytes([g[0], g[1], g[2], g[3]]) & 0x7fff_ffff,
                code: u32::from_be_bytes([g[4], g[5], g[6], g[7]]),
            });
        }
    }
}

/// What the server sent instead of HTTP/2, for the error: its first
/// bytes, printable.
fn describe(first: &[u8]) -> String {
    let text: String = first
        .iter()
        .map(|&b| match b {
            b' '..=b'~' => char::from(b),
            _ => '.',
        })
        .collect();
    if first.starts_with(b"HTTP/") {
        format!(
            "the server answered in HTTP/1 ({text:?}...), not HTTP/2: it does not take \
             HTTP/2 without negotiation on this port"
        )
    } else {
        format!(
            "expected the server's HTTP/2 SETTINGS frame first, got bytes {text:?}: the server \
             does not speak HTTP/2 on this port"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's SETTINGS count as arrived only once their payload is
    /// all in, however the bytes are split; an empty one at once.
    #[test]
    fn settled_once_the_first_settings_are_whole() {
        let settings = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 4]);
        for cut in 1..settings.len() {
            let mut f = Frames::default();
            f.scan(&settings[..cut], |_| {});
            assert!(!f.settled(), "cut at {cut}");
            f.scan(&settings[cut..], |_| {});
            assert!(f.settled(), "cut at {cut}");
        }
        let mut f = Frames::default();
        f.scan(&frame(SETTINGS, 0, 0, &[]), |_| {});
        assert!(f.settled());
        let mut f = Frames::default();
        f.scan(b"HTTP/1.1 400 Bad Request\r\n", |_| {});
        assert!(!f.settled());
    }

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = len.to_be_bytes()[1..].to_vec();
        out.extend([kind, flags]);
        out.extend(stream.to_be_bytes());
        out.extend(payload);
        out
    }

    fn scan_in_pieces(bytes: &[u8], piece: usize) -> Vec<Seen> {
        let mut frames = Frames::default();
        let mut seen = Vec::new();
        for chunk in bytes.chunks(piece) {
            frames.scan(chunk, |s| seen.push(s));
        }
        seen
    }

    #[test]
    fn frames_and_goaway_are_seen_however_the_bytes_are_split() {
        let mut bytes = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 10]);
        bytes.extend(frame(HEADERS, 0x4, 1, &[0x88]));
        bytes.extend(frame(DATA, 0x1, 1, b"hello"));
        let mut goaway = 3u32.to_be_bytes().to_vec();
        goaway.extend(2u32.to_be_bytes());
        goaway.extend(b"debug");
        bytes.extend(frame(GOAWAY, 0, 0, &goaway));
        let want = vec![
            Seen::Frame {
                kind: SETTINGS,
                stream: 0,
                len: 15,
            },
            Seen::Frame {
                kind: HEADERS,
                stream: 1,
                len: 10,
            },
            Seen::Frame {
                kind: DATA,
                stream: 1,
                len: 14,
            },
            Seen::Frame {
                kind: GOAWAY,
                stream: 0,
                len: 22,
            },
            Seen::GoAway {
                last_stream: 3,
                code: 2,
            },
        ];
        for piece in [1, 2, 5, 9, 10, 1000] {
            assert_eq!(scan_in_pieces(&bytes, piece), want, "pieces of {piece}");
        }
    }

    #[test]
    fn an_http1_answer_is_named() {
        let seen = scan_in_pieces(b"HTTP/1.1 400 Bad Request\r\n\r\n", 3);
        let [Seen::NotHttp2(why)] = &seen[..] else {
            panic!("{seen:?}");
        };
        assert!(
            why.contains("HTTP/1") && why.contains("\"HTTP/1.1 \""),
            "{why}"
        );
        let seen = scan_in_pieces(&frame(DATA, 0, 1, b"x"), 100);
        let [Seen::NotHttp2(why)] = &seen[..] else {
            panic!("{seen:?}");
        };
        assert!(why.contains("SETTINGS frame first"), "{why}");
    }
}

//! permessage-deflate (RFC 7692), offered only with `--ws-deflate`: each
//! message compressed whole with DEFLATE, its frame marked with RSV1.
//!
//! The client offers the extension with no parameter, so the server may
//! not limit the client's window (`client_max_window_bits` is answered
//! only when offered) and every message goes with the full 32 KiB window;
//! the reader's window is the largest, so it reads a server's smaller one
//! too. What the server asks beyond that is kept: `client_no_context_takeover`
//! starts each message sent afresh, `server_no_context_takeover` each
//! message read.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The extension's name, offered as is.
pub const OFFER: &str = "permessage-deflate";

/// The four bytes a sync flush ends with: the sender strips them, the
/// reader puts them back (RFC 7692 section 7.2.1).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// What the server's answer agreed to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agreed {
    /// The server compresses each message afresh.
    pub server_no_context_takeover: bool,
    /// The client must compress each message afresh.
    pub client_no_context_takeover: bool,
    /// The server's window, in bits, when it named one (8 to 15).
    pub server_max_window_bits: Option<u8>,
}

impl Agreed {
    /// Reads the server's `Sec-WebSocket-Extensions` answer to [`OFFER`];
    /// `Err` says what in it RFC 7692 does not allow as an answer to it.
    pub fn from_answer(value: &str) -> Result<Agreed, String> {
        if value.contains(',') {
            return Err(format!("more than one extension (\"{value}\")"));
        }
        let mut parts = value.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        if !name.eq_ignore_ascii_case(OFFER) {
            return Err(format!("the extension \"{name}\""));
        }
        let mut agreed = Agreed::default();
        let mut seen: Vec<String> = Vec::new();
        for part in parts.filter(|p| !p.is_empty()) {
            let (param, value) = match part.split_once('=') {
                Some((p, v)) => (p.trim(), Some(v.trim().trim_matches('"'))),
                None => (part, None),
            };
            let param = param.to_ascii_lowercase();
            if seen.contains(&param) {
                return Err(format!("{param} twice"));
            }
            seen.push(param.clone());
            match (param.as_str(), value) {
                ("server_no_context_takeover", None) => agreed.server_no_context_takeover = true,
                ("client_no_context_takeover", None) => agreed.client_no_context_takeover = true,
                ("server_max_window_bits", None) => {
                    return Err("server_max_window_bits without a value (8 to 15)".to_string())
                }
                ("server_max_window_bits", Some(bits)) => match bits.parse::<u8>() {
                    Ok(b @ 8..=15) => agreed.server_max_window_bits = Some(b),
                    _ => return Err(format!("server_max_window_bits={bits} (8 to 15)")),
                },
                ("client_max_window_bits", _) => {
                    return Err("client_max_window_bits without an offer of it".to_string())
                }
                _ => return Err(format!("the parameter \"{part}\"")),
            }
        }
        Ok(agreed)
    }
}

/// Why a compressed message could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// It inflates past the largest message accepted.
    TooLong,
    /// It is not DEFLATE data.
    Corrupt,
}

/// One connection's compressor and decompressor, as agreed.
pub struct Codec {
    agreed: Agreed,
    /// Made with the first message sent (a compressor is the larger).
    deflate: Option<Box<Compress>>,
    inflate: Decompress,
}

impl Codec {
    pub fn new(agreed: Agreed) -> Codec {
        Codec {
            agreed,
            deflate: None,
            inflate: Decompress::new(false),
        }
    }

    /// `message` compressed as one message's payload; `None` if the
    /// compressor failed, and then it goes uncompressed (RSV1 clear),
    /// which the extension allows.
    pub fn compress(&mut self, message: &[u8]) -> Option<Vec<u8>> {
        let c = self
            .deflate
            .get_or_insert_with(|| Box::new(Compress::new(Compression::fast(), false)));
        let out = Self::deflate(c, message);
        if out.is_none() || self.agreed.client_no_context_takeover {
            // What it took is in no message the server read: start afresh,
            // which a reader keeping its context reads all the same.
            c.reset();
        }
        let mut out = out?;
        out.truncate(out.len() - TAIL.len());
        Some(out)
    }

    /// `message` through `c` with a sync flush, whole: every byte taken
    /// and the flush's empty block (its [`TAIL`]) written. A buffer with
    /// room left is no sign the flush is done: the compressor may hold
    /// output back, so the tail is what says so.
    fn deflate(c: &mut Compress, message: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(message.len() + 64);
        let start = c.total_in();
        // Bounded: every pass takes input or gives output, or stops.
        loop {
            let before = (c.total_in(), c.total_out());
            let taken = (c.total_in() - start) as usize;
            c.compress_vec(&message[taken..], &mut out, FlushCompress::Sync)
                .ok()?;
            let taken = (c.total_in() - start) as usize;
            let room = out.len() < out.capacity();
            if taken == message.len() && room && out.ends_with(&TAIL) {
                return Some(out);
            }
            if room && (c.total_in(), c.total_out()) == before {
                return None;
            }
            out.reserve(out.capacity().max(64));
        }
    }

    /// A compressed message's `payload` inflated, at most `max` bytes.
    pub fn decompress(&mut self, payload: &[u8], max: usize) -> Result<Vec<u8>, Unreadable> {
        let d = &mut self.inflate;
        let input = [payload, &TAIL[..]].concat();
        let mut out = Vec::with_capacity((payload.len() * 4).clamp(64, max.max(64)));
        let start = d.total_in();
        let mut ended = false;
        // Bounded: every pass takes input or gives output, or stops.
        loop {
            let before = (d.total_in(), d.total_out());
            let taken = (d.total_in() - start) as usize;
            let status = d
                .decompress_vec(&input[taken..], &mut out, FlushDecompress::Sync)
                .map_err(|_| Unreadable::Corrupt)?;
            if out.len() > max {
                return Err(Unreadable::TooLong);
            }
            let taken = (d.total_in() - start) as usize;
            // A server that ended its stream (BFINAL) starts the next anew.
            if status == Status::StreamEnd {
                ended = true;
                break;
            }
            if taken == input.len() && out.len() < out.capacity() {
                break;
            }
            if out.len() < out.capacity() && (d.total_in(), d.total_out()) == before {
                return Err(Unreadable::Corrupt);
            }
            out.reserve(out.capacity().min(max + 1 - out.len()).max(64));
        }
        if ended || self.agreed.server_no_context_takeover {
            d.reset(false);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_rfc_7692_allows() {
        assert_eq!(
            Agreed::from_answer("permessage-deflate"),
            Ok(Agreed::default())
        );
        assert_eq!(
            Agreed::from_answer(
                "permessage-deflate; server_max_window_bits=12; client_no_context_takeover; server_no_context_takeover"
            ),
            Ok(Agreed {
                server_no_context_takeover: true,
                client_no_context_takeover: true,
                server_max_window_bits: Some(12),
            })
        );
        assert_eq!(
            Agreed::from_answer("Permessage-Deflate;server_max_window_bits=\"9\"")
                .map(|a| a.server_max_window_bits),
            Ok(Some(9))
        );
        for (bad, says) in [
            ("x-webkit-deflate-frame", "the extension"),
            ("permessage-deflate, permessage-deflate", "more than one"),
            (
                "permessage-deflate; client_max_window_bits=10",
                "without an offer",
            ),
            ("permessage-deflate; server_max_window_bits=16", "8 to 15"),
            ("permessage-deflate; server_max_window_bits", "8 to 15"),
            (
                "permessage-deflate; server_no_context_takeover=1",
                "parameter",
            ),
            ("permessage-deflate; mystery", "parameter"),
            (
                "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
                "twice",
            ),
        ] {
            let why = Agreed::from_answer(bad).unwrap_err();
            assert!(why.contains(says), "{bad}: {why}");
        }
    }

    /// RFC 7692 section 7.2.3.1's example: "Hello" in one compressed
    /// message, read; and what the codec writes reads back, message after
    /// message on one context, and afresh when asked.
    #[test]
    fn messages_compress_and_inflate_back() {
        let mut reader = Codec::new(Agreed::default());
        let hello = [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
        assert_eq!(reader.decompress(&hello, 100), Ok(b"Hello".to_vec()));
        // Section 7.2.3.2: the second "Hello" refers back to the first.
        let again = [0xf2, 0x00, 0x11, 0x00, 0x00];
        assert_eq!(reader.decompress(&again, 100), Ok(b"Hello".to_vec()));
        for agreed in [
            Agreed::default(),
            Agreed {
                client_no_context_takeover: true,
                server_no_context_takeover: true,
                server_max_window_bits: None,
            },
        ] {
            let mut writer = Codec::new(agreed);
            let mut reader = Codec::new(agreed);
            // Letters in no repeating order: only a kept context shortens
            // the second of two.
            let long: String = (0..2000u32)
                .map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 24) as u8 % 26))
                .collect();
            for message in ["hello", "", "hello", long.as_str(), long.as_str()] {
                let sent = writer.compress(message.as_bytes()).unwrap();
                assert!(!sent.ends_with(&TAIL), "{sent:?}");
                let read = reader.decompress(&sent, 1 << 20).unwrap();
                assert_eq!(read, message.as_bytes());
            }
            // The second long message costs little on a kept context.
            let mut fresh = Codec::new(agreed);
            let first = fresh.compress(long.as_bytes()).unwrap().len();
            let second = fresh.compress(long.as_bytes()).unwrap().len();
            assert_eq!(
                second < first / 2,
                !agreed.client_no_context_takeover,
                "{first} then {second}"
            );
        }
    }

    /// Incompressible messages of every size up to a few MiB come back
    /// whole: the sync flush is finished before a message goes.
    #[test]
    fn incompressible_messages_come_back_whole() {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut writer = Codec::new(Agreed::default());
        let mut reader = Codec::new(Agreed::default());
        for len in [100, 70_000, 400_000, 512 << 10, 1 << 20, 6 << 20] {
            let message: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            let sent = writer.compress(&message).unwrap();
            let read = reader.decompress(&sent, 16 << 20).unwrap();
            assert!(read == message, "{len} bytes came back as {}", read.len());
        }
    }

    #[test]
    fn a_bomb_and_garbage_are_refused() {
        let mut writer = Codec::new(Agreed::default());
        let bomb = writer.compress(&vec![0u8; 1 << 20]).unwrap();
        assert!(bomb.len() < 16 << 10, "{}", bomb.len());
        let mut reader = Codec::new(Agreed::default());
        assert_eq!(reader.decompress(&bomb, 1 << 16), Err(Unreadable::TooLong));
        let mut reader = Codec::new(Agreed::default());
        assert_eq!(
            reader.decompress(&[0xff; 16], 1 << 16),
            Err(Unreadable::Corrupt)
        );
    }
}

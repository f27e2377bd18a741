//! RFC 6455 frames as a client writes and reads them (section 5).
//!
//! A client masks every frame it sends with a fresh key; a server masks
//! none, so a masked frame from the server is a protocol error, as are
//! reserved bits without an extension that defines them, unknown opcodes,
//! and control frames that are fragmented or longer than 125 bytes.

use std::fmt;

/// The longest payload of a control frame (close, ping, pong).
pub const MAX_CONTROL: usize = 125;

/// A frame's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    /// The next fragment of the message being read.
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl Opcode {
    fn from_bits(bits: u8) -> Option<Opcode> {
        Some(match bits {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            _ => return None,
        })
    }

    fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    /// Close, ping and pong: never fragmented, at most 125 bytes.
    pub fn is_control(self) -> bool {
        matches!(self, Opcode::Close | Opcode::Ping | Opcode::Pong)
    }
}

/// One frame read from the server; its payload borrows the bytes read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The last frame of its message.
    pub fin: bool,
    pub opcode: Opcode,
    pub payload: &'a [u8],
}

/// Why the server's bytes are not a frame a client may receive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// RSV1-3 set with no extension agreed (the bits, shifted down).
    Reserved(u8),
    /// An opcode RFC 6455 leaves reserved.
    Opcode(u8),
    /// The server masked a frame.
    Masked,
    /// A control frame over 125 bytes, or fragmented.
    Control(Opcode),
    /// A payload longer than the largest message accepted.
    TooLong { len: u64, max: usize },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Reserved(bits) => {
                write!(
                    f,
                    "a frame set reserved bits ({bits:#x}) no extension was agreed for"
                )
            }
            FrameError::Opcode(op) => write!(f, "a frame had the reserved opcode {op:#x}"),
            FrameError::Masked => f.write_str("the server masked a frame (only clients mask)"),
            FrameError::Control(op) => {
                write!(f, "a {op:?} frame was fragmented or longer than 125 bytes")
            }
            FrameError::TooLong { len, max } => {
                write!(
                    f,
                    "a frame of {len} bytes is over the {max} bytes a message may take"
                )
            }
        }
    }
}

/// Appends one frame of `payload`, masked with `mask` as a client must.
pub fn encode(out: &mut Vec<u8>, fin: bool, opcode: Opcode, payload: &[u8], mask: [u8; 4]) {
    out.push(u8::from(fin) << 7 | opcode.bits());
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if let Ok(short) = u16::try_from(len) {
        out.push(0x80 | 126);
        out.extend_from_slice(&short.to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
}

/// XORs `bytes` with `mask`, repeated (masking and unmasking alike).
pub fn apply_mask(bytes: &mut [u8], mask: [u8; 4]) {
    let word = u32::from_ne_bytes(mask);
    let mut chunks = bytes.chunks_exact_mut(4);
    for chunk in &mut chunks {
        let v = u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) ^ word;
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    for (b, m) in chunks.into_remainder().iter_mut().zip(mask) {
        *b ^= m;
    }
}

/// Reads the frame at the front of `bytes`: `None` until all of it has
/// come, then the frame and the bytes it took. `max`: the longest payload
/// accepted.
pub fn parse(bytes: &[u8], max: usize) -> Result<Option<(Frame<'_>, usize)>, FrameError> {
    let [b0, b1, ..] = *bytes else {
        return Ok(None);
    };
    if b0 & 0x70 != 0 {
        return Err(FrameError::Reserved((b0 & 0x70) >> 4));
    }
    let opcode = Opcode::from_bits(b0 & 0x0F).ok_or(FrameError::Opcode(b0 & 0x0F))?;
    let fin = b0 & 0x80 != 0;
    if b1 & 0x80 != 0 {
        return Err(FrameError::Masked);
    }
    let (len, at) = match b1 & 0x7F {
        126 => match bytes.get(2..4) {
            Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
            None => return Ok(None),
        },
        127 => match bytes.get(2..10) {
            Some(b) => (u64::from_be_bytes(b.try_into().unwrap_or_default()), 10),
            None => return Ok(None),
        },
        short => (u64::from(short), 2),
    };
    if opcode.is_control() && (!fin || len > MAX_CONTROL as u64) {
        return Err(FrameError::Control(opcode));
    }
    if len > max as u64 {
        return Err(FrameError::TooLong { len, max });
    }
    let end = at + len as usize;
    let Some(payload) = bytes.get(at..end) else {
        return Ok(None);
    };
    Ok(Some((
        Frame {
            fin,
            opcode,
            payload,
        },
        end,
    )))
}

/// A close frame's payload: the code (when there is one) and the reason.
/// `None`: a payload no close frame may carry (one byte, a code a peer
/// may not send, a reason that is not UTF-8).
pub fn close_payload(payload: &[u8]) -> Option<(Option<u16>, &str)> {
    match payload {
        [] => Some((None, "")),
        [_] => None,
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            let sendable = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
            let reason = std::str::from_utf8(reason).ok()?;
            sendable.then_some((Some(code), reason))
        }
    }
}

/// A close code by its name in RFC 6455 and IANA's registry.
pub fn close_name(code: u16) -> &'static str {
    match code {
        1000 => "normal",
        1001 => "going away",
        1002 => "protocol error",
        1003 => "unsupported data",
        1005 => "no status",
        1006 => "abnormal",
        1007 => "invalid payload",
        1008 => "policy violation",
        1009 => "message too big",
        1010 => "mandatory extension",
        1011 => "internal error",
        1012 => "service restart",
        1013 => "try again later",
        1014 => "bad gateway",
        1015 => "TLS handshake",
        3000..=3999 => "registered",
        4000..=4999 => "private",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6455 section 5.7's examples, byte for byte.
    #[test]
    fn the_rfcs_examples() {
        let mut out = Vec::new();
        encode(
            &mut out,
            true,
            Opcode::Text,
            b"Hello",
            [0x37, 0xfa, 0x21, 0x3d],
        );
        assert_eq!(
            out,
            [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        );
        let unmasked = [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f];
        let (frame, used) = parse(&unmasked, 1 << 20).unwrap().unwrap();
        assert_eq!(
            (frame.fin, frame.opcode, frame.payload, used),
            (true, Opcode::Text, &b"Hello"[..], 7)
        );
        // A fragmented "Hel" + "lo".
        let first = [0x01, 0x03, 0x48, 0x65, 0x6c];
        let (frame, _) = parse(&first, 100).unwrap().unwrap();
        assert_eq!((frame.fin, frame.opcode), (false, Opcode::Text));
        let last = [0x80, 0x02, 0x6c, 0x6f];
        let (frame, _) = parse(&last, 100).unwrap().unwrap();
        assert_eq!(
            (frame.fin, frame.opcode, frame.payload),
            (true, Opcode::Continuation, &b"lo"[..])
        );
        // An unmasked ping, and 256 and 65536 bytes in one binary frame.
        assert_eq!(
            parse(&[0x89, 0x05, b'H', b'e', b'l', b'l', b'o'], 10)
                .unwrap()
                .unwrap()
                .0
                .opcode,
            Opcode::Ping
        );
        let mut out = Vec::new();
        encode(&mut out, true, Opcode::Binary, &[7; 256], [0; 4]);
        assert_eq!(out[..4], [0x82, 0xFE, 0x01, 0x00]);
        out.clear();
        encode(&mut out, true, Opcode::Binary, &[7; 65536], [1, 2, 3, 4]);
        assert_eq!(out[..10], [0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0]);
        let mut payload = out[14..].to_vec();
        apply_mask(&mut payload, [1, 2, 3, 4]);
        assert!(payload.iter().all(|&b| b == 7));
    }

    #[test]
    fn a_frame_in_pieces_waits_for_the_rest() {
        let mut whole = vec![0x82, 126, 0x01, 0x00];
        whole.extend([9; 256]);
        for cut in 0..whole.len() {
            assert_eq!(parse(&whole[..cut], 1000), Ok(None), "{cut}");
        }
        let (frame, used) = parse(&whole, 1000).unwrap().unwrap();
        assert_eq!((frame.payload.len(), used), (256, 260));
    }

    #[test]
    fn what_a_server_may_not_send_is_named() {
        assert_eq!(parse(&[0xC1, 0x00], 9), Err(FrameError::Reserved(4)));
        assert_eq!(parse(&[0x83, 0x00], 9), Err(FrameError::Opcode(3)));
        assert_eq!(parse(&[0x81, 0x80, 0, 0, 0, 0], 9), Err(FrameError::Masked));
        assert_eq!(
            parse(&[0x09, 0x00], 9),
            Err(FrameError::Control(Opcode::Ping))
        );
        assert_eq!(
            parse(&[0x88, 126, 0, 126], 999),
            Err(FrameError::Control(Opcode::Close))
        );
        assert_eq!(
            parse(&[0x82, 127, 0, 0, 0, 1, 0, 0, 0, 0], 1 << 20),
            Err(FrameError::TooLong {
                len: 1 << 32,
                max: 1 << 20
            })
        );
        let e = FrameError::Masked.to_string();
        assert!(!e.contains('\n') && e.contains("masked"), "{e}");
    }

    #[test]
    fn close_payloads_and_names() {
        assert_eq!(close_payload(&[]), Some((None, "")));
        assert_eq!(close_payload(&[0x03]), None);
        assert_eq!(
            close_payload(&[0x03, 0xE8, b'b', b'y', b'e']),
            Some((Some(1000), "bye"))
        );
        assert_eq!(close_payload(&[0x03, 0xED]), None, "1005 is never sent");
        assert_eq!(
            close_payload(&[0x03, 0xE8, 0xFF]),
            None,
            "a reason in UTF-8"
        );
        assert_eq!(close_name(1011), "internal error");
        assert_eq!(close_name(4001), "private");
    }
}

//! RFC 6455 frames as either end writes and reads them (section 5).
//!
//! A client masks every frame it sends with a fresh key; a server masks
//! none. So a masked frame from the server is a protocol error, and so is
//! an unmasked one from a client, as are reserved bits without an
//! extension that defines them, unknown opcodes, and control frames that
//! are fragmented or longer than 125 bytes. Which end sent the bytes is
//! the reader's to say: [`parse`] reads a server's frames, [`parse_masked`]
//! a client's.

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

/// One frame read; its payload borrows the bytes read, still masked if
/// it came masked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The last frame of its message.
    pub fin: bool,
    pub opcode: Opcode,
    pub payload: &'a [u8],
    /// RSV1: the message this frame begins is compressed
    /// (permessage-deflate, RFC 7692); only read by [`parse_deflated`].
    pub compressed: bool,
    /// The key a client's frame is masked with ([`apply_mask`] unmasks
    /// the payload); `None` for a server's.
    pub mask: Option<[u8; 4]>,
}

/// Why the bytes are not a frame the reader may receive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// RSV1-3 set with no extension agreed (the bits, shifted down).
    Reserved(u8),
    /// An opcode RFC 6455 leaves reserved.
    Opcode(u8),
    /// The server masked a frame.
    Masked,
    /// The client did not mask a frame.
    Unmasked,
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
            FrameError::Unmasked => {
                f.write_str("the client sent an unmasked frame (clients mask every frame)")
            }
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
    masked(out, u8::from(fin) << 7, opcode, payload, mask);
}

/// Appends one whole message's frame whose payload is compressed
/// (permessage-deflate: RSV1 set), masked with `mask`.
pub fn encode_compressed(out: &mut Vec<u8>, opcode: Opcode, payload: &[u8], mask: [u8; 4]) {
    masked(out, 0x80 | RSV1, opcode, payload, mask);
}

/// RSV1, in a frame's first byte: permessage-deflate's "compressed".
const RSV1: u8 = 0x40;

/// One frame masked with `mask`, its first byte's flags (FIN, RSV1)
/// given.
fn masked(out: &mut Vec<u8>, flags: u8, opcode: Opcode, payload: &[u8], mask: [u8; 4]) {
    header(out, flags, opcode, payload.len(), true);
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
}

/// Appends one frame of `payload` unmasked, as a server must send it.
pub fn encode_unmasked(out: &mut Vec<u8>, fin: bool, opcode: Opcode, payload: &[u8]) {
    header(out, u8::from(fin) << 7, opcode, payload.len(), false);
    out.extend_from_slice(payload);
}

/// A frame's first bytes: its flags (FIN, RSV1) and opcode, the mask bit,
/// and the length in the shortest of its three forms (7 bits, then 16,
/// then 64).
fn header(out: &mut Vec<u8>, flags: u8, opcode: Opcode, len: usize, masked: bool) {
    out.push(flags | opcode.bits());
    let mask_bit = if masked { 0x80 } else { 0 };
    if len < 126 {
        out.push(mask_bit | len as u8);
    } else if let Ok(short) = u16::try_from(len) {
        out.push(mask_bit | 126);
        out.extend_from_slice(&short.to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
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

/// What [`parse`] and [`parse_masked`] return: `None` until the whole
/// frame has come, then the frame and the bytes it took.
pub type Parsed<'a> = Result<Option<(Frame<'a>, usize)>, FrameError>;

/// Reads the server's frame at the front of `bytes` (a client's reading).
/// `max`: the longest payload accepted.
pub fn parse(bytes: &[u8], max: usize) -> Parsed<'_> {
    parse_as(bytes, max, false, 0)
}

/// Reads the server's frame at the front of `bytes` once permessage-deflate
/// is agreed: RSV1 may be set ([`Frame::compressed`]); where it may (the
/// first frame of a message) is the reader's to check.
pub fn parse_deflated(bytes: &[u8], max: usize) -> Parsed<'_> {
    parse_as(bytes, max, false, RSV1)
}

/// Reads the client's frame at the front of `bytes` (a server's reading),
/// its payload left masked with [`Frame::mask`]. `max`: the longest
/// payload accepted.
pub fn parse_masked(bytes: &[u8], max: usize) -> Parsed<'_> {
    parse_as(bytes, max, true, 0)
}

/// Reads the frame at the front of `bytes`, which must be `masked` (a
/// client's) or not (a server's); `agreed`: the reserved bits an agreed
/// extension defines.
fn parse_as(bytes: &[u8], max: usize, masked: bool, agreed: u8) -> Parsed<'_> {
    let [b0, b1, ..] = *bytes else {
        return Ok(None);
    };
    if b0 & 0x70 & !agreed != 0 {
        return Err(FrameError::Reserved((b0 & 0x70 & !agreed) >> 4));
    }
    let opcode = Opcode::from_bits(b0 & 0x0F).ok_or(FrameError::Opcode(b0 & 0x0F))?;
    let fin = b0 & 0x80 != 0;
    match (b1 & 0x80 != 0, masked) {
        (true, false) => return Err(FrameError::Masked),
        (false, true) => return Err(FrameError::Unmasked),
        _ => {}
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
    let (mask, at) = if masked {
        let Some(key) = bytes.get(at..at + 4) else {
            return Ok(None);
        };
        (Some([key[0], key[1], key[2], key[3]]), at + 4)
    } else {
        (None, at)
    };
    let end = at + len as usize;
    let Some(payload) = bytes.get(at..end) else {
        return Ok(None);
    };
    Ok(Some((
        Frame {
            fin,
            opcode,
            payload,
            compressed: b0 & RSV1 != 0,
            mask,
        },
        end,
    )))
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

    /// RSV1 is read only once permessage-deflate is agreed; RSV2 and RSV3
    /// never.
    #[test]
    fn rsv1_marks_a_compressed_message_once_deflate_is_agreed() {
        let compressed = [0xC1, 0x02, 0xCA, 0x00];
        assert_eq!(parse(&compressed, 9), Err(FrameError::Reserved(4)));
        let (frame, used) = parse_deflated(&compressed, 9).unwrap().unwrap();
        assert_eq!(
            (frame.compressed, frame.opcode, used),
            (true, Opcode::Text, 4)
        );
        let (plain, _) = parse_deflated(&[0x81, 0x00], 9).unwrap().unwrap();
        assert!(!plain.compressed);
        assert_eq!(
            parse_deflated(&[0xE1, 0x00], 9),
            Err(FrameError::Reserved(2))
        );
        let mut out = Vec::new();
        encode_compressed(&mut out, Opcode::Binary, &[1, 2], [9, 9, 9, 9]);
        assert_eq!(out[..2], [0xC2, 0x82]);
        assert_eq!(parse_masked(&out, 9), Err(FrameError::Reserved(4)));
    }

    /// A server's reading: a client's masked frame, its key handed back
    /// and its payload left masked; an unmasked one refused.
    #[test]
    fn a_server_reads_masked_frames_and_writes_unmasked_ones() {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        let mut out = Vec::new();
        encode(&mut out, true, Opcode::Text, b"Hello", key);
        let (frame, used) = parse_masked(&out, 100).unwrap().unwrap();
        assert_eq!(
            (frame.fin, frame.opcode, frame.mask, used),
            (true, Opcode::Text, Some(key), 11)
        );
        let mut payload = frame.payload.to_vec();
        apply_mask(&mut payload, key);
        assert_eq!(payload, b"Hello");
        for cut in 0..out.len() {
            assert_eq!(parse_masked(&out[..cut], 100), Ok(None), "{cut}");
        }
        let unmasked = [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f];
        assert_eq!(parse_masked(&unmasked, 100), Err(FrameError::Unmasked));
        let mut sent = Vec::new();
        encode_unmasked(&mut sent, true, Opcode::Text, b"Hello");
        assert_eq!(sent, unmasked);
        sent.clear();
        encode_unmasked(&mut sent, false, Opcode::Binary, &[7; 300]);
        assert_eq!(sent[..4], [0x02, 126, 0x01, 0x2C]);
        let (frame, _) = parse(&sent, 1000).unwrap().unwrap();
        assert_eq!(
            (frame.fin, frame.payload.len(), frame.mask),
            (false, 300, None)
        );
        sent.clear();
        encode_unmasked(&mut sent, true, Opcode::Binary, &[1; 70000]);
        assert_eq!(sent[..10], [0x82, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70]);
        let e = FrameError::Unmasked.to_string();
        assert!(!e.contains('\n') && e.contains("unmasked"), "{e}");
    }
}

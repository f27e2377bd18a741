//! HTTP/3 framing (RFC 9114 §7): variable-length integers, frames on the
//! request and control streams, the types of unidirectional streams, and
//! the error codes the session names.

/// Frame types.
pub const DATA: u64 = 0x0;
pub const HEADERS: u64 = 0x1;
pub const SETTINGS: u64 = 0x4;
pub const PUSH_PROMISE: u64 = 0x5;
pub const GOAWAY: u64 = 0x7;

/// Unidirectional stream types (§6.2).
pub const CONTROL_STREAM: u64 = 0x0;
pub const PUSH_STREAM: u64 = 0x1;

/// SETTINGS identifiers (§7.2.4.1, RFC 9204 §5).
pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
pub const MAX_FIELD_SECTION_SIZE: u64 = 0x6;
pub const QPACK_BLOCKED_STREAMS: u64 = 0x7;

/// Error codes (§8.1, RFC 9204 §6).
pub const H3_NO_ERROR: u64 = 0x100;
pub const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub const H3_FRAME_ERROR: u64 = 0x106;
pub const H3_ID_ERROR: u64 = 0x108;
pub const H3_SETTINGS_ERROR: u64 = 0x109;
pub const H3_MISSING_SETTINGS: u64 = 0x10a;
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
pub const H3_MESSAGE_ERROR: u64 = 0x10e;
pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;

/// HTTP/3's and QPACK's error codes (RFC 9114 §8.1, RFC 9204 §6) by
/// name, in the order of their values: what a stream reset or an
/// application's close carries.
pub const ERROR_CODES: [(u64, &str); 20] = [
    (0x100, "H3_NO_ERROR"),
    (0x101, "H3_GENERAL_PROTOCOL_ERROR"),
    (0x102, "H3_INTERNAL_ERROR"),
    (0x103, "H3_STREAM_CREATION_ERROR"),
    (0x104, "H3_CLOSED_CRITICAL_STREAM"),
    (0x105, "H3_FRAME_UNEXPECTED"),
    (0x106, "H3_FRAME_ERROR"),
    (0x107, "H3_EXCESSIVE_LOAD"),
    (0x108, "H3_ID_ERROR"),
    (0x109, "H3_SETTINGS_ERROR"),
    (0x10a, "H3_MISSING_SETTINGS"),
    (0x10b, "H3_REQUEST_REJECTED"),
    (0x10c, "H3_REQUEST_CANCELLED"),
    (0x10d, "H3_REQUEST_INCOMPLETE"),
    (0x10e, "H3_MESSAGE_ERROR"),
    (0x10f, "H3_CONNECT_ERROR"),
    (0x110, "H3_VERSION_FALLBACK"),
    (0x200, "QPACK_DECOMPRESSION_FAILED"),
    (0x201, "QPACK_ENCODER_STREAM_ERROR"),
    (0x202, "QPACK_DECODER_STREAM_ERROR"),
];

/// QUIC's own codes a report may meet beside them.
const TRANSPORT_CODES: [(u64, &str); 2] = [(0x0, "NO_ERROR"), (0xa, "PROTOCOL_VIOLATION")];

/// The name of an HTTP/3 (or QPACK) error code, or its value in hex.
pub fn code_name(code: u64) -> String {
    ERROR_CODES
        .iter()
        .chain(&TRANSPORT_CODES)
        .find(|(c, _)| *c == code)
        .map_or_else(|| format!("0x{code:x}"), |(_, n)| (*n).to_string())
}

/// The largest value a variable-length integer carries.
pub const MAX_VARINT: u64 = (1 << 62) - 1;

/// Reads the variable-length integer (RFC 9000 §16) at the start of
/// `bytes`: its value and length, or `None` when it is not all there.
#[inline]
pub fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let first = *bytes.first()?;
    let len = 1usize << (first >> 6);
    let raw = bytes.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &b in &raw[1..] {
        v = v << 8 | u64::from(b);
    }
    Some((v, len))
}

/// Appends `v` (at most [`MAX_VARINT`]) in the shortest encoding.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0x3f => out.push(v as u8),
        0x40..=0x3fff => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v.min(MAX_VARINT) | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Appends a frame's type and length (its payload follows).
pub fn put_head(out: &mut Vec<u8>, kind: u64, len: usize) {
    put_varint(out, kind);
    put_varint(out, len as u64);
}

/// A frame header: type, payload length, and the header's own length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub kind: u64,
    pub len: u64,
    pub size: usize,
}

impl Head {
    /// The frame header at the start of `bytes`, if it is all there.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Option<Head> {
        let (kind, a) = varint(bytes)?;
        let (len, b) = varint(&bytes[a..])?;
        Some(Head {
            kind,
            len,
            size: a + b,
        })
    }
}

/// Frame types reserved because HTTP/2 used them: receiving one is an
/// error (§7.2.8).
pub fn is_http2_only(kind: u64) -> bool {
    matches!(kind, 0x2 | 0x6 | 0x8 | 0x9)
}

/// The client's SETTINGS: no dynamic QPACK table (so the server's field
/// sections refer to the static table only and no stream can block), and
/// the largest response head accepted.
pub fn put_client_settings(out: &mut Vec<u8>, max_field_section: u64) {
    let mut payload = Vec::with_capacity(16);
    for (id, value) in [
        (QPACK_MAX_TABLE_CAPACITY, 0),
        (QPACK_BLOCKED_STREAMS, 0),
        (MAX_FIELD_SECTION_SIZE, max_field_section),
    ] {
        put_varint(&mut payload, id);
        put_varint(&mut payload, value);
    }
    put_head(out, SETTINGS, payload.len());
    out.extend_from_slice(&payload);
}

/// The (identifier, value) pairs of a SETTINGS payload, or `None` when
/// it is cut short.
pub fn settings(payload: &[u8]) -> Option<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < payload.len() {
        let (id, a) = varint(&payload[at..])?;
        let (value, b) = varint(&payload[at + a..])?;
        out.push((id, value));
        at += a + b;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_length() {
        // RFC 9000 appendix A.1's examples.
        let cases: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(varint(bytes), Some((value, bytes.len())));
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out, bytes);
        }
        assert_eq!(
            varint(&[0x40, 0x25]),
            Some((37, 2)),
            "not the shortest, still read"
        );
        assert_eq!(varint(&[0x9d, 0x7f]), None);
        assert_eq!(varint(&[]), None);
    }

    #[test]
    fn a_frame_head_and_settings_read_back() {
        let mut out = Vec::new();
        put_client_settings(&mut out, 65_536);
        let head = Head::parse(&out).unwrap();
        assert_eq!(head.kind, SETTINGS);
        let payload = &out[head.size..];
        assert_eq!(payload.len() as u64, head.len);
        assert_eq!(
            settings(payload),
            Some(vec![
                (QPACK_MAX_TABLE_CAPACITY, 0),
                (QPACK_BLOCKED_STREAMS, 0),
                (MAX_FIELD_SECTION_SIZE, 65_536)
            ])
        );
        assert_eq!(settings(&payload[..payload.len() - 1]), None);
        assert_eq!(Head::parse(&[0x01]), None);
    }

    #[test]
    fn codes_are_named() {
        assert_eq!(code_name(0x10b), "H3_REQUEST_REJECTED");
        assert_eq!(code_name(0x21), "0x21");
        assert!(is_http2_only(0x8) && !is_http2_only(GOAWAY));
    }
}

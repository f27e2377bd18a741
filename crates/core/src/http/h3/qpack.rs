//! QPACK (RFC 9204) as the client needs it: field sections that refer to
//! the static table only.
//!
//! The client advertises a dynamic table of capacity 0, so the server's
//! field sections may refer to the static table and literals alone, and
//! no request stream ever blocks on the encoder stream; requests are
//! encoded the same way, so one encoded section serves every connection.
//! Integers and the Huffman code are HPACK's (`metron-hpack`).

use metron_hpack::{huffman, integer};

/// Why a field section cannot be decoded (the connection is then closed
/// with QPACK_DECOMPRESSION_FAILED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpackError {
    Truncated,
    /// A reference to the dynamic table, which the client said it has not.
    Dynamic,
    /// A static index past the table's 99 entries.
    Index(usize),
    Huffman,
}

/// Encodes one request's fields as a field section: an indexed field where
/// a static entry matches name and value, a literal with the static name
/// where one matches the name, a literal name otherwise; values Huffman
/// coded when that is shorter.
pub fn encode(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    // Required Insert Count 0, Delta Base 0: nothing dynamic.
    out.extend_from_slice(&[0, 0]);
    for &(name, value) in fields {
        match find(name, value) {
            Found::Field(i) => integer::encode(i, 6, 0b1100_0000, out),
            Found::Name(i) => {
                integer::encode(i, 4, 0b0101_0000, out);
                string(value, 7, 0, out);
            }
            Found::None => {
                string(name, 3, 0b0010_0000, out);
                string(value, 7, 0, out);
            }
        }
    }
}

/// Appends a string literal with an `n`-bit length prefix (the H bit just
/// above it), after `flags`.
fn string(s: &[u8], n: u32, flags: u8, out: &mut Vec<u8>) {
    let coded = huffman::encoded_len(s);
    if coded < s.len() {
        integer::encode(coded, n, flags | 1 << n, out);
        huffman::encode(s, out);
    } else {
        integer::encode(s.len(), n, flags, out);
        out.extend_from_slice(s);
    }
}

enum Found {
    Field(usize),
    Name(usize),
    None,
}

fn find(name: &[u8], value: &[u8]) -> Found {
    let mut by_name = None;
    for (i, &(n, v)) in STATIC.iter().enumerate() {
        if n.as_bytes() == name {
            if v.as_bytes() == value {
                return Found::Field(i);
            }
            by_name.get_or_insert(i);
        }
    }
    by_name.map_or(Found::None, Found::Name)
}

/// Decodes a field section, calling `field(name, value)` for each field;
/// `scratch` holds Huffman-decoded strings.
pub fn decode(
    block: &[u8],
    scratch: &mut Scratch,
    field: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<(), QpackError> {
    let (insert_count, a) = int(block, 8)?;
    let (_delta_base, b) = int(&block[a..], 7)?;
    if insert_count != 0 {
        return Err(QpackError::Dynamic);
    }
    let mut at = a + b;
    while at < block.len() {
        let rest = &block[at..];
        let first = rest[0];
        let used = if first & 0x80 != 0 {
            // Indexed field line (T: static).
            if first & 0x40 == 0 {
                return Err(QpackError::Dynamic);
            }
            let (i, n) = int(rest, 6)?;
            let (name, value) = entry(i)?;
            field(name.as_bytes(), value.as_bytes());
            n
        } else if first & 0x40 != 0 {
            // Literal with name reference (T: static).
            if first & 0x10 == 0 {
                return Err(QpackError::Dynamic);
            }
            let (i, n) = int(rest, 4)?;
            let (name, _) = entry(i)?;
            let (value, m) = read_string(&rest[n..], 7, &mut scratch.value)?;
            field(name.as_bytes(), value);
            n + m
        } else if first & 0x20 != 0 {
            // Literal with literal name.
            let Scratch { name, value } = scratch;
            let (name, n) = read_string(rest, 3, name)?;
            let (value, m) = read_string(&rest[n..], 7, value)?;
            field(name, value);
            n + m
        } else {
            // Post-base references point into the dynamic table.
            return Err(QpackError::Dynamic);
        };
        at += used;
    }
    Ok(())
}

/// Scratch buffers for Huffman-decoded names and values, reused.
#[derive(Debug, Default)]
pub struct Scratch {
    name: Vec<u8>,
    value: Vec<u8>,
}

fn int(bytes: &[u8], prefix: u32) -> Result<(usize, usize), QpackError> {
    integer::decode(bytes, prefix).map_err(|_| QpackError::Truncated)
}

fn entry(i: usize) -> Result<(&'static str, &'static str), QpackError> {
    STATIC.get(i).copied().ok_or(QpackError::Index(i))
}

/// A string literal with an `n`-bit length prefix at the start of `bytes`
/// (the H bit just above the prefix): its octets and the bytes it took.
fn read_string<'a>(
    bytes: &'a [u8],
    n: u32,
    scratch: &'a mut Vec<u8>,
) -> Result<(&'a [u8], usize), QpackError> {
    let coded = bytes.first().ok_or(QpackError::Truncated)? & (1 << n) != 0;
    let (len, used) = int(bytes, n)?;
    let raw = bytes.get(used..used + len).ok_or(QpackError::Truncated)?;
    if !coded {
        return Ok((raw, used + len));
    }
    scratch.clear();
    huffman::decode(raw, scratch).map_err(|_| QpackError::Huffman)?;
    Ok((scratch, used + len))
}

/// The static table (RFC 9204 appendix A).
pub const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(block: &[u8]) -> Result<Vec<(String, String)>, QpackError> {
        let mut fields = Vec::new();
        decode(block, &mut Scratch::default(), &mut |n, v| {
            fields.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })?;
        Ok(fields)
    }

    #[test]
    fn the_static_table_has_its_landmarks() {
        assert_eq!(STATIC[17], (":method", "GET"));
        assert_eq!(STATIC[25], (":status", "200"));
        assert_eq!(STATIC[63], (":status", "100"));
        assert_eq!(STATIC[98], ("x-frame-options", "sameorigin"));
    }

    #[test]
    fn a_request_round_trips_through_every_representation() {
        let fields: [(&[u8], &[u8]); 6] = [
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"example.test:8443"),
            (b":path", b"/index.html?q=1"),
            (b"x-trace", b"abc"),
            (b"accept", b"*/*"),
        ];
        let mut block = Vec::new();
        encode(&fields, &mut block);
        // Prefix, then `:method GET` as static index 17, indexed.
        assert_eq!(&block[..3], &[0, 0, 0xc0 | 17]);
        let want: Vec<(String, String)> = fields
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
        assert_eq!(decoded(&block), Ok(want));
    }

    /// A response as a server writes it (RFC 9204's representations by
    /// hand): `:status 200` indexed, `content-length 2` with the static
    /// name, and a literal name and value.
    #[test]
    fn a_response_section_decodes() {
        let block = [
            0x00, 0x00, // no dynamic table
            0xd9, // indexed static 25: :status 200
            0x54, 0x01, b'2', // static name 4 (content-length), "2"
            0x23, b'a', b'b', b'c', 0x01, b'd', // literal name "abc", "d"
        ];
        assert_eq!(
            decoded(&block),
            Ok(vec![
                (":status".into(), "200".into()),
                ("content-length".into(), "2".into()),
                ("abc".into(), "d".into())
            ])
        );
    }

    #[test]
    fn dynamic_references_and_bad_sections_are_refused() {
        assert_eq!(decoded(&[0x01, 0x00]), Err(QpackError::Dynamic));
        assert_eq!(decoded(&[0, 0, 0x80]), Err(QpackError::Dynamic));
        assert_eq!(decoded(&[0, 0, 0x10]), Err(QpackError::Dynamic));
        assert_eq!(decoded(&[0, 0, 0xff, 0x30]), Err(QpackError::Index(111)));
        assert_eq!(
            decoded(&[0, 0, 0x54, 0x05, b'a']),
            Err(QpackError::Truncated)
        );
        assert_eq!(decoded(&[0]), Err(QpackError::Truncated));
    }
}

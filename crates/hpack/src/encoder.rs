//! Encoding of request header blocks that depend on no connection state.
//!
//! A load generator sends the same few requests millions of times over many
//! connections. If the encoder never adds to the peer's dynamic table and
//! only references the static one, an encoded block means the same thing on
//! every connection at every moment, so it can be built once and written
//! as-is. The price is a few bytes per request compared with indexing,
//! which is small next to never encoding at all on the hot path.

use crate::static_table::{self, Match};
use crate::{huffman, integer};

/// Encodes request header blocks that depend on no connection state: only
/// the static table is referenced and nothing is added to the peer's
/// dynamic table (literals "without indexing"), so one encoded block can be
/// cached and written on any connection, any number of times.
pub fn encode_block(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    for &(name, value) in fields {
        encode_field(name, value, out);
    }
}

/// One field, as `encode_block` writes it (appended to `out`).
pub fn encode_field(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    match static_table::find(name, value) {
        // Indexed field (§6.1): pattern 1, 7-bit index.
        Some(Match::Field(index)) => integer::encode(index, 7, 0x80, out),
        // Literal without indexing, indexed name (§6.2.2): pattern 0000.
        Some(Match::Name(index)) => {
            integer::encode(index, 4, 0x00, out);
            encode_string(value, out);
        }
        // Literal without indexing, new name: index 0, then the name.
        None => {
            out.push(0x00);
            encode_string(name, out);
            encode_string(value, out);
        }
    }
}

/// A string literal (§5.2), Huffman-coded only when that is strictly
/// shorter: equal lengths are sent plain, which is cheaper to decode.
pub(crate) fn encode_string(plain: &[u8], out: &mut Vec<u8>) {
    let huffman_len = huffman::encoded_len(plain);
    if huffman_len < plain.len() {
        integer::encode(huffman_len, 7, 0x80, out);
        huffman::encode(plain, out);
    } else {
        integer::encode(plain.len(), 7, 0x00, out);
        out.extend_from_slice(plain);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{hex, XorShift};
    use crate::Decoder;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn block(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_block(fields, &mut out);
        out
    }

    fn decode(decoder: &mut Decoder, block: &[u8]) -> Fields {
        let mut fields = Vec::new();
        decoder
            .decode(block, &mut |name, value| {
                fields.push((name.to_vec(), value.to_vec()))
            })
            .expect("the encoder's output decodes");
        fields
    }

    #[test]
    fn whole_static_fields_are_one_octet() {
        assert_eq!(block(&[(b":method", b"GET")]), [0x82]);
        assert_eq!(block(&[(b":path", b"/")]), [0x84]);
        assert_eq!(block(&[(b":scheme", b"https")]), [0x87]);
        assert_eq!(block(&[(b":method", b"POST")]), [0x83]);
    }

    #[test]
    fn a_static_name_with_another_value_uses_the_indexed_name() {
        // RFC 7541 C.2.2 sends this field plain; Huffman is 3 octets
        // shorter, so only the string differs and both decode the same.
        let out = block(&[(b":path", b"/sample/path")]);
        assert_eq!(out[0], 0x04, "without indexing, name index 4");
        let plain = hex("040c 2f73 616d 706c 652f 7061 7468");
        let huffman_len = huffman::encoded_len(b"/sample/path");
        assert!(huffman_len < 12);
        assert_eq!(out[1], 0x80 | huffman_len as u8);
        assert_eq!(
            decode(&mut Decoder::default(), &out),
            decode(&mut Decoder::default(), &plain)
        );
        // The lowest index carrying the name: :method is 2, not 3.
        assert_eq!(block(&[(b":method", b"PUT")])[0], 0x02);
        // Indices of 15 and above take a continuation octet.
        assert_eq!(block(&[(b"user-agent", b"m")])[..2], [0x0f, 58 - 15]);
    }

    #[test]
    fn an_unknown_name_is_a_literal_name() {
        let out = block(&[(b"x-a", b"b")]);
        assert_eq!(out, hex("0003 782d 6101 62"));
    }

    #[test]
    fn strings_use_huffman_only_when_strictly_shorter() {
        let mut out = Vec::new();
        encode_string(b"www.example.com", &mut out);
        assert_eq!(out, hex("8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"));
        // One 5-bit symbol takes one octet either way: sent plain.
        out.clear();
        encode_string(b"a", &mut out);
        assert_eq!(out, [0x01, b'a']);
        // Binary data is longer in Huffman.
        out.clear();
        encode_string(&[0xff, 0x00], &mut out);
        assert_eq!(out, [0x02, 0xff, 0x00]);
    }

    #[test]
    fn typical_requests_round_trip_without_touching_the_dynamic_table() {
        let fields: [(&[u8], &[u8]); 8] = [
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"api.example.com:8443"),
            (b":path", b"/v1/items?id=42&verbose=true"),
            (b"user-agent", b"metron/0.1"),
            (b"accept", b"application/json"),
            (b"accept-encoding", b"gzip, deflate"),
            (b"x-request-id", b"0f3c9a7e-51d2-4b8e-9d3a-2c6f1e0b7a55"),
        ];
        let out = block(&fields);
        let mut decoder = Decoder::default();
        // Decoding twice on one connection proves the block is replayable.
        for _ in 0..2 {
            let decoded = decode(&mut decoder, &out);
            let expected: Fields = fields
                .iter()
                .map(|(n, v)| (n.to_vec(), v.to_vec()))
                .collect();
            assert_eq!(decoded, expected);
            assert_eq!(decoder.table_size(), 0);
        }
        // No representation with incremental indexing (01xxxxxx) or a size
        // update (001xxxxx) is ever written: check each field's first octet.
        for (name, value) in fields {
            let mut one = Vec::new();
            encode_field(name, value, &mut one);
            assert!(one[0] & 0x80 != 0 || one[0] & 0xe0 == 0, "{:#04x}", one[0]);
        }
    }

    #[test]
    fn random_field_lists_round_trip() {
        let mut rng = XorShift::new(42);
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for _ in 0..10_000 {
            let fields: Fields = (0..rng.below(10))
                .map(|_| {
                    // Mix in static names and whole static fields so every
                    // representation is exercised, not only literal names.
                    let (name, value) = match rng.below(4) {
                        0 => {
                            let (n, v) = static_table::ENTRIES[rng.below(static_table::LEN)];
                            (n.to_vec(), v.to_vec())
                        }
                        1 => {
                            let (n, _) = static_table::ENTRIES[rng.below(static_table::LEN)];
                            (n.to_vec(), rng.bytes_below(64))
                        }
                        _ => (rng.bytes_below(64), rng.bytes_below(64)),
                    };
                    (name, value)
                })
                .collect();
            let borrowed: Vec<(&[u8], &[u8])> =
                fields.iter().map(|(n, v)| (&n[..], &v[..])).collect();
            out.clear();
            encode_block(&borrowed, &mut out);
            assert_eq!(decode(&mut decoder, &out), fields);
            assert_eq!(decoder.table_size(), 0);
        }
    }
}

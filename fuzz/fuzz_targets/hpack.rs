//! The HPACK codec on arbitrary bytes.
//!
//! A response decoder faces whatever a server, or anything posing as one,
//! sends. The target checks that no input makes it panic or grow its table
//! past the advertised maximum, across several blocks on one connection so
//! that dynamic table state carries over, and even after an error (the
//! state is then unspecified, but must stay memory-safe and panic-free).
//! It also checks that the stateless request encoder and the Huffman code
//! round-trip whatever fields and strings the input describes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use metron_hpack::{encode_block, huffman, Decoder};

const MAX_TABLE_SIZE: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    decode_as_blocks(shape, rest);
    round_trip_fields(rest);
    round_trip_huffman(rest);
});

/// Feeds `data` to one decoder as 1 to 8 blocks (chosen by `shape`).
fn decode_as_blocks(shape: u8, data: &[u8]) {
    let blocks = usize::from(shape % 8) + 1;
    let block_len = data.len().div_ceil(blocks).max(1);
    let mut decoder = Decoder::new(MAX_TABLE_SIZE);
    for block in data.chunks(block_len) {
        let mut octets = 0usize;
        let _ = decoder.decode(block, &mut |name, value| {
            octets += name.len() + value.len();
        });
        assert!(decoder.table_size() <= MAX_TABLE_SIZE);
    }
}

/// Splits `data` at zero octets into alternating names and values, encodes
/// them, and expects the same fields back with the dynamic table untouched.
fn round_trip_fields(data: &[u8]) {
    let parts: Vec<&[u8]> = data.split(|&octet| octet == 0).collect();
    let fields: Vec<(&[u8], &[u8])> = parts
        .chunks(2)
        .map(|pair| (pair[0], pair.get(1).copied().unwrap_or_default()))
        .collect();
    let mut block = Vec::new();
    encode_block(&fields, &mut block);

    let mut decoded: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut decoder = Decoder::new(MAX_TABLE_SIZE);
    decoder
        .decode(&block, &mut |name, value| {
            decoded.push((name.to_vec(), value.to_vec()))
        })
        .expect("the encoder's own output decodes");
    let expected: Vec<(Vec<u8>, Vec<u8>)> = fields
        .iter()
        .map(|(name, value)| (name.to_vec(), value.to_vec()))
        .collect();
    assert_eq!(decoded, expected);
    assert_eq!(decoder.table_size(), 0);
}

fn round_trip_huffman(data: &[u8]) {
    let mut encoded = Vec::new();
    huffman::encode(data, &mut encoded);
    assert_eq!(encoded.len(), huffman::encoded_len(data));
    let mut decoded = Vec::new();
    huffman::decode(&encoded, &mut decoded).expect("an encoding decodes");
    assert_eq!(decoded, data);
}

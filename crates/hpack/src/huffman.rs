//! The Huffman code of RFC 7541 §5.2 and Appendix B.
//!
//! Servers Huffman-code nearly every literal they send, so decoding is on
//! the response path. It runs a state machine over whole octets: a state is
//! an interior node of the code tree, and one table lookup per input octet
//! gives the next node, the symbols completed on the way (at most two,
//! since no code is shorter than 5 bits) and whether EOS was hit. A nibble
//! machine needs a smaller table but two dependent lookups per octet, and
//! that chain of lookups is what bounds the speed. The tree and the
//! 256 x 256 transition table are built by `const fn` from the code table,
//! so there is no start-up cost and nothing to keep in sync by hand.

use crate::DecodeError;

/// The symbol that ends a Huffman string; it must never appear in one.
const EOS: usize = 256;

/// `(code, length in bits)` of every octet, then of EOS, as RFC 7541
/// Appendix B lists them. The comment on each line is its first symbol.
#[rustfmt::skip]
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28), // 0
    (0xfffffe4, 28), (0xfffffe5, 28), (0xfffffe6, 28), (0xfffffe7, 28), // 4
    (0xfffffe8, 28), (0xffffea, 24), (0x3ffffffc, 30), (0xfffffe9, 28), // 8
    (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28), (0xfffffec, 28), // 12
    (0xfffffed, 28), (0xfffffee, 28), (0xfffffef, 28), (0xffffff0, 28), // 16
    (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28), // 20
    (0xffffff4, 28), (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28), // 24
    (0xffffff8, 28), (0xffffff9, 28), (0xffffffa, 28), (0xffffffb, 28), // 28
    (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12), // 32 ' '
    (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11), // 36 '$'
    (0x3fa, 10), (0x3fb, 10), (0xf9, 8), (0x7fb, 11), // 40 '('
    (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6), // 44 ','
    (0x0, 5), (0x1, 5), (0x2, 5), (0x19, 6), // 48 '0'
    (0x1a, 6), (0x1b, 6), (0x1c, 6), (0x1d, 6), // 52 '4'
    (0x1e, 6), (0x1f, 6), (0x5c, 7), (0xfb, 8), // 56 '8'
    (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10), // 60 '<'
    (0x1ffa, 13), (0x21, 6), (0x5d, 7), (0x5e, 7), // 64 '@'
    (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7), // 68 'D'
    (0x63, 7), (0x64, 7), (0x65, 7), (0x66, 7), // 72 'H'
    (0x67, 7), (0x68, 7), (0x69, 7), (0x6a, 7), // 76 'L'
    (0x6b, 7), (0x6c, 7), (0x6d, 7), (0x6e, 7), // 80 'P'
    (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7), // 84 'T'
    (0xfc, 8), (0x73, 7), (0xfd, 8), (0x1ffb, 13), // 88 'X'
    (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6), // 92 '\'
    (0x7ffd, 15), (0x3, 5), (0x23, 6), (0x4, 5), // 96 '`'
    (0x24, 6), (0x5, 5), (0x25, 6), (0x26, 6), // 100 'd'
    (0x27, 6), (0x6, 5), (0x74, 7), (0x75, 7), // 104 'h'
    (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5), // 108 'l'
    (0x2b, 6), (0x76, 7), (0x2c, 6), (0x8, 5), // 112 'p'
    (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7), // 116 't'
    (0x79, 7), (0x7a, 7), (0x7b, 7), (0x7ffe, 15), // 120 'x'
    (0x7fc, 11), (0x3ffd, 14), (0x1ffd, 13), (0xffffffc, 28), // 124 '|'
    (0xfffe6, 20), (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20), // 128
    (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22), (0x7fffd9, 23), // 132
    (0x3fffd6, 22), (0x7fffda, 23), (0x7fffdb, 23), (0x7fffdc, 23), // 136
    (0x7fffdd, 23), (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23), // 140
    (0xffffec, 24), (0xffffed, 24), (0x3fffd7, 22), (0x7fffe0, 23), // 144
    (0xffffee, 24), (0x7fffe1, 23), (0x7fffe2, 23), (0x7fffe3, 23), // 148
    (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23), // 152
    (0x3fffd9, 22), (0x7fffe6, 23), (0x7fffe7, 23), (0xffffef, 24), // 156
    (0x3fffda, 22), (0x1fffdd, 21), (0xfffe9, 20), (0x3fffdb, 22), // 160
    (0x3fffdc, 22), (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21), // 164
    (0x7fffea, 23), (0x3fffdd, 22), (0x3fffde, 22), (0xfffff0, 24), // 168
    (0x1fffdf, 21), (0x3fffdf, 22), (0x7fffeb, 23), (0x7fffec, 23), // 172
    (0x1fffe0, 21), (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21), // 176
    (0x7fffed, 23), (0x3fffe1, 22), (0x7fffee, 23), (0x7fffef, 23), // 180
    (0xfffea, 20), (0x3fffe2, 22), (0x3fffe3, 22), (0x3fffe4, 22), // 184
    (0x7ffff0, 23), (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23), // 188
    (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20), (0x7fff1, 19), // 192
    (0x3fffe7, 22), (0x7ffff2, 23), (0x3fffe8, 22), (0x1ffffec, 25), // 196
    (0x3ffffe2, 26), (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27), // 200
    (0x7ffffdf, 27), (0x3ffffe5, 26), (0xfffff1, 24), (0x1ffffed, 25), // 204
    (0x7fff2, 19), (0x1fffe3, 21), (0x3ffffe6, 26), (0x7ffffe0, 27), // 208
    (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27), (0xfffff2, 24), // 212
    (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26), // 216
    (0xffffffd, 28), (0x7ffffe3, 27), (0x7ffffe4, 27), (0x7ffffe5, 27), // 220
    (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20), (0x1fffe6, 21), // 224
    (0x3fffe9, 22), (0x1fffe7, 21), (0x1fffe8, 21), (0x7ffff3, 23), // 228
    (0x3fffea, 22), (0x3fffeb, 22), (0x1ffffee, 25), (0x1ffffef, 25), // 232
    (0xfffff4, 24), (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23), // 236
    (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26), (0x3ffffed, 26), // 240
    (0x7ffffe7, 27), (0x7ffffe8, 27), (0x7ffffe9, 27), (0x7ffffea, 27), // 244
    (0x7ffffeb, 27), (0xffffffe, 28), (0x7ffffec, 27), (0x7ffffed, 27), // 248
    (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27), (0x3ffffee, 26), // 252
    (0x3fffffff, 30), // 256 EOS
];

/// A complete binary tree with 257 leaves has 256 interior nodes, which is
/// what lets a decoder state fit in a `u8`.
const NODES: usize = 256;

/// Marks a child slot of the tree as a leaf; the low bits are the symbol.
const LEAF: u16 = 0x8000;

/// `TREE[node][bit]` is the child reached by `bit`: an interior node index,
/// or `LEAF | symbol`. Node 0 is the root, which is never a child, so 0 also
/// means "not yet filled" while building.
const TREE: [[u16; 2]; NODES] = build_tree();

const fn build_tree() -> [[u16; 2]; NODES] {
    let mut tree = [[0u16; 2]; NODES];
    let mut nodes_used = 1;
    let mut symbol = 0;
    while symbol < CODES.len() {
        let (code, len) = CODES[symbol];
        let mut node = 0;
        let mut depth = len as u32;
        while depth > 1 {
            depth -= 1;
            let bit = ((code >> depth) & 1) as usize;
            if tree[node][bit] == 0 {
                assert!(nodes_used < NODES, "the code has too many interior nodes");
                tree[node][bit] = nodes_used as u16;
                nodes_used += 1;
            }
            assert!(tree[node][bit] & LEAF == 0, "a code extends another code");
            node = tree[node][bit] as usize;
        }
        let bit = (code & 1) as usize;
        assert!(tree[node][bit] == 0, "a code is a prefix of another code");
        tree[node][bit] = LEAF | symbol as u16;
        symbol += 1;
    }
    assert!(nodes_used == NODES, "the code is not complete");
    tree
}

/// What reading one octet in one state does.
#[derive(Clone, Copy)]
struct Step {
    next: u8,
    /// `COUNT` bits: how many of `symbols` the octet completed; and `FAIL`.
    flags: u8,
    /// No code is shorter than 5 bits, so an octet completes at most two
    /// symbols: the end of one and a whole second one.
    symbols: [u8; 2],
}

// Four octets, so a row of the table is 1 KiB and a lookup one load.
const _: () = assert!(std::mem::size_of::<Step>() == 4);

const COUNT: u8 = 0b011;
/// The octet completed EOS, which is never valid inside a string.
const FAIL: u8 = 0b100;

/// `STEPS[state][octet]`: indexing with two `u8`s needs no bounds check.
/// 256 KiB, of which a string of text touches the rows of the few shallow
/// states its codes pass through.
static STEPS: [[Step; 256]; NODES] = build_steps();

const fn build_steps() -> [[Step; 256]; NODES] {
    let blank = Step {
        next: 0,
        flags: 0,
        symbols: [0; 2],
    };
    let mut steps = [[blank; 256]; NODES];
    let mut state = 0;
    while state < NODES {
        let mut octet = 0;
        while octet < 256 {
            steps[state][octet] = walk_octet(state, octet);
            octet += 1;
        }
        state += 1;
    }
    steps
}

/// Follows the eight bits of `octet` (most significant first) from `state`.
const fn walk_octet(state: usize, octet: usize) -> Step {
    let mut step = Step {
        next: 0,
        flags: 0,
        symbols: [0; 2],
    };
    let mut node = state;
    let mut bit = 8;
    while bit > 0 {
        bit -= 1;
        let child = TREE[node][(octet >> bit) & 1];
        if child & LEAF == 0 {
            node = child as usize;
            continue;
        }
        let symbol = (child & !LEAF) as usize;
        if symbol == EOS {
            step.flags |= FAIL;
        } else {
            let count = (step.flags & COUNT) as usize;
            assert!(count < 2, "three symbols in one octet");
            step.symbols[count] = symbol as u8;
            step.flags += 1;
        }
        node = 0;
    }
    step.next = node as u8;
    step
}

/// Marks a state whose path from the root is not all ones.
const NOT_PADDING: u8 = u8::MAX;

/// For each state, how many bits of padding it stands for if the string
/// ended there: its depth when the path from the root is all ones (the
/// leading bits of EOS), `NOT_PADDING` otherwise.
const PADDING_BITS: [u8; NODES] = build_padding_bits();

const fn build_padding_bits() -> [u8; NODES] {
    let mut bits = [NOT_PADDING; NODES];
    let mut node = 0;
    let mut depth = 0;
    loop {
        bits[node] = depth;
        let child = TREE[node][1];
        if child & LEAF != 0 {
            return bits;
        }
        node = child as usize;
        depth += 1;
    }
}

/// Appends the Huffman decoding of `encoded` to `out`; errors on EOS in
/// the data, padding longer than 7 bits, or padding that is not the most
/// significant bits of EOS (all ones).
pub fn decode(encoded: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
    // The shortest code is 5 bits, so this is enough for any input.
    out.reserve(encoded.len() * 8 / 5);
    let mut state = 0u8;
    for chunk in encoded.chunks(CHUNK) {
        state = decode_chunk(state, chunk, out)?;
    }
    match PADDING_BITS[usize::from(state)] {
        0..=7 => Ok(()),
        NOT_PADDING => Err(DecodeError::InvalidHuffmanPadding),
        bits => Err(DecodeError::HuffmanPaddingTooLong { bits }),
    }
}

/// Input octets decoded per round into a stack buffer.
const CHUNK: usize = 32;

/// Decodes at most `CHUNK` octets from `state`, returning the state after.
///
/// How many symbols an octet completes follows the data, so branching on
/// it would be mispredicted often. Instead every step writes both symbol
/// slots and advances by the count, and EOS is checked once per chunk; the
/// only thing left serialising the loop is the state itself.
#[inline(always)]
fn decode_chunk(mut state: u8, chunk: &[u8], out: &mut Vec<u8>) -> Result<u8, DecodeError> {
    let mut symbols = [0u8; 2 * CHUNK];
    let mut len = 0;
    let mut flags = 0;
    for &octet in chunk {
        let step = STEPS[usize::from(state)][usize::from(octet)];
        symbols[len] = step.symbols[0];
        symbols[len + 1] = step.symbols[1];
        len += usize::from(step.flags & COUNT);
        flags |= step.flags;
        state = step.next;
    }
    if flags & FAIL != 0 {
        return Err(DecodeError::HuffmanEos);
    }
    out.extend_from_slice(&symbols[..len]);
    Ok(state)
}

/// Appends the Huffman encoding of `plain` to `out`.
pub fn encode(plain: &[u8], out: &mut Vec<u8>) {
    out.reserve(encoded_len(plain));
    // Codes are at most 30 bits and fewer than 8 bits wait to be written,
    // so 64 bits of accumulator never lose a pending bit; bits already
    // written are simply shifted out at the top.
    let mut bits = 0u64;
    let mut pending = 0u32;
    for &octet in plain {
        let (code, len) = CODES[usize::from(octet)];
        bits = (bits << len) | u64::from(code);
        pending += u32::from(len);
        while pending >= 8 {
            pending -= 8;
            out.push((bits >> pending) as u8);
        }
    }
    if pending > 0 {
        // The padding is the leading bits of EOS, i.e. ones.
        let pad = 8 - pending;
        out.push(((bits << pad) | ((1 << pad) - 1)) as u8);
    }
}

/// The length `encode` would produce.
pub fn encoded_len(plain: &[u8]) -> usize {
    let bits: usize = plain
        .iter()
        .map(|&octet| usize::from(CODES[usize::from(octet)].1))
        .sum();
    bits.div_ceil(8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::hex;

    fn encoded(plain: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(plain, &mut out);
        assert_eq!(out.len(), encoded_len(plain));
        out
    }

    fn decoded(encoded: &[u8]) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        decode(encoded, &mut out).map(|()| out)
    }

    /// The strings RFC 7541 Appendix C Huffman-codes, with their codings.
    const RFC_STRINGS: [(&str, &str); 13] = [
        ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
        ("no-cache", "a8eb 1064 9cbf"),
        ("custom-key", "25a8 49e9 5ba9 7d7f"),
        ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
        ("302", "6402"),
        ("307", "640e ff"),
        ("private", "aec3 771a 4b"),
        (
            "Mon, 21 Oct 2013 20:13:21 GMT",
            "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
        ),
        (
            "Mon, 21 Oct 2013 20:13:22 GMT",
            "d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff",
        ),
        (
            "https://www.example.com",
            "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
        ),
        ("gzip", "9bd9 ab"),
        (
            "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
            "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 \
             ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ),
        ("", ""),
    ];

    #[test]
    fn rfc_strings_encode_and_decode() {
        for (plain, coded) in RFC_STRINGS {
            assert_eq!(encoded(plain.as_bytes()), hex(coded), "encoding {plain:?}");
            assert_eq!(decoded(&hex(coded)).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn the_code_table_is_canonical_and_complete() {
        // Kraft's equality: a complete prefix code uses the whole code space.
        let space: u64 = CODES.iter().map(|&(_, len)| 1u64 << (30 - len)).sum();
        assert_eq!(space, 1 << 30);
        // Canonical: ordered by (length, symbol), each code is the previous
        // plus one, shifted to its length. This catches a mistyped code.
        let mut order: Vec<usize> = (0..CODES.len()).collect();
        order.sort_by_key(|&symbol| (CODES[symbol].1, symbol));
        let (mut expected, mut previous_len) = (0u32, CODES[order[0]].1);
        for symbol in order {
            let (code, len) = CODES[symbol];
            expected <<= len - previous_len;
            assert_eq!(code, expected, "code of symbol {symbol}");
            expected += 1;
            previous_len = len;
        }
        assert_eq!(CODES[EOS], (0x3fff_ffff, 30));
    }

    #[test]
    fn every_octet_round_trips_alone_and_all_together() {
        for octet in 0..=255u8 {
            assert_eq!(decoded(&encoded(&[octet])).unwrap(), [octet]);
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encoded(&all)).unwrap(), all);
        let backwards: Vec<u8> = (0..=255).rev().collect();
        assert_eq!(decoded(&encoded(&backwards)).unwrap(), backwards);
    }

    #[test]
    fn decode_appends() {
        let mut out = b"x-".to_vec();
        decode(&hex("9bd9 ab"), &mut out).unwrap();
        assert_eq!(out, b"x-gzip");
    }

    #[test]
    fn padding_with_a_zero_bit_is_invalid() {
        // 'a' is 00011 and must be followed by 111 to fill the octet.
        assert_eq!(decoded(&[0b0001_1111]).unwrap(), b"a");
        assert_eq!(
            decoded(&[0b0001_1110]),
            Err(DecodeError::InvalidHuffmanPadding)
        );
        assert_eq!(
            decoded(&[0b0001_1011]),
            Err(DecodeError::InvalidHuffmanPadding)
        );
    }

    #[test]
    fn padding_longer_than_seven_bits_is_invalid() {
        assert_eq!(
            decoded(&[0xff]),
            Err(DecodeError::HuffmanPaddingTooLong { bits: 8 })
        );
        // 'a' (5 bits), then 11 bits of ones.
        assert_eq!(
            decoded(&[0b0001_1111, 0xff]),
            Err(DecodeError::HuffmanPaddingTooLong { bits: 11 })
        );
    }

    #[test]
    fn an_encoded_eos_is_invalid() {
        // EOS is 30 ones: four octets of ones hold all of it.
        assert_eq!(decoded(&[0xff; 4]), Err(DecodeError::HuffmanEos));
        // 'a', then EOS, then padding.
        let mut with_eos = vec![0b0001_1111];
        with_eos.extend([0xff, 0xff, 0xff, 0xff]);
        assert_eq!(decoded(&with_eos), Err(DecodeError::HuffmanEos));
    }

    #[test]
    fn the_transition_table_agrees_with_a_bit_by_bit_walk() {
        // The slow, obvious decoder, only ever used here as a reference.
        fn slow(encoded: &[u8]) -> Vec<u8> {
            let (mut node, mut out) = (0usize, Vec::new());
            for i in 0..encoded.len() * 8 {
                let bit = (encoded[i / 8] >> (7 - i % 8)) & 1;
                let child = TREE[node][usize::from(bit)];
                if child & LEAF == 0 {
                    node = usize::from(child);
                } else {
                    out.push((child & 0xff) as u8);
                    node = 0;
                }
            }
            out
        }
        let sample: Vec<u8> = (0..=255u8)
            .chain(b"date: Mon, 21 Oct".iter().copied())
            .collect();
        let coded = encoded(&sample);
        assert_eq!(decoded(&coded).unwrap(), slow(&coded));
    }
}

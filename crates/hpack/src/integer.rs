//! Prefix-coded integers (RFC 7541 §5.1), the framing of every index,
//! string length and table size; QPACK (RFC 9204 §4.1.1) frames its
//! fields with the same integers.
//!
//! The decoder caps values at `u32::MAX` and at five continuation octets:
//! nothing legitimate in a header block comes near that, and the cap keeps
//! a hostile peer from making the decoder spin on endless `0x80` octets or
//! overflow the arithmetic.

use crate::DecodeError;

/// Beyond five continuation octets a value either exceeds 32 bits or is
/// padded with zero groups that no sane encoder writes.
const MAX_CONTINUATION_OCTETS: usize = 5;

/// Decodes the integer whose prefix is the low `prefix_bits` (1..=8) of
/// `input[0]`, returning the value and the number of octets it took.
#[inline]
pub fn decode(input: &[u8], prefix_bits: u32) -> Result<(usize, usize), DecodeError> {
    let (&first, rest) = input.split_first().ok_or(DecodeError::Truncated)?;
    let prefix_max = ((1u32 << prefix_bits) - 1) as u8;
    let prefix = first & prefix_max;
    if prefix < prefix_max {
        return Ok((usize::from(prefix), 1));
    }
    decode_continuation(u64::from(prefix_max), rest)
}

/// The rare multi-octet tail, kept out of line so the one-octet case stays
/// small enough to inline everywhere.
#[inline(never)]
fn decode_continuation(mut value: u64, rest: &[u8]) -> Result<(usize, usize), DecodeError> {
    for (i, &octet) in rest.iter().enumerate() {
        if i == MAX_CONTINUATION_OCTETS {
            return Err(DecodeError::IntegerOverflow);
        }
        value += u64::from(octet & 0x7f) << (7 * i);
        if value > u64::from(u32::MAX) {
            return Err(DecodeError::IntegerOverflow);
        }
        if octet & 0x80 == 0 {
            // Lossless: the value fits in 32 bits, checked above.
            return Ok((value as usize, i + 2));
        }
    }
    Err(DecodeError::Truncated)
}

/// Appends `value` with a `prefix_bits`-bit prefix; `flags` fills the
/// high bits of the first octet (the representation's pattern).
pub fn encode(value: usize, prefix_bits: u32, flags: u8, out: &mut Vec<u8>) {
    let prefix_max = (1usize << prefix_bits) - 1;
    if value < prefix_max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | prefix_max as u8);
    let mut rest = value - prefix_max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: usize, prefix_bits: u32) -> Vec<u8> {
        let mut out = Vec::new();
        encode(value, prefix_bits, 0, &mut out);
        out
    }

    #[test]
    fn rfc_c_1_1_ten_with_a_five_bit_prefix() {
        assert_eq!(encoded(10, 5), [0x0a]);
        assert_eq!(decode(&[0x0a], 5), Ok((10, 1)));
    }

    #[test]
    fn rfc_c_1_2_1337_with_a_five_bit_prefix() {
        assert_eq!(encoded(1337, 5), [0x1f, 0x9a, 0x0a]);
        assert_eq!(decode(&[0x1f, 0x9a, 0x0a], 5), Ok((1337, 3)));
    }

    #[test]
    fn rfc_c_1_3_42_at_an_octet_boundary() {
        assert_eq!(encoded(42, 8), [0x2a]);
        assert_eq!(decode(&[0x2a], 8), Ok((42, 1)));
    }

    #[test]
    fn the_bits_above_the_prefix_are_ignored_and_kept() {
        let mut out = Vec::new();
        encode(3, 6, 0x40, &mut out);
        assert_eq!(out, [0x43]);
        assert_eq!(decode(&[0xe3], 5), Ok((3, 1)));
    }

    #[test]
    fn a_value_equal_to_the_prefix_maximum_needs_a_zero_continuation() {
        assert_eq!(encoded(31, 5), [0x1f, 0x00]);
        assert_eq!(decode(&[0x1f, 0x00], 5), Ok((31, 2)));
    }

    #[test]
    fn round_trips_every_prefix_and_boundary_value() {
        let values = [0, 1, 126, 127, 128, 254, 255, 256, 16_383, 16_384, 1 << 21];
        for prefix_bits in 1..=8 {
            for &value in values.iter().chain(&[u32::MAX as usize]) {
                let bytes = encoded(value, prefix_bits);
                assert_eq!(
                    decode(&bytes, prefix_bits),
                    Ok((value, bytes.len())),
                    "{value} with a {prefix_bits}-bit prefix"
                );
            }
        }
    }

    #[test]
    fn a_missing_continuation_is_truncated() {
        assert_eq!(decode(&[], 5), Err(DecodeError::Truncated));
        assert_eq!(decode(&[0x1f], 5), Err(DecodeError::Truncated));
        assert_eq!(decode(&[0x1f, 0x9a], 5), Err(DecodeError::Truncated));
    }

    #[test]
    fn values_past_32_bits_overflow() {
        let just_over = encoded(u32::MAX as usize + 1, 5);
        assert_eq!(decode(&just_over, 5), Err(DecodeError::IntegerOverflow));
        let huge = [0xff, 0xff, 0xff, 0xff, 0xff, 0x0f];
        assert_eq!(decode(&huge, 8), Err(DecodeError::IntegerOverflow));
    }

    #[test]
    fn more_than_five_continuation_octets_overflow_even_if_small() {
        let padded = [0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
        assert_eq!(decode(&padded, 5), Err(DecodeError::IntegerOverflow));
        let five = [0x1f, 0x80, 0x80, 0x80, 0x80, 0x00];
        assert_eq!(decode(&five, 5), Ok((31, 6)));
    }
}

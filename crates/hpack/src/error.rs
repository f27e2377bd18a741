//! The one error type of the crate.
//!
//! Every decoding failure ends the same way (the connection is torn down
//! with COMPRESSION_ERROR), so the error only has to be cheap to return and
//! precise enough to log: a small `Copy` enum whose message names what the
//! decoder expected and what it found instead.

use std::fmt;

/// Why a header block could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The block ended in the middle of a field representation.
    Truncated,
    /// An integer did not fit in 32 bits, or used more than five
    /// continuation octets.
    IntegerOverflow,
    /// A field referred to index 0, which RFC 7541 never assigns.
    ZeroIndex,
    /// A field referred to an index past the end of the static and dynamic
    /// tables.
    IndexOutOfRange {
        /// The index the block referred to.
        index: usize,
        /// The highest index valid at that point of the block.
        last: usize,
    },
    /// A Huffman-coded string contained the EOS symbol.
    HuffmanEos,
    /// A Huffman-coded string ended with more than 7 bits of padding.
    HuffmanPaddingTooLong {
        /// How many padding bits there were.
        bits: u8,
    },
    /// A Huffman-coded string ended with padding that was not all ones (the
    /// leading bits of EOS).
    InvalidHuffmanPadding,
    /// A dynamic table size update asked for more than the client allows.
    TableSizeUpdateTooLarge {
        /// The size the update asked for.
        asked: usize,
        /// The maximum the client advertised.
        max: usize,
    },
    /// A dynamic table size update came after a field of the same block.
    TableSizeUpdateNotFirst,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Truncated => f.write_str(
                "expected the rest of a field representation, found the end of the header block",
            ),
            DecodeError::IntegerOverflow => {
                f.write_str("expected an integer of at most 32 bits, found a longer one")
            }
            DecodeError::ZeroIndex => {
                f.write_str("expected a header table index of at least 1, found index 0")
            }
            DecodeError::IndexOutOfRange { index, last } => write!(
                f,
                "expected a header table index in 1..={last}, found index {index}"
            ),
            DecodeError::HuffmanEos => {
                f.write_str("expected Huffman-coded octets, found the EOS symbol")
            }
            DecodeError::HuffmanPaddingTooLong { bits } => write!(
                f,
                "expected at most 7 bits of Huffman padding, found {bits} bits"
            ),
            DecodeError::InvalidHuffmanPadding => {
                f.write_str("expected Huffman padding of all one bits, found a zero bit")
            }
            DecodeError::TableSizeUpdateTooLarge { asked, max } => write!(
                f,
                "expected a dynamic table size of at most {max} bytes, found an update to {asked}"
            ),
            DecodeError::TableSizeUpdateNotFirst => f.write_str(
                "expected dynamic table size updates only at the start of a header block, \
                 found one after a field",
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_was_expected_and_found() {
        let message = DecodeError::IndexOutOfRange {
            index: 70,
            last: 63,
        }
        .to_string();
        assert_eq!(
            message,
            "expected a header table index in 1..=63, found index 70"
        );

        let message = DecodeError::TableSizeUpdateTooLarge {
            asked: 8192,
            max: 4096,
        }
        .to_string();
        assert!(message.contains("at most 4096") && message.contains("8192"));
    }

    #[test]
    fn every_variant_has_a_message() {
        let all = [
            DecodeError::Truncated,
            DecodeError::IntegerOverflow,
            DecodeError::ZeroIndex,
            DecodeError::IndexOutOfRange { index: 1, last: 0 },
            DecodeError::HuffmanEos,
            DecodeError::HuffmanPaddingTooLong { bits: 8 },
            DecodeError::InvalidHuffmanPadding,
            DecodeError::TableSizeUpdateTooLarge { asked: 1, max: 0 },
            DecodeError::TableSizeUpdateNotFirst,
        ];
        for error in all {
            let message = error.to_string();
            assert!(message.starts_with("expected "), "{message}");
            assert!(message.contains("found"), "{message}");
        }
    }

    #[test]
    fn is_a_std_error() {
        let error: Box<dyn std::error::Error> = Box::new(DecodeError::ZeroIndex);
        assert!(error.source().is_none());
    }
}

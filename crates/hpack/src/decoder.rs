//! Decoding of response header blocks (RFC 7541 §3, §4 and §6).
//!
//! A load generator decodes every response, so the decoder is built for
//! the steady state of a long connection: the common one-octet static
//! reference is matched first, names and values are handed to the caller
//! as borrowed slices (of the block, the static table, the dynamic table or
//! a reused scratch buffer), and nothing is allocated once the buffers have
//! grown to the sizes the server uses.

use crate::static_table::{self, ENTRIES as STATIC};
use crate::table::DynamicTable;
use crate::{huffman, integer, DecodeError};

/// The dynamic table size HTTP/2 starts with (SETTINGS_HEADER_TABLE_SIZE).
pub const DEFAULT_TABLE_SIZE: usize = 4096;

/// The HPACK decoder of one HTTP/2 connection (the response side).
#[derive(Debug)]
pub struct Decoder {
    table: DynamicTable,
    /// The ceiling for size updates: what the client advertised.
    max_table_size: usize,
    /// Huffman-decoded literal names; reused across fields and blocks.
    name_scratch: Vec<u8>,
    /// Huffman-decoded values, the last few kept with what they decoded.
    values: Recent,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::new(DEFAULT_TABLE_SIZE)
    }
}

impl Decoder {
    /// A decoder whose dynamic table may hold `max_table_size` bytes (what
    /// the client advertised as SETTINGS_HEADER_TABLE_SIZE; 4096 by default).
    pub fn new(max_table_size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(max_table_size),
            max_table_size,
            name_scratch: Vec::new(),
            values: Recent::default(),
        }
    }

    /// Decodes one complete header block (HEADERS plus any CONTINUATION
    /// payloads already joined, padding and priority removed), calling
    /// `field(name, value)` for every field in order. Names and values are
    /// raw bytes, Huffman-decoded. The dynamic table is updated as the block
    /// says. On error the connection must be torn down (COMPRESSION_ERROR),
    /// the decoder's state is then unspecified.
    pub fn decode(
        &mut self,
        block: &[u8],
        field: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), DecodeError> {
        let mut input = Input { rest: block };
        let mut before_first_field = true;
        while let Some(first) = input.peek() {
            match first {
                // A static entry in one octet: the most common field of all.
                0x81..=0xbd => {
                    input.advance(1);
                    let (name, value) = STATIC[usize::from(first - 0x81)];
                    field(name, value);
                }
                // Index 0, dynamic entries, and anything past one octet.
                0x80..=0xff => {
                    let (name, value) = self.entry(input.integer(7)?)?;
                    field(name, value);
                }
                0x40..=0x7f => self.literal(&mut input, 6, true, field)?,
                0x20..=0x3f => {
                    if !before_first_field {
                        return Err(DecodeError::TableSizeUpdateNotFirst);
                    }
                    let size = input.integer(5)?;
                    self.update_table_size(size)?;
                    // Not a field: more updates may follow.
                    continue;
                }
                // Without indexing (0000) and never indexed (0001) differ
                // only for re-encoding intermediaries, which this is not.
                _ => self.literal(&mut input, 4, false, field)?,
            }
            before_first_field = false;
        }
        Ok(())
    }

    /// The dynamic table's current size in RFC 7541 terms (sum of name+value+32).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// How many entries the dynamic table holds.
    pub fn table_len(&self) -> usize {
        self.table.len()
    }

    /// The largest dynamic table size the peer may ask for.
    pub fn max_table_size(&self) -> usize {
        self.max_table_size
    }

    /// The field at an RFC 7541 index (static, then dynamic).
    fn entry(&self, index: usize) -> Result<(&[u8], &[u8]), DecodeError> {
        match index {
            0 => Err(DecodeError::ZeroIndex),
            1..=static_table::LEN => Ok(STATIC[index - 1]),
            _ => self
                .table
                .get(index - static_table::LEN - 1)
                .ok_or_else(|| out_of_range(index, &self.table)),
        }
    }

    fn update_table_size(&mut self, size: usize) -> Result<(), DecodeError> {
        if size > self.max_table_size {
            return Err(DecodeError::TableSizeUpdateTooLarge {
                asked: size,
                max: self.max_table_size,
            });
        }
        self.table.set_max_size(size);
        Ok(())
    }

    /// A literal field (§6.2); `add_to_table` for incremental indexing.
    fn literal(
        &mut self,
        input: &mut Input<'_>,
        prefix_bits: u32,
        add_to_table: bool,
        field: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), DecodeError> {
        let name = literal_name(input, prefix_bits)?;
        let value = input.string()?;
        let Decoder {
            table,
            name_scratch,
            values,
            ..
        } = self;
        let value = match value.huffman {
            true => values.decode(value.bytes)?,
            false => value.bytes,
        };
        // Each arm hands the name over separately because only a name from
        // the dynamic table keeps the table borrowed during the callback.
        match name {
            Name::Static(name) => {
                field(name, value);
                if add_to_table {
                    table.insert(name, value);
                }
            }
            Name::Literal(raw) => {
                let name = raw.unpack(name_scratch)?;
                field(name, value);
                if add_to_table {
                    table.insert(name, value);
                }
            }
            Name::Dynamic(index) => {
                let position = index - static_table::LEN - 1;
                let Some((name, _)) = table.get(position) else {
                    return Err(out_of_range(index, table));
                };
                field(name, value);
                if add_to_table {
                    table.insert_with_name_of(position, value);
                }
            }
        }
        Ok(())
    }
}

/// Reads the name part of a literal: an index or a string.
fn literal_name<'b>(input: &mut Input<'b>, prefix_bits: u32) -> Result<Name<'b>, DecodeError> {
    Ok(match input.integer(prefix_bits)? {
        0 => Name::Literal(input.string()?),
        index @ 1..=static_table::LEN => Name::Static(STATIC[index - 1].0),
        index => Name::Dynamic(index),
    })
}

fn out_of_range(index: usize, table: &DynamicTable) -> DecodeError {
    DecodeError::IndexOutOfRange {
        index,
        last: static_table::LEN + table.len(),
    }
}

/// Where a literal's name is, kept as a place rather than a slice so that
/// the dynamic table can be updated once the field has been delivered.
enum Name<'b> {
    Static(&'static [u8]),
    Literal(RawString<'b>),
    /// An index past the static table, not yet checked against the
    /// dynamic one.
    Dynamic(usize),
}

/// A string literal as it appears in the block (§5.2).
struct RawString<'b> {
    huffman: bool,
    bytes: &'b [u8],
}

impl<'b> RawString<'b> {
    /// The string's octets: borrowed from the block when sent plain,
    /// Huffman-decoded into `scratch` otherwise.
    fn unpack<'s>(self, scratch: &'s mut Vec<u8>) -> Result<&'s [u8], DecodeError>
    where
        'b: 's,
    {
        if !self.huffman {
            return Ok(self.bytes);
        }
        scratch.clear();
        huffman::decode(self.bytes, scratch)?;
        Ok(scratch)
    }
}

/// The Huffman-coded values decoded last, by their coded bytes. Servers
/// send the same coded values over and over (a server name, a content
/// type, the date of the current second), and many send them as new
/// literals every time instead of referring to the table: comparing the
/// coded bytes costs a few instructions per byte, decoding them several
/// times that. Searched in full (a length compare per slot), replaced in
/// turn: a response's handful of values never evict each other.
#[derive(Debug, Default)]
struct Recent {
    slots: [Decoded; RECENT],
    next: usize,
}

const RECENT: usize = 8;

#[derive(Debug, Default)]
struct Decoded {
    coded: Vec<u8>,
    plain: Vec<u8>,
}

impl Recent {
    fn decode(&mut self, coded: &[u8]) -> Result<&[u8], DecodeError> {
        let found = self
            .slots
            .iter()
            .position(|s| s.coded.len() == coded.len() && s.coded == coded);
        let i = match found {
            Some(i) => i,
            None => {
                let i = self.next;
                self.next = (i + 1) % RECENT;
                let slot = &mut self.slots[i];
                slot.coded.clear();
                slot.plain.clear();
                huffman::decode(coded, &mut slot.plain)?;
                slot.coded.extend_from_slice(coded);
                i
            }
        };
        Ok(&self.slots[i].plain)
    }
}

/// The unread rest of a header block.
struct Input<'b> {
    rest: &'b [u8],
}

impl<'b> Input<'b> {
    fn peek(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    fn advance(&mut self, octets: usize) {
        self.rest = &self.rest[octets..];
    }

    #[inline]
    fn integer(&mut self, prefix_bits: u32) -> Result<usize, DecodeError> {
        let (value, used) = integer::decode(self.rest, prefix_bits)?;
        self.advance(used);
        Ok(value)
    }

    fn string(&mut self) -> Result<RawString<'b>, DecodeError> {
        let huffman = self.peek().ok_or(DecodeError::Truncated)? & 0x80 != 0;
        let len = self.integer(7)?;
        if len > self.rest.len() {
            return Err(DecodeError::Truncated);
        }
        let (bytes, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(RawString { huffman, bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{hex, IndexingEncoder, XorShift};
    use std::hint::black_box;
    use std::time::Instant;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn decode(decoder: &mut Decoder, block: &[u8]) -> Result<Fields, DecodeError> {
        let mut fields = Vec::new();
        decoder.decode(block, &mut |name, value| {
            fields.push((name.to_vec(), value.to_vec()))
        })?;
        Ok(fields)
    }

    fn owned(fields: &[(&str, &str)]) -> Fields {
        fields
            .iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    fn decode_fresh(block: &[u8]) -> Result<Fields, DecodeError> {
        decode(&mut Decoder::default(), block)
    }

    #[test]
    fn rfc_c_2_1_literal_with_indexing() {
        let mut decoder = Decoder::default();
        let block = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
        let fields = decode(&mut decoder, &block).unwrap();
        assert_eq!(fields, owned(&[("custom-key", "custom-header")]));
        assert_eq!(decoder.table_size(), 55);
    }

    #[test]
    fn rfc_c_2_2_literal_without_indexing() {
        let mut decoder = Decoder::default();
        let block = hex("040c 2f73 616d 706c 652f 7061 7468");
        let fields = decode(&mut decoder, &block).unwrap();
        assert_eq!(fields, owned(&[(":path", "/sample/path")]));
        assert_eq!(decoder.table_size(), 0);
    }

    #[test]
    fn rfc_c_2_3_literal_never_indexed() {
        let mut decoder = Decoder::default();
        let block = hex("1008 7061 7373 776f 7264 0673 6563 7265 74");
        let fields = decode(&mut decoder, &block).unwrap();
        assert_eq!(fields, owned(&[("password", "secret")]));
        assert_eq!(decoder.table_size(), 0);
    }

    #[test]
    fn rfc_c_2_4_indexed_field() {
        let mut decoder = Decoder::default();
        let fields = decode(&mut decoder, &hex("82")).unwrap();
        assert_eq!(fields, owned(&[(":method", "GET")]));
        assert_eq!(decoder.table_size(), 0);
    }

    #[test]
    fn every_static_entry_decodes_from_its_index() {
        for index in 1..=static_table::LEN {
            let mut block = Vec::new();
            integer::encode(index, 7, 0x80, &mut block);
            let fields = decode_fresh(&block).unwrap();
            let (name, value) = STATIC[index - 1];
            assert_eq!(fields, vec![(name.to_vec(), value.to_vec())]);
        }
    }

    #[test]
    fn an_empty_block_has_no_fields() {
        assert_eq!(decode_fresh(&[]), Ok(Vec::new()));
    }

    #[test]
    fn index_zero_is_an_error() {
        assert_eq!(decode_fresh(&[0x80]), Err(DecodeError::ZeroIndex));
    }

    #[test]
    fn an_index_past_the_tables_is_an_error() {
        let past = Err(DecodeError::IndexOutOfRange {
            index: 62,
            last: 61,
        });
        assert_eq!(decode_fresh(&[0xbe]), past);
        // As a literal's name, in each literal representation.
        assert_eq!(decode_fresh(&[0x7e, 0x00]), past);
        assert_eq!(decode_fresh(&[0x0f, 0x2f, 0x00]), past);
        assert_eq!(decode_fresh(&[0x1f, 0x2f, 0x00]), past);

        let mut decoder = Decoder::default();
        decode(&mut decoder, &hex("4001 6101 62")).unwrap();
        assert_eq!(decode(&mut decoder, &[0xbe]).unwrap(), owned(&[("a", "b")]));
        assert_eq!(
            decode(&mut decoder, &[0xbf]),
            Err(DecodeError::IndexOutOfRange {
                index: 63,
                last: 62
            })
        );
    }

    #[test]
    fn a_truncated_integer_is_an_error() {
        assert_eq!(decode_fresh(&[0xff]), Err(DecodeError::Truncated));
        assert_eq!(decode_fresh(&[0xff, 0x80]), Err(DecodeError::Truncated));
        assert_eq!(decode_fresh(&[0x3f]), Err(DecodeError::Truncated));
        // A string length cut short.
        assert_eq!(decode_fresh(&[0x04, 0x7f]), Err(DecodeError::Truncated));
    }

    #[test]
    fn a_truncated_string_is_an_error() {
        let whole = hex("040c 2f73 616d 706c 652f 7061 7468");
        for cut in 1..whole.len() {
            assert_eq!(
                decode_fresh(&whole[..cut]),
                Err(DecodeError::Truncated),
                "cut at {cut}"
            );
        }
        // A literal name with no value after it.
        assert_eq!(decode_fresh(&hex("0001 61")), Err(DecodeError::Truncated));
    }

    #[test]
    fn an_integer_overflow_is_an_error() {
        let block = [0xff, 0xff, 0xff, 0xff, 0xff, 0x0f];
        assert_eq!(decode_fresh(&block), Err(DecodeError::IntegerOverflow));
        let padded = [0x3f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
        assert_eq!(decode_fresh(&padded), Err(DecodeError::IntegerOverflow));
    }

    #[test]
    fn a_huge_string_length_is_truncated_not_allocated() {
        let mut block = vec![0x00];
        integer::encode(u32::MAX as usize, 7, 0x80, &mut block);
        assert_eq!(decode_fresh(&block), Err(DecodeError::Truncated));
    }

    #[test]
    fn a_size_update_above_the_maximum_is_an_error() {
        let mut block = Vec::new();
        integer::encode(4097, 5, 0x20, &mut block);
        assert_eq!(
            decode_fresh(&block),
            Err(DecodeError::TableSizeUpdateTooLarge {
                asked: 4097,
                max: 4096
            })
        );
        let mut decoder = Decoder::new(100);
        assert_eq!(
            decode(&mut decoder, &block),
            Err(DecodeError::TableSizeUpdateTooLarge {
                asked: 4097,
                max: 100
            })
        );
    }

    #[test]
    fn a_size_update_after_a_field_is_an_error() {
        assert_eq!(
            decode_fresh(&[0x82, 0x20]),
            Err(DecodeError::TableSizeUpdateNotFirst)
        );
    }

    #[test]
    fn size_updates_at_the_start_apply_in_order() {
        let mut decoder = Decoder::default();
        decode(&mut decoder, &hex("4001 6101 62 4001 6301 64")).unwrap();
        assert_eq!(decoder.table_size(), 68);
        // Shrink to 34 (evicts the older entry), then allow 4096 again.
        let mut block = Vec::new();
        integer::encode(34, 5, 0x20, &mut block);
        integer::encode(4096, 5, 0x20, &mut block);
        block.push(0xbe);
        assert_eq!(decode(&mut decoder, &block).unwrap(), owned(&[("c", "d")]));
        assert_eq!(decoder.table_size(), 34);
        // Growing back does not bring entries back.
        assert_eq!(decoder.table_len(), 1);
    }

    #[test]
    fn recent_values_decode_the_same_whether_kept_or_not() {
        let mut recent = Recent::default();
        let mut rng = 7u64;
        let mut values = Vec::new();
        for _ in 0..200 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let len = (rng % 24) as usize;
            let plain: Vec<u8> = (0..len).map(|i| b'a' + ((rng >> i) % 26) as u8).collect();
            values.push(plain);
        }
        // Each value several times, interleaved, so slots are hit, missed
        // and overwritten.
        for round in 0..3 {
            for (i, plain) in values.iter().enumerate() {
                let mut coded = Vec::new();
                huffman::encode(plain, &mut coded);
                let got = recent.decode(&coded).unwrap().to_vec();
                assert_eq!(&got, plain, "round {round}, value {i}");
            }
        }
        // A bad string is an error, and is not kept as if it decoded.
        assert!(recent.decode(&[0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(recent.decode(&[0xff, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn a_bad_huffman_string_is_an_error() {
        // A value of one octet of ones: 8 bits of padding.
        assert_eq!(
            decode_fresh(&[0x04, 0x81, 0xff]),
            Err(DecodeError::HuffmanPaddingTooLong { bits: 8 })
        );
        // A Huffman name holding EOS.
        assert_eq!(
            decode_fresh(&[0x00, 0x84, 0xff, 0xff, 0xff, 0xff, 0x00]),
            Err(DecodeError::HuffmanEos)
        );
    }

    #[test]
    fn a_literal_can_name_an_entry_it_evicts() {
        // Room for one entry; the second literal takes its name from the
        // first (index 62) and evicts it by being inserted.
        let mut decoder = Decoder::new(50);
        decode(
            &mut decoder,
            &hex("400a 6375 7374 6f6d 2d6b 6579 0361 6263"),
        )
        .unwrap();
        let fields = decode(&mut decoder, &hex("7e03 7879 7a")).unwrap();
        assert_eq!(fields, owned(&[("custom-key", "xyz")]));
        assert_eq!(decode(&mut decoder, &[0xbe]).unwrap(), fields);
        assert_eq!(decoder.table_len(), 1);
    }

    #[test]
    fn a_literal_without_indexing_may_name_a_dynamic_entry() {
        let mut decoder = Decoder::default();
        decode(&mut decoder, &hex("4001 6101 62")).unwrap();
        let fields = decode(&mut decoder, &hex("0f2f 0178")).unwrap();
        assert_eq!(fields, owned(&[("a", "x")]));
        assert_eq!(decoder.table_len(), 1);
    }

    #[test]
    fn round_trips_a_server_that_indexes_everything_through_evictions() {
        let mut rng = XorShift::new(11);
        for max_size in [0, 64, 256, 4096] {
            let mut encoder = IndexingEncoder::new(max_size);
            let mut decoder = Decoder::new(max_size);
            let vocabulary: Vec<(Vec<u8>, Vec<u8>)> = (0..40)
                .map(|_| (rng.bytes_below(20), rng.bytes_below(30)))
                .collect();
            for _ in 0..2_000 {
                let fields: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.below(8))
                    .map(|_| {
                        let (name, value) = &vocabulary[rng.below(vocabulary.len())];
                        // Sometimes a known name with a new value, so that
                        // literals name dynamic entries.
                        let value = if rng.below(4) == 0 {
                            rng.bytes_below(10)
                        } else {
                            value.clone()
                        };
                        (name.clone(), value)
                    })
                    .collect();
                let mut block = Vec::new();
                for (name, value) in &fields {
                    encoder.field(name, value, &mut block);
                }
                assert_eq!(decode(&mut decoder, &block).unwrap(), fields);
                assert_eq!(decoder.table_size(), encoder.size());
            }
        }
    }

    #[test]
    fn random_blocks_never_panic() {
        let mut rng = XorShift::new(0x5eed);
        let mut decoder = Decoder::default();
        let mut server = IndexingEncoder::new(DEFAULT_TABLE_SIZE);
        let mut block = Vec::new();
        for round in 0..200_000 {
            block.clear();
            if round % 2 == 0 {
                block.extend(rng.bytes_below(48));
            } else {
                // A valid-looking block with a few octets changed or cut,
                // to get past the first octet more often than noise does.
                for _ in 0..1 + rng.below(4) {
                    let name = rng.bytes_below(12);
                    let value = rng.bytes_below(12);
                    server.field(&name, &value, &mut block);
                }
                for _ in 0..rng.below(3) {
                    let at = rng.below(block.len());
                    block[at] = rng.below(256) as u8;
                }
                block.truncate(block.len() - rng.below(2));
            }
            let _ = decoder.decode(&block, &mut |name, value| {
                black_box((name, value));
            });
            assert!(decoder.table_size() <= decoder.max_table_size());
        }
    }

    /// One day of a busy origin as seen by one connection: the date changes
    /// every `responses_per_date` responses, the length takes a few values,
    /// and the server indexes every field (as common servers do), so after
    /// the first response most fields are one-octet dynamic references.
    fn typical_responses(count: usize, responses_per_date: usize) -> Vec<Vec<u8>> {
        let lengths = ["1024", "2318", "512", "10240", "733", "4096", "88", "1530"];
        let mut server = IndexingEncoder::new(DEFAULT_TABLE_SIZE);
        (0..count)
            .map(|i| {
                let second = i / responses_per_date;
                let date = format!(
                    "Tue, 04 Jun 2024 {:02}:{:02}:{:02} GMT",
                    (second / 3600) % 24,
                    (second / 60) % 60,
                    second % 60
                );
                let fields: [(&[u8], &[u8]); 5] = [
                    (b":status", b"200"),
                    (b"server", b"example-httpd/2.4"),
                    (b"date", date.as_bytes()),
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", lengths[i % lengths.len()].as_bytes()),
                ];
                let mut block = Vec::new();
                // Each pass of the benchmark replays the stream from an empty
                // table, so the first block starts by emptying it.
                if i == 0 {
                    integer::encode(0, 5, 0x20, &mut block);
                    integer::encode(DEFAULT_TABLE_SIZE, 5, 0x20, &mut block);
                }
                for (name, value) in fields {
                    server.field(name, value, &mut block);
                }
                block
            })
            .collect()
    }

    /// Decodes `total` blocks cycling through `stream`; ns per block.
    fn ns_per_block(stream: &[Vec<u8>], total: usize) -> f64 {
        let mut decoder = Decoder::default();
        let mut octets = 0usize;
        let mut sink = |name: &[u8], value: &[u8]| octets += name.len() + value.len();
        // One pass to grow the buffers, as a long-lived connection would have.
        for block in stream {
            decoder.decode(block, &mut sink).unwrap();
        }
        let start = Instant::now();
        for block in stream.iter().cycle().take(total) {
            decoder.decode(black_box(block), &mut sink).unwrap();
        }
        let elapsed = start.elapsed();
        black_box(octets);
        elapsed.as_nanos() as f64 / total as f64
    }

    #[test]
    #[ignore = "a timing; run with cargo test --release -- --ignored --nocapture"]
    fn cost_of_a_typical_response_block() {
        const TOTAL: usize = 1_000_000;
        let typical = typical_responses(10_000, 1_000);
        let mean_len = typical.iter().map(Vec::len).sum::<usize>() as f64 / 10_000.0;
        println!(
            "typical 200 response ({mean_len:.1} octets on average): {:.1} ns per block",
            ns_per_block(&typical, TOTAL)
        );
        // Worst case for the same fields: a new date in every response.
        let churning = typical_responses(10_000, 1);
        println!(
            "same, with a new Huffman-coded date every response: {:.1} ns per block",
            ns_per_block(&churning, TOTAL)
        );
    }
}

//! What the unit tests share: hex literals, a deterministic random source,
//! and a server-style encoder that indexes every field.
//!
//! The crate's own encoder never touches the dynamic table, so the tests
//! need this second encoder to produce the blocks a real server sends:
//! literals with incremental indexing, dynamic references, evictions.

use std::collections::VecDeque;

use crate::static_table::{self, Match};
use crate::{encoder, integer};

/// The octets of a hex string as RFC 7541 prints them ("8286 8441 ...").
pub(crate) fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace())
        .map(|c| (c as char).to_digit(16).expect("a hex digit") as u8)
        .collect();
    assert!(digits.len() % 2 == 0, "an odd number of hex digits");
    digits
        .chunks(2)
        .map(|pair| pair[0] << 4 | pair[1])
        .collect()
}

/// A xorshift64 generator: reproducible, and no dependency.
pub(crate) struct XorShift(u64);

impl XorShift {
    pub(crate) fn new(seed: u64) -> XorShift {
        XorShift(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..bound`; `bound` must not be 0.
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    /// Random octets, of a random length in `0..max_len`.
    pub(crate) fn bytes_below(&mut self, max_len: usize) -> Vec<u8> {
        let len = self.below(max_len);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// An encoder that adds every field it has not seen to the dynamic table,
/// the way common servers treat response fields.
pub(crate) struct IndexingEncoder {
    /// Newest first, as dynamic indices count.
    entries: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max_size: usize,
}

impl IndexingEncoder {
    pub(crate) fn new(max_size: usize) -> IndexingEncoder {
        IndexingEncoder {
            entries: VecDeque::new(),
            size: 0,
            max_size,
        }
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Appends `name: value`: an index when the whole field is known, else a
    /// literal with incremental indexing naming the best known name.
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let static_match = static_table::find(name, value);
        if let Some(Match::Field(index)) = static_match {
            return integer::encode(index, 7, 0x80, out);
        }
        if let Some(index) = self.dynamic_index(|n, v| n == name && v == value) {
            return integer::encode(index, 7, 0x80, out);
        }
        let name_index = match static_match {
            Some(Match::Name(index)) => Some(index),
            _ => self.dynamic_index(|n, _| n == name),
        };
        integer::encode(name_index.unwrap_or(0), 6, 0x40, out);
        if name_index.is_none() {
            encoder::encode_string(name, out);
        }
        encoder::encode_string(value, out);
        self.insert(name, value);
    }

    /// The wire index of the newest entry `wanted` accepts.
    fn dynamic_index(&self, wanted: impl Fn(&[u8], &[u8]) -> bool) -> Option<usize> {
        self.entries
            .iter()
            .position(|(n, v)| wanted(n, v))
            .map(|position| static_table::LEN + 1 + position)
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        if size > self.max_size {
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.entries.push_front((name.to_vec(), value.to_vec()));
        self.size += size;
        while self.size > self.max_size {
            let (n, v) = self.entries.pop_back().expect("size counts entries");
            self.size -= n.len() + v.len() + 32;
        }
    }
}

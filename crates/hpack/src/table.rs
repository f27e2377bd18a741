//! The decoder's dynamic table (RFC 7541 §2.3.2, §4).
//!
//! Entries live back to back in one byte buffer, oldest first, so that a
//! name or value can be handed out as a plain slice. Evicting only forgets
//! the oldest entry's bookkeeping; its bytes stay until the buffer runs out
//! of room, when the live bytes are moved to the front. Keeping at least
//! twice the live bytes of capacity makes that move rare enough to cost
//! about one byte copied per byte inserted, and once the buffer has grown
//! to fit the table, inserting never allocates again.

use std::collections::VecDeque;

/// RFC 7541 §4.1: each entry counts 32 bytes on top of its name and value.
const ENTRY_OVERHEAD: usize = 32;

/// Where one entry's bytes sit in the buffer.
#[derive(Clone, Copy, Debug)]
struct Entry {
    start: usize,
    name_len: usize,
    value_len: usize,
}

impl Entry {
    fn size(&self) -> usize {
        self.name_len + self.value_len + ENTRY_OVERHEAD
    }
}

/// A dynamic table; position 0 is the newest entry (index 62 on the wire).
#[derive(Debug)]
pub(crate) struct DynamicTable {
    bytes: Vec<u8>,
    /// Oldest at the front, as in `bytes`.
    entries: VecDeque<Entry>,
    /// The RFC 7541 size: the sum of `Entry::size`.
    size: usize,
    max_size: usize,
}

impl DynamicTable {
    pub(crate) fn new(max_size: usize) -> DynamicTable {
        DynamicTable {
            bytes: Vec::new(),
            entries: VecDeque::new(),
            size: 0,
            max_size,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The name and value at `position`, 0 being the newest entry.
    #[inline]
    pub(crate) fn get(&self, position: usize) -> Option<(&[u8], &[u8])> {
        let newest_first = self.entries.len().checked_sub(position + 1)?;
        let entry = self.entries[newest_first];
        let (name, rest) = self.bytes[entry.start..].split_at(entry.name_len);
        Some((name, &rest[..entry.value_len]))
    }

    /// Adds `name: value` as the newest entry, evicting as RFC 7541 §4.4
    /// says.
    pub(crate) fn insert(&mut self, name: &[u8], value: &[u8]) {
        let len = name.len() + value.len();
        if !self.admits(len) {
            return;
        }
        self.make_room(len);
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.push(Entry {
            start,
            name_len: name.len(),
            value_len: value.len(),
        });
    }

    /// Adds an entry named like the one at `position` with `value`.
    ///
    /// The name is copied inside the buffer before anything is evicted, so
    /// it survives even when the new entry pushes its source out (the case
    /// RFC 7541 §4.4 warns about). Does nothing for a position past the end.
    pub(crate) fn insert_with_name_of(&mut self, position: usize, value: &[u8]) {
        let Some(name_len) = self.get(position).map(|(name, _)| name.len()) else {
            return;
        };
        let len = name_len + value.len();
        if !self.admits(len) {
            return;
        }
        self.make_room(len);
        // Read the source only now: making room may have moved it.
        let source = self.entries[self.entries.len() - 1 - position].start;
        let start = self.bytes.len();
        self.bytes.extend_from_within(source..source + name_len);
        self.bytes.extend_from_slice(value);
        self.push(Entry {
            start,
            name_len,
            value_len: value.len(),
        });
    }

    /// Applies a dynamic table size update (already checked against the
    /// protocol maximum).
    pub(crate) fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Whether an entry with `len` bytes of name and value fits at all; one
    /// that does not empties the table instead (RFC 7541 §4.4).
    fn admits(&mut self, len: usize) -> bool {
        if len + ENTRY_OVERHEAD <= self.max_size {
            return true;
        }
        self.evict_to(0);
        false
    }

    /// Appends first and evicts after: the result is the same as evicting
    /// first, and a name copied from an entry about to go is still there.
    fn push(&mut self, entry: Entry) {
        self.size += entry.size();
        self.entries.push_back(entry);
        self.evict_to(self.max_size);
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            let Some(oldest) = self.entries.pop_front() else {
                break;
            };
            self.size -= oldest.size();
        }
        if self.entries.is_empty() {
            // Free compaction: nothing is live.
            self.bytes.clear();
        }
    }

    /// Ensures `additional` bytes can be appended without reallocating,
    /// unless the live bytes plus the new ones exceed half the capacity.
    fn make_room(&mut self, additional: usize) {
        if self.bytes.len() + additional <= self.bytes.capacity() {
            return;
        }
        self.compact();
        let needed = self.bytes.len() + additional;
        if needed * 2 > self.bytes.capacity() {
            self.bytes.reserve(needed * 2 - self.bytes.len());
        }
    }

    /// Moves the live bytes to the front of the buffer.
    fn compact(&mut self) {
        let dead = self.entries.front().map_or(self.bytes.len(), |e| e.start);
        if dead == 0 {
            return;
        }
        self.bytes.copy_within(dead.., 0);
        self.bytes.truncate(self.bytes.len() - dead);
        for entry in &mut self.entries {
            entry.start -= dead;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::XorShift;

    fn entry(table: &DynamicTable, position: usize) -> (String, String) {
        let (name, value) = table.get(position).expect("entry present");
        (
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        )
    }

    fn pair(name: &str, value: &str) -> (String, String) {
        (name.to_owned(), value.to_owned())
    }

    #[test]
    fn newest_entry_is_position_zero() {
        let mut table = DynamicTable::new(4096);
        table.insert(b"a", b"1");
        table.insert(b"b", b"22");
        assert_eq!(entry(&table, 0), pair("b", "22"));
        assert_eq!(entry(&table, 1), pair("a", "1"));
        assert!(table.get(2).is_none());
        assert_eq!(table.size(), 34 + 35);
    }

    #[test]
    fn inserting_evicts_the_oldest_entries_first() {
        // Room for exactly two entries of size 34.
        let mut table = DynamicTable::new(68);
        table.insert(b"a", b"1");
        table.insert(b"b", b"2");
        table.insert(b"c", b"3");
        assert_eq!(table.len(), 2);
        assert_eq!(entry(&table, 0), pair("c", "3"));
        assert_eq!(entry(&table, 1), pair("b", "2"));
        assert_eq!(table.size(), 68);
    }

    #[test]
    fn an_entry_larger_than_the_table_empties_it() {
        let mut table = DynamicTable::new(64);
        table.insert(b"a", b"1");
        table.insert(b"name", b"a value too long to fit in 64");
        assert_eq!(table.len(), 0);
        assert_eq!(table.size(), 0);
        // An entry exactly the maximum size still fits.
        table.insert(b"n", &[b'v'; 31]);
        assert_eq!(table.size(), 64);
    }

    #[test]
    fn shrinking_evicts_and_growing_keeps() {
        let mut table = DynamicTable::new(4096);
        table.insert(b"a", b"1");
        table.insert(b"b", b"2");
        table.set_max_size(40);
        assert_eq!(table.len(), 1);
        assert_eq!(entry(&table, 0), pair("b", "2"));
        table.set_max_size(0);
        assert_eq!((table.len(), table.size()), (0, 0));
        table.set_max_size(4096);
        table.insert(b"c", b"3");
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn a_name_survives_the_eviction_of_the_entry_it_came_from() {
        // Room for one entry: the new one evicts the one naming it.
        let mut table = DynamicTable::new(50);
        table.insert(b"custom-key", b"old");
        table.insert_with_name_of(0, b"new");
        assert_eq!(table.len(), 1);
        assert_eq!(entry(&table, 0), pair("custom-key", "new"));
        assert_eq!(table.size(), 45);
    }

    #[test]
    fn insert_with_name_of_a_missing_entry_does_nothing() {
        let mut table = DynamicTable::new(100);
        table.insert_with_name_of(0, b"v");
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn matches_a_simple_model_through_many_compactions() {
        let mut rng = XorShift::new(7);
        let mut table = DynamicTable::new(300);
        let mut model: VecDeque<(Vec<u8>, Vec<u8>)> = VecDeque::new();
        for _ in 0..20_000 {
            let value = rng.bytes_below(40);
            let copy_name = !model.is_empty() && rng.below(3) == 0;
            let name = if copy_name {
                let position = rng.below(model.len());
                table.insert_with_name_of(position, &value);
                model[position].0.clone()
            } else {
                let name = rng.bytes_below(40);
                table.insert(&name, &value);
                name
            };
            model.push_front((name, value));
            while model
                .iter()
                .map(|(n, v)| n.len() + v.len() + 32)
                .sum::<usize>()
                > 300
            {
                model.pop_back();
            }
            assert_eq!(table.len(), model.len());
            for (position, (name, value)) in model.iter().enumerate() {
                assert_eq!(table.get(position), Some((&name[..], &value[..])));
            }
        }
        assert!(
            table.bytes.capacity() <= 8 * 300,
            "the buffer stays bounded"
        );
    }
}

//! The streams of one HTTP/2 session: a slab of slots reused as streams
//! end, and a map from stream id to slot for the frames that name them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bytes::Bytes;

use crate::clock::Nanos;
use crate::http::session::Captured;
use crate::http::sse::EventStream;

/// Where a stream's response is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// No final head yet (interim 1xx heads may have come).
    Head,
    /// The final head came: DATA, then maybe trailers.
    Body,
}

/// One request in flight.
pub(super) struct Stream<T> {
    pub tag: T,
    pub id: u32,
    /// A HEAD request: its response has no body, whatever its
    /// Content-Length says.
    pub head: bool,
    pub phase: Phase,
    pub status: u16,
    /// `grpc-status`, from the head or the trailers, for the call layer.
    pub grpc_status: Option<u8>,
    /// The final head's Content-Length.
    pub length: Option<u64>,
    /// DATA bytes received (padding excluded), checked against `length`.
    pub data: u64,
    /// Frames received on it, 9-byte headers included, as on the wire.
    pub wire: u64,
    pub first_byte: Option<Nanos>,
    /// DATA received on it and not yet given back by WINDOW_UPDATE.
    pub unacked: u32,
    /// How much of its body the server lets us send now.
    pub send_window: i64,
    /// The request body and how much of it went out, while some has not.
    pub body: Option<(Bytes, usize)>,
    pub captured: Option<Box<Captured>>,
    /// `--sse`: its response body read as an event stream.
    pub events: Option<Box<EventStream>>,
    /// Where its head ends in everything the connection was given to
    /// send: until that much has been sent, the server cannot have it.
    pub head_end: u64,
    /// Where its last byte queued so far ends (its body's, if it has one).
    pub end: u64,
}

pub(super) struct Streams<T> {
    slots: Vec<Option<Stream<T>>>,
    free: Vec<usize>,
    by_id: HashMap<u32, usize, BuildHasherDefault<IdHasher>>,
    open: u32,
}

impl<T> Streams<T> {
    /// Room for `streams` streams at once without growing.
    pub fn new(streams: usize) -> Streams<T> {
        let room = streams.min(1024);
        Streams {
            slots: Vec::with_capacity(room),
            free: Vec::with_capacity(room),
            by_id: HashMap::with_capacity_and_hasher(room, Default::default()),
            open: 0,
        }
    }

    pub fn open(&self) -> u32 {
        self.open
    }

    pub fn insert(&mut self, stream: Stream<T>) -> usize {
        let id = stream.id;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(stream);
                slot
            }
            None => {
                self.slots.push(Some(stream));
                self.slots.len() - 1
            }
        };
        self.by_id.insert(id, slot);
        self.open += 1;
        slot
    }

    #[inline]
    pub fn find(&self, id: u32) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// The stream in `slot`, which must hold one.
    #[inline]
    pub fn get_mut(&mut self, slot: usize) -> &mut Stream<T> {
        self.slots[slot].as_mut().expect("a stream in the slot")
    }

    /// Takes the stream out of `slot`, which must hold one.
    pub fn remove(&mut self, slot: usize) -> Stream<T> {
        let stream = self.slots[slot].take().expect("a stream in the slot");
        self.by_id.remove(&stream.id);
        self.free.push(slot);
        self.open -= 1;
        stream
    }

    /// The slots of the streams for which `which` is true.
    pub fn slots_where(&self, mut which: impl FnMut(&Stream<T>) -> bool) -> Vec<usize> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().filter(|s| which(s)).map(|_| i))
            .collect()
    }

    pub fn for_each(&self, mut each: impl FnMut(&Stream<T>)) {
        self.slots.iter().flatten().for_each(&mut each);
    }

    pub fn for_each_mut(&mut self, mut each: impl FnMut(&mut Stream<T>)) {
        self.slots.iter_mut().flatten().for_each(&mut each);
    }
}

/// Stream ids are odd numbers handed out in order: spreading them with one
/// multiplication hashes well enough, far cheaper than the default hasher.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

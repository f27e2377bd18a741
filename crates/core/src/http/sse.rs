//! Server-sent events (`--sse`): a response body read as a
//! `text/event-stream`, event by event, as the bytes arrive.
//!
//! The framing is the HTML standard's: lines end with CRLF, LF or CR; a
//! line starting with `:` is a comment; `field: value` lines build an
//! event (one space after the colon is dropped); a blank line ends it. An
//! event is dispatched only when it had at least one `data` field, so
//! comments sent as keep-alives, and `id:`/`retry:` lines alone, are not
//! events. Each `data` line adds its value and a line feed to the event's
//! data; the last line feed is dropped when it is dispatched.
//!
//! Only what a load generator needs is kept: when each event came, and,
//! for a script's `event()` hook, its data. Field names other than `data`
//! are read past without being stored.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::clock::Nanos;

use super::session::Event;
use super::tokens::{Answer, Chunk, Tally};

/// How a session reads response bodies (`--sse`, and a script's
/// `event()` hook).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventReading {
    /// Bodies are counted, not read.
    #[default]
    Off,
    /// Each body is an event stream: every event is timed.
    Times,
    /// The same, and each event's data is handed on (a script's `event()`).
    Data,
    /// Each body is a stream of gRPC's length-prefixed messages: every
    /// message is timed as an event.
    Messages,
    /// `--llm`: each body is a completion stream; its chunks that carry
    /// tokens are its events, and its tokens are tallied.
    Tokens,
    /// The same, and each token chunk's data is handed on (a script's
    /// `event()`).
    TokensData,
}

impl EventReading {
    /// A reader for one response's body, when bodies are read at all.
    pub fn reader(self) -> Option<Box<EventStream>> {
        match self {
            EventReading::Off => None,
            EventReading::Times => Some(Box::new(EventStream::new(false))),
            EventReading::Data => Some(Box::new(EventStream::new(true))),
            EventReading::Messages => Some(Box::new(EventStream::messages())),
            EventReading::Tokens => Some(Box::new(EventStream::tokens(false))),
            EventReading::TokensData => Some(Box::new(EventStream::tokens(true))),
        }
    }
}

/// Where the parser is within a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    /// At the start of a line: a line end here is a blank line.
    Start,
    /// In the field name, `len` bytes of it so far (kept in `name`).
    Name { len: usize },
    /// In the value of a `data` field; `fresh`: right after the colon,
    /// where one space is dropped.
    Data { fresh: bool },
    /// In a comment, or a field that is not `data`: skipped to its end.
    Skip,
}

/// One response's event stream: the parser, and when its last event came.
#[derive(Debug)]
pub struct EventStream {
    line: Line,
    /// The field name so far: only whether it is `data` matters, so the
    /// first five bytes are enough.
    name: [u8; 5],
    /// The last byte was a CR: an LF right after it ends nothing more.
    after_cr: bool,
    /// The event being built has a `data` field.
    has_data: bool,
    /// Its data, when kept.
    data: Option<Vec<u8>>,
    /// A UTF-8 byte order mark may still come first.
    at_start: usize,
    /// When the last event came, and how many came.
    last: Option<Nanos>,
    count: u64,
    /// The body is gRPC messages, not text: each message is an event.
    messages: Option<metron_grpc::Messages>,
    /// The body is a completion stream (`--llm`): its chunks are read,
    /// and only those carrying tokens are events. `hand_on`: their data
    /// goes on too.
    tokens: Option<Box<Tally>>,
    hand_on: bool,
}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

impl EventStream {
    /// A stream at its start; `keep_data`: hand each event's data on.
    pub fn new(keep_data: bool) -> EventStream {
        EventStream {
            line: Line::Start,
            name: [0; 5],
            after_cr: false,
            has_data: false,
            data: keep_data.then(Vec::new),
            at_start: 0,
            last: None,
            count: 0,
            messages: None,
            tokens: None,
            hand_on: keep_data,
        }
    }

    /// A completion stream at its start; `hand_on`: hand each token
    /// chunk's data on.
    pub fn tokens(hand_on: bool) -> EventStream {
        EventStream {
            tokens: Some(Box::default()),
            hand_on,
            ..EventStream::new(true)
        }
    }

    /// Events dispatched, and, of a completion stream, its tally.
    pub fn finish(self) -> (u64, Option<Box<Answer>>) {
        (self.count, self.tokens.map(|t| Box::new(t.finish())))
    }

    /// A stream of gRPC messages at its start.
    pub fn messages() -> EventStream {
        EventStream {
            messages: Some(metron_grpc::Messages::default()),
            ..EventStream::new(false)
        }
    }

    /// When the last event came, if one did.
    pub fn last(&self) -> Option<Nanos> {
        self.last
    }

    /// Events dispatched so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Reads `bytes` of the body, which came `now`: each event they end
    /// goes into `events` as an [`Event::Message`] of `tag`.
    pub fn read<T: Clone>(
        &mut self,
        bytes: &[u8],
        tag: &T,
        now: Nanos,
        events: &mut VecDeque<Event<T>>,
    ) {
        self.feed(
            bytes,
            |previous, data| {
                events.push_back(Event::Message {
                    tag: tag.clone(),
                    at: now,
                    previous,
                    data,
                    binary: false,
                });
            },
            now,
        );
    }

    /// Parses `bytes`, calling `dispatch` with the time of the previous
    /// event and the data (when kept) of each event that ends in them.
    fn feed(
        &mut self,
        mut bytes: &[u8],
        mut dispatch: impl FnMut(Option<Nanos>, Option<Bytes>),
        now: Nanos,
    ) {
        if let Some(messages) = self.messages.as_mut() {
            let (last, count) = (&mut self.last, &mut self.count);
            messages.read(bytes, || {
                dispatch(*last, None);
                *last = Some(now);
                *count += 1;
            });
            return;
        }
        // A byte order mark, possibly split across reads, is not part of
        // the first line.
        while self.at_start < BOM.len() && !bytes.is_empty() {
            if bytes[0] != BOM[self.at_start] {
                self.at_start = BOM.len();
                break;
            }
            self.at_start += 1;
            bytes = &bytes[1..];
        }
        for &b in bytes {
            let after_cr = std::mem::replace(&mut self.after_cr, b == b'\r');
            if b == b'\n' && after_cr {
                continue;
            }
            if b == b'\n' || b == b'\r' {
                self.end_line(&mut dispatch, now);
                continue;
            }
            match self.line {
                Line::Start if b == b':' => self.line = Line::Skip,
                Line::Start => self.name_byte(b, 0),
                Line::Name { len } if b == b':' => self.end_name(len, true),
                Line::Name { len } => self.name_byte(b, len),
                Line::Data { fresh } => {
                    self.line = Line::Data { fresh: false };
                    if !(fresh && b == b' ') {
                        if let Some(d) = self.data.as_mut() {
                            d.push(b);
                        }
                    }
                }
                Line::Skip => {}
            }
        }
    }

    fn name_byte(&mut self, b: u8, len: usize) {
        if len < self.name.len() {
            self.name[len] = b;
        }
        self.line = Line::Name { len: len + 1 };
    }

    /// The field name ended (at its colon, or the line's end): a `data`
    /// field adds to the event.
    fn end_name(&mut self, len: usize, colon: bool) {
        if len == 4 && &self.name[..4] == b"data" {
            if self.has_data {
                if let Some(d) = self.data.as_mut() {
                    d.push(b'\n');
                }
            }
            self.has_data = true;
            self.line = if colon {
                Line::Data { fresh: true }
            } else {
                Line::Start
            };
        } else {
            self.line = if colon { Line::Skip } else { Line::Start };
        }
    }

    fn end_line(&mut self, dispatch: &mut impl FnMut(Option<Nanos>, Option<Bytes>), now: Nanos) {
        match self.line {
            Line::Start if self.has_data => {
                self.has_data = false;
                if let (Some(t), Some(d)) = (self.tokens.as_mut(), self.data.as_mut()) {
                    let chunk = t.read(d, self.last, now);
                    if chunk != Chunk::Token || !self.hand_on {
                        d.clear();
                    }
                    if chunk != Chunk::Token {
                        self.line = Line::Start;
                        return;
                    }
                }
                let data = match self.data.as_mut() {
                    Some(d) if self.hand_on => Some(Bytes::from(std::mem::take(d))),
                    _ => None,
                };
                dispatch(self.last, data);
                self.last = Some(now);
                self.count += 1;
            }
            // A blank line ends an event without data: nothing to dispatch.
            Line::Start => {}
            Line::Name { len } => self.end_name(len, false),
            Line::Data { .. } | Line::Skip => {}
        }
        self.line = Line::Start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `chunks`, fed one after another at times 10, 20, ...:
    /// (previous event's time, data).
    fn events(chunks: &[&[u8]]) -> Vec<(Option<Nanos>, String)> {
        let mut s = EventStream::new(true);
        let mut out = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            s.feed(
                c,
                |prev, data| {
                    let data = data.expect("kept");
                    out.push((prev, String::from_utf8(data.to_vec()).unwrap()));
                },
                10 * (i as Nanos + 1),
            );
        }
        out
    }

    fn data(chunks: &[&[u8]]) -> Vec<String> {
        events(chunks).into_iter().map(|(_, d)| d).collect()
    }

    /// The HTML standard's examples: multi-line data, comments, an
    /// event without data, and the one space after the colon.
    #[test]
    fn the_standards_examples_read_as_it_says() {
        assert_eq!(
            data(&[b"data: YHOO\ndata: +2\ndata: 10\n\n"]),
            ["YHOO\n+2\n10"]
        );
        assert_eq!(
            data(&[b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"]),
            ["first event", "second event", " third event"]
        );
        assert_eq!(data(&[b"data\n\ndata\ndata\n\ndata:\n"]), ["", "\n"]);
        // An event of only `id:` and `event:` lines dispatches nothing.
        assert_eq!(data(&[b"event: add\nid: 7\n\n"]), Vec::<String>::new());
    }

    #[test]
    fn every_line_ending_ends_a_line_even_split_across_reads() {
        assert_eq!(
            data(&[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"]),
            ["a", "b", "c"]
        );
        // A CRLF split between two reads is one line end, not two.
        assert_eq!(data(&[b"data: x\r", b"\ndata: y\r", b"\n\r\n"]), ["x\ny"]);
        // A field name split between reads.
        assert_eq!(data(&[b"da", b"ta: z\n", b"\n"]), ["z"]);
    }

    #[test]
    fn a_byte_order_mark_is_skipped_once() {
        assert_eq!(data(&[&[0xEF, 0xBB], &[0xBF], b"data: a\n\n"]), ["a"]);
        assert_eq!(data(&[b"data: \xEF\xBB\xBFb\n\n"]), ["\u{feff}b"]);
    }

    /// Each event names when the one before it came: the gaps are the
    /// differences.
    #[test]
    fn each_event_knows_when_the_previous_came() {
        let got = events(&[
            b"data: 1\n\n",
            b": keep-alive\n\n",
            b"data: 2\n\ndata: 3\n\n",
        ]);
        let prev: Vec<Option<Nanos>> = got.iter().map(|(p, _)| *p).collect();
        assert_eq!(prev, [None, Some(10), Some(30)]);
    }

    /// Timing alone keeps no data, and fields longer than `data` are not
    /// mistaken for it.
    #[test]
    fn timing_alone_keeps_nothing() {
        let mut s = EventStream::new(false);
        let mut n = 0;
        s.feed(
            b"database: x\n\ndata: y\n\nd: z\n\n",
            |_, data| {
                assert!(data.is_none());
                n += 1;
            },
            5,
        );
        assert_eq!((n, s.count(), s.last()), (1, 1, Some(5)));
    }
}

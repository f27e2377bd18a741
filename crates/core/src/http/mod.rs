//! HTTP for the load generator, kept free of I/O so that it can be driven
//! by any connection loop and tested on exact bytes.
//!
//! - `session`: the seam the engine drives: a protocol's state machine for
//!   one connection (bytes in, events and bytes out, the deadline it
//!   needs), and the requests it shares with the engine; `capture`: the
//!   fields and body a script reads.
//! - `version`: the versions by name, and what a run's hosts spoke;
//!   `protocol`: the one place that makes a session for each.
//! - `h1`: HTTP/1.1 as a session, over `h1::response` (the incremental
//!   response parser) and `h1::chunked` (chunked bodies, also used when
//!   splitting requests), and `h1::request`: a request as HTTP/1.1 bytes,
//!   which is the form every request takes first (wrk's scripts write it),
//!   built from its parts, checked, and split when pipelined.
//! - `fields`: a request as header fields, converted once from HTTP/1.1
//!   bytes, for the protocols that send fields (HTTP/2, HTTP/3);
//!   `section`: a response's field section as both read it.
//! - `h2`: HTTP/2 as a session of its own (frames, HPACK through
//!   `metron-hpack`, flow control), and what its pre-flight reads.
//! - `h3`: HTTP/3 as a session over QUIC (quinn-proto's connection,
//!   driven by the engine's datagrams and deadlines), with its own framing
//!   and static-table QPACK.
//! - `sse`: a response body read as server-sent events (`--sse`), shared
//!   by every session.

pub mod capture;
pub mod fields;
pub mod h1;
pub mod h2;
pub mod h3;
pub mod offer;
pub mod outbox;
pub mod preflight;
pub mod probe;
pub mod protocol;
pub mod section;
pub mod session;
pub mod sse;
pub mod tokens;
pub mod version;
pub mod ws;

pub use h1::chunked::ChunkedDecoder;
pub use h1::request::{metas_into, Batch, Parts, RequestError};
pub use h1::response::{Done, Feed, ParseError, ResponseParser};
pub use offer::{websocket_banner, Protocols};
pub use protocol::SessionOptions;
pub use session::{
    Captured, Event, Failure, Info, Messages, OpenError, Packets, Request, RequestMeta, Retirement,
    Session,
};
pub use sse::EventReading;
pub use version::{Carrier, Protocol, Spoken};

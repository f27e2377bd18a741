//! HTTP wire handling for the load generator, kept free of I/O so that it
//! can be driven by any connection loop and tested on exact bytes.
//!
//! - `response`: the incremental response parser, one per connection, which
//!   frames each response, decides keep-alive and can capture what scripts
//!   inspect.
//! - `chunked`: the incremental decoder for chunked bodies, used by the
//!   response parser and by request splitting.
//! - `request`: building a request from its parts and splitting a buffer of
//!   pipelined requests into whole requests.
//! - `h2`: the HTTP/2 client session (bytes in, events and bytes out), and
//!   requests converted once from HTTP/1.1 bytes for it.

pub mod chunked;
pub mod h2;
pub mod request;
pub mod response;

pub use chunked::ChunkedDecoder;
pub use request::{RequestError, RequestMeta};
pub use response::{Done, Feed, ParseError, ResponseParser};

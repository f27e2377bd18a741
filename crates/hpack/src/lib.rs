//! HPACK (RFC 7541) header compression for the client side of an HTTP/2
//! load generator.
//!
//! The two directions are deliberately lopsided. Requests are encoded
//! without touching any connection state (static table references and
//! literals "without indexing" only), so a block can be built once and
//! replayed on every connection of a run. Responses are decoded with the
//! whole of RFC 7541, because the server decides what to index, and
//! decoding sits on the path of every response: the [`Decoder`] reuses its
//! buffers, serves static entries from a single byte, and decodes Huffman
//! strings an octet at a time from tables built at compile time.
//!
//! ```
//! use metron_hpack::{encode_block, Decoder};
//!
//! let mut request = Vec::new();
//! encode_block(&[(b":method", b"GET"), (b":path", b"/health")], &mut request);
//! assert_eq!(request[0], 0x82); // :method GET is static entry 2
//!
//! // Decoding works the same on both sides; here it reads the request back.
//! let mut decoder = Decoder::new(4096);
//! let mut fields = Vec::new();
//! decoder.decode(&request, &mut |name, value| fields.push((name.to_vec(), value.to_vec())))?;
//! assert_eq!(fields[1], (b":path".to_vec(), b"/health".to_vec()));
//! # Ok::<(), metron_hpack::DecodeError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod decoder;
mod encoder;
mod error;
pub mod huffman;
pub mod integer;
mod static_table;
mod table;
#[cfg(test)]
mod test_support;

pub use decoder::{Decoder, DEFAULT_TABLE_SIZE};
pub use encoder::{encode_block, encode_field};
pub use error::DecodeError;

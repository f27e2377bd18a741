//! gRPC calls as a load generator makes them: the method and its message
//! types from `.proto` files (compiled here, at start: no protoc needed)
//! or a compiled descriptor set, each request message built once from
//! protobuf's JSON mapping, the five-byte length prefix every message
//! carries on the wire, and the status codes by name.
//!
//! A call is an HTTP/2 request like any other (a POST to
//! `/package.Service/Method` with a framed message as its body), so the
//! engine sends it as it sends every request; only the status it reports
//! comes from the response's trailers ([`status`]).

mod check;
mod error;
mod schema;
pub mod status;
mod wire;

pub use check::Check;
pub use error::GrpcError;
pub use schema::{Method, Schema, Shape};
pub use wire::{frame, timeout_value, Messages, PREFIX_LEN};

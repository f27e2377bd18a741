//! WebSocket (RFC 6455) on the wire, as both of metron's ends need it:
//! the load generator's client session (`metron-core`'s `http::ws`) and
//! the target server's `--ws` endpoints (`metron-serve`'s `ws`).
//!
//! - `frame`: frame headers (FIN, opcodes, masking, the three length
//!   forms), written and read for either end;
//! - `close`: close payloads, which codes may be sent, their names;
//! - `handshake`: the `Sec-WebSocket-Accept` computation and the key's
//!   form.
//!
//! No I/O and no state: what to do with a frame is each end's own.

pub mod close;
pub mod frame;
pub mod handshake;

pub use close::{close_name, close_payload, sendable};
pub use frame::{
    apply_mask, encode, encode_compressed, encode_unmasked, parse, parse_deflated, parse_masked,
    Frame, FrameError, Opcode, Parsed, MAX_CONTROL,
};
pub use handshake::{accept_for, key_is_valid, GUID};

//! HTTP/2's own events, which the socket error counts alone would hide:
//! streams the server reset and connections it retired with GOAWAY, each
//! by error code, HTTP/2 connection errors, and requests sent again
//! because the server never processed them (README, "HTTP/2"). HTTP/3's
//! are counted in the same places, its error codes (0x100 and up) named
//! as it names them.
//!
//! The counts are plain numbers in fixed places, so that a worker records
//! them without allocating and [`Http2Counts`] stays `Copy` like the rest
//! of the counters. The JSON document names each code (`"REFUSED_STREAM":
//! 3`) and lists only those that occurred.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::http::h3::ERROR_CODES as H3_CODES;

/// The error codes HTTP/2 defines (RFC 9113 §7), by value.
const NAMES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// The HTTP/2 error code a name stands for (any case).
pub fn code_of(name: &str) -> Option<u32> {
    NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .map(|i| i as u32)
}

/// The name of an HTTP/2 error code, or its value in hex for one the
/// protocol does not define.
pub fn code_name(code: u32) -> String {
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("0x{code:x}"), |n| (*n).to_string())
}

/// Places of the defined codes: HTTP/2's, then HTTP/3's and QPACK's.
const PLACES: usize = NAMES.len() + H3_CODES.len();

/// Counts per error code: one place per code HTTP/2 or HTTP/3 defines
/// (their values do not overlap), and one for every other (a server may
/// send any value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByCode {
    defined: [u64; PLACES],
    other: u64,
}

impl Default for ByCode {
    fn default() -> Self {
        ByCode {
            defined: [0; PLACES],
            other: 0,
        }
    }
}

/// The place of a defined code.
fn place(code: u32) -> Option<usize> {
    if (code as usize) < NAMES.len() {
        return Some(code as usize);
    }
    H3_CODES
        .iter()
        .position(|&(c, _)| c == u64::from(code))
        .map(|i| NAMES.len() + i)
}

/// The name of each place, in order.
fn place_names() -> impl Iterator<Item = &'static str> {
    NAMES
        .iter()
        .copied()
        .chain(H3_CODES.iter().map(|&(_, n)| n))
}

impl ByCode {
    pub fn count(&mut self, code: u32) {
        match place(code) {
            Some(i) => self.defined[i] += 1,
            None => self.other += 1,
        }
    }

    /// How many carried `code` (all undefined codes share one count).
    pub fn get(&self, code: u32) -> u64 {
        place(code).map_or(self.other, |i| self.defined[i])
    }

    pub fn total(&self) -> u64 {
        self.defined.iter().sum::<u64>() + self.other
    }

    pub fn add(&mut self, other: &ByCode) {
        for (a, b) in self.defined.iter_mut().zip(other.defined) {
            *a += b;
        }
        self.other += other.other;
    }

    /// The codes that occurred, by name, in the order of their values.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        let defined = place_names().zip(self.defined);
        defined
            .chain(std::iter::once((OTHER, self.other)))
            .filter(|&(_, c)| c > 0)
    }
}

/// The name undefined codes are counted under.
const OTHER: &str = "OTHER";

impl fmt::Display for ByCode {
    /// `REFUSED_STREAM 2, CANCEL 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (name, n)) in self.named().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{name} {n}")?;
        }
        Ok(())
    }
}

impl Serialize for ByCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.named())
    }
}

impl<'de> Deserialize<'de> for ByCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(d)?;
        let mut codes = ByCode::default();
        for (name, n) in map {
            match place_names().position(|x| x == name) {
                Some(i) => codes.defined[i] += n,
                None if name == OTHER => codes.other += n,
                None => {
                    return Err(serde::de::Error::custom(format!(
                        "unknown HTTP/2 or HTTP/3 error code {name:?}"
                    )))
                }
            }
        }
        Ok(codes)
    }
}

/// What happened on HTTP/2 connections beyond requests and responses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Http2Counts {
    /// Streams the server reset (RST_STREAM), by error code. Each was a
    /// request lost, also counted as a read error.
    pub resets: ByCode,
    /// Connections the server retired with GOAWAY, by the error code of
    /// the first (a graceful shutdown sends two). A GOAWAY alone loses
    /// nothing: the connection is replaced once its streams are done.
    pub goaway: ByCode,
    /// Connections ended by an HTTP/2 protocol error; their requests in
    /// flight are read errors.
    pub connection_errors: u64,
    /// Requests the server never processed (above a GOAWAY's last stream
    /// id), sent again on another connection. Not errors: each is counted
    /// once, by what became of it in the end.
    pub retried: u64,
}

impl Http2Counts {
    pub fn add(&mut self, other: &Http2Counts) {
        self.resets.add(&other.resets);
        self.goaway.add(&other.goaway);
        self.connection_errors += other.connection_errors;
        self.retried += other.retried;
    }

    pub fn any(&self) -> bool {
        self.resets.total() + self.goaway.total() + self.connection_errors + self.retried > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_counted_and_named_in_value_order() {
        let mut c = ByCode::default();
        c.count(8);
        c.count(7);
        c.count(7);
        c.count(0x1234);
        assert_eq!(c.get(7), 2);
        assert_eq!(c.get(0x1234), 1);
        assert_eq!(c.total(), 4);
        assert_eq!(c.to_string(), "REFUSED_STREAM 2, CANCEL 1, OTHER 1");
        // HTTP/3's codes have names of their own.
        c.count(0x10c);
        assert_eq!(c.get(0x10c), 1);
        assert_eq!(
            c.to_string(),
            "REFUSED_STREAM 2, CANCEL 1, H3_REQUEST_CANCELLED 1, OTHER 1"
        );
        let back: ByCode = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        assert_eq!(code_name(11), "ENHANCE_YOUR_CALM");
        assert_eq!(code_name(99), "0x63");
    }

    #[test]
    fn json_names_the_codes_that_occurred_and_reads_them_back() {
        let mut h = Http2Counts::default();
        h.resets.count(2);
        h.goaway.count(0);
        h.retried = 3;
        let json = serde_json::to_string(&h).unwrap();
        assert_eq!(
            json,
            r#"{"resets":{"INTERNAL_ERROR":1},"goaway":{"NO_ERROR":1},"connection_errors":0,"retried":3}"#
        );
        let back: Http2Counts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
        let bad = serde_json::from_str::<Http2Counts>(
            r#"{"resets":{"NOPE":1},"goaway":{},"connection_errors":0,"retried":0}"#,
        );
        assert!(bad.unwrap_err().to_string().contains("NOPE"));
    }

    #[test]
    fn adding_keeps_every_code() {
        let mut a = Http2Counts::default();
        a.resets.count(7);
        let mut b = Http2Counts::default();
        b.resets.count(7);
        b.resets.count(99);
        b.connection_errors = 1;
        a.add(&b);
        assert_eq!(a.resets.get(7), 2);
        assert_eq!(a.resets.total(), 3);
        assert_eq!(a.connection_errors, 1);
        assert!(a.any());
        assert!(!Http2Counts::default().any());
    }
}

//! gRPC status codes by name, and the code a response without one stands
//! for.

/// The call succeeded.
pub const OK: u8 = 0;
/// The most codes a report keeps apart: the 17 the protocol defines, and
/// one for every code above them.
pub const KINDS: usize = 18;

/// Names of the codes 0 to 16, as the protocol spells them.
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The name of `code`; codes the protocol does not define are counted
/// together as `OTHER`.
pub fn name(code: u8) -> &'static str {
    NAMES.get(usize::from(code)).copied().unwrap_or("OTHER")
}

/// The code of `name` (as [`name`] spells it), for reading a report back.
pub fn code(name: &str) -> Option<u8> {
    if name == "OTHER" {
        return Some(NAMES.len() as u8);
    }
    NAMES.iter().position(|n| *n == name).map(|i| i as u8)
}

/// The index of `code` among a report's [`KINDS`].
pub fn kind(code: u8) -> usize {
    usize::from(code).min(KINDS - 1)
}

/// Reads a `grpc-status` value: a decimal number.
pub fn parse(value: &[u8]) -> Option<u8> {
    if value.is_empty() || value.len() > 3 {
        return None;
    }
    let mut n: u16 = 0;
    for &b in value {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u16::from(b - b'0');
    }
    Some(n.min(u16::from(u8::MAX)) as u8)
}

/// The status a response that carried none stands for: by its HTTP
/// status, as the protocol's HTTP-to-gRPC mapping says (a 200 without a
/// status is a broken response: INTERNAL).
pub fn of_http(status: u16) -> u8 {
    match status {
        200 => 13,
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502..=504 => 14,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_go_both_ways() {
        for c in 0..=17u8 {
            assert_eq!(code(name(c)), Some(c), "{c}");
        }
        assert_eq!(name(14), "UNAVAILABLE");
        assert_eq!(name(200), "OTHER");
        assert_eq!(kind(200), KINDS - 1);
        assert_eq!(code("NOPE"), None);
    }

    #[test]
    fn status_values_are_decimal() {
        assert_eq!(parse(b"0"), Some(0));
        assert_eq!(parse(b"14"), Some(14));
        assert_eq!(parse(b"999"), Some(255));
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"1a"), None);
        assert_eq!(parse(b"1000"), None);
    }

    #[test]
    fn http_statuses_map_as_the_protocol_says() {
        assert_eq!(name(of_http(404)), "UNIMPLEMENTED");
        assert_eq!(name(of_http(503)), "UNAVAILABLE");
        assert_eq!(name(of_http(200)), "INTERNAL");
        assert_eq!(name(of_http(500)), "UNKNOWN");
    }
}

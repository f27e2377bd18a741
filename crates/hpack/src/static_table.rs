//! The static table of RFC 7541 Appendix A: the 61 fields every HPACK peer
//! knows without being told.
//!
//! The decoder reads it by index on every indexed field, so it is a plain
//! array; the encoder searches it linearly, which is fine because request
//! blocks are encoded once and then replayed.

/// How many entries the static table has; dynamic indices start after it.
pub(crate) const LEN: usize = 61;

/// Index `i` of RFC 7541 is element `i - 1`.
pub(crate) static ENTRIES: [(&[u8], &[u8]); LEN] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// What the static table offers for a field the encoder wants to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Match {
    /// Name and value both match the entry at this index.
    Field(usize),
    /// Only the name matches; this is the lowest index with that name.
    Name(usize),
}

/// The best static reference for `name: value`, if any.
pub(crate) fn find(name: &[u8], value: &[u8]) -> Option<Match> {
    let mut first_with_name = None;
    for (i, &(entry_name, entry_value)) in ENTRIES.iter().enumerate() {
        if entry_name != name {
            continue;
        }
        if entry_value == value {
            return Some(Match::Field(i + 1));
        }
        first_with_name.get_or_insert(i + 1);
    }
    first_with_name.map(Match::Name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_indices_land_on_the_right_entries() {
        assert_eq!(ENTRIES[0], (&b":authority"[..], &b""[..]));
        assert_eq!(ENTRIES[1], (&b":method"[..], &b"GET"[..]));
        assert_eq!(ENTRIES[7], (&b":status"[..], &b"200"[..]));
        assert_eq!(ENTRIES[15].1, b"gzip, deflate");
        assert_eq!(ENTRIES[32].0, b"date");
        assert_eq!(ENTRIES[53].0, b"server");
        assert_eq!(ENTRIES[LEN - 1].0, b"www-authenticate");
    }

    #[test]
    fn names_are_lowercase_as_http2_requires() {
        for (name, _) in ENTRIES {
            assert!(!name.iter().any(u8::is_ascii_uppercase));
        }
    }

    #[test]
    fn finds_whole_fields_then_the_lowest_name_index() {
        assert_eq!(find(b":method", b"GET"), Some(Match::Field(2)));
        assert_eq!(find(b":method", b"POST"), Some(Match::Field(3)));
        assert_eq!(find(b":method", b"PUT"), Some(Match::Name(2)));
        assert_eq!(find(b":status", b"500"), Some(Match::Field(14)));
        assert_eq!(find(b":status", b"201"), Some(Match::Name(8)));
        assert_eq!(find(b"user-agent", b"metron"), Some(Match::Name(58)));
        assert_eq!(find(b":authority", b""), Some(Match::Field(1)));
        assert_eq!(find(b"x-custom", b""), None);
        assert_eq!(find(b"Host", b"a"), None);
    }
}

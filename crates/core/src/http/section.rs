//! A response's field section as the protocols that send fields read it
//! (HTTP/2 after HPACK, HTTP/3 after QPACK): what a session needs of a
//! head or of trailers, checked by the rules the two share (RFC 9113
//! §8.3 and §8.1.1, RFC 9114 §4.3 and §4.1.2).
//!
//! It also keeps `grpc-status`, whichever section carries it, for the
//! call layer above the sessions: `--grpc` makes a call's status of it,
//! and a run that makes no calls ignores it. The session itself knows
//! nothing of calls.

/// What one field section says that a session needs.
#[derive(Default)]
pub struct Section {
    /// `:status`, when it came first and reads as three digits.
    pub status: Option<u16>,
    /// Content-Length, when it came and every copy agrees.
    pub length: Option<u64>,
    /// Its size as SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113
    /// §6.5.2; HTTP/3's SETTINGS_MAX_FIELD_SECTION_SIZE counts the same).
    pub list_size: u64,
    /// A pseudo-field other than one `:status`, a pseudo-field after a
    /// regular one, a bad status or Content-Length.
    pub malformed: bool,
    /// `grpc-status`, when it came and reads as a number.
    pub grpc_status: Option<u8>,
    /// A regular field was seen: no pseudo-field may follow.
    regular: bool,
}

impl Section {
    /// Reads one decoded field (on every field of every response: kept
    /// in line in the decoders' loops).
    #[inline(always)]
    pub fn see(&mut self, name: &[u8], value: &[u8]) {
        self.list_size += (name.len() + value.len() + 32) as u64;
        match name {
            b":status" if self.status.is_none() && !self.regular => {
                self.status = parse_status(value);
                self.malformed |= self.status.is_none();
            }
            [b':', ..] => self.malformed = true,
            b"content-length" => {
                self.regular = true;
                let length = parse_length(value);
                let differs = self.length.is_some_and(|l| Some(l) != length);
                self.malformed |= length.is_none() || differs;
                self.length = length;
            }
            b"grpc-status" => {
                self.regular = true;
                self.grpc_status = metron_grpc::status::parse(value);
            }
            _ => self.regular = true,
        }
    }
}

fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

fn parse_length(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(fields: &[(&str, &str)]) -> Section {
        let mut s = Section::default();
        for (name, value) in fields {
            s.see(name.as_bytes(), value.as_bytes());
        }
        s
    }

    #[test]
    fn a_head_gives_its_status_length_and_size() {
        let s = read(&[(":status", "200"), ("content-length", "12"), ("x", "y")]);
        assert_eq!(
            (s.status, s.length, s.malformed),
            (Some(200), Some(12), false)
        );
        assert_eq!(s.list_size, (7 + 3 + 32) + (14 + 2 + 32) + (1 + 1 + 32));
    }

    #[test]
    fn broken_sections_are_malformed() {
        for fields in [
            &[(":status", "2000")][..],
            &[(":status", "099")],
            &[(":status", "200"), (":path", "/")],
            &[("x", "y"), (":status", "200")],
            &[(":status", "200"), ("content-length", "1x")],
            &[
                (":status", "200"),
                ("content-length", "1"),
                ("content-length", "2"),
            ],
        ] {
            assert!(read(fields).malformed, "{fields:?}");
        }
        let agreeing = read(&[
            (":status", "200"),
            ("content-length", "1"),
            ("content-length", "1"),
        ]);
        assert!(!agreeing.malformed);
    }

    #[test]
    fn grpc_status_is_kept_for_the_call_layer() {
        assert_eq!(read(&[("grpc-status", "14")]).grpc_status, Some(14));
        assert_eq!(read(&[("grpc-status", "x")]).grpc_status, None);
        assert_eq!(read(&[(":status", "200")]).grpc_status, None);
    }
}

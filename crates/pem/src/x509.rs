//! The one field of a certificate read here rather than by rustls: its
//! X.509 version, so that a version 1 certificate (what `openssl x509
//! -req` makes without extensions), which rustls refuses without saying
//! why, is named as such. A few lines of DER: the certificate is a
//! SEQUENCE whose first element, the to-be-signed SEQUENCE, opens with the
//! version as an explicit [0] INTEGER, absent for version 1.

/// The certificate's version (1, 2 or 3), or `None` when its DER cannot
/// be read that far.
pub fn version(der: &[u8]) -> Option<u8> {
    let (cert, _) = element(der, SEQUENCE)?;
    let (tbs, _) = element(cert, SEQUENCE)?;
    if tbs.first() != Some(&VERSION) {
        return Some(1);
    }
    let (explicit, _) = element(tbs, VERSION)?;
    let (number, _) = element(explicit, INTEGER)?;
    match number {
        [v @ 0..=2] => Some(v + 1),
        _ => None,
    }
}

const INTEGER: u8 = 0x02;
const SEQUENCE: u8 = 0x30;
/// `[0] EXPLICIT`, constructed.
const VERSION: u8 = 0xa0;

/// The contents of the element at the start of `input`, if it has tag
/// `tag`, and what follows it.
fn element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = input.split_first()?;
    if first != tag {
        return None;
    }
    let (&len, rest) = rest.split_first()?;
    let (len, rest) = match len {
        0..=0x7f => (usize::from(len), rest),
        // Long form: that many bytes of length, big-endian; four is
        // beyond any certificate.
        0x81..=0x84 => {
            let n = usize::from(len & 0x7f);
            let bytes = rest.get(..n)?;
            let len = bytes.iter().fold(0usize, |l, &b| (l << 8) | usize::from(b));
            (len, &rest[n..])
        }
        _ => return None,
    };
    Some((rest.get(..len)?, &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read() {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        assert_eq!(version(ck.cert.der()), Some(3));
        // A version 1 to-be-signed part: no [0] before the serial number.
        let v1 = [0x30, 0x07, 0x30, 0x03, 0x02, 0x01, 0x05, 0x05, 0x00];
        assert_eq!(version(&v1), Some(1));
        let v2 = [0x30, 0x07, 0x30, 0x05, 0xa0, 0x03, 0x02, 0x01, 0x01];
        assert_eq!(version(&v2), Some(2));
    }

    #[test]
    fn what_is_not_der_has_no_version() {
        assert_eq!(version(b""), None);
        assert_eq!(version(b"hello"), None);
        assert_eq!(version(&[0x30, 0x82, 0xff]), None);
    }
}

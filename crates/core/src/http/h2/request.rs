//! A request as HTTP/2 writes it: its fields HPACK-encoded once.

use bytes::Bytes;

use super::super::fields::FieldRequest;
use super::super::version::Protocol;

/// One request as the session writes it, built once and written on any
/// connection any number of times: its header block refers to the static
/// table only and adds nothing to the server's dynamic table, so it does
/// not depend on what the connection sent before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Framed {
    pub block: Box<[u8]>,
    /// Empty: the HEADERS frame ends the stream.
    pub body: Bytes,
    pub head: bool,
}

impl Framed {
    /// Converts the one HTTP/1.x request in `wire` (`scheme` and
    /// `authority` as in [`FieldRequest::from_http1`]); the error says why
    /// it cannot go over HTTP/2.
    pub fn from_http1(wire: &[u8], scheme: &str, authority: &str) -> Result<Framed, String> {
        let r = FieldRequest::one_from_http1(wire, scheme, authority, Protocol::Http2)?;
        let mut block = Vec::new();
        metron_hpack::encode_block(&r.fields(), &mut block);
        Ok(Framed {
            block: block.into_boxed_slice(),
            body: r.body().clone(),
            head: r.is_head(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_framed_request_decodes_to_its_fields_in_order() {
        let bytes = b"POST /p HTTP/1.1\r\nHost: h.test\r\nContent-Length: 2\r\nX-A: b\r\n\r\nhi";
        let framed = Framed::from_http1(bytes, "https", "other").unwrap();
        let mut fields = Vec::new();
        metron_hpack::Decoder::new(4096)
            .decode(&framed.block, &mut |n, v| {
                fields.push((String::from_utf8_lossy(n).into_owned(), v.to_vec()))
            })
            .unwrap();
        let want: Vec<(String, Vec<u8>)> = [
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", "h.test"),
            (":path", "/p"),
            ("content-length", "2"),
            ("x-a", "b"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
        .collect();
        assert_eq!(fields, want);
        assert_eq!((&framed.body[..], framed.head), (&b"hi"[..], false));
        let two = Framed::from_http1(b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", "http", "h");
        assert_eq!(two.unwrap_err(), "expected one request, found 2");
    }
}

//! The histogram text form (base64 of a deflated V2 histogram), as
//! `metron merge` and `metron report` read it from files they are given.
//!
//! Input: a mode byte, then either the binary form (base64-encoded here, so
//! that mutations reach the deflate stream and the V2 header) or, for odd
//! mode bytes, the text itself.
//!
//! Checked: decoding ends in a histogram or an error, never a panic, within
//! the time and memory limits `run.sh` gives libFuzzer (a header that claims
//! gigabytes must be refused, not allocated); and a histogram that decodes
//! encodes and decodes back to itself.

#![no_main]

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use metron::stats::codec;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = if mode & 1 == 0 {
        BASE64.encode(rest)
    } else {
        String::from_utf8_lossy(rest).into_owned()
    };
    if let Ok(h) = codec::decode(&text) {
        let again = codec::decode(&codec::encode(&h)).expect("an encoded histogram decodes");
        assert_eq!(again, h);
    }
});

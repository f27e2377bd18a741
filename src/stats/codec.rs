//! HdrHistogram's text interchange form: V2 encoding, deflated, base64.
//! Interval logs carry histograms this way, and so does metron's JSON
//! document, so both go through this one pair of functions.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// A histogram in its text form.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Serializing into memory cannot fail for a well-formed histogram.
    let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
    BASE64.encode(bytes)
}

/// A histogram back from its text form (surrounding white space ignored).
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = BASE64
        .decode(text.trim())
        .map_err(|e| format!("bad base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::histogram_of;

    #[test]
    fn round_trips() {
        let h = histogram_of(&[(1, 3), (2_500, 7), (86_400_000_000, 1)]);
        assert_eq!(decode(&format!(" {}\n", encode(&h))).unwrap(), h);
        assert!(decode("@@@").unwrap_err().starts_with("bad base64"));
    }
}

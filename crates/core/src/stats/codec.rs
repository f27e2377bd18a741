//! HdrHistogram's text interchange form: V2 encoding, deflated, base64.
//! Interval logs carry histograms this way, and so does metron's JSON
//! document, so both go through this one pair of functions.
//!
//! Decoding reads files a user was handed, so it trusts nothing in them.
//! The hdrhistogram crate's deserializer allocates whatever payload length
//! the V2 header claims (up to 4 GiB) and inflates without an output limit,
//! so this module inflates the text itself, with a cap, and checks the V2
//! header against what is really there before the crate sees any of it.

use std::io::Read as _;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use flate2::read::ZlibDecoder;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// First four bytes of a V2 histogram (for 64-bit counts), and of its
/// deflated form, as the HdrHistogram libraries write them.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
/// Cookie, payload length, normalizing offset, significant digits, lowest
/// and highest values, integer-to-double ratio.
const V2_HEADER: usize = 4 + 4 + 4 + 4 + 8 + 8 + 8;
/// Cap on an inflated V2 histogram. A count takes at most 9 bytes, so
/// metron's own histograms (1 µs to 24 h at 3 digits: 28,672 counts) need
/// at most 258,088 bytes, and a 3-digit histogram of any range (1 to
/// u64::MAX: 56,320 counts) at most 506,920. Other writers' histograms
/// with more digits list runs of empty counts in one number each, so they
/// stay far below this too unless hundreds of thousands of values differ.
pub const MAX_INFLATED: usize = 1 << 20;
/// Cap on the counts array a histogram's range and precision need, 32 MiB
/// of 64-bit counts. Every range at up to 4 digits fits (1 to u64::MAX:
/// 835,584 counts), and 5 digits up to an hour in nanoseconds (3,407,872);
/// only wider 5-digit ranges are refused.
pub const MAX_COUNTS: u64 = 1 << 22;

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
    let v2 = match cookie(&bytes)? {
        V2_DEFLATE_COOKIE => inflate(&bytes)?,
        V2_COOKIE => bytes,
        other => return Err(format!("not a V2 histogram: cookie {other:#010x}")),
    };
    let end = check_header(&v2)?;
    Deserializer::new()
        .deserialize(&mut &v2[..end])
        .map_err(|e| e.to_string())
}

/// The big-endian `u32` at `at`; callers check the length first.
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

fn cookie(bytes: &[u8]) -> Result<u32, String> {
    if bytes.len() < 4 {
        return Err(format!(
            "{} bytes, too short for a histogram's cookie",
            bytes.len()
        ));
    }
    Ok(u32_at(bytes, 0))
}

/// The V2 histogram inside a deflated one: cookie, compressed length, then
/// a zlib stream.
fn inflate(bytes: &[u8]) -> Result<Vec<u8>, String> {
    if bytes.len() < 8 {
        return Err("deflated histogram cut short before its length".into());
    }
    let claimed = u32_at(bytes, 4) as usize;
    let stream = &bytes[8..];
    if claimed > stream.len() {
        return Err(format!(
            "deflated histogram claims {claimed} bytes but holds {}",
            stream.len()
        ));
    }
    let mut v2 = Vec::new();
    ZlibDecoder::new(&stream[..claimed])
        .take(MAX_INFLATED as u64 + 1)
        .read_to_end(&mut v2)
        .map_err(|e| format!("bad deflate data: {e}"))?;
    if v2.len() > MAX_INFLATED {
        return Err(format!(
            "inflates to more than {MAX_INFLATED} bytes, more than any histogram needs"
        ));
    }
    Ok(v2)
}

/// Checks a V2 histogram's header against the bytes present and the caps
/// above; returns where its payload ends.
fn check_header(v2: &[u8]) -> Result<usize, String> {
    if v2.len() < V2_HEADER {
        return Err(format!(
            "{} bytes, too short for a V2 histogram header of {V2_HEADER}",
            v2.len()
        ));
    }
    let found = u32_at(v2, 0);
    if found != V2_COOKIE {
        return Err(format!("not a V2 histogram inside: cookie {found:#010x}"));
    }
    let payload = u32_at(v2, 4) as usize;
    let present = v2.len() - V2_HEADER;
    if payload > present {
        return Err(format!(
            "header claims {payload} bytes of counts but {present} follow it"
        ));
    }
    if payload > MAX_INFLATED {
        return Err(format!(
            "header claims {payload} bytes of counts, more than the {MAX_INFLATED} allowed"
        ));
    }
    let digits = u32_at(v2, 12);
    let (low, high) = (u64_at(v2, 16), u64_at(v2, 24));
    if digits > 5 {
        return Err(format!("{digits} significant digits; expected 0 to 5"));
    }
    let counts = match counts_needed(low, high, digits) {
        None => {
            return Err(format!(
                "no histogram can range from {low} to {high} at {digits} digits"
            ))
        }
        Some(n) if n > MAX_COUNTS => {
            return Err(format!(
                "range {low} to {high} at {digits} digits needs {n} counts, more than the {MAX_COUNTS} allowed"
            ))
        }
        Some(n) => n,
    };
    check_zero_runs(&v2[V2_HEADER..V2_HEADER + payload], counts)?;
    Ok(V2_HEADER + payload)
}

/// The payload is a list of zig-zag varints: a count, or minus the length
/// of a run of empty counts. The crate negates a run's length in `i64`, so
/// a run of 2^63 overflows (a panic where overflow is checked), and a run
/// of any length longer than the histogram is nonsense; both are refused
/// here. A varint cut short is left for the crate to report.
fn check_zero_runs(payload: &[u8], counts: u64) -> Result<(), String> {
    let mut at = 0;
    while let Some((zig_zag, used)) = varint(&payload[at..]) {
        at += used;
        // Odd zig-zag values are negative: a run of `zig_zag / 2 + 1`.
        let run = (zig_zag & 1 == 1).then(|| (zig_zag >> 1) + 1);
        if let Some(run) = run.filter(|&run| run > counts) {
            return Err(format!(
                "a run of {run} empty counts in a histogram of {counts}"
            ));
        }
    }
    Ok(())
}

/// HdrHistogram's LEB128 variant: up to eight bytes of seven bits, then a
/// ninth of eight. Returns the value and the bytes it took, or `None` at
/// the end of `bytes` or if the varint is cut short.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(9) {
        if i == 8 {
            return Some((value | u64::from(b) << 56, 9));
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Length of the counts array of a histogram from `low` to `high` at
/// `digits` significant digits, as the hdrhistogram crate lays it out, or
/// `None` where the crate refuses those bounds.
fn counts_needed(low: u64, high: u64, digits: u32) -> Option<u64> {
    if low == 0 || low > u64::MAX / 2 || high < 2 * low || digits > 5 {
        return None;
    }
    let unit_magnitude = low.ilog2();
    // Single-unit resolution up to 2 * 10^digits, rounded up to a power of 2.
    let sub_bucket_magnitude = (2 * 10u64.pow(digits) - 1).ilog2() + 1;
    if unit_magnitude + sub_bucket_magnitude > 63 {
        return None;
    }
    let mut untrackable = 1u64 << (unit_magnitude + sub_bucket_magnitude);
    let mut buckets = 1;
    while untrackable <= high {
        if untrackable > u64::MAX / 2 {
            buckets += 1;
            break;
        }
        untrackable <<= 1;
        buckets += 1;
    }
    Some((buckets + 1) * (1 << (sub_bucket_magnitude - 1)))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::time::{Duration, Instant};

    use flate2::write::ZlibEncoder;
    use flate2::Compression;

    use super::*;
    use crate::stats::{histogram_of, HIST_HIGH_US, HIST_LOW_US, HIST_SIGFIG};

    #[test]
    fn round_trips() {
        let h = histogram_of(&[(1, 3), (2_500, 7), (86_400_000_000, 1)]);
        assert_eq!(decode(&format!(" {}\n", encode(&h))).unwrap(), h);
        assert!(decode("@@@").unwrap_err().starts_with("bad base64"));
    }

    /// A V2 header (cookie included) with the given fields.
    fn v2_header(payload: u32, digits: u32, low: u64, high: u64) -> Vec<u8> {
        let mut v2 = Vec::new();
        v2.extend_from_slice(&V2_COOKIE.to_be_bytes());
        v2.extend_from_slice(&payload.to_be_bytes());
        v2.extend_from_slice(&0u32.to_be_bytes());
        v2.extend_from_slice(&digits.to_be_bytes());
        v2.extend_from_slice(&low.to_be_bytes());
        v2.extend_from_slice(&high.to_be_bytes());
        v2.extend_from_slice(&1.0f64.to_be_bytes());
        v2
    }

    /// `v2` deflated and framed as the text form frames it.
    fn deflated(v2: &[u8]) -> String {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(v2).unwrap();
        let stream = z.finish().unwrap();
        let mut bytes = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        bytes.extend_from_slice(&(stream.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&stream);
        BASE64.encode(bytes)
    }

    /// Decodes `text`, which must fail fast; returns the message.
    fn refused(text: &str) -> String {
        let started = Instant::now();
        let message = decode(text).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{message}: took {:?}",
            started.elapsed()
        );
        message
    }

    #[test]
    fn the_constants_match_the_crate() {
        let v2 = BASE64.decode(encode(&histogram_of(&[(5, 1)]))).unwrap();
        assert_eq!(u32_at(&v2, 0), V2_DEFLATE_COOKIE);
        let inner = inflate(&v2).unwrap();
        assert_eq!(u32_at(&inner, 0), V2_COOKIE);
        assert_eq!(inner.len(), V2_HEADER + u32_at(&inner, 4) as usize);
        let metron = (HIST_LOW_US, HIST_HIGH_US, u32::from(HIST_SIGFIG));
        for (low, high, digits) in [metron, (1, u64::MAX, 5), (1000, 3_600_000, 0)] {
            let h = Histogram::<u64>::new_with_bounds(low, high, digits as u8).unwrap();
            let n = counts_needed(low, high, digits);
            assert_eq!(n, Some(h.distinct_values() as u64), "{low} {high} {digits}");
        }
        assert_eq!(counts_needed(metron.0, metron.1, metron.2), Some(28_672));
        assert_eq!(counts_needed(1 << 62, u64::MAX, 5), None);
    }

    #[test]
    fn a_header_claiming_gigabytes_is_refused_before_allocating() {
        let v2 = v2_header(u32::MAX, 3, 1, HIST_HIGH_US);
        let message = refused(&deflated(&v2));
        assert_eq!(
            message,
            "header claims 4294967295 bytes of counts but 0 follow it"
        );
        let plain = refused(&BASE64.encode(&v2));
        assert_eq!(plain, message);
    }

    #[test]
    fn a_compressed_length_beyond_the_data_is_refused() {
        let mut bytes = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        bytes.extend_from_slice(b"xyz");
        assert_eq!(
            refused(&BASE64.encode(bytes)),
            "deflated histogram claims 4294967295 bytes but holds 3"
        );
    }

    #[test]
    fn a_deflate_bomb_is_refused() {
        // A valid header claiming 16 MiB of counts, all of them there: it
        // deflates to about 16 KiB.
        let payload = 16 << 20;
        let mut v2 = v2_header(payload, 3, 1, HIST_HIGH_US);
        v2.resize(V2_HEADER + payload as usize, 0);
        let text = deflated(&v2);
        assert!(text.len() < 50_000, "{}", text.len());
        assert_eq!(
            refused(&text),
            format!("inflates to more than {MAX_INFLATED} bytes, more than any histogram needs")
        );
    }

    #[test]
    fn nonsense_headers_are_refused() {
        let cases = [
            (
                v2_header(0, 6, 1, HIST_HIGH_US),
                "6 significant digits; expected 0 to 5",
            ),
            (
                v2_header(0, 3, 0, HIST_HIGH_US),
                "no histogram can range from 0 to 86400000000 at 3 digits",
            ),
            (
                v2_header(0, 3, 10, 19),
                "no histogram can range from 10 to 19 at 3 digits",
            ),
            (
                v2_header(0, 5, 1, u64::MAX),
                "range 1 to 18446744073709551615 at 5 digits needs 6291456 counts, \
                 more than the 4194304 allowed",
            ),
        ];
        for (v2, expected) in cases {
            assert_eq!(refused(&deflated(&v2)), expected);
        }
        let mut wrong_inner = v2_header(0, 3, 1, HIST_HIGH_US);
        wrong_inner[3] = 0x14;
        assert_eq!(
            refused(&deflated(&wrong_inner)),
            "not a V2 histogram inside: cookie 0x1c849314"
        );
        assert_eq!(
            refused(&BASE64.encode(0xdead_beefu32.to_be_bytes())),
            "not a V2 histogram: cookie 0xdeadbeef"
        );
        assert_eq!(
            refused("AAA="),
            "2 bytes, too short for a histogram's cookie"
        );
        let corrupt =
            BASE64.encode([&V2_DEFLATE_COOKIE.to_be_bytes()[..], &[0, 0, 0, 2, 1, 2]].concat());
        assert!(refused(&corrupt).starts_with("bad deflate data: "));
    }

    #[test]
    fn genuine_histograms_decode_as_the_crate_decodes_them() {
        let wide = {
            let mut h = Histogram::<u64>::new_with_bounds(1, u64::MAX, 4).unwrap();
            for v in [1, 999, 123_456_789, u64::MAX / 3] {
                h.record_n(v, v % 7 + 1).unwrap();
            }
            h
        };
        let auto = {
            let mut h = Histogram::<u64>::new(HIST_SIGFIG).unwrap();
            h.record_n(52_000, 3).unwrap();
            h
        };
        let metron = histogram_of(&[(1, 3), (2_500, 7), (86_400_000_000, 1)]);
        for h in [wide, auto, metron, histogram_of(&[])] {
            let text = encode(&h);
            let bytes = BASE64.decode(&text).unwrap();
            let crate_says: Histogram<u64> =
                Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
            let ours = decode(&text).unwrap();
            assert_eq!(ours, crate_says);
            assert_eq!(encode(&ours), text, "same bytes back");
        }
    }

    /// Regression: a zero run of 2^63 (the varint of u64::MAX) made the
    /// crate's deserializer negate i64::MIN, a panic in builds with
    /// overflow checks; any run longer than the histogram is refused now.
    #[test]
    fn a_run_of_empty_counts_longer_than_the_histogram_is_refused() {
        let run_of = |run: u64| {
            let zig_zag = ((run - 1) << 1) | 1;
            let mut varint = Vec::new();
            let mut rest = zig_zag;
            while varint.len() < 8 && rest >= 0x80 {
                varint.push(rest as u8 | 0x80);
                rest >>= 7;
            }
            varint.push(rest as u8);
            let mut v2 = v2_header(varint.len() as u32, 3, 1, HIST_HIGH_US);
            v2.extend_from_slice(&varint);
            deflated(&v2)
        };
        assert_eq!(
            refused(&run_of(1 << 63)),
            "a run of 9223372036854775808 empty counts in a histogram of 28672"
        );
        assert_eq!(
            refused(&run_of(28_673)),
            "a run of 28673 empty counts in a histogram of 28672"
        );
        assert!(decode(&run_of(28_672)).unwrap().is_empty());
    }
}

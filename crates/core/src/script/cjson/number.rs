//! Numbers as lua-cjson writes and reads them: C's `%.<precision>g` for
//! encoding, and the prefix of the text C's `strtod` accepts (in the C
//! locale) for decoding, hexadecimal, `inf`, `infinity` and `nan` included.
//! Both are written here rather than called through libc so that a script
//! calling `os.setlocale` cannot turn the decimal point into a comma.

use std::io::Write;

/// Appends `x` (finite) as `%.<precision>g` prints it: `precision`
/// significant digits, trailing zeros dropped, an exponent of at least two
/// digits when the decimal exponent is below -4 or not below `precision`.
pub(super) fn format_g(x: f64, precision: u8, out: &mut Vec<u8>) {
    debug_assert!(x.is_finite());
    let p = usize::from(precision.max(1));
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    // An integer with no more digits than the precision prints as itself.
    if x.fract() == 0.0 && x.abs() < 10f64.powi(p as i32) {
        let _ = write!(out, "{}", x as i64);
        return;
    }
    // Rust's exponent formatting rounds exactly, as C's printf does; the
    // digits and exponent it gives are rearranged into %g's layout.
    let text = format!("{:.*e}", p - 1, x);
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exp: i32 = exponent.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    if x < 0.0 {
        out.push(b'-');
    }
    if exp < -4 || exp >= p as i32 {
        out.push(digits[0]);
        push_fraction(out, &digits[1..]);
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
    } else if exp >= 0 {
        let whole = exp as usize + 1;
        out.extend_from_slice(&digits[..whole]);
        push_fraction(out, &digits[whole..]);
    } else {
        out.push(b'0');
        let mut fraction = vec![b'0'; (-exp - 1) as usize];
        fraction.extend_from_slice(&digits);
        push_fraction(out, &fraction);
    }
}

/// `.digits` without trailing zeros, or nothing when no digit is left.
fn push_fraction(out: &mut Vec<u8>, digits: &[u8]) {
    let kept = digits.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1);
    if kept > 0 {
        out.push(b'.');
        out.extend_from_slice(&digits[..kept]);
    }
}

/// The number at the start of `s` and how many bytes it takes, as C's
/// `strtod` reads it: optional sign, then `inf`/`infinity`/`nan[(chars)]`
/// in any case, a hexadecimal `0x` number with an optional `p` exponent, or
/// a decimal one. `None` when no number starts there.
pub(super) fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let signed = matches!(s.first(), Some(b'+' | b'-'));
    let negative = s.first() == Some(&b'-');
    let start = usize::from(signed);
    let rest = &s[start..];
    let (magnitude, len) = if let Some(len) = special(rest) {
        let value = if starts_with_ci(rest, b"inf") {
            f64::INFINITY
        } else {
            f64::NAN
        };
        (value, len)
    } else if let Some((value, len)) = hexadecimal(rest) {
        (value, len)
    } else {
        let len = decimal_len(rest)?;
        // The matched text is ASCII digits, '.', 'e' and signs only.
        let text = std::str::from_utf8(&rest[..len]).ok()?;
        (text.parse::<f64>().ok()?, len)
    };
    let value = if negative { -magnitude } else { magnitude };
    Some((value, start + len))
}

/// The length of `inf`, `infinity` or `nan` (with an optional parenthesised
/// tail of letters, digits and underscores) at the start of `s`.
fn special(s: &[u8]) -> Option<usize> {
    if starts_with_ci(s, b"infinity") {
        return Some(8);
    }
    if starts_with_ci(s, b"inf") {
        return Some(3);
    }
    if !starts_with_ci(s, b"nan") {
        return None;
    }
    if s.get(3) == Some(&b'(') {
        let tail = s[4..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        if s.get(4 + tail) == Some(&b')') {
            return Some(4 + tail + 1);
        }
    }
    Some(3)
}

/// Whether `s` begins with `prefix`, ignoring ASCII case.
pub(super) fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The length of a decimal number (digits, optional fraction, optional
/// exponent) at the start of `s`; at least one digit is needed.
fn decimal_len(s: &[u8]) -> Option<usize> {
    let digits_from = |i: usize| {
        s[i.min(s.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let whole = digits_from(0);
    let mut len = whole;
    let mut fraction = 0;
    if s.get(len) == Some(&b'.') {
        fraction = digits_from(len + 1);
        len += 1 + fraction;
    }
    if whole + fraction == 0 {
        return None;
    }
    if matches!(s.get(len), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(s.get(len + 1), Some(b'+' | b'-')));
        let exponent = digits_from(len + 1 + sign);
        if exponent > 0 {
            len += 1 + sign + exponent;
        }
    }
    Some(len)
}

/// A `0x` number at the start of `s`: hex digits, an optional fraction and
/// an optional binary exponent (`p[+-]digits`).
fn hexadecimal(s: &[u8]) -> Option<(f64, usize)> {
    if !(starts_with_ci(s, b"0x")) {
        return None;
    }
    let hex = |i: usize| s.get(i).and_then(|c| (*c as char).to_digit(16));
    let starts = hex(2).is_some() || (s.get(2) == Some(&b'.') && hex(3).is_some());
    if !starts {
        return None;
    }
    // 60 bits of mantissa keep every digit that can reach a double's 53;
    // later non-zero digits only matter as a sticky bit for rounding.
    const ROOM: u64 = 1 << 56;
    let (mut mantissa, mut exponent, mut sticky) = (0u64, 0i64, false);
    let mut i = 2;
    let mut in_fraction = false;
    loop {
        if let Some(d) = hex(i) {
            if mantissa < ROOM {
                mantissa = mantissa * 16 + u64::from(d);
                exponent -= if in_fraction { 4 } else { 0 };
            } else {
                sticky |= d != 0;
                exponent += if in_fraction { 0 } else { 4 };
            }
        } else if s.get(i) == Some(&b'.') && !in_fraction {
            in_fraction = true;
        } else {
            break;
        }
        i += 1;
    }
    if matches!(s.get(i), Some(b'p' | b'P')) {
        let sign_len = usize::from(matches!(s.get(i + 1), Some(b'+' | b'-')));
        let digits = s[(i + 1 + sign_len).min(s.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 {
            let from = i + 1 + sign_len;
            let p = s[from..from + digits]
                .iter()
                .fold(0i64, |n, c| (n * 10 + i64::from(c - b'0')).min(1 << 20));
            exponent += if s[i + 1] == b'-' { -p } else { p };
            i = from + digits;
        }
    }
    let mantissa = mantissa | u64::from(sticky);
    Some((scale(mantissa as f64, exponent), i))
}

/// `x * 2^exponent`, in steps that keep each factor a normal double.
fn scale(mut x: f64, mut exponent: i64) -> f64 {
    while exponent > 1000 && x.is_finite() && x != 0.0 {
        x *= 2f64.powi(1000);
        exponent -= 1000;
    }
    while exponent < -1000 && x != 0.0 {
        x *= 2f64.powi(-1000);
        exponent += 1000;
    }
    x * 2f64.powi(exponent as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(x: f64, precision: u8) -> String {
        let mut out = Vec::new();
        format_g(x, precision, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// What the C library prints for `%.<precision>g`, the reference.
    fn c_g(x: f64, precision: u8) -> String {
        let mut buf = [0u8; 64];
        // SAFETY: the buffer is large enough for any %g of a double and
        // snprintf writes at most its size, NUL included.
        let n = unsafe {
            libc::snprintf(
                buf.as_mut_ptr().cast(),
                buf.len(),
                c"%.*g".as_ptr(),
                libc::c_int::from(precision),
                x,
            )
        };
        String::from_utf8(buf[..n as usize].to_vec()).unwrap()
    }

    #[test]
    fn g_format_matches_the_c_library() {
        let values = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            2.5,
            0.125,
            0.1,
            1.0 / 3.0,
            2.0 / 3.0,
            100.0,
            1e14,
            1e15,
            123456789012345.0,
            99999999999999.0,
            999999999999999.0,
            1e-4,
            1e-5,
            0.00012345,
            1.5e300,
            -2.5e-300,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            9007199254740993.0,
            std::f64::consts::PI,
            1234.5,
            0.000099999,
            12345678.9,
        ];
        for &x in &values {
            for precision in 1..=14 {
                assert_eq!(g(x, precision), c_g(x, precision), "{x:e} at {precision}");
            }
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = f64::from_bits(state);
            if x.is_finite() {
                let precision = (state % 14) as u8 + 1;
                assert_eq!(g(x, precision), c_g(x, precision), "{x:e} at {precision}");
            }
        }
    }

    #[test]
    fn g_format_examples() {
        assert_eq!(g(3.0, 14), "3");
        assert_eq!(g(1.5, 14), "1.5");
        assert_eq!(g(1e15, 14), "1e+15");
        assert_eq!(g(0.1, 14), "0.1");
        assert_eq!(g(std::f64::consts::PI, 3), "3.14");
        assert_eq!(g(1e-7, 14), "1e-07");
    }

    /// What the C library's strtod reads, the reference.
    fn c_strtod(s: &str) -> Option<(f64, usize)> {
        let text = std::ffi::CString::new(s).unwrap();
        let mut end = std::ptr::null_mut();
        // SAFETY: `text` is NUL-terminated and outlives the call.
        let value = unsafe { libc::strtod(text.as_ptr(), &mut end) };
        let len = end as usize - text.as_ptr() as usize;
        (len > 0).then_some((value, len))
    }

    #[test]
    fn strtod_matches_the_c_library() {
        let inputs = [
            "1",
            "-1",
            "+1",
            "1.5",
            "1.",
            ".5",
            "-.5",
            "1e5",
            "1E+5",
            "1e-5",
            "1e",
            "1e+",
            "1.5e3x",
            "0123",
            "00.33",
            "0x10",
            "0X1f",
            "0x",
            "0x.8",
            "0x6.ffp1",
            "0x1p-2",
            "0x1p",
            "0xg",
            "inf",
            "-Inf",
            "infinity",
            "Infinityx",
            "Infrared",
            "nan",
            "-NaN",
            "nan(123)",
            "nan(",
            "nanx",
            "-",
            "+",
            "abc",
            "-v",
            "1e99999",
            "-1e99999",
            "1e-99999",
            "12345678901234567890123",
            "0x123456789abcdef0123p0",
            "0.000000000000000000000000000001",
            "4.9e-324",
            "2.2250738585072014e-308",
        ];
        for input in inputs {
            let ours = strtod(input.as_bytes());
            let theirs = c_strtod(input);
            match (ours, theirs) {
                (Some((a, la)), Some((b, lb))) => {
                    assert_eq!(la, lb, "length of {input}");
                    assert!(a == b || (a.is_nan() && b.is_nan()), "{input}: {a} vs {b}");
                }
                (None, None) => {}
                other => panic!("{input}: {other:?}"),
            }
        }
    }
}

//! Parsing of the numbers people type: counts with SI suffixes (`1k`,
//! `2.5M`), rates (`0.5`, `2.5k`) and durations (`30`, `250ms`, `2m`).
//!
//! wrk accepts `-c 1k` and `-d 2m`; every numeric flag, `metron serve`'s
//! included, goes through these parsers so that all of them accept the
//! same forms.

use std::time::Duration;

/// Splits `"2.5k"` into `(2.5, "k")`.
fn split_number(s: &str) -> Result<(f64, &str), String> {
    let s = s.trim();
    let end = s
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .unwrap_or(s.len());
    // An exponent marker followed by a letter is a suffix, not an exponent.
    let (mut num, mut rest) = s.split_at(end);
    while num.ends_with(['e', 'E']) {
        let cut = num.len() - 1;
        num = &s[..cut];
        rest = &s[cut..];
    }
    if num.is_empty() {
        return Err(format!("'{s}' is not a number"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !value.is_finite() {
        return Err(format!("'{s}' is not a finite number"));
    }
    Ok((value, rest))
}

fn si_multiplier(suffix: &str, input: &str) -> Result<f64, String> {
    Ok(match suffix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        "g" | "G" => 1e9,
        _ => {
            return Err(format!(
                "'{input}' has an unknown suffix '{suffix}' (use k, M or G)"
            ))
        }
    })
}

/// A non-negative real number with an optional SI suffix: `0.5`, `2.5k`, `1M`.
pub fn parse_si_f64(s: &str) -> Result<f64, String> {
    let (value, suffix) = split_number(s)?;
    let value = value * si_multiplier(suffix, s)?;
    if value < 0.0 {
        return Err(format!("'{s}' is negative"));
    }
    Ok(value)
}

/// A whole count with an optional SI suffix: `100`, `1k`, `2.5k`.
pub fn parse_si_u64(s: &str) -> Result<u64, String> {
    let value = parse_si_f64(s)?;
    if value.fract() != 0.0 {
        return Err(format!("'{s}' is not a whole number"));
    }
    if value > u64::MAX as f64 {
        return Err(format!("'{s}' is too large"));
    }
    Ok(value as u64)
}

/// A byte size with an optional binary suffix: `512`, `4k` (4096), `1M`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (value, suffix) = split_number(s)?;
    let mult = match suffix.trim_end_matches(['b', 'B']) {
        "" => 1.0,
        "k" | "K" => 1024.0,
        "m" | "M" => 1024.0 * 1024.0,
        "g" | "G" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "'{s}' has an unknown size suffix '{other}' (use k, M or G)"
            ))
        }
    };
    let value = value * mult;
    if value < 0.0 || value.fract() != 0.0 {
        return Err(format!(
            "'{s}' is not a whole, non-negative number of bytes"
        ));
    }
    Ok(value as u64)
}

/// A duration: a bare number is seconds (as in wrk); suffixes `us`, `ms`,
/// `s`, `m`, `h`, `d` are accepted, with fractions (`1.5s`, `0.25s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (value, suffix) = split_number(s)?;
    let secs = match suffix {
        "" | "s" => value,
        "us" | "µs" => value / 1e6,
        "ms" => value / 1e3,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86400.0,
        other => {
            return Err(format!(
                "'{s}' has an unknown time unit '{other}' (use us, ms, s, m, h)"
            ))
        }
    };
    if secs < 0.0 {
        return Err(format!("'{s}' is a negative duration"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("'{s}' is too long a duration"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_si_suffixes() {
        assert_eq!(parse_si_u64("100"), Ok(100));
        assert_eq!(parse_si_u64("1k"), Ok(1000));
        assert_eq!(parse_si_u64("2.5k"), Ok(2500));
        assert_eq!(parse_si_u64("1M"), Ok(1_000_000));
        assert!(parse_si_u64("1.5").is_err());
        assert!(parse_si_u64("-3").is_err());
        assert!(parse_si_u64("abc").is_err());
        assert!(parse_si_u64("3x").is_err());
    }

    #[test]
    fn rates_may_be_fractional() {
        assert_eq!(parse_si_f64("0.5"), Ok(0.5));
        assert_eq!(parse_si_f64("2.5k"), Ok(2500.0));
        assert_eq!(parse_si_f64("1e3"), Ok(1000.0));
        assert!(parse_si_f64("inf").is_err());
        assert!(parse_si_f64("NaN").is_err());
    }

    #[test]
    fn durations_default_to_seconds() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("100us"), Ok(Duration::from_micros(100)));
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn byte_sizes_are_binary() {
        assert_eq!(parse_bytes("512"), Ok(512));
        assert_eq!(parse_bytes("4k"), Ok(4096));
        assert_eq!(parse_bytes("1MB"), Ok(1 << 20));
        assert!(parse_bytes("1.5").is_err());
    }
}

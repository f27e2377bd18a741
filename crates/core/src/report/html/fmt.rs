//! Text for people: HTML escaping, the number formats the page uses, and
//! the names of its latency curves.
//!
//! Every formatter here is total: a value that is not finite (which a
//! hand-built or corrupted document can carry) prints as a dash, so the page
//! never shows `NaN` or an infinity.

use crate::report::json::Document;

/// Placeholder for a number that cannot be shown.
pub const MISSING: &str = "–";

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A whole count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    group(&n.to_string())
}

/// A rate or other real amount: grouped, with two decimals below 100 (where
/// they carry information) and none above.
pub fn real(x: f64) -> String {
    if !x.is_finite() {
        return MISSING.to_string();
    }
    let decimals = if x.abs() < 100.0 { 2 } else { 0 };
    let text = format!("{:.*}", decimals, x.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let sign = if x < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        "-"
    } else {
        ""
    };
    let frac = if frac.is_empty() {
        String::new()
    } else {
        format!(".{frac}")
    };
    format!("{sign}{}{frac}", group(int))
}

/// Inserts a comma between each group of three digits of a digit string.
fn group(digits: &str) -> String {
    let len = digits.len();
    let mut out = String::with_capacity(len + len / 3);
    for (i, c) in digits.chars().enumerate() {
        // A separator goes before each digit that starts a group of three
        // counted from the right.
        if i > 0 && i % 3 == len % 3 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte amount with binary prefixes: `512 B`, `1.50 KiB`, `19.81 MiB`.
pub fn bytes(x: f64) -> String {
    if !x.is_finite() || x < 0.0 {
        return MISSING.to_string();
    }
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = x;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} {}", UNITS[0])
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// A latency given in microseconds, in the unit that keeps it readable:
/// `850 µs`, `12.34 ms`, `1.234 s`.
pub fn latency_us(us: u64) -> String {
    let v = us as f64;
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        format!("{:.2} ms", v / 1e3)
    } else {
        format!("{:.3} s", v / 1e6)
    }
}

/// A duration in seconds, without trailing zeros: `30 s`, `2.5 s`.
pub fn seconds(s: f64) -> String {
    if !s.is_finite() {
        return MISSING.to_string();
    }
    format!("{} s", trim(s, 3))
}

/// A percentile for a table row: `50%`, `99.99%`, `100% (max)`.
pub fn percentile(p: f64) -> String {
    if !p.is_finite() {
        return MISSING.to_string();
    }
    if p >= 100.0 {
        "100% (max)".to_string()
    } else {
        format!("{}%", trim(p, 6))
    }
}

/// `x` with at most `decimals` decimals and no trailing zeros.
pub fn trim(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return MISSING.to_string();
    }
    let text = format!("{x:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

/// A coordinate or length for SVG markup: one decimal, and 0 for anything
/// not finite so that no drawing attribute can hold `NaN`.
pub fn coord(x: f64) -> String {
    if x.is_finite() {
        trim(x, 1)
    } else {
        "0".to_string()
    }
}

/// The label of the conservative distribution's curves.
pub const WITH_UNFINISHED: &str = "with unfinished (lower bounds)";

/// What the two curves measure. In throughput mode there is no schedule, so
/// "corrected" is send → response and the curves coincide; the labels say
/// so instead of suggesting a correction that did not happen.
pub fn curve_labels(doc: &Document) -> (&'static str, &'static str) {
    if doc.config.load().is_open() {
        (
            "corrected (from intended send)",
            "uncorrected (from actual send)",
        )
    } else {
        ("send → response", "first byte written → response")
    }
}

/// What a run's requests were: WebSocket's messages or subscriptions,
/// or requests.
pub fn counted(doc: &crate::report::json::Document) -> crate::report::Counted {
    crate::report::Counted::of(doc.protocol.as_ref(), doc.events.as_ref().map(|e| e.kind))
}

/// What a run's rate counts: `requests` (WebSocket's `messages` or
/// `subscriptions`), or a flow's `visits`.
pub fn rate_counts(doc: &crate::report::json::Document) -> &'static str {
    match doc.visits {
        Some(_) => "visits",
        None => counted(doc).many(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_characters() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(real(12345.6), "12,346");
        assert_eq!(real(42.125), "42.12");
        assert_eq!(real(-1234.0), "-1,234");
        assert_eq!(real(f64::NAN), MISSING);
    }

    #[test]
    fn picks_readable_units() {
        assert_eq!(latency_us(850), "850 µs");
        assert_eq!(latency_us(12_340), "12.34 ms");
        assert_eq!(latency_us(1_234_000), "1.234 s");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1536.0), "1.50 KiB");
        assert_eq!(seconds(2.5), "2.5 s");
        assert_eq!(seconds(30.0), "30 s");
        assert_eq!(percentile(99.99), "99.99%");
        assert_eq!(percentile(100.0), "100% (max)");
        assert_eq!(coord(f64::INFINITY), "0");
        assert_eq!(trim(-0.0001, 2), "0");
    }
}

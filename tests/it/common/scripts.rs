//! Checks of what scripts print: the order of its parts, and lua-cjson's
//! numbers.

/// Asserts that `parts` occur in `text` in this order.
pub fn assert_in_order(text: &str, parts: &[&str]) {
    let mut from = 0;
    for part in parts {
        match text[from..].find(part) {
            Some(at) => from += at + part.len(),
            None => panic!("{part:?} missing or out of order in:\n{text}"),
        }
    }
}

/// `%.4g` for 0.1 <= x < 1000, as lua-cjson prints at precision 4.
pub fn g4(x: f64) -> String {
    let whole_digits = if x < 1.0 {
        0
    } else {
        x.log10().floor() as usize + 1
    };
    let text = format!("{:.*}", 4 - whole_digits, x);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_owned()
}

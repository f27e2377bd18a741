//! What the integration tests share.

/// The octets of a hex dump as RFC 7541 prints it ("8286 8441 ...").
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace())
        .map(|c| (c as char).to_digit(16).expect("a hex digit") as u8)
        .collect();
    digits
        .chunks(2)
        .map(|pair| pair[0] << 4 | pair[1])
        .collect()
}

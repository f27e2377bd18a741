//! The request and response sequences of RFC 7541 Appendix C (C.3 to C.6),
//! decoded through the public API only.
//!
//! Each sequence runs on one decoder, as on one connection, because the
//! point of these examples is the dynamic table carried from block to
//! block: after every block the fields and the table size must match what
//! the RFC prints. C.5 and C.6 use a 256-byte table, so entries get evicted.
//! (C.1 and C.2 are unit tests next to the code they exercise.)

mod common;

use common::hex;
use metron_hpack::Decoder;

/// One block of a sequence: its dump, the fields it carries, and the
/// dynamic table size the RFC gives after it.
struct Step<'a> {
    block: &'a str,
    fields: &'a [(&'a str, &'a str)],
    table_size: usize,
}

fn run(max_table_size: usize, steps: &[Step<'_>]) {
    let mut decoder = Decoder::new(max_table_size);
    for (i, step) in steps.iter().enumerate() {
        let mut fields = Vec::new();
        decoder
            .decode(&hex(step.block), &mut |name, value| {
                fields.push((
                    String::from_utf8(name.to_vec()).unwrap(),
                    String::from_utf8(value.to_vec()).unwrap(),
                ))
            })
            .unwrap_or_else(|e| panic!("block {}: {e}", i + 1));
        let expected: Vec<(String, String)> = step
            .fields
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(fields, expected, "fields of block {}", i + 1);
        assert_eq!(
            decoder.table_size(),
            step.table_size,
            "table size after block {}",
            i + 1
        );
    }
}

const REQUEST_1: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];

const REQUEST_2: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];

const REQUEST_3: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];

const RESPONSE_1: &[(&str, &str)] = &[
    (":status", "302"),
    ("cache-control", "private"),
    ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
    ("location", "https://www.example.com"),
];

const RESPONSE_2: &[(&str, &str)] = &[
    (":status", "307"),
    ("cache-control", "private"),
    ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
    ("location", "https://www.example.com"),
];

const RESPONSE_3: &[(&str, &str)] = &[
    (":status", "200"),
    ("cache-control", "private"),
    ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
    ("location", "https://www.example.com"),
    ("content-encoding", "gzip"),
    (
        "set-cookie",
        "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    ),
];

#[test]
fn c_3_requests_without_huffman() {
    run(
        4096,
        &[
            Step {
                block: "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                fields: REQUEST_1,
                table_size: 57,
            },
            Step {
                block: "8286 84be 5808 6e6f 2d63 6163 6865",
                fields: REQUEST_2,
                table_size: 110,
            },
            Step {
                block: "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 \
                        0c63 7573 746f 6d2d 7661 6c75 65",
                fields: REQUEST_3,
                table_size: 164,
            },
        ],
    );
}

#[test]
fn c_4_requests_with_huffman() {
    run(
        4096,
        &[
            Step {
                block: "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                fields: REQUEST_1,
                table_size: 57,
            },
            Step {
                block: "8286 84be 5886 a8eb 1064 9cbf",
                fields: REQUEST_2,
                table_size: 110,
            },
            Step {
                block: "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                fields: REQUEST_3,
                table_size: 164,
            },
        ],
    );
}

#[test]
fn c_5_responses_without_huffman_and_with_evictions() {
    run(
        256,
        &[
            Step {
                block: "4803 3330 3258 0770 7269 7661 7465 611d \
                        4d6f 6e2c 2032 3120 4f63 7420 3230 3133 \
                        2032 303a 3133 3a32 3120 474d 546e 1768 \
                        7474 7073 3a2f 2f77 7777 2e65 7861 6d70 \
                        6c65 2e63 6f6d",
                fields: RESPONSE_1,
                table_size: 222,
            },
            Step {
                block: "4803 3330 37c1 c0bf",
                fields: RESPONSE_2,
                table_size: 222,
            },
            Step {
                block: "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 \
                        3230 3133 2032 303a 3133 3a32 3220 474d \
                        54c0 5a04 677a 6970 7738 666f 6f3d 4153 \
                        444a 4b48 514b 425a 584f 5157 454f 5049 \
                        5541 5851 5745 4f49 553b 206d 6178 2d61 \
                        6765 3d33 3630 303b 2076 6572 7369 6f6e \
                        3d31",
                fields: RESPONSE_3,
                table_size: 215,
            },
        ],
    );
}

#[test]
fn c_6_responses_with_huffman_and_with_evictions() {
    run(
        256,
        &[
            Step {
                block: "4882 6402 5885 aec3 771a 4b61 96d0 7abe \
                        9410 54d4 44a8 2005 9504 0b81 66e0 82a6 \
                        2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 \
                        e9ae 82ae 43d3",
                fields: RESPONSE_1,
                table_size: 222,
            },
            Step {
                block: "4883 640e ffc1 c0bf",
                fields: RESPONSE_2,
                table_size: 222,
            },
            Step {
                block: "88c1 6196 d07a be94 1054 d444 a820 0595 \
                        040b 8166 e084 a62d 1bff c05a 839b d9ab \
                        77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b \
                        3960 d5af 2708 7f36 72c1 ab27 0fb5 291f \
                        9587 3160 65c0 03ed 4ee5 b106 3d50 07",
                fields: RESPONSE_3,
                table_size: 215,
            },
        ],
    );
}

#[test]
fn the_same_sequence_on_a_fresh_decoder_fails_where_the_table_is_needed() {
    // Block C.3.2 alone refers to index 62, which only C.3.1 created: a
    // decoder must not invent it.
    let mut decoder = Decoder::default();
    let result = decoder.decode(&hex("8286 84be 5808 6e6f 2d63 6163 6865"), &mut |_, _| {});
    assert!(result.is_err());
}

//! The workspace's crates and the modules inside each depend on each other
//! in one direction only, as docs/ARCHITECTURE.md draws them: the load
//! generator (crates/core) has no async runtime and never uses the built-in
//! target server (crates/serve); the server uses nothing of the load
//! generator; both may use the PEM leaf (crates/pem) and WebSocket's wire
//! format (crates/ws), and the load generator HPACK's (crates/hpack); and
//! inside each crate no two modules import each other, directly or around
//! a cycle.
//!
//! The load generator names no tokio at all: its HTTP/2 session is its
//! own (tokio is a dev-dependency of its unit tests alone, which talk to
//! an HTTP/2 library's server).
//!
//! Read from the sources and manifests themselves (`common::modules`):
//! every module at full depth (`run::sink::json`, `report::html::charts`),
//! with each name followed to the module that defines it, through any
//! `use` or `pub use` on the way, and the crate root counted as a module
//! of its own: a name defined in lib.rs and used below it closes a cycle
//! through the root, which imports every module it routes to. A module and
//! its own submodules are one unit.

use std::path::Path;

use crate::common::modules::*;

/// The crates whose modules are checked for cycles.
const CRATES: [&str; 6] = [
    "crates/core",
    "crates/serve",
    "crates/pem",
    "crates/hpack",
    "crates/grpc",
    "crates/ws",
];
/// What the load generator must not depend on: the server and any async
/// runtime (its own event loops are the point of it), nor the server's
/// QUIC and HTTP/3 libraries, which run on one.
const NOT_IN_CORE: [&str; 9] = [
    "metron-serve",
    "tokio",
    "tokio-rustls",
    "hyper",
    "rcgen",
    "h2",
    "quinn",
    "h3",
    "h3-quinn",
];

#[test]
fn modules_form_no_cycle() {
    for krate in CRATES {
        let graph = graph(&sources(&src(krate)));
        if let Some(cycle) = find_cycle(&graph) {
            panic!(
                "{krate}: modules import each other around a cycle: {}; move what they share \
                 into a module below them (docs/ARCHITECTURE.md)",
                cycle.join(" -> ")
            );
        }
    }
}

#[test]
fn the_load_generator_has_no_server_and_no_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let deps = dependencies(&root.join("crates/core"));
    for name in NOT_IN_CORE {
        assert!(
            !deps.contains(name),
            "crates/core depends on {name}: the load generator may not (docs/ARCHITECTURE.md)"
        );
    }
    for file in rust_files(&src("crates/core")) {
        let code = without_tests(&std::fs::read_to_string(&file).expect("a source file reads"));
        assert!(
            !code.contains("metron_serve"),
            "{} uses metron_serve",
            file.display()
        );
        assert!(
            !code.contains("tokio"),
            "{} uses tokio: the load generator runs no async code",
            file.display()
        );
    }
}

#[test]
fn the_target_server_stands_alone() {
    let deps = dependencies(&Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/serve"));
    assert!(
        !deps.contains("metron-core") && !deps.contains("metron"),
        "crates/serve depends on the load generator: it may use only crates/pem and crates/ws"
    );
    for file in rust_files(&src("crates/serve")) {
        let code = without_tests(&std::fs::read_to_string(&file).expect("a source file reads"));
        assert!(
            !code.contains("metron_core"),
            "{} uses the load generator: the target server may use only crates/pem and crates/ws",
            file.display()
        );
    }
}

/// The engine drives sessions and reaches hosts; what a protocol is and
/// says lives in `http/<protocol>/`. So no code of the engine (its unit
/// tests apart, which build sessions to drive) names a protocol: adding
/// one touches `http/` and not the engine (docs/ARCHITECTURE.md).
#[test]
fn the_engine_names_no_protocol() {
    let engine = src("crates/core").join("engine");
    let files = rust_files(&engine);
    assert!(files.len() > 10, "the engine's files are found");
    for file in files {
        let code = without_tests(&std::fs::read_to_string(&file).expect("a source file reads"));
        let named = protocol_names(&code);
        assert!(
            named.is_empty(),
            "{} names a protocol ({}): ask the session, or put it in http/ (docs/ARCHITECTURE.md)",
            file.display(),
            named.join(", ")
        );
    }
}

/// The names of protocols in `code`: their types and variants
/// (`Http2`, `QuicOptions`), their modules (`h3::`) and their names in
/// words (`HTTP/2`, `h2c`).
fn protocol_names(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for word in code.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let named = ["Http1", "Http2", "Http3", "Quic", "QUIC"]
            .iter()
            .any(|p| word.starts_with(p))
            || word == "h2c";
        if named {
            found.push(word.to_string());
        }
    }
    for text in ["h1::", "h2::", "h3::", "HTTP/1", "HTTP/2", "HTTP/3"] {
        if code.contains(text) {
            found.push(text.to_string());
        }
    }
    found
}

#[test]
fn protocol_names_are_found_in_code_and_words() {
    let code = "use crate::http::h2::Settings;\nlet q = QuicOptions::new();\nif p == Protocol::Http3 {}\nlet s = \"drop --http2 for HTTP/1.1\";";
    assert_eq!(
        protocol_names(code),
        ["QuicOptions", "Http3", "h2::", "HTTP/1"]
    );
    assert!(protocol_names("let session = peer.protocol.session(&opts)?;").is_empty());
}

/// The check itself, on small crates: it finds what it must.
#[test]
fn a_cycle_is_found_at_full_depth_and_through_the_root() {
    // Full depth: a::b::x and a::b::z are two modules, so a path from one
    // to c::d and back to the other is no cycle.
    let deep = [
        ("", "pub mod a;\npub mod c;\n"),
        ("a", "pub mod b;\n"),
        ("a::b", "pub mod x;\npub mod z;\n"),
        ("a::b::x", "use crate::c::d::f;\n"),
        ("a::b::z", "pub struct T;\n"),
        ("c", "pub mod d;\n"),
        ("c::d", "pub fn f(_: crate::a::b::z::T) {}\n"),
    ];
    assert_eq!(find_cycle(&graph(&fake(&deep))), None);
    // A name defined in the root and used below it, by a module the root
    // routes to: a cycle through the root.
    let root = [
        (
            "",
            "pub mod b;\npub struct Error;\npub fn run() { b::go() }\n",
        ),
        ("b", "pub fn go() -> crate::Error { crate::Error }\n"),
    ];
    let cycle = find_cycle(&graph(&fake(&root)));
    assert_eq!(cycle.map(|c| c.len()), Some(3));
    // The same name re-exported from where it lives is an edge to there.
    let reexported = [
        (
            "",
            "pub mod b;\npub mod e;\npub use e::Error;\npub fn run() { b::go() }\n",
        ),
        ("b", "use crate::Error;\npub fn go() {}\n"),
        ("e", "pub struct Error;\n"),
    ];
    assert_eq!(find_cycle(&graph(&fake(&reexported))), None);
    assert!(edges(&reexported).contains("b -> e"));
    // `use` trees, aliases, `super::` and submodules, with each name
    // followed to its home.
    let uses = [
        ("", "pub mod a;\npub mod c;\npub mod m;\n"),
        ("a", "pub mod b;\npub use b::B as Renamed;\n"),
        ("a::b", "pub struct B;\n"),
        ("c", "pub mod d;\npub mod e;\n"),
        ("c::d", "pub struct D;\n"),
        ("c::e", "pub struct E;\n"),
        (
            "m",
            "pub mod n;\nuse crate::{a::Renamed, c::{d::D, e as other}};\n",
        ),
        (
            "m::n",
            "use super::super::c::e::E;\nfn f() { super::Renamed; }\n",
        ),
    ];
    let found = edges(&uses);
    for want in [
        "m -> a::b",
        "m -> c::d",
        "m -> c::e",
        "m::n -> c::e",
        "m::n -> a::b",
    ] {
        assert!(found.contains(want), "{want} missing from {found:?}");
    }
    assert!(
        !found.contains("m::n -> m"),
        "a submodule and its parent are one unit"
    );
}

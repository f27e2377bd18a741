//! The workspace's crates and the modules inside each depend on each other
//! in one direction only, as docs/ARCHITECTURE.md draws them: the load
//! generator (crates/core) has no async runtime and never uses the built-in
//! target server (crates/serve); the server uses nothing of the load
//! generator; both may use the PEM leaf (crates/pem); and inside each crate
//! no two modules import each other, directly or around a cycle.
//!
//! The load generator names no tokio at all: its HTTP/2 session is its
//! own (tokio is a dev-dependency of its unit tests alone, which talk to
//! an HTTP/2 library's server).
//!
//! Read from the sources and manifests themselves: every `crate::` and
//! `super::` path outside unit tests, resolved to the module it names, two
//! levels deep (`engine::worker`, `http::chunked`). A module's own
//! submodules and its parent are not counted: they are one unit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// The crates whose modules are checked for cycles.
const CRATES: [&str; 3] = ["crates/core", "crates/serve", "crates/pem"];
/// What the load generator must not depend on: the server and any async
/// runtime (its own event loops are the point of it).
const NOT_IN_CORE: [&str; 6] = [
    "metron-serve",
    "tokio",
    "tokio-rustls",
    "hyper",
    "rcgen",
    "h2",
];

#[test]
fn modules_form_no_cycle() {
    for krate in CRATES {
        let graph = graph(&src(krate));
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
        "crates/serve depends on the load generator: it may use only crates/pem"
    );
    for file in rust_files(&src("crates/serve")) {
        let code = without_tests(&std::fs::read_to_string(&file).expect("a source file reads"));
        assert!(
            !code.contains("metron_core"),
            "{} uses the load generator: the target server may use only crates/pem",
            file.display()
        );
    }
}

/// The `[dependencies]` of a crate's manifest (not its dev-dependencies).
fn dependencies(dir: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).expect("a manifest reads");
    let mut section = "";
    let mut out = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]" && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
            out.insert(name.to_string());
        }
    }
    out
}

fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(krate)
        .join("src")
}

/// The check itself, on a small tree: it finds what it must.
#[test]
fn a_cycle_is_found() {
    let edges = |list: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in list {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    let cycle = find_cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a"), ("a", "d")]));
    assert_eq!(cycle.map(|c| c.len()), Some(4));
    assert_eq!(
        find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])),
        None
    );
    let refs = references(
        "use crate::{a::b, c::{d, e}};\nuse super::x::Y;\nlet v = crate::f::g(1);\n\
         use super::super::z;\n",
        &["m".to_string(), "n".to_string(), "o".to_string()],
    );
    let refs: Vec<String> = refs.iter().map(|r| r.join("::")).collect();
    assert_eq!(refs, ["a::b", "c", "f::g", "m::n::x::Y", "m::z"]);
}

/// Edges between a crate's modules (two levels deep), from every source
/// file under `root`.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = rust_files(root);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(root, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(root, file);
        let text = std::fs::read_to_string(file).expect("a source file reads");
        let from = unit(&module);
        for path in references(&without_tests(&text), &module) {
            let Some(target) = longest_module(&modules, &path) else {
                continue;
            };
            let to = unit(&target);
            let related = from == to
                || from.is_empty()
                || to.is_empty()
                || from.starts_with(&format!("{to}::"))
                || to.starts_with(&format!("{from}::"));
            if !related {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a crate's src/ lists") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            // Unit tests kept in a file of their own.
            if path.file_name().is_some_and(|n| n != "tests.rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `src/a/b.rs` is `a::b`, `src/a/mod.rs` is `a`, the crate root is empty.
fn module_of(root: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(root).expect("under src/");
    let mut parts: Module = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    }
    parts
}

/// The module a dependency is counted on: its first two levels.
fn unit(module: &[String]) -> String {
    module
        .iter()
        .take(2)
        .cloned()
        .collect::<Vec<_>>()
        .join("::")
}

/// The longest leading part of `path` that names a module.
fn longest_module(modules: &BTreeSet<Module>, path: &[String]) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|m| modules.contains(m))
}

/// The source without its unit tests and its comments.
fn without_tests(text: &str) -> String {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path through `crate::` or `super::` in `code`, made absolute
/// (`super` is resolved against `module`); braces of a `use` list are
/// opened one level.
fn references(code: &str, module: &[String]) -> Vec<Module> {
    let mut out = Vec::new();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent(module))] {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + prefix.len()..];
            // `super::` inside `crate::a::super::` or `self.super::` is not one.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            // `super::super::` climbs once more.
            let mut base = base.clone();
            while prefix == "super::" && rest.starts_with(prefix) {
                base.pop();
                rest = &rest[prefix.len()..];
            }
            if let Some(list) = rest.strip_prefix('{') {
                let end = closing_brace(list);
                for item in split_top_level(&list[..end]) {
                    out.push([base.clone(), path_of(item)].concat());
                }
            } else {
                out.push([base.clone(), path_of(rest)].concat());
            }
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

fn parent(module: &[String]) -> Module {
    module[..module.len().saturating_sub(1)].to_vec()
}

/// The identifiers of a path at the start of `text`: `a::b::{..}` is `a::b`.
fn path_of(text: &str) -> Module {
    let mut parts = Vec::new();
    let mut rest = text.trim_start();
    loop {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        parts.push(rest[..len].to_string());
        match rest[len..].strip_prefix("::") {
            Some(more) => rest = more,
            None => break,
        }
    }
    parts
}

/// Where the brace opened just before `text` closes.
fn closing_brace(text: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    text.len()
}

/// The items of a `use` list, split at commas outside nested braces.
fn split_top_level(list: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in list.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    items.retain(|i| !i.trim().is_empty());
    items
}

/// A cycle of the graph, as the modules around it (the first repeated at
/// the end), if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = stack.iter().position(|n| n == node).unwrap_or(0);
                let mut cycle = stack[from..].to_vec();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

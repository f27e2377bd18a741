//! A crate's modules and the imports between them, read from its sources
//! (tests/it/layers.rs holds them to one direction).
//!
//! Every module counts at full depth (`run::sink::json`, not `run`). An
//! edge A → B is a path A names that lands in B: through `crate::`,
//! `super::`, `self::` or one of A's own submodules, in a `use` or in the
//! code. A name that a module only re-exports (`pub use`) or imports
//! (`use`) is followed to the module that defines it, so `crate::Error`
//! is an edge to wherever `Error` lives. A module and its own submodules
//! are one unit, except the crate root: a name defined in lib.rs and used
//! below it is an edge to the root, which imports every module it routes
//! to. Unit tests (`mod tests` at a file's end, or `tests.rs`) and
//! comments are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root (empty for the root).
pub type Module = Vec<String>;
/// Each module and the modules it imports.
pub type Graph = BTreeMap<Module, BTreeSet<Module>>;

/// The source of every module of the crate whose sources are under `src`:
/// each file's, and each inline `mod name { .. }` as a module of its own.
pub fn sources(src: &Path) -> BTreeMap<Module, String> {
    let mut out = BTreeMap::new();
    for file in rust_files(src) {
        let text = std::fs::read_to_string(&file).expect("a source file reads");
        split_inline(module_of(src, &file), &without_comments(&text), &mut out);
    }
    out
}

/// The edges between the modules of `crate_` (from [`sources`]).
pub fn graph(crate_: &BTreeMap<Module, String>) -> Graph {
    let modules: BTreeSet<Module> = crate_.keys().cloned().collect();
    let bindings: BTreeMap<Module, Vec<(String, Module)>> = crate_
        .iter()
        .map(|(m, code)| (m.clone(), uses(code, m, &modules).bindings))
        .collect();
    let mut graph = Graph::new();
    for (module, code) in crate_ {
        let found = uses(code, module, &modules);
        let paths = found
            .paths
            .into_iter()
            .chain(code_paths(&found.rest, module, &modules));
        for path in paths {
            let Some(to) = home(&path, &modules, &bindings) else {
                continue;
            };
            if counts(module, &to) {
                graph.entry(module.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// A cycle of the graph, as the modules around it (the first repeated at
/// the end), if there is one.
pub fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &Module,
        graph: &Graph,
        marks: &mut BTreeMap<Module, Mark>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = stack.iter().position(|n| n == node).unwrap_or(0);
                let mut cycle: Vec<String> = stack[from..].iter().map(|m| name(m)).collect();
                cycle.push(name(node));
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.clone(), Mark::Open);
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        marks.insert(node.clone(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

/// A module as the messages name it: `run::sink::json`, or `crate`.
pub fn name(module: &[String]) -> String {
    match module {
        [] => "crate".to_string(),
        parts => parts.join("::"),
    }
}

/// Whether an edge between two modules counts: not within one module, and
/// not between a module and its own submodules (one unit), the crate root
/// excepted.
fn counts(from: &[String], to: &[String]) -> bool {
    let within = |a: &[String], b: &[String]| !a.is_empty() && b.starts_with(a);
    from != to && !within(from, to) && !within(to, from)
}

/// The module that defines what `path` names: the longest leading part
/// that is a module, followed through the names that module only imports
/// or re-exports.
fn home(
    path: &[String],
    modules: &BTreeSet<Module>,
    bindings: &BTreeMap<Module, Vec<(String, Module)>>,
) -> Option<Module> {
    let mut path = path.to_vec();
    // A chain of re-exports is short; the bound keeps a cycle of `use`s
    // (which the compiler refuses anyway) from looping.
    for _ in 0..16 {
        let module = longest_module(modules, &path)?;
        let Some(item) = path.get(module.len()) else {
            return Some(module);
        };
        let bound = bindings
            .get(&module)
            .and_then(|b| b.iter().find(|(name, _)| name == item));
        match bound {
            Some((_, target)) => {
                path = [target.clone(), path[module.len() + 1..].to_vec()].concat()
            }
            None => return Some(module),
        }
    }
    None
}

/// The longest leading part of `path` that names a module (the root at
/// least, for a path from `crate::`).
fn longest_module(modules: &BTreeSet<Module>, path: &[String]) -> Option<Module> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|m| modules.contains(m))
}

/// What a module's `use` declarations name.
struct Uses {
    /// Every path they import, made absolute.
    paths: Vec<Module>,
    /// Each name they bring into the module, and the path it stands for.
    bindings: Vec<(String, Module)>,
    /// The code without them.
    rest: String,
}

/// The `use` declarations of `code`, in `module`, with paths made
/// absolute; imports from other crates are left out.
fn uses(code: &str, module: &[String], modules: &BTreeSet<Module>) -> Uses {
    let mut found = Uses {
        paths: Vec::new(),
        bindings: Vec::new(),
        rest: String::new(),
    };
    let mut rest = code;
    while let Some(at) = use_start(rest) {
        found.rest.push_str(&rest[..at]);
        let after = &rest[at..];
        let body_at = after.find("use ").map_or(after.len(), |u| u + 4);
        let end = after.find(';').unwrap_or(after.len());
        // Without white space, `as` marked so that it stays a word of its own.
        let tree: String = after[body_at.min(end)..end]
            .split_whitespace()
            .map(|word| if word == "as" { "@" } else { word })
            .collect();
        let mut leaves = Vec::new();
        use_tree(&tree, &mut Vec::new(), &mut leaves);
        for (path, alias) in leaves {
            let Some(absolute) = absolute(&path, module, modules) else {
                continue;
            };
            if let Some(alias) = alias.filter(|a| a != "*" && a != "_") {
                found.bindings.push((alias, absolute.clone()));
            }
            found.paths.push(absolute);
        }
        rest = &after[(end + 1).min(after.len())..];
    }
    found.rest.push_str(rest);
    found
}

/// Where the next `use` declaration starts (at a line's start, with any
/// visibility before it).
fn use_start(code: &str) -> Option<usize> {
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let body = match trimmed.strip_prefix("pub") {
            Some(vis) => vis
                .strip_prefix(|c: char| c == '(')
                .and_then(|v| v.split_once(')').map(|(_, after)| after))
                .unwrap_or(vis)
                .trim_start(),
            None => trimmed,
        };
        if body.starts_with("use ") {
            return Some(offset + line.len() - trimmed.len());
        }
        offset += line.len();
    }
    None
}

/// The leaves of a `use` tree without white space and with `as` marked
/// `@` (`a::{b,c::D@E}`), each with the name it binds (`None` for a glob).
fn use_tree(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<(Module, Option<String>)>) {
    let mut rest = tree;
    let depth = prefix.len();
    loop {
        if let Some(list) = rest.strip_prefix('{') {
            let inner = &list[..closing_brace(list)];
            for item in split_top_level(inner) {
                use_tree(item, prefix, out);
            }
            break;
        }
        if rest == "*" {
            out.push((prefix.clone(), None));
            break;
        }
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let segment = &rest[..len];
        rest = &rest[len..];
        if let Some(more) = rest.strip_prefix("::") {
            prefix.push(segment.to_string());
            rest = more;
            continue;
        }
        let alias = rest.strip_prefix('@').unwrap_or(segment);
        if segment == "self" {
            let bound = prefix.last().cloned().map(|last| match alias {
                "self" => last,
                other => other.to_string(),
            });
            out.push((prefix.clone(), bound));
        } else {
            let mut path = prefix.clone();
            path.push(segment.to_string());
            out.push((path, Some(alias.to_string())));
        }
        break;
    }
    prefix.truncate(depth);
}

/// Paths named in code (outside `use`): from `crate::`, `super::`,
/// `self::` or one of the module's own submodules.
fn code_paths(code: &str, module: &[String], modules: &BTreeSet<Module>) -> Vec<Module> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut at = 0;
    while let Some(found) = code[at..].find("::") {
        let colons = at + found;
        at = colons + 2;
        let start = code[..colons]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        // Only the first segment of a path starts one.
        if start >= 2 && &bytes[start - 2..start] == b"::" {
            continue;
        }
        let path: Module = code[start..]
            .split("::")
            .map_while(|s| {
                let len = s
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(s.len());
                (len > 0).then(|| s[..len].to_string())
            })
            .collect();
        out.extend(absolute(&path, module, modules));
    }
    out
}

/// `path`, as written in `module`, from the crate root; `None` for a path
/// into another crate.
fn absolute(path: &[String], module: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let (first, rest) = path.split_first()?;
    let mut base: Module = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module[..module.len().saturating_sub(1)].to_vec(),
        child => {
            let mut own = module.to_vec();
            own.push(child.to_string());
            if !modules.contains(&own) {
                return None;
            }
            own
        }
    };
    let mut rest = rest;
    // `super::super::` climbs once more.
    while first == "super" && rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    Some([base, rest.to_vec()].concat())
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

/// Every source file under `dir`, unit tests kept in a file of their own
/// left out.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a crate's src/ lists") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
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

/// The source without its unit tests and its comments.
pub fn without_tests(text: &str) -> String {
    let mut out = BTreeMap::new();
    split_inline(Vec::new(), &without_comments(text), &mut out);
    out.into_values().collect::<Vec<_>>().join("\n")
}

fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Files `code` under `module` in `out`, each inline `mod name { .. }` in
/// it under its own path, and leaves out those only compiled for tests.
fn split_inline(module: Module, code: &str, out: &mut BTreeMap<Module, String>) {
    let mut own = String::new();
    let mut rest = code;
    while let Some((at, name, open)) = inline_mod(rest) {
        let end = open + block_end(&rest[open..]);
        let before = &rest[..at];
        let for_tests = before.trim_end().ends_with("#[cfg(test)]");
        own.push_str(before);
        if !for_tests {
            let mut inner = module.clone();
            inner.push(name);
            split_inline(inner, &rest[open + 1..end.saturating_sub(1)], out);
        }
        rest = &rest[end..];
    }
    own.push_str(rest);
    out.insert(module, own);
}

/// The next inline module at a line's start: where its line starts, its
/// name, and where its brace opens.
fn inline_mod(code: &str) -> Option<(usize, String, usize)> {
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let body = trimmed
            .strip_prefix("pub")
            .map(|v| match v.strip_prefix('(') {
                Some(vis) => vis.split_once(')').map_or(v, |(_, after)| after),
                None => v,
            })
            .unwrap_or(trimmed)
            .trim_start();
        if let Some(decl) = body.strip_prefix("mod ") {
            let name: String = decl
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if decl[name.len()..].trim_start().starts_with('{') {
                let open = offset + line.find('{').unwrap_or(0);
                return Some((offset, name, open));
            }
        }
        offset += line.len();
    }
    None
}

/// The length of the block that opens at the start of `text`, through its
/// closing brace; braces in strings and characters do not count.
fn block_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b'"' => i += string_len(&text[i..]),
            b'r' if raw_string_at(&text[i..]) && !word_before(bytes, i) => {
                i += raw_string_len(&text[i..]);
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') || bytes.get(i + 1) == Some(&b'\\') => {
                i += text[i + 1..].find('\'').map_or(0, |q| q + 1);
            }
            _ => {}
        }
        i += 1;
    }
    text.len()
}

/// Whether a raw string (`r"..."`, `r#"..."#`) opens at the start of
/// `text`.
fn raw_string_at(text: &str) -> bool {
    text[1..].trim_start_matches('#').starts_with('"')
}

/// Whether the `r` at `i` ends a word (`for`) rather than opening a raw
/// string (`r"`, or `br"` for bytes).
fn word_before(bytes: &[u8], i: usize) -> bool {
    let ident = |j: usize| bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_';
    let byte_prefix = |j: usize| bytes[j] == b'b' && (j == 0 || !ident(j - 1));
    i > 0 && ident(i - 1) && !byte_prefix(i - 1)
}

/// How far a raw string that opens at the start of `text` runs, to the
/// last `#` that closes it.
fn raw_string_len(text: &str) -> usize {
    let hashes = text[1..].len() - text[1..].trim_start_matches('#').len();
    let close = format!("\"{}", "#".repeat(hashes));
    let body = 2 + hashes;
    text[body..]
        .find(&close)
        .map_or(text.len(), |at| body + at + close.len() - 1)
}

/// How far a string literal that opens at the start of `text` runs, to
/// its closing quote.
fn string_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'"' => return i,
            _ => {}
        }
        i += 1;
    }
    text.len()
}

/// The `[dependencies]` of a crate's manifest (not its dev-dependencies).
pub fn dependencies(dir: &Path) -> BTreeSet<String> {
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

/// A crate's sources, under the workspace.
pub fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(krate)
        .join("src")
}

/// A crate of a few modules, each `(path, code)`, the root named "".
pub fn fake(files: &[(&str, &str)]) -> BTreeMap<Module, String> {
    files
        .iter()
        .map(|(path, code)| {
            let module = path
                .split("::")
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect();
            (module, code.to_string())
        })
        .collect()
}

/// A fake crate's edges as `from -> to` lines.
pub fn edges(files: &[(&str, &str)]) -> BTreeSet<String> {
    graph(&fake(files))
        .iter()
        .flat_map(|(from, to)| {
            to.iter()
                .map(move |t| format!("{} -> {}", from.join("::"), t.join("::")))
        })
        .collect()
}

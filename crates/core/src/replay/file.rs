//! Reading a requests file: JSON (an array of request objects), JSON Lines
//! (one object per line) or plain targets (`[METHOD] URL` lines, each
//! optionally followed by `Name: value` header lines and an `@file` body).
//!
//! The form is told by the first character: `[` is an array, `{` is JSON
//! Lines, anything else is targets. Every error names the file, the line
//! and, for JSON, the field, so that a broken entry in a file of thousands
//! is found at once.

use std::path::{Path, PathBuf};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::ReplayError;

/// One request as the file describes it, before its bytes are built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec {
    /// 1-based line where the request starts.
    pub line: usize,
    /// Empty when the file gives none.
    pub method: String,
    /// An absolute URL (`http://host/x`) or a path (`/x`) on the
    /// command line's host; empty when the file gives none.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Body>,
    /// Label for the per-endpoint statistics.
    pub name: Option<String>,
    /// A gRPC call's request message, as JSON text (`--grpc`).
    pub data: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Text(String),
    /// Read when the bytes are built, relative to the requests file.
    File(PathBuf),
}

const FIELDS: &str = "method, path, url, headers, body, body_file, name, data, metadata";

/// Parses the file's text, handing each request to `each` as soon as it is
/// read, so that no list of parsed requests is ever held: the caller builds
/// each one into bytes and lets it go. Returns how many there were. `file`
/// names it in errors; `dir` is where relative body files are looked up.
pub fn parse(
    text: &str,
    file: &str,
    dir: &Path,
    mut each: impl FnMut(Spec) -> Result<(), ReplayError>,
) -> Result<usize, ReplayError> {
    let mut count = 0;
    let mut counted = |spec: Spec| {
        count += 1;
        each(spec)
    };
    match text.trim_start().as_bytes().first() {
        None => {}
        Some(b'[') => parse_array(text, file, dir, &mut counted)?,
        Some(b'{') => parse_lines(text, file, dir, &mut counted)?,
        Some(_) => parse_targets(text, file, dir, &mut counted)?,
    };
    if count == 0 {
        return Err(ReplayError::Empty {
            file: file.to_string(),
        });
    }
    Ok(count)
}

/// What the parsers hand each request to.
type Each<'a> = dyn FnMut(Spec) -> Result<(), ReplayError> + 'a;

fn at(file: &str, line: usize, why: impl Into<String>) -> ReplayError {
    ReplayError::Entry {
        file: file.to_string(),
        line,
        why: why.into(),
    }
}

fn parse_array(text: &str, file: &str, dir: &Path, each: &mut Each) -> Result<(), ReplayError> {
    // Raw values borrow the text: 16 bytes an item, however large it is.
    let items: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| json_error(file, &e))?;
    // Each raw value's offset gives its line; counted onwards from the
    // previous item, the items come in order.
    let (mut line, mut counted) = (1, 0);
    for raw in items {
        let offset = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        line += text[counted..offset].matches('\n').count();
        counted = offset;
        let object = serde_json::from_str(raw.get()).map_err(|e| json_error(file, &e))?;
        each(spec_of(object, line, file, dir)?)?;
    }
    Ok(())
}

fn parse_lines(text: &str, file: &str, dir: &Path, each: &mut Each) -> Result<(), ReplayError> {
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let object = serde_json::from_str(line).map_err(|e| {
            let why = strip_position(&e);
            at(file, n + 1, format!("not a JSON object: {why}"))
        })?;
        each(spec_of(object, n + 1, file, dir)?)?;
    }
    Ok(())
}

fn json_error(file: &str, e: &serde_json::Error) -> ReplayError {
    let why = strip_position(e);
    at(file, e.line(), format!("not valid JSON: {why}"))
}

/// serde_json's message without its " at line L column C" suffix, since
/// the error names the line itself.
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn spec_of(value: Value, line: usize, file: &str, dir: &Path) -> Result<Spec, ReplayError> {
    let Value::Object(mut object) = value else {
        let found = kind(&value);
        return Err(at(
            file,
            line,
            format!("expected a request object {{\"method\": ..., \"path\": ...}}, found {found}"),
        ));
    };
    let mut text = |key: &str| -> Result<Option<String>, ReplayError> {
        match object.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(at(
                file,
                line,
                format!("field \"{key}\" must be a string, found {}", kind(&other)),
            )),
        }
    };
    // Empty when not given: GET, or POST for a call (the builder's choice).
    let method = text("method")?.unwrap_or_default();
    let target = match (text("path")?, text("url")?) {
        (Some(path), None) if path.starts_with('/') => path,
        (Some(path), None) => {
            return Err(at(
                file,
                line,
                format!(
                "\"path\": {path:?} must start with /: write \"/{path}\", or give a whole \"url\""
            ),
            ))
        }
        (None, Some(url)) => url,
        (Some(_), Some(_)) => return Err(at(file, line, "give \"path\" or \"url\", not both")),
        // Whether a path is needed depends on --grpc (a call's path is
        // its method's): the request's builder decides.
        (None, None) => String::new(),
    };
    let body = match (text("body")?, text("body_file")?) {
        (Some(b), None) => Some(Body::Text(b)),
        (None, Some(f)) => Some(Body::File(dir.join(f))),
        (None, None) => None,
        (Some(_), Some(_)) => {
            return Err(at(file, line, "give \"body\" or \"body_file\", not both"))
        }
    };
    let name = text("name")?;
    if let Some(name) = &name {
        if name.trim().is_empty() || name.contains(char::is_control) {
            return Err(at(
                file,
                line,
                format!(
                    "field \"name\" is {name:?}: give the endpoint a label of printable \
                     characters on one line (no tab, line break or other control character)"
                ),
            ));
        }
    }
    let data = match object.remove("data") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(other) => {
            let found = kind(&other);
            return Err(at(
                file,
                line,
                format!("field \"data\" must be an object (the call's message), found {found}"),
            ));
        }
    };
    // A call's metadata is its headers, by gRPC's name for them.
    let mut headers = Vec::new();
    for key in ["headers", "metadata"] {
        match object.remove(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => headers.extend(headers_of(map, line, file)?),
            Some(other) => {
                let found = kind(&other);
                return Err(at(
                    file,
                    line,
                    format!(
                        "field \"{key}\" must be an object {{\"Name\": \"value\"}}, found {found}"
                    ),
                ));
            }
        }
    }
    if let Some(unknown) = object.keys().next() {
        return Err(at(
            file,
            line,
            format!("unknown field \"{unknown}\"; the fields are {FIELDS}"),
        ));
    }
    Ok(Spec {
        line,
        method,
        target,
        headers,
        body,
        name,
        data,
    })
}

fn headers_of(
    map: Map<String, Value>,
    line: usize,
    file: &str,
) -> Result<Vec<(String, String)>, ReplayError> {
    map.into_iter()
        .map(|(name, value)| match value {
            Value::String(v) => Ok((name, v)),
            other => Err(at(
                file,
                line,
                format!(
                    "header \"{name}\" must have a string value, found {}",
                    kind(&other)
                ),
            )),
        })
        .collect()
}

/// Targets: a request line, then its header and `@body` lines; a blank
/// line or the next request line ends it. `#` starts a comment line.
fn parse_targets(text: &str, file: &str, dir: &Path, each: &mut Each) -> Result<(), ReplayError> {
    // The request whose header and body lines may follow, until a blank
    // line or the next request line hands it on.
    let mut open: Option<Spec> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            if let Some(done) = open.take() {
                each(done)?;
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        if let Some(spec) = request_line(line, n + 1) {
            if let Some(done) = open.replace(spec) {
                each(done)?;
            }
            continue;
        }
        let Some(spec) = open.as_mut() else {
            return Err(at(
                file,
                n + 1,
                "expected a request line such as \"GET http://host/path\" or \"/path\"",
            ));
        };
        if let Some(path) = line.strip_prefix('@') {
            if path.trim().is_empty() {
                return Err(at(
                    file,
                    n + 1,
                    "an @ line needs a file name, e.g. @body.json",
                ));
            }
            if spec.body.is_some() {
                return Err(at(file, n + 1, "a second @body line for one request"));
            }
            spec.body = Some(Body::File(dir.join(path.trim())));
        } else if let Some((name, value)) = line.split_once(':') {
            spec.headers
                .push((name.trim().to_string(), value.trim().to_string()));
        } else {
            return Err(at(
                file,
                n + 1,
                "expected a header (Name: value), an @body_file or a blank line",
            ));
        }
    }
    match open {
        Some(last) => each(last),
        None => Ok(()),
    }
}

/// `[METHOD ]URL`, the URL absolute or a path starting with `/`.
fn request_line(line: &str, n: usize) -> Option<Spec> {
    let is_target =
        |t: &str| t.starts_with('/') || t.starts_with("http://") || t.starts_with("https://");
    let (method, target) = match line.split_once(char::is_whitespace) {
        Some((m, t)) if is_target(t.trim()) && !is_target(m) => (m, t.trim()),
        _ if is_target(line) => ("GET", line),
        _ => return None,
    };
    Some(Spec {
        line: n,
        method: method.to_string(),
        target: target.to_string(),
        ..Spec::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> Vec<Spec> {
        let mut specs = Vec::new();
        let n = parse(text, "r.json", Path::new("/d"), |s| {
            specs.push(s);
            Ok(())
        })
        .unwrap();
        assert_eq!(n, specs.len());
        specs
    }

    fn parse_err(text: &str) -> String {
        parse(text, "r.json", Path::new("/d"), |_| Ok(()))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_json_array_gives_each_request_with_its_line() {
        let specs = parse_ok(
            r#"[
  {"method": "POST", "path": "/a", "headers": {"X-A": "1"}, "body": "hi"},
  {"path": "/b", "name": "bee"},
  {"url": "http://other:81/c", "body_file": "c.bin"}
]"#,
        );
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[0].line, 2);
        assert_eq!(specs[0].method, "POST");
        assert_eq!(specs[0].headers, vec![("X-A".into(), "1".into())]);
        assert_eq!(specs[0].body, Some(Body::Text("hi".into())));
        // No method: the builder's choice (GET, or POST for a call).
        assert_eq!((specs[1].method.as_str(), specs[1].line), ("", 3));
        assert_eq!(specs[1].name.as_deref(), Some("bee"));
        assert_eq!(specs[2].target, "http://other:81/c");
        assert_eq!(specs[2].body, Some(Body::File("/d/c.bin".into())));
    }

    #[test]
    fn json_lines_give_one_request_per_line() {
        let specs = parse_ok("{\"path\": \"/a\"}\n\n{\"method\": \"DELETE\", \"path\": \"/b\"}\n");
        let got: Vec<_> = specs.iter().map(|s| (s.line, s.method.as_str())).collect();
        assert_eq!(got, vec![(1, ""), (3, "DELETE")]);
    }

    #[test]
    fn targets_take_headers_and_body_files() {
        let specs = parse_ok(
            "# replayed\nhttp://h/a\nPOST http://h/b\nContent-Type: text/plain\n@body.txt\n\n/c\n",
        );
        assert_eq!(specs.len(), 3);
        assert_eq!((specs[0].method.as_str(), specs[0].line), ("GET", 2));
        assert_eq!(specs[1].method, "POST");
        assert_eq!(
            specs[1].headers,
            vec![("Content-Type".into(), "text/plain".into())]
        );
        assert_eq!(specs[1].body, Some(Body::File("/d/body.txt".into())));
        assert_eq!((specs[2].target.as_str(), specs[2].line), ("/c", 7));
    }

    #[test]
    fn every_broken_entry_names_file_line_and_field() {
        let cases = [
            ("", "r.json: no requests in it"),
            ("  \n", "r.json: no requests in it"),
            ("[]", "r.json: no requests in it"),
            (
                "[\n{\"path\": \"/a\"},\n{\"path\": 5}\n]",
                "r.json:3: field \"path\" must be a string, found a number",
            ),
            (
                "{\"path\": \"noslash\"}",
                "r.json:1: \"path\": \"noslash\" must start with /: write \"/noslash\", or give a whole \"url\"",
            ),
            (
                "[\n{\"path\": \"/a\"\n",
                "r.json:3: not valid JSON: EOF while parsing an object",
            ),
            (
                "[{\"path\": \"/a\", \"heders\": {}}]",
                "r.json:1: unknown field \"heders\"",
            ),
            (
                "[{\"path\": \"/a\", \"headers\": {\"A\": 1}}]",
                "r.json:1: header \"A\" must have a string value, found a number",
            ),
            (
                "[{\"path\": \"/a\", \"headers\": [\"A: 1\"]}]",
                "r.json:1: field \"headers\" must be an object",
            ),
            (
                "[{\"path\": \"/a\", \"url\": \"http://h/\"}]",
                "r.json:1: give \"path\" or \"url\", not both",
            ),
            (
                "[{\"path\": \"/a\", \"body\": \"x\", \"body_file\": \"f\"}]",
                "r.json:1: give \"body\" or \"body_file\", not both",
            ),
            ("[5]", "r.json:1: expected a request object"),
            (
                "{\"path\": \"/a\"}\n{\"path\": \"/b\",}\n",
                "r.json:2: not a JSON object: trailing comma",
            ),
            (
                "/a\nX-A: 1\n\nX-B: 2\n",
                "r.json:4: expected a request line",
            ),
            (
                "/a\nnot a header\n",
                "r.json:2: expected a header (Name: value)",
            ),
            ("/a\n@one\n@two\n", "r.json:3: a second @body line"),
            ("/a\n@ \n", "r.json:2: an @ line needs a file name"),
            (
                "[{\"path\": \"/a\", \"name\": \"x\\ny\"}]",
                "r.json:1: field \"name\" is \"x\\ny\": give the endpoint a label of printable \
                 characters on one line (no tab, line break or other control character)",
            ),
            (
                "[{\"path\": \"/a\", \"name\": \" \"}]",
                "r.json:1: field \"name\" is \" \"",
            ),
        ];
        for (text, want) in cases {
            let got = parse_err(text);
            assert!(
                got.starts_with(want),
                "{text:?}: got {got:?}, want {want:?}"
            );
            assert!(!got.contains('\n'), "one line: {got:?}");
        }
    }
}

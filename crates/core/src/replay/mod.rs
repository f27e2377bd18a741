//! `--requests FILE`: replaying a list of requests, possibly to several
//! hosts, with statistics per endpoint.
//!
//! Every request's bytes are built once, when the file is loaded, into one
//! buffer that all worker threads share read-only; sending a request then
//! costs no formatting at all. Each distinct host (scheme, host, port) is
//! resolved once and gets its own connections. Requests are grouped into
//! endpoints, by their `name` or else by method and path (without the
//! query), for the per-endpoint report.
//!
//! Layout: [`file`] reads the three file forms into [`file::Spec`]s; this
//! file checks them and builds the [`RequestSet`]; [`cursor`] decides which
//! request comes next on each thread.

mod cursor;
pub mod file;

use std::collections::HashMap;
use std::path::Path;

use crate::http::h1::request::{
    check_header_value, check_token, format, split_requests, RequestMeta,
};
use crate::target::{parse_url, resolve_pinned, Pin, Scheme, Target};

pub use cursor::{Cursor, Order};
pub use file::{Body, Spec};
use metron_grpc::Method;

/// A request's method, host index, path and body, before its bytes.
type Built = (String, u16, String, Option<Vec<u8>>);

/// Largest requests file read. The file is held in memory while its
/// requests are built, so a bigger one is refused rather than read.
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// Largest total of built request bytes (bodies included).
pub const MAX_BUILT_BYTES: usize = 1 << 30;
/// Most distinct endpoints given statistics of their own: each costs a
/// latency histogram (about 230 KB) per thread and per open interval.
pub const MAX_ENDPOINTS: usize = 100;

// Offsets into the built bytes are `u32`s.
const _: () = assert!(MAX_BUILT_BYTES <= u32::MAX as usize);

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReplayError {
    #[error("cannot read --requests {file}: {why}")]
    Read { file: String, why: String },
    #[error("cannot read --prompts {file}: {why}")]
    Prompts { file: String, why: String },
    #[error("--requests {file} holds more than the {limit} MiB limit; split it or drop repeated requests (each request is replayed in a cycle anyway)")]
    TooBig { file: String, limit: u64 },
    #[error("{file}: no requests in it; write a JSON array, JSON Lines or one URL per line")]
    Empty { file: String },
    #[error("{file}:{line}: {why}")]
    Entry {
        file: String,
        line: usize,
        why: String,
    },
    #[error("--requests {file}: the built requests pass {limit} MiB; use fewer or smaller bodies")]
    TooMuch { file: String, limit: usize },
}

/// One request ready to send: where its bytes are and what it belongs to.
/// Sixteen bytes: a file may hold millions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prepared {
    start: u32,
    len: u32,
    /// Index into [`RequestSet::hosts`].
    pub host: u16,
    /// Index into [`RequestSet::endpoints`].
    pub endpoint: u16,
    /// A HEAD request: its response has no body.
    pub head: bool,
}

/// Every request of the file, built, with its hosts and endpoints.
#[derive(Debug)]
pub struct RequestSet {
    /// Shared by every thread's requests, each a slice of it.
    bytes: bytes::Bytes,
    requests: Box<[Prepared]>,
    hosts: Vec<Target>,
    endpoints: Vec<String>,
    /// More distinct endpoints than [`MAX_ENDPOINTS`]: the last of
    /// `endpoints` then stands for all the rest, and there are no
    /// per-endpoint statistics.
    too_many_endpoints: bool,
    /// Indices of each host's requests, in file order.
    by_host: Vec<Box<[u32]>>,
}

impl RequestSet {
    /// Reads `path` and builds its requests. Paths are relative to `base`
    /// (the command line's URL); `headers` (from `-H`) go on every request
    /// and replace the file's headers of the same name; a host that `pins`
    /// has goes to its addresses.
    ///
    /// With a `call` (`--grpc`), every request calls it: a line's `data`
    /// is its message, and a `url` names only its host.
    pub fn load(
        path: &Path,
        base: &Target,
        headers: &[(String, String)],
        pins: &[Pin],
        call: Option<&Method>,
    ) -> Result<RequestSet, ReplayError> {
        let file = path.display().to_string();
        let read_error = |e: std::io::Error| ReplayError::Read {
            file: file.clone(),
            why: e.to_string(),
        };
        let too_big = || ReplayError::TooBig {
            file: file.clone(),
            limit: MAX_FILE_BYTES >> 20,
        };
        let bytes = read_at_most(path, MAX_FILE_BYTES)
            .map_err(read_error)?
            .ok_or_else(too_big)?;
        let owned = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
            ReplayError::Entry {
                file: file.clone(),
                line,
                why: format!(
                    "byte {} of the file is not UTF-8 text; save the file as UTF-8",
                    at + 1
                ),
            }
        })?;
        // Some editors start UTF-8 files with a byte-order mark.
        let text = owned.strip_prefix('\u{feff}').unwrap_or(&owned);
        let dir = path.parent().unwrap_or(Path::new("."));
        // Each request is built as soon as it is read: what is held is the
        // text and the built bytes, never a list of parsed requests.
        let mut builder = Builder::new(&file, base, headers, pins, call);
        file::parse(text, &file, dir, |spec| builder.add(spec))?;
        drop(owned);
        Ok(builder.finish())
    }

    /// Builds requests that were not read from a file (`--llm`'s prompts):
    /// `label` names their source in errors.
    pub fn build(
        label: &str,
        base: &Target,
        headers: &[(String, String)],
        pins: &[Pin],
        specs: impl IntoIterator<Item = Spec>,
    ) -> Result<RequestSet, ReplayError> {
        let mut builder = Builder::new(label, base, headers, pins, None);
        for spec in specs {
            builder.add(spec)?;
        }
        if builder.requests.is_empty() {
            return Err(ReplayError::Empty {
                file: label.to_string(),
            });
        }
        Ok(builder.finish())
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    pub fn get(&self, r: u32) -> Prepared {
        self.requests[r as usize]
    }

    /// The wire bytes of request `r`, shared (no copy).
    pub fn wire(&self, r: u32) -> bytes::Bytes {
        let p = self.requests[r as usize];
        let start = p.start as usize;
        self.bytes.slice(start..start + p.len as usize)
    }

    /// The wire bytes of request `r`.
    pub fn bytes(&self, r: u32) -> &[u8] {
        let p = &self.requests[r as usize];
        let start = p.start as usize;
        &self.bytes[start..start + p.len as usize]
    }

    /// Every host the requests go to, in the order the file first names
    /// them (a path names the command line's host).
    pub fn hosts(&self) -> &[Target] {
        &self.hosts
    }

    /// Labels of the endpoints, by index.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// Whether the file has more than [`MAX_ENDPOINTS`] distinct endpoints
    /// (and so no statistics per endpoint).
    pub fn too_many_endpoints(&self) -> bool {
        self.too_many_endpoints
    }

    /// Requests of host `h`, in file order.
    pub fn of_host(&self, h: usize) -> &[u32] {
        &self.by_host[h]
    }
}

/// What a request is counted under, until the labels are made at the end
/// (whether a label names the host depends on how many hosts there are).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum EndpointKey {
    Named(String),
    /// Method, path without its query, host.
    Path(String, String, u16),
}

/// Checks each spec and appends its bytes.
struct Builder<'a> {
    file: &'a str,
    base: &'a Target,
    headers: &'a [(String, String)],
    pins: &'a [Pin],
    call: Option<&'a Method>,
    bytes: Vec<u8>,
    requests: Vec<Prepared>,
    hosts: Vec<Target>,
    host_index: HashMap<(bool, String, u16), u16>,
    /// Distinct endpoints so far, by the id their requests carry; past
    /// [`MAX_ENDPOINTS`] + 1 the last id takes every new one.
    keys: Vec<EndpointKey>,
    key_index: HashMap<EndpointKey, u16>,
}

impl<'a> Builder<'a> {
    fn new(
        file: &'a str,
        base: &'a Target,
        headers: &'a [(String, String)],
        pins: &'a [Pin],
        call: Option<&'a Method>,
    ) -> Builder<'a> {
        Builder {
            file,
            base,
            headers,
            pins,
            call,
            bytes: Vec::new(),
            requests: Vec::new(),
            hosts: Vec::new(),
            host_index: HashMap::new(),
            keys: Vec::new(),
            key_index: HashMap::new(),
        }
    }

    fn error(&self, line: usize, why: impl Into<String>) -> ReplayError {
        ReplayError::Entry {
            file: self.file.to_string(),
            line,
            why: why.into(),
        }
    }

    fn finish(mut self) -> RequestSet {
        let (endpoints, too_many_endpoints) = self.label();
        let mut by_host = vec![Vec::new(); self.hosts.len()];
        for (r, p) in self.requests.iter().enumerate() {
            by_host[p.host as usize].push(r as u32);
        }
        RequestSet {
            bytes: bytes::Bytes::from(self.bytes),
            requests: self.requests.into_boxed_slice(),
            hosts: self.hosts,
            endpoints,
            too_many_endpoints,
            by_host: by_host.into_iter().map(Vec::into_boxed_slice).collect(),
        }
    }

    fn add(&mut self, mut spec: Spec) -> Result<(), ReplayError> {
        let line = spec.line;
        if self.requests.len() >= u32::MAX as usize {
            return Err(self.error(line, "more than 4 billion requests"));
        }
        let (method, host, path, body) = match self.call {
            Some(call) => self.call_of(call, &mut spec)?,
            None => self.request_of(&mut spec)?,
        };
        let headers = self.headers_with(spec.headers, line)?;
        let authority = &self.hosts[host as usize].authority;
        let built = format(&method, &path, &headers, body.as_deref(), authority);
        let meta = self.framing(&built, line)?;
        if self.bytes.len() + built.len() > MAX_BUILT_BYTES {
            return Err(ReplayError::TooMuch {
                file: self.file.to_string(),
                limit: MAX_BUILT_BYTES >> 20,
            });
        }
        let key = match spec.name {
            Some(name) => EndpointKey::Named(name),
            None => {
                let bare = path.split('?').next().unwrap_or_default();
                EndpointKey::Path(method, bare.to_string(), host)
            }
        };
        let endpoint = self.endpoint(key);
        // Both fit: the total is under MAX_BUILT_BYTES.
        self.requests.push(Prepared {
            start: self.bytes.len() as u32,
            len: built.len() as u32,
            host,
            endpoint,
            head: meta.head,
        });
        self.bytes.extend_from_slice(&built);
        Ok(())
    }

    /// A request's method, host, path and body, from its spec.
    /// Takes the target and body out of `spec`, as they are built.
    fn request_of(&mut self, spec: &mut Spec) -> Result<Built, ReplayError> {
        let line = spec.line;
        if spec.data.is_some() {
            return Err(self.error(
                line,
                "field \"data\" is a gRPC call's message: add --grpc METHOD (and its --proto) to send calls, or give the request a \"body\"",
            ));
        }
        if self.base.websocket {
            // A message: its connection upgraded at the URL's path.
            if spec.body.is_none() {
                return Err(self.error(
                    line,
                    "a WebSocket message needs a \"body\" (or a \"body_file\"); give \"body\": \"\" \
                     for an empty one",
                ));
            }
            if spec.target.is_empty() {
                spec.target = self.base.path.clone();
            }
        }
        if spec.target.is_empty() {
            return Err(self.error(
                line,
                "field \"path\" is missing: give \"path\": \"/x\" or \"url\": \"http://host/x\"",
            ));
        }
        let method = match spec.method.as_str() {
            "" => "GET".to_string(),
            m => m.to_string(),
        };
        check_token(&method).map_err(|why| self.error(line, format!("method: {why}")))?;
        let (host, path) = self.host_of(std::mem::take(&mut spec.target), line)?;
        check_path(&path).map_err(|why| self.error(line, why))?;
        let body = match spec.body.take() {
            None => None,
            Some(Body::Text(text)) => Some(text.into_bytes()),
            Some(Body::File(p)) => Some(self.body_file(&p, line)?),
        };
        Ok((method, host, path, body))
    }

    /// A call of `call`: a POST of the message `data` gives (`{}` when it
    /// gives none) to the method's path, on the host a `url` names.
    fn call_of(&mut self, call: &Method, spec: &mut Spec) -> Result<Built, ReplayError> {
        let line = spec.line;
        if !matches!(spec.method.as_str(), "" | "POST") {
            return Err(self.error(
                line,
                format!(
                    "method {}: a gRPC call is always a POST; drop \"method\"",
                    spec.method
                ),
            ));
        }
        if spec.body.is_some() {
            return Err(self.error(
                line,
                "a gRPC call's message goes in \"data\" (as JSON), not in \"body\"",
            ));
        }
        let target = match std::mem::take(&mut spec.target) {
            t if t.is_empty() => "/".to_string(),
            t => t,
        };
        let host = self.host_of(target, line)?.0;
        let data = spec.data.as_deref().unwrap_or("{}");
        let body = call
            .request(data, "field \"data\"")
            .map_err(|e| self.error(line, e.to_string()))?;
        Ok(("POST".to_string(), host, call.path(), Some(body)))
    }

    /// The `-H` headers, then the request's own (checked) except those
    /// that `-H` replaces: a fresh token beats a recorded one.
    fn headers_with(
        &self,
        own: Vec<(String, String)>,
        line: usize,
    ) -> Result<Vec<(String, String)>, ReplayError> {
        let mut headers = self.headers.to_vec();
        for (name, value) in own {
            check_token(&name)
                .map_err(|why| self.error(line, format!("header name {name:?}: {why}")))?;
            check_header_value(&value)
                .map_err(|why| self.error(line, format!("header {name:?}: {why}")))?;
            let replaced = self
                .headers
                .iter()
                .any(|(h, _)| h.eq_ignore_ascii_case(&name));
            if !replaced {
                headers.push((name, value));
            }
        }
        Ok(headers)
    }

    /// Checks that `built` is exactly one request. metron frames bodies
    /// itself, so only a Content-Length or Transfer-Encoding given in the
    /// file can make it anything else.
    fn framing(&self, built: &[u8], line: usize) -> Result<RequestMeta, ReplayError> {
        let fix = "the file's Content-Length or Transfer-Encoding header disagrees with the \
                   body; drop it and metron frames the body itself";
        match split_requests(built).as_deref() {
            Ok([one]) if one.len == built.len() => Ok(*one),
            Ok(_) => Err(self.error(
                line,
                format!("the body reads as more than one request: {fix}"),
            )),
            Err(e) => Err(self.error(line, format!("{e}: {fix}"))),
        }
    }

    /// A body file's bytes, read only as far as the room left under
    /// [`MAX_BUILT_BYTES`]: a file too large, or one without end like
    /// `/dev/zero`, is refused without being held in memory.
    fn body_file(&self, p: &Path, line: usize) -> Result<Vec<u8>, ReplayError> {
        let room = MAX_BUILT_BYTES.saturating_sub(self.bytes.len()) as u64;
        let name = p.display();
        match read_at_most(p, room) {
            Ok(Some(body)) => Ok(body),
            Ok(None) => Err(self.error(
                line,
                format!(
                    "body_file {name}: the built requests would pass the {} MiB limit; use a smaller body",
                    MAX_BUILT_BYTES >> 20
                ),
            )),
            Err(e) => Err(self.error(line, format!("body_file {name}: {e}"))),
        }
    }

    /// The id of an endpoint, new ones numbered in order of appearance.
    fn endpoint(&mut self, key: EndpointKey) -> u16 {
        if let Some(&id) = self.key_index.get(&key) {
            return id;
        }
        // One past the cap is enough to know there are too many; the
        // requests of every endpoint after it share its id.
        if self.keys.len() > MAX_ENDPOINTS {
            return MAX_ENDPOINTS as u16;
        }
        let id = self.keys.len() as u16;
        self.keys.push(key.clone());
        self.key_index.insert(key, id);
        id
    }

    /// The host index and the path of a target, resolving a host the first
    /// time it is seen.
    fn host_of(&mut self, target: String, line: usize) -> Result<(u16, String), ReplayError> {
        // A path is on the command line's host, already resolved.
        let (host, path) = if target.starts_with('/') {
            (None, target)
        } else {
            let mut parsed = parse_url(&target).map_err(|e| self.error(line, e.to_string()))?;
            let path = std::mem::take(&mut parsed.path);
            (Some(parsed), path)
        };
        let of = host.as_ref().unwrap_or(self.base);
        let https = of.scheme == Scheme::Https;
        let key = (https, of.host.clone(), of.port);
        if let Some(&h) = self.host_index.get(&key) {
            return Ok((h, path));
        }
        if self.hosts.len() > u16::MAX as usize {
            return Err(self.error(line, "more than 65536 distinct hosts"));
        }
        let mut host = host.unwrap_or_else(|| self.base.clone());
        if host.addrs.is_empty() {
            resolve_pinned(&mut host, self.pins).map_err(|e| self.error(line, e.to_string()))?;
        }
        let h = self.hosts.len() as u16;
        self.hosts.push(host);
        self.host_index.insert(key, h);
        Ok((h, path))
    }

    /// The endpoints' labels: a name, or the method and path (with the host
    /// when there are several). Endpoints whose labels come out the same (a
    /// name that reads like a method and path) are counted as one.
    fn label(&mut self) -> (Vec<String>, bool) {
        let too_many = self.keys.len() > MAX_ENDPOINTS;
        let several = self.hosts.len() > 1;
        let mut labels: Vec<String> = Vec::new();
        let mut index: HashMap<String, u16> = HashMap::new();
        let remap: Vec<u16> = std::mem::take(&mut self.keys)
            .into_iter()
            .map(|key| {
                let label = match key {
                    EndpointKey::Named(name) => name,
                    EndpointKey::Path(method, path, h) if several => {
                        format!("{method} {}{path}", self.hosts[h as usize].authority)
                    }
                    EndpointKey::Path(method, path, _) => format!("{method} {path}"),
                };
                let next = labels.len() as u16;
                *index.entry(label).or_insert_with_key(|label| {
                    labels.push(label.clone());
                    next
                })
            })
            .collect();
        if remap.iter().enumerate().any(|(id, &to)| id != to as usize) {
            for p in self.requests.iter_mut() {
                p.endpoint = remap[p.endpoint as usize];
            }
        }
        (labels, too_many)
    }
}

/// A path is sent exactly as written (a `url` is parsed, and so encoded,
/// as a URL), so it must already be valid on the wire.
fn check_path(path: &str) -> Result<(), String> {
    match path.chars().find(|&c| !c.is_ascii_graphic() || c == '#') {
        None => Ok(()),
        Some('#') => Err(format!(
            "path {path:?} has '#'; a fragment (#...) is never sent; drop it"
        )),
        Some(c) => Err(format!("path {path:?} has {c:?}; percent-encode it")),
    }
}

/// Reads the file at `path` whole if it holds at most `limit` bytes, and
/// `None` if it holds more: a regular file is judged by its size before a
/// byte is read, anything else (a pipe, a device) by reading one byte past
/// the limit and no further.
fn read_at_most(path: &Path, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::other("a directory, not a file"));
    }
    if meta.is_file() && meta.len() > limit {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::parse_target;

    fn load_text(text: &str, headers: &[(&str, &str)]) -> Result<RequestSet, ReplayError> {
        // A directory per call: tests run in parallel, and one rewriting a
        // shared body file while another reads it made the reader see it
        // empty.
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("metron-replay-{}-{call}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("requests.txt");
        std::fs::write(&path, text).unwrap();
        std::fs::write(dir.join("body.bin"), [0u8, 1, 2, 255]).unwrap();
        let base = parse_target("http://127.0.0.1:8080/").unwrap();
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let set = RequestSet::load(&path, &base, &headers, &[], None);
        let _ = std::fs::remove_dir_all(&dir);
        set
    }

    /// The endpoint id of each request, in file order.
    fn ids(set: &RequestSet) -> Vec<u16> {
        (0..set.len() as u32).map(|r| set.get(r).endpoint).collect()
    }

    fn text(set: &RequestSet, r: u32) -> String {
        String::from_utf8_lossy(set.bytes(r)).into_owned()
    }

    #[test]
    fn requests_are_built_once_with_host_and_body() {
        let set = load_text(
            r#"[{"method": "POST", "path": "/a?x=1", "headers": {"X-T": "1"}, "body": "hi"},
                {"path": "/b", "body_file": "body.bin"},
                {"method": "HEAD", "path": "/c"}]"#,
            &[],
        )
        .unwrap();
        assert_eq!(set.len(), 3);
        assert_eq!(
            text(&set, 0),
            "POST /a?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-T: 1\r\nContent-Length: 2\r\n\r\nhi"
        );
        assert!(set
            .bytes(1)
            .ends_with(b"Content-Length: 4\r\n\r\n\x00\x01\x02\xff"));
        assert!(set.get(2).head && !set.get(0).head);
        assert_eq!(set.endpoints(), ["POST /a", "GET /b", "HEAD /c"]);
        assert_eq!(set.hosts().len(), 1);
    }

    #[test]
    fn websocket_messages_need_a_body_and_no_path() {
        let dir = std::env::temp_dir().join(format!("metron-replay-ws-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("messages.jsonl");
        let base = parse_target("ws://127.0.0.1:8080/chat").unwrap();
        let load = |text: &str| {
            std::fs::write(&path, text).unwrap();
            RequestSet::load(&path, &base, &[], &[], None)
        };
        let set = load("{\"body\": \"one\"}\n{\"body\": \"\"}\n").unwrap();
        assert_eq!(set.len(), 2);
        assert!(text(&set, 0).starts_with("GET /chat HTTP/1.1\r\n"));
        assert!(text(&set, 0).ends_with("\r\n\r\none"));
        let err = load("{\"body\": \"one\"}\n{\"path\": \"/chat\"}\n").unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        let err = err.to_string();
        assert!(
            err.contains(":2:") && err.contains("needs a \"body\""),
            "{err}"
        );
    }

    #[test]
    fn command_line_headers_replace_the_files_own() {
        let set = load_text(
            "[{\"path\": \"/a\", \"headers\": {\"authorization\": \"Bearer old\", \"X-K\": \"v\"}}]",
            &[("Authorization", "Bearer new")],
        )
        .unwrap();
        let t = text(&set, 0);
        assert!(t.contains("Authorization: Bearer new\r\n"), "{t}");
        assert!(!t.contains("old") && t.contains("X-K: v\r\n"), "{t}");
    }

    #[test]
    fn each_host_is_resolved_once_and_labels_name_it() {
        let set = load_text(
            "http://127.0.0.1:9001/a\nhttp://127.0.0.1:9002/a\nhttp://127.0.0.1:9001/b?q=2\n/a\n",
            &[],
        )
        .unwrap();
        assert_eq!(set.hosts().len(), 3);
        assert_eq!(set.of_host(0), [0, 2]);
        assert_eq!(set.of_host(2), [3]);
        assert_eq!(
            set.endpoints(),
            [
                "GET 127.0.0.1:9001/a",
                "GET 127.0.0.1:9002/a",
                "GET 127.0.0.1:9001/b",
                "GET 127.0.0.1:8080/a"
            ]
        );
    }

    #[test]
    fn names_group_requests_into_one_endpoint() {
        let set = load_text(
            "{\"path\": \"/u/1\", \"name\": \"user\"}\n{\"path\": \"/u/2\", \"name\": \"user\"}\n{\"path\": \"/u/2\"}\n",
            &[],
        )
        .unwrap();
        assert_eq!(set.endpoints(), ["user", "GET /u/2"]);
        assert_eq!(ids(&set), [0, 0, 1]);
    }

    #[test]
    fn bad_requests_are_refused_with_their_line() {
        let cases = [
            (
                "[{\"method\": \"GE T\", \"path\": \"/\"}]",
                ":1: method: \"GE T\" has ' '",
            ),
            (
                "[{\"path\": \"/a b\"}]",
                ":1: path \"/a b\" has ' '; percent-encode it",
            ),
            (
                "[{\"path\": \"/café\"}]",
                ":1: path \"/café\" has 'é'; percent-encode it",
            ),
            (
                "[{\"path\": \"/a?x=1#top\"}]",
                ":1: path \"/a?x=1#top\" has '#'; a fragment (#...) is never sent",
            ),
            (
                "[{\"path\": \"/\", \"headers\": {\"X\": \"a\\r\\nY: b\"}}]",
                ":1: header \"X\": its value has '\\r': no line breaks",
            ),
            (
                "[{\"path\": \"/\", \"headers\": {\"X Y\": \"a\"}}]",
                ":1: header name \"X Y\"",
            ),
            ("[{\"url\": \"ftp://h/\"}]", ":1: unsupported scheme 'ftp'"),
            ("[{\"method\": \"GET\"}]", ":1: field \"path\" is missing"),
            (
                "{\"path\": \"/\", \"data\": {\"name\": \"x\"}}",
                ":1: field \"data\" is a gRPC call's message: add --grpc METHOD",
            ),
            (
                "[{\"url\": \"http://no-such-host.invalid/\"}]",
                ":1: cannot resolve host",
            ),
            (
                "[{\"path\": \"/\", \"body_file\": \"missing.bin\"}]",
                ":1: body_file",
            ),
            (
                "[{\"path\": \"/\", \"headers\": {\"Content-Length\": \"9\"}, \"body\": \"x\"}]",
                ":1: request 1 is incomplete: expected 8 more body bytes: the file's Content-Length",
            ),
        ];
        for (text, want) in cases {
            let got = load_text(text, &[]).unwrap_err().to_string();
            assert!(got.contains(want), "{text}: got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn calls_take_their_message_from_data_and_their_path_from_the_method() {
        let dir = std::env::temp_dir().join(format!("metron-replay-grpc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let proto = dir.join("greet.proto");
        std::fs::write(
            &proto,
            "syntax = \"proto3\"; package greet; \
             service Greeter { rpc SayHello (Req) returns (Req); } \
             message Req { string name = 1; }",
        )
        .unwrap();
        let schema = metron_grpc::Schema::from_protos(&[proto], &[]).unwrap();
        let call = schema.method("greet.Greeter/SayHello").unwrap();
        let path = dir.join("calls.jsonl");
        let load = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let base = parse_target("http://127.0.0.1:8080/").unwrap();
            RequestSet::load(&path, &base, &[], &[], Some(&call))
        };
        let set = load(
            "{\"data\": {\"name\": \"ab\"}, \"metadata\": {\"x-user\": \"7\"}}\n{\"name\": \"empty\"}\n",
        )
        .unwrap();
        let first = set.bytes(0);
        assert!(first.starts_with(b"POST /greet.Greeter/SayHello HTTP/1.1\r\n"));
        assert!(text(&set, 0).contains("x-user: 7\r\n"));
        // The message, framed: field 1 "ab" after the five-byte prefix.
        assert!(first.ends_with(&[0, 0, 0, 0, 4, 0x0a, 2, b'a', b'b']));
        // No data: the message with every field at its default.
        assert!(set.bytes(1).ends_with(b"\r\n\r\n\0\0\0\0\0"));
        let bad = |text: &str| load(text).unwrap_err().to_string();
        let e = bad("{\"data\": {\"nmae\": \"x\"}}");
        assert!(e.contains(":1: field \"data\": not a greet.Req"), "{e}");
        let e = bad("{\"method\": \"GET\"}");
        assert!(e.contains("always a POST"), "{e}");
        let e = bad("{\"body\": \"x\"}");
        assert!(e.contains("goes in \"data\""), "{e}");
        let e = bad("{\"data\": \"name=x\"}");
        assert!(e.contains("must be an object"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_name_that_reads_like_a_method_and_path_is_that_endpoint() {
        let set = load_text(
            "{\"path\": \"/a\"}\n{\"path\": \"/b\", \"name\": \"GET /a\"}\n{\"path\": \"/c\"}\n",
            &[],
        )
        .unwrap();
        assert_eq!(set.endpoints(), ["GET /a", "GET /c"]);
        assert_eq!(ids(&set), [0, 0, 1]);
    }

    #[test]
    fn endpoints_past_the_cap_are_counted_as_too_many() {
        let at_cap: String = (0..MAX_ENDPOINTS).map(|i| format!("/p{i}\n")).collect();
        let set = load_text(&at_cap, &[]).unwrap();
        assert_eq!(set.endpoints().len(), MAX_ENDPOINTS);
        assert!(!set.too_many_endpoints());

        // Thousands of distinct paths: the labels kept stop one past the
        // cap, and every request still has a valid endpoint id.
        let many: String = (0..5000).map(|i| format!("/p{i}?q={i}\n")).collect();
        let set = load_text(&many, &[]).unwrap();
        assert_eq!(set.len(), 5000);
        assert!(set.too_many_endpoints());
        assert_eq!(set.endpoints().len(), MAX_ENDPOINTS + 1);
        assert!(ids(&set).iter().all(|&e| e as usize <= MAX_ENDPOINTS));
    }

    #[test]
    fn a_file_over_the_size_limit_is_refused_unread() {
        let path = std::env::temp_dir().join(format!("metron-replay-big-{}", std::process::id()));
        // Sparse: no disk or memory is spent on it.
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let base = parse_target("http://127.0.0.1:8080/").unwrap();
        let err = RequestSet::load(&path, &base, &[], &[], None)
            .unwrap_err()
            .to_string();
        let _ = std::fs::remove_file(&path);
        assert!(err.contains("more than the 256 MiB limit"), "{err}");
    }

    #[test]
    fn files_are_utf8_with_or_without_a_byte_order_mark() {
        let set = load_text("\u{feff}[{\"path\": \"/a\"}]", &[]).unwrap();
        assert_eq!(set.endpoints(), ["GET /a"]);
        let dir = std::env::temp_dir().join(format!("metron-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("latin1.txt");
        std::fs::write(&path, b"/a\n/caf\xe9\n").unwrap();
        let base = parse_target("http://127.0.0.1:8080/").unwrap();
        let err = RequestSet::load(&path, &base, &[], &[], None)
            .unwrap_err()
            .to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            err.ends_with(
                "latin1.txt:2: byte 8 of the file is not UTF-8 text; save the file as UTF-8"
            ),
            "{err}"
        );
    }

    /// Regression: a body file was read whole before its size was checked,
    /// and a device without end (`/dev/zero`) was read until memory ran out.
    #[test]
    fn body_files_are_read_no_further_than_the_limit() {
        let at = |text: &str| load_text(text, &[]).unwrap_err().to_string();
        let err = at("[{\"path\": \"/\", \"body_file\": \"/dev/zero\"}]");
        assert!(
            err.contains(
                ":1: body_file /dev/zero: the built requests would pass the 1024 MiB limit"
            ),
            "{err}"
        );
        let err = at("[{\"path\": \"/\", \"body_file\": \"/\"}]");
        assert!(
            err.contains("body_file /: a directory, not a file"),
            "{err}"
        );
    }

    #[test]
    fn an_endless_requests_file_is_refused_at_the_limit() {
        let base = parse_target("http://127.0.0.1:8080/").unwrap();
        let err = RequestSet::load(Path::new("/dev/zero"), &base, &[], &[], None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than the 256 MiB limit"), "{err}");
    }

    #[test]
    fn a_missing_file_is_a_read_error() {
        let base = parse_target("http://127.0.0.1:8080/").unwrap();
        let e =
            RequestSet::load(Path::new("/nonexistent/r.json"), &base, &[], &[], None).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("cannot read --requests /nonexistent/r.json: "));
    }
}

//! `--llm`: an OpenAI-compatible stand-in model server, for demos and for
//! testing the clients that load one, with timings that are set rather
//! than measured.
//!
//! Three routes answer under `/v1/`: `POST /v1/chat/completions`,
//! `POST /v1/completions` and `GET /v1/models`. Any other `/v1/` path is
//! a 404, and a route asked with the wrong method a 405, each with an
//! OpenAI-style error body; paths outside `/v1/` are served as without
//! `--llm`. A completion request's JSON names its output length
//! (`max_completion_tokens` or `max_tokens`, else `--llm-max-tokens`),
//! whether it streams (`stream`, `stream_options.include_usage`) and its
//! `model`, which is echoed back. Its prompt tokens are the words (runs
//! of non-whitespace) of its `prompt` or of its `messages`' contents: a
//! count any client can reconcile without a tokenizer.
//!
//! Token i (1-based) is due `--llm-ttft` plus (i - 1) `--llm-tpot` after
//! the request's arrival (or after `--delay` or `--capacity` let its
//! answer begin). A streamed answer is a [`Feed`] of server-sent events,
//! written by the same writers and with the same due-time discipline as
//! `--sse` (`sse`): one chunk per token, the word ` w{i}`, then, if asked,
//! a usage chunk, then `data: [DONE]`, both right after the last token. A
//! whole answer goes out when its last token would have been due.
//!
//! The server counts completions answered, prompt tokens read and
//! completion tokens written (`stats`), so a client's token count can be
//! reconciled with the server's.

use std::fmt::Write as _;
use std::ops::Range;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::body::Sink;
use super::config::{Llm, MAX_LLM_TOKENS};
use super::route::path_of;
use super::sse::{Feed, Pace, DONE};
use super::stats::ServerStats;

/// The model a request that names none is answered as, and the one
/// `/v1/models` lists.
pub(crate) const MODEL: &str = "metron-llm";
/// Largest request body read: a longer one is refused (413) rather than
/// held in memory, and no real prompt comes near it.
pub(crate) const MAX_BODY: usize = 8 << 20;
/// `GET /v1/models`' answer: the one model there is.
const MODELS: &str =
    r#"{"object":"list","data":[{"id":"metron-llm","object":"model","owned_by":"metron"}]}"#;
/// The routes, for the message of a 404.
const ROUTES: &str =
    "--llm serves POST /v1/chat/completions, POST /v1/completions and GET /v1/models";

/// What a `/v1/` path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `/v1/chat/completions`: a conversation in, a message out.
    Chat,
    /// `/v1/completions`: a prompt in, its continuation out.
    Completions,
    /// `/v1/models`: the model list.
    Models,
    /// Any other path under `/v1/`: a 404 in the API's own form.
    Unknown,
}

impl Endpoint {
    /// The endpoint `target` names; `None` outside `/v1/`, where the
    /// server's other routes answer.
    pub(crate) fn of(target: &str) -> Option<Endpoint> {
        let path = path_of(target);
        Some(match path {
            "/v1/chat/completions" => Endpoint::Chat,
            "/v1/completions" => Endpoint::Completions,
            "/v1/models" => Endpoint::Models,
            _ if path == "/v1" || path.starts_with("/v1/") => Endpoint::Unknown,
            _ => return None,
        })
    }

    /// The methods it answers, as a 405's `Allow` names them.
    fn allows(self) -> &'static str {
        match self {
            Endpoint::Chat | Endpoint::Completions => "POST",
            Endpoint::Models | Endpoint::Unknown => "GET, HEAD",
        }
    }
}

/// A request's method, as far as the endpoints care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verb {
    Get,
    Head,
    Post,
    Other,
}

impl Verb {
    pub(crate) fn of(method: &str) -> Verb {
        match method {
            "GET" => Verb::Get,
            "HEAD" => Verb::Head,
            "POST" => Verb::Post,
            _ => Verb::Other,
        }
    }
}

/// A request for a `/v1/` path, its body kept as it arrives.
#[derive(Debug)]
pub(crate) struct Call {
    endpoint: Endpoint,
    verb: Verb,
    body: Kept,
}

impl Call {
    /// A call with `verb` for the endpoint `target` names, if it names one.
    pub(crate) fn of(target: &str, verb: Verb) -> Option<Call> {
        let endpoint = Endpoint::of(target)?;
        Some(Call {
            endpoint,
            verb,
            body: Kept::default(),
        })
    }

    /// Where its body goes: kept for a completion request (the only kind
    /// whose body is read); skipped for any other.
    pub(crate) fn sink(&mut self) -> Option<&mut Kept> {
        let reads = matches!(self.endpoint, Endpoint::Chat | Endpoint::Completions);
        (reads && self.verb == Verb::Post).then_some(&mut self.body)
    }

    /// A HEAD request: the head of the answer, no body.
    pub(crate) fn head_only(&self) -> bool {
        self.verb == Verb::Head
    }
}

/// A request body as read, up to [`MAX_BODY`].
#[derive(Debug, Default)]
pub(crate) struct Kept {
    bytes: Vec<u8>,
    /// It ran past [`MAX_BODY`]; what had come was let go.
    too_large: bool,
}

impl Sink for Kept {
    fn take(&mut self, bytes: &[u8]) {
        if self.too_large {
            return;
        }
        if self.bytes.len().saturating_add(bytes.len()) > MAX_BODY {
            self.too_large = true;
            self.bytes = Vec::new();
            return;
        }
        self.bytes.extend_from_slice(bytes);
    }
}

/// What the server sends for one call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// One JSON text: a completion answered whole, the model list, or an
    /// error.
    Json(Json),
    /// A completion streamed as server-sent events, one token each.
    Stream(Completion),
}

impl Answer {
    pub(crate) fn status(&self) -> u16 {
        match self {
            Answer::Json(json) => json.status,
            Answer::Stream(_) => 200,
        }
    }
}

/// A JSON answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Json {
    pub status: u16,
    pub text: String,
    /// The methods a 405 allows.
    pub allow: Option<&'static str>,
    /// For a completion answered whole: its tokens, and when it is due.
    pub whole: Option<Whole>,
}

/// A completion answered in one piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Whole {
    /// Completion tokens in its text, counted as written when it is.
    pub tokens: u64,
    /// When it is due: when its last token would have been.
    pub due: Duration,
}

impl Json {
    /// A JSON text with no completion in it.
    fn plain(status: u16, text: String) -> Json {
        Json {
            status,
            text,
            allow: None,
            whole: None,
        }
    }

    /// An OpenAI-style error: `{"error":{"message":…,"type":…}}`.
    fn error(status: u16, message: &str) -> Json {
        let text = format!(
            r#"{{"error":{{"message":{},"type":"invalid_request_error"}}}}"#,
            json_string(message)
        );
        Json::plain(status, text)
    }
}

/// The answer to `call`, with the server's `llm` settings. A completion
/// is counted (with its prompt tokens) as it is answered; its tokens are
/// counted as they are written.
pub(crate) fn answer(llm: Llm, call: &Call, stats: &ServerStats) -> Answer {
    let chat = match (call.endpoint, call.verb) {
        (Endpoint::Unknown, _) => return Answer::Json(Json::error(404, &unknown())),
        (Endpoint::Models, Verb::Get | Verb::Head) => {
            return Answer::Json(Json::plain(200, MODELS.to_string()))
        }
        (Endpoint::Chat, Verb::Post) => true,
        (Endpoint::Completions, Verb::Post) => false,
        (endpoint, _) => return Answer::Json(not_allowed(endpoint)),
    };
    if call.body.too_large {
        let message = format!("the request body is over {MAX_BODY} bytes");
        return Answer::Json(Json::error(413, &message));
    }
    match Order::read(chat, &call.body.bytes, llm.max_tokens) {
        Ok(order) => {
            let id = stats.completion_started(order.prompt_tokens);
            order.answer(llm, id, unix_now())
        }
        Err(message) => Answer::Json(Json::error(400, &message)),
    }
}

/// The 404's message.
fn unknown() -> String {
    format!("no such endpoint; {ROUTES}")
}

/// The 405 for a method `endpoint` does not answer.
fn not_allowed(endpoint: Endpoint) -> Json {
    let allows = endpoint.allows();
    let message = format!("this endpoint answers {allows} only");
    Json {
        allow: Some(allows),
        ..Json::error(405, &message)
    }
}

/// Seconds since the Unix epoch, for `created` (0 on a clock set before
/// it).
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// A completion request, as read from its JSON.
#[derive(Debug, PartialEq, Eq)]
struct Order {
    chat: bool,
    /// The model it names, echoed back.
    model: String,
    /// Completion tokens to send.
    tokens: u64,
    prompt_tokens: u64,
    stream: bool,
    /// With `stream`: a usage chunk before `[DONE]`.
    usage: bool,
}

impl Order {
    /// Reads the JSON `body` of a chat (`chat`) or plain completion
    /// request, whose output is `default_tokens` long unless it says
    /// otherwise; the error says what is wrong, as a 400's message.
    fn read(chat: bool, body: &[u8], default_tokens: u64) -> Result<Order, String> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|why| format!("the request body is not JSON: {why}"))?;
        let Value::Object(fields) = value else {
            return Err("the request body must be a JSON object".into());
        };
        let prompt_tokens = if chat {
            message_words(fields.get("messages"))?
        } else {
            prompt_words(fields.get("prompt"))?
        };
        let usage = match present(fields.get("stream_options")) {
            None => false,
            Some(Value::Object(options)) => {
                flag(options, "include_usage", "stream_options.include_usage")?
            }
            Some(_) => return Err("stream_options must be an object".into()),
        };
        let model = match present(fields.get("model")) {
            None => MODEL.to_string(),
            Some(Value::String(model)) => model.clone(),
            Some(_) => return Err("model must be a string".into()),
        };
        Ok(Order {
            chat,
            model,
            tokens: output_len(&fields, default_tokens)?,
            prompt_tokens,
            stream: flag(&fields, "stream", "stream")?,
            usage,
        })
    }

    /// The answer to this order, the `id`th completion, `created` at that
    /// Unix time.
    fn answer(self, llm: Llm, id: u64, created: u64) -> Answer {
        let completion = Completion {
            chat: self.chat,
            id,
            created,
            model: json_string(&self.model),
            tokens: self.tokens,
            prompt_tokens: self.prompt_tokens,
            usage: self.usage && self.stream,
            pace: Pace {
                first: llm.ttft,
                gap: llm.tpot,
            },
        };
        if self.stream {
            Answer::Stream(completion)
        } else {
            Answer::Json(completion.whole())
        }
    }
}

/// A field's value, unless it is absent or `null` (which the API treats
/// alike).
fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

/// A boolean field (`false` when absent); `name` is how the error names it.
fn flag(fields: &Map<String, Value>, key: &str, name: &str) -> Result<bool, String> {
    match present(fields.get(key)) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("{name} must be true or false")),
    }
}

/// The output length asked for: `max_completion_tokens` (the current
/// name), else `max_tokens`, else `default`.
fn output_len(fields: &Map<String, Value>, default: u64) -> Result<u64, String> {
    let named = ["max_completion_tokens", "max_tokens"]
        .into_iter()
        .find_map(|name| present(fields.get(name)).map(|value| (name, value)));
    let Some((name, value)) = named else {
        return Ok(default);
    };
    match value.as_u64() {
        Some(n) if n <= MAX_LLM_TOKENS => Ok(n),
        Some(n) => Err(format!("{name} {n} is over the limit of {MAX_LLM_TOKENS}")),
        None => Err(format!(
            "{name} must be a whole number from 0 to {MAX_LLM_TOKENS}"
        )),
    }
}

/// The words of a text: what the stand-in counts as its tokens.
fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// The prompt tokens of a chat request: the words of every message's
/// content, a string or a list of parts (whose text parts count; images
/// and the like do not). A message without content (a tool call) has none.
fn message_words(messages: Option<&Value>) -> Result<u64, String> {
    let messages = match present(messages) {
        None => return Err("messages is required: a list of {role, content} objects".into()),
        Some(Value::Array(messages)) if messages.is_empty() => {
            return Err("messages must hold at least one message".into())
        }
        Some(Value::Array(messages)) => messages,
        Some(_) => return Err("messages must be a list of {role, content} objects".into()),
    };
    let mut total = 0u64;
    for (i, message) in messages.iter().enumerate() {
        let Value::Object(message) = message else {
            return Err(format!("messages[{i}] must be an object"));
        };
        let n = match present(message.get("content")) {
            None => 0,
            Some(Value::String(text)) => words(text),
            Some(Value::Array(parts)) => parts.iter().map(part_words).sum(),
            Some(_) => {
                return Err(format!(
                    "messages[{i}].content must be a string or a list of parts"
                ))
            }
        };
        total = total.saturating_add(n);
    }
    Ok(total)
}

/// The words of one content part: a `{"type":"text","text":…}` part's
/// text; nothing for any other part.
fn part_words(part: &Value) -> u64 {
    let is_text = part.get("type").and_then(Value::as_str) == Some("text");
    match part.get("text").and_then(Value::as_str) {
        Some(text) if is_text => words(text),
        _ => 0,
    }
}

/// The prompt tokens of a plain completion request: the words of its
/// `prompt`, a string or a list of strings; a prompt given as token ids
/// (a list of numbers, or of lists of them) counts one token per id.
fn prompt_words(prompt: Option<&Value>) -> Result<u64, String> {
    const SHAPE: &str = "prompt must be a string, a list of strings, or token ids";
    match present(prompt) {
        None => Err("prompt is required: the text to complete".into()),
        Some(Value::String(text)) => Ok(words(text)),
        Some(Value::Array(items)) => items.iter().try_fold(0u64, |total, item| {
            let n = match item {
                Value::String(text) => words(text),
                Value::Number(_) => 1,
                Value::Array(ids) if ids.iter().all(Value::is_number) => ids.len() as u64,
                _ => return Err(SHAPE.to_string()),
            };
            Ok(total.saturating_add(n))
        }),
        Some(_) => Err(SHAPE.into()),
    }
}

/// `text` as a JSON string, quotes and escapes included.
fn json_string(text: &str) -> String {
    // Serializing a string cannot fail; the fallback only keeps this
    // free of a panic.
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{MODEL}\""))
}

/// A completion being answered: its identity, its tokens, and when each
/// is due. Streamed, it is a [`Feed`]: token i is event i, then the usage
/// chunk if asked, then `[DONE]`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Completion {
    /// A chat completion (else a plain one).
    chat: bool,
    /// Its number, which makes its `id` (`cmpl-{id}`).
    id: u64,
    /// Unix seconds when it was asked for.
    created: u64,
    /// The model's name as a JSON string, quotes included.
    model: String,
    tokens: u64,
    prompt_tokens: u64,
    /// A usage chunk follows the last token.
    usage: bool,
    pace: Pace,
}

impl Completion {
    /// When the end of the answer is due: with its last token, or for
    /// an answer of no tokens when the first would have been.
    fn end_due(&self) -> Duration {
        self.pace.due(self.tokens.max(1))
    }

    /// The JSON object's type.
    fn object(&self, chunk: bool) -> &'static str {
        match (self.chat, chunk) {
            (true, true) => "chat.completion.chunk",
            (true, false) => "chat.completion",
            (false, _) => "text_completion",
        }
    }

    /// The answer in one JSON text, with its usage.
    fn whole(&self) -> Json {
        let mut text = String::new();
        self.open(&mut text, false);
        let mut content = String::new();
        for i in 1..=self.tokens {
            token_text(&mut content, i);
        }
        let content = json_string(&content);
        if self.chat {
            let _ = write!(
                text,
                r#""choices":[{{"index":0,"message":{{"role":"assistant","content":{content}}},"finish_reason":"length"}}],"#
            );
        } else {
            let _ = write!(
                text,
                r#""choices":[{{"index":0,"text":{content},"finish_reason":"length"}}],"#
            );
        }
        self.write_usage(&mut text);
        text.push('}');
        Json {
            whole: Some(Whole {
                tokens: self.tokens,
                due: self.end_due(),
            }),
            ..Json::plain(200, text)
        }
    }

    /// Opens a JSON object of this completion: `{"id":…,"object":…,
    /// "created":…,"model":…,`.
    fn open(&self, out: &mut String, chunk: bool) {
        let _ = write!(
            out,
            r#"{{"id":"cmpl-{}","object":"{}","created":{},"model":{},"#,
            self.id,
            self.object(chunk),
            self.created,
            self.model
        );
    }

    /// `"usage":{…}`, the counts a client reconciles.
    fn write_usage(&self, out: &mut String) {
        let (prompt, completion) = (self.prompt_tokens, self.tokens);
        let total = prompt.saturating_add(completion);
        let _ = write!(
            out,
            r#""usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{total}}}"#
        );
    }

    /// The chunk of token `i`: its word, the role with the first (chat),
    /// `"finish_reason":"length"` with the last.
    fn token_chunk(&self, out: &mut String, i: u64) {
        self.open(out, true);
        let mut word = String::new();
        token_text(&mut word, i);
        let finish = if i == self.tokens {
            r#""length""#
        } else {
            "null"
        };
        let role = if i == 1 { r#""role":"assistant","# } else { "" };
        if self.chat {
            let _ = write!(
                out,
                r#""choices":[{{"index":0,"delta":{{{role}"content":"{word}"}},"finish_reason":{finish}}}]}}"#
            );
        } else {
            let _ = write!(
                out,
                r#""choices":[{{"index":0,"text":"{word}","finish_reason":{finish}}}]}}"#
            );
        }
    }

    /// The usage chunk: no choices, the counts.
    fn usage_chunk(&self, out: &mut String) {
        self.open(out, true);
        out.push_str(r#""choices":[],"#);
        self.write_usage(out);
        out.push('}');
    }
}

/// Appends token `i`'s text: a short word of its own (` w{i}`), so that
/// every token is one whitespace-separated word.
fn token_text(out: &mut String, i: u64) {
    let _ = write!(out, " w{i}");
}

/// A streamed completion: its tokens, then its usage chunk if asked, then
/// `[DONE]`, both right after the last token.
impl Feed for Completion {
    fn events(&self) -> u64 {
        self.tokens
            .saturating_add(u64::from(self.usage))
            .saturating_add(1)
    }

    fn due(&self, i: u64) -> Duration {
        self.pace.due(i.min(self.tokens.max(1)))
    }

    fn write(&self, out: &mut Vec<u8>, i: u64) {
        let mut data = String::new();
        if i <= self.tokens {
            self.token_chunk(&mut data, i);
        } else if self.usage && i == self.tokens + 1 {
            self.usage_chunk(&mut data);
        } else {
            out.extend_from_slice(DONE);
            return;
        }
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(data.as_bytes());
        out.extend_from_slice(b"\n\n");
    }

    /// Counts the tokens among `events`: those are what a client counts.
    fn count(&self, stats: &ServerStats, events: Range<u64>) {
        let last = self.tokens.saturating_add(1).min(events.end);
        let tokens = last.saturating_sub(events.start);
        if tokens > 0 {
            stats.completion_tokens_written(tokens);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn call(endpoint: &str, verb: Verb, body: &str) -> Call {
        let mut call = Call::of(endpoint, verb).expect("a /v1/ path");
        if let Some(sink) = call.sink() {
            sink.take(body.as_bytes());
        }
        call
    }

    fn llm() -> Llm {
        Llm {
            ttft: ms(100),
            tpot: ms(10),
            max_tokens: 16,
        }
    }

    fn post(endpoint: &str, body: &str) -> Answer {
        answer(
            llm(),
            &call(endpoint, Verb::Post, body),
            &ServerStats::new(0),
        )
    }

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn stream(body: &str) -> Completion {
        match post("/v1/chat/completions", body) {
            Answer::Stream(completion) => completion,
            other => panic!("not a stream: {other:?}"),
        }
    }

    /// Every event of a feed, as the text after `data: `.
    fn events(feed: &impl Feed) -> Vec<String> {
        (1..=feed.events())
            .map(|i| {
                let mut out = Vec::new();
                feed.write(&mut out, i);
                let text = String::from_utf8(out).unwrap();
                let data = text.strip_prefix("data: ").expect("an SSE data line");
                data.strip_suffix("\n\n")
                    .expect("an event's end")
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn paths_under_v1_are_endpoints() {
        assert_eq!(Endpoint::of("/v1/chat/completions"), Some(Endpoint::Chat));
        assert_eq!(
            Endpoint::of("http://h/v1/completions?x=1"),
            Some(Endpoint::Completions)
        );
        assert_eq!(Endpoint::of("/v1/models"), Some(Endpoint::Models));
        assert_eq!(Endpoint::of("/v1/embeddings"), Some(Endpoint::Unknown));
        assert_eq!(Endpoint::of("/v1"), Some(Endpoint::Unknown));
        assert_eq!(Endpoint::of("/v1x/models"), None);
        assert_eq!(Endpoint::of("/delay/5"), None);
        assert_eq!(Endpoint::of("/"), None);
    }

    #[test]
    fn a_streamed_chat_sends_one_token_per_chunk_then_usage_then_done() {
        let body = r#"{"model":"m\"1","max_tokens":3,"stream":true,
            "stream_options":{"include_usage":true},
            "messages":[{"role":"system","content":"be  brief"},
                        {"role":"user","content":[{"type":"text","text":"say three words"},
                                                  {"type":"image_url","image_url":{"url":"x y"}}]}]}"#;
        let completion = stream(body);
        assert_eq!(completion.events(), 5);
        let events = events(&completion);
        assert_eq!(events[4], "[DONE]");
        let chunks: Vec<Value> = events[..4].iter().map(|e| parse(e)).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            assert_eq!(chunk["object"], "chat.completion.chunk", "{i}");
            assert_eq!(chunk["model"], "m\"1", "echoed, escaped: {i}");
            assert_eq!(chunk["id"], chunks[0]["id"], "one id: {i}");
            assert!(chunk["id"].as_str().unwrap().starts_with("cmpl-"));
            assert!(chunk["created"].as_u64().unwrap() > 0);
        }
        let deltas: Vec<&Value> = chunks[..3].iter().map(|c| &c["choices"][0]).collect();
        assert_eq!(deltas[0]["delta"]["role"], "assistant");
        assert!(deltas[1]["delta"].get("role").is_none(), "role only first");
        let words: Vec<&str> = deltas
            .iter()
            .map(|d| d["delta"]["content"].as_str().unwrap())
            .collect();
        assert_eq!(words, [" w1", " w2", " w3"]);
        let finish: Vec<&Value> = deltas.iter().map(|d| &d["finish_reason"]).collect();
        assert_eq!(finish, [&Value::Null, &Value::Null, &"length".into()]);
        let usage = &chunks[3];
        assert_eq!(usage["choices"], Value::Array(Vec::new()));
        let want = r#"{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}"#;
        assert_eq!(usage["usage"], parse(want));
    }

    #[test]
    fn the_exact_chunk_bytes() {
        let completion = Completion {
            chat: true,
            id: 7,
            created: 1700000000,
            model: json_string("metron-llm"),
            tokens: 2,
            prompt_tokens: 4,
            usage: true,
            pace: Pace {
                first: ms(1),
                gap: ms(1),
            },
        };
        let head = r#"{"id":"cmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"metron-llm","#;
        assert_eq!(
            events(&completion),
            [
                format!(
                    r#"{head}"choices":[{{"index":0,"delta":{{"role":"assistant","content":" w1"}},"finish_reason":null}}]}}"#
                ),
                format!(
                    r#"{head}"choices":[{{"index":0,"delta":{{"content":" w2"}},"finish_reason":"length"}}]}}"#
                ),
                format!(
                    r#"{head}"choices":[],"usage":{{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}}}"#
                ),
                "[DONE]".to_string(),
            ]
        );
        let plain = Completion {
            chat: false,
            usage: false,
            ..completion
        };
        let head = r#"{"id":"cmpl-7","object":"text_completion","created":1700000000,"model":"metron-llm","#;
        assert_eq!(
            events(&plain),
            [
                format!(r#"{head}"choices":[{{"index":0,"text":" w1","finish_reason":null}}]}}"#),
                format!(
                    r#"{head}"choices":[{{"index":0,"text":" w2","finish_reason":"length"}}]}}"#
                ),
                "[DONE]".to_string(),
            ]
        );
    }

    #[test]
    fn tokens_are_due_from_the_arrival_and_the_end_with_the_last() {
        let completion = stream(
            r#"{"max_tokens":3,"stream":true,"messages":[{"content":"x"}],"stream_options":{"include_usage":true}}"#,
        );
        let due: Vec<Duration> = (1..=5).map(|i| completion.due(i)).collect();
        assert_eq!(due, [ms(100), ms(110), ms(120), ms(120), ms(120)]);
        let none = stream(
            r#"{"max_tokens":0,"stream":true,"messages":[{"content":"x"}],"stream_options":{"include_usage":true}}"#,
        );
        assert_eq!(none.events(), 2, "usage and [DONE] only");
        assert_eq!((none.due(1), none.due(2)), (ms(100), ms(100)));
        let events = events(&none);
        assert_eq!(parse(&events[0])["usage"]["completion_tokens"], 0);
        assert_eq!(events[1], "[DONE]");
    }

    #[test]
    fn without_include_usage_there_is_no_usage_chunk() {
        let completion = stream(r#"{"max_tokens":2,"stream":true,"messages":[{"content":"x"}]}"#);
        let events = events(&completion);
        assert_eq!(events.len(), 3);
        assert!(events.iter().all(|e| !e.contains("usage")), "{events:?}");
        let asked_unstreamed = post(
            "/v1/completions",
            r#"{"prompt":"a","stream":false,"stream_options":{"include_usage":true}}"#,
        );
        assert!(matches!(asked_unstreamed, Answer::Json(_)));
    }

    #[test]
    fn tokens_are_counted_as_written_and_nothing_else_is() {
        let stats = ServerStats::new(0);
        let completion = stream(
            r#"{"max_tokens":3,"stream":true,"messages":[{"content":"x"}],"stream_options":{"include_usage":true}}"#,
        );
        completion.count(&stats, 1..3);
        completion.count(&stats, 3..6);
        assert_eq!(stats.completion_tokens(), 3);
        assert_eq!(stats.sse_events(), 0);
    }

    #[test]
    fn a_whole_answer_is_one_json_with_usage_when_the_last_token_is_due() {
        let Answer::Json(json) = post(
            "/v1/chat/completions",
            r#"{"max_completion_tokens":4,"max_tokens":99,"messages":[{"role":"user","content":"one two"}]}"#,
        ) else {
            panic!("not whole")
        };
        assert_eq!(json.status, 200);
        assert_eq!(
            json.whole,
            Some(Whole {
                tokens: 4,
                due: ms(130)
            })
        );
        let v = parse(&json.text);
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["model"], MODEL);
        assert_eq!(v["choices"][0]["message"]["role"], "assistant");
        assert_eq!(v["choices"][0]["message"]["content"], " w1 w2 w3 w4");
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        let want = r#"{"prompt_tokens":2,"completion_tokens":4,"total_tokens":6}"#;
        assert_eq!(v["usage"], parse(want));
        let Answer::Json(json) = post("/v1/completions", r#"{"prompt":["a b","c"]}"#) else {
            panic!("not whole")
        };
        let v = parse(&json.text);
        assert_eq!(v["object"], "text_completion");
        assert_eq!(
            v["choices"][0]["text"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .count(),
            16
        );
        assert_eq!(v["usage"]["prompt_tokens"], 3);
        assert_eq!(v["usage"]["completion_tokens"], 16, "--llm-max-tokens");
    }

    #[test]
    fn prompts_count_their_words() {
        let count = |body: &str| match post("/v1/completions", body) {
            Answer::Json(json) => parse(&json.text)["usage"]["prompt_tokens"].as_u64(),
            Answer::Stream(_) => None,
        };
        assert_eq!(count(r#"{"prompt":"  a\tb\nc  "}"#), Some(3));
        assert_eq!(count(r#"{"prompt":""}"#), Some(0));
        assert_eq!(count(r#"{"prompt":["a b", "", "c"]}"#), Some(3));
        assert_eq!(count(r#"{"prompt":[1, 2, 3]}"#), Some(3), "token ids");
        assert_eq!(count(r#"{"prompt":[[1, 2], [3]]}"#), Some(3));
        let chat = |body: &str| match post("/v1/chat/completions", body) {
            Answer::Json(json) => parse(&json.text)["usage"]["prompt_tokens"].as_u64(),
            Answer::Stream(_) => None,
        };
        let body = r#"{"messages":[{"role":"user","content":"a b"},
            {"role":"assistant","content":null,"tool_calls":[]},
            {"role":"user","content":[{"type":"text","text":"c d e"},"odd",{"type":"text"}]}]}"#;
        assert_eq!(chat(body), Some(5));
    }

    #[test]
    fn bad_requests_are_400s_saying_why() {
        let cases = [
            ("/v1/chat/completions", "{not json", "not JSON"),
            ("/v1/chat/completions", "", "not JSON"),
            ("/v1/chat/completions", "[1]", "must be a JSON object"),
            (
                "/v1/chat/completions",
                r#"{"prompt":"a"}"#,
                "messages is required",
            ),
            ("/v1/chat/completions", r#"{"messages":[]}"#, "at least one"),
            (
                "/v1/chat/completions",
                r#"{"messages":"hi"}"#,
                "must be a list",
            ),
            (
                "/v1/chat/completions",
                r#"{"messages":[1]}"#,
                "messages[0] must be",
            ),
            (
                "/v1/chat/completions",
                r#"{"messages":[{"content":5}]}"#,
                "messages[0].content must be",
            ),
            (
                "/v1/completions",
                r#"{"messages":[]}"#,
                "prompt is required",
            ),
            ("/v1/completions", r#"{"prompt":{}}"#, "prompt must be"),
            ("/v1/completions", r#"{"prompt":[{}]}"#, "prompt must be"),
            (
                "/v1/completions",
                r#"{"prompt":"a","max_tokens":1000001}"#,
                "max_tokens 1000001 is over the limit of 1000000",
            ),
            (
                "/v1/completions",
                r#"{"prompt":"a","max_completion_tokens":-1}"#,
                "max_completion_tokens must be a whole number",
            ),
            (
                "/v1/completions",
                r#"{"prompt":"a","max_tokens":2.5}"#,
                "whole number",
            ),
            (
                "/v1/completions",
                r#"{"prompt":"a","stream":"yes"}"#,
                "stream must be",
            ),
            (
                "/v1/completions",
                r#"{"prompt":"a","stream_options":{"include_usage":1}}"#,
                "stream_options.include_usage must be",
            ),
            (
                "/v1/completions",
                r#"{"prompt":"a","stream_options":3}"#,
                "stream_options must",
            ),
            (
                "/v1/completions",
                r#"{"prompt":"a","model":3}"#,
                "model must be a string",
            ),
        ];
        for (endpoint, body, want) in cases {
            let Answer::Json(json) = post(endpoint, body) else {
                panic!("{body}: a stream")
            };
            assert_eq!(json.status, 400, "{body}");
            assert_eq!(json.whole, None);
            let v = parse(&json.text);
            assert_eq!(v["error"]["type"], "invalid_request_error", "{body}");
            let message = v["error"]["message"].as_str().unwrap();
            assert!(message.contains(want), "{body}: {message}");
        }
        let nulls =
            r#"{"prompt":"a","max_tokens":null,"stream":null,"model":null,"stream_options":null}"#;
        assert_eq!(
            post("/v1/completions", nulls).status(),
            200,
            "null is absent"
        );
    }

    #[test]
    fn other_methods_and_paths_get_the_apis_errors() {
        let stats = ServerStats::new(0);
        let of = |target: &str, verb: Verb| answer(llm(), &call(target, verb, ""), &stats);
        let Answer::Json(json) = of("/v1/models", Verb::Get) else {
            panic!()
        };
        assert_eq!((json.status, json.text.as_str()), (200, MODELS));
        let models = parse(MODELS);
        assert_eq!(models["data"][0]["id"], MODEL);
        assert_eq!(of("/v1/models", Verb::Head).status(), 200);
        let Answer::Json(json) = of("/v1/chat/completions", Verb::Get) else {
            panic!()
        };
        assert_eq!((json.status, json.allow), (405, Some("POST")));
        let Answer::Json(json) = of("/v1/models", Verb::Post) else {
            panic!()
        };
        assert_eq!((json.status, json.allow), (405, Some("GET, HEAD")));
        let Answer::Json(json) = of("/v1/embeddings", Verb::Post) else {
            panic!()
        };
        assert_eq!(json.status, 404);
        assert!(parse(&json.text)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/chat/completions"));
        assert_eq!(stats.completions(), 0, "no completion among them");
    }

    #[test]
    fn only_completion_posts_keep_their_body_and_never_past_the_limit() {
        assert!(Call::of("/v1/models", Verb::Get).unwrap().sink().is_none());
        assert!(Call::of("/v1/completions", Verb::Get)
            .unwrap()
            .sink()
            .is_none());
        let mut big = Call::of("/v1/completions", Verb::Post).unwrap();
        let sink = big.sink().unwrap();
        sink.take(&vec![b' '; MAX_BODY]);
        sink.take(b"x");
        sink.take(b"y");
        assert!(big.body.too_large && big.body.bytes.is_empty());
        let refused = answer(llm(), &big, &ServerStats::new(0));
        assert_eq!(refused.status(), 413);
    }

    #[test]
    fn completions_are_counted_with_their_prompts_and_numbered() {
        let stats = ServerStats::new(0);
        let body = r#"{"prompt":"a b c","stream":true}"#;
        let one = answer(llm(), &call("/v1/completions", Verb::Post, body), &stats);
        let two = answer(llm(), &call("/v1/completions", Verb::Post, body), &stats);
        let (Answer::Stream(one), Answer::Stream(two)) = (one, two) else {
            panic!("not streams")
        };
        assert_ne!(one.id, two.id);
        assert_eq!((stats.completions(), stats.prompt_tokens()), (2, 6));
        assert_eq!(stats.completion_tokens(), 0, "none written yet");
    }
}

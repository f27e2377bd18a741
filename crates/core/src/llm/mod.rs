//! `--llm`: every request is a streamed completion of an OpenAI-compatible
//! server, built once, before the run, from prompts.
//!
//! The prompts come from a file ([`prompts`]: JSON Lines of prompts or
//! chat messages, or a ShareGPT conversation file) or are made up of
//! words (`--prompt-words`). Each becomes the JSON body of one request,
//! and the bodies are built into a [`RequestSet`] as `--requests` builds
//! its file, so that sending one costs no formatting and the run cycles
//! through them in order or at random (`--requests-order`, `--seed`).
//! The answers are read by the session as completion streams
//! (`http::tokens`), and counted in tokens (`stats::llm`).

pub mod prompts;

use serde_json::{Map, Value};

use crate::replay::{Body, ReplayError, RequestSet, Spec};
use crate::stats::llm::Goodput;
use crate::target::{Pin, Target};

pub use prompts::{Prompt, Source};

/// Which completion API the requests call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `/v1/chat/completions`: the prompt is a list of messages.
    Chat,
    /// `/v1/completions`: the prompt is text.
    Completions,
}

/// `--llm`'s value: an API, or the one the URL's path names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApiChoice {
    #[default]
    Auto,
    Chat,
    Completions,
}

impl ApiChoice {
    pub const CHOICES: [(ApiChoice, &'static str, &'static str); 3] = [
        (
            ApiChoice::Auto,
            "auto",
            "completions when the URL's path ends in /completions but not /chat/completions, else chat",
        ),
        (ApiChoice::Chat, "chat", "chat completions: messages in, deltas out"),
        (ApiChoice::Completions, "completions", "text completions: a prompt in, text out"),
    ];
}

impl Api {
    /// The API, and the path its requests go to: the URL's own, or the
    /// API's usual one when the URL names none (`http://host:8000`).
    pub fn choose(choice: ApiChoice, path: &str) -> (Api, String) {
        let bare = path.split('?').next().unwrap_or_default();
        let api = match choice {
            ApiChoice::Chat => Api::Chat,
            ApiChoice::Completions => Api::Completions,
            ApiChoice::Auto
                if bare.ends_with("/completions") && !bare.ends_with("/chat/completions") =>
            {
                Api::Completions
            }
            ApiChoice::Auto => Api::Chat,
        };
        let path = match (bare, path.split_once('?')) {
            ("" | "/", Some((_, query))) => format!("{}?{query}", api.path()),
            ("" | "/", None) => api.path().to_string(),
            _ => path.to_string(),
        };
        (api, path)
    }

    /// The API's usual path.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Completions => "/v1/completions",
        }
    }

    /// As the reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat completions",
            Api::Completions => "completions",
        }
    }
}

/// What every request's body holds besides its prompt.
#[derive(Clone, Debug, Default)]
pub struct BodyOptions {
    pub model: Option<String>,
    /// `max_tokens`, unless the prompt names its own.
    pub max_tokens: Option<u64>,
    pub ignore_eos: bool,
    /// Ask for `stream_options.include_usage` (the server's token counts).
    pub usage: bool,
    /// `--llm-body`: fields added last, replacing any of the same name.
    pub extra: Map<String, Value>,
}

/// The run's `--llm`, as the banner, the reports and the engine need it
/// (the requests themselves are built into the run's request set).
#[derive(Clone, Debug)]
pub struct Llm {
    pub api: Api,
    /// The path every request goes to.
    pub path: String,
    /// Where the prompts came from.
    pub source: String,
    /// `--goodput`'s bounds (none given: all `None`).
    pub goodput: Goodput,
    pub options: BodyOptions,
}

/// The body of one request for `prompt`.
pub fn body(api: Api, prompt: &Prompt, o: &BodyOptions) -> Result<String, String> {
    let mut b = Map::new();
    if let Some(m) = &o.model {
        b.insert("model".into(), Value::String(m.clone()));
    }
    match (api, prompt) {
        (Api::Chat, Prompt::Messages(m)) => {
            b.insert("messages".into(), m.clone());
        }
        (Api::Chat, Prompt::Text(t)) => {
            let message = serde_json::json!([{ "role": "user", "content": t }]);
            b.insert("messages".into(), message);
        }
        (Api::Completions, Prompt::Text(t)) => {
            b.insert("prompt".into(), Value::String(t.clone()));
        }
        (Api::Completions, Prompt::Messages(_)) => {
            return Err("gives \"messages\", which only the chat API takes: use --llm=chat, or give a \"prompt\"".into());
        }
    }
    b.insert("stream".into(), Value::Bool(true));
    if o.usage {
        b.insert(
            "stream_options".into(),
            serde_json::json!({ "include_usage": true }),
        );
    }
    if let Some(n) = o.max_tokens {
        b.insert("max_tokens".into(), n.into());
    }
    if o.ignore_eos {
        b.insert("ignore_eos".into(), Value::Bool(true));
    }
    for (k, v) in &o.extra {
        b.insert(k.clone(), v.clone());
    }
    Ok(Value::Object(b).to_string())
}

/// Builds the requests: one per prompt of `source`, to `path` on `base`.
pub fn requests(
    api: Api,
    path: &str,
    source: &Source,
    options: &BodyOptions,
    base: &Target,
    headers: &[(String, String)],
    pins: &[Pin],
) -> Result<RequestSet, ReplayError> {
    let label = source.label();
    let prompts = source.prompts().map_err(|e| match e {
        prompts::PromptError::Read(why) => ReplayError::Prompts {
            file: label.clone(),
            why,
        },
        prompts::PromptError::At { line, why } => ReplayError::Entry {
            file: label.clone(),
            line,
            why,
        },
    })?;
    let mut specs = Vec::with_capacity(prompts.len());
    for (line, prompt, max_tokens) in prompts {
        let own = BodyOptions {
            max_tokens: max_tokens.or(options.max_tokens),
            ..options.clone()
        };
        let body = body(api, &prompt, &own).map_err(|why| ReplayError::Entry {
            file: label.clone(),
            line,
            why,
        })?;
        specs.push(Spec {
            line,
            method: "POST".into(),
            target: path.to_string(),
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(Body::Text(body)),
            name: None,
            data: None,
        });
    }
    RequestSet::build(&label, base, headers, pins, specs)
}

/// Parses `--goodput`: "ttft<500ms,tpot<50ms,e2e<10s".
pub fn parse_goodput(s: &str) -> Result<Goodput, String> {
    let mut g = Goodput::default();
    for term in s.split(',').map(str::trim) {
        let Some((name, bound)) = term.split_once('<') else {
            return Err(format!(
                "term {term:?} has no '<': write NAME<TIME, e.g. ttft<500ms (names: ttft, tpot, e2e)"
            ));
        };
        let bound = bound.strip_prefix('=').unwrap_or(bound).trim();
        if !bound.ends_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(format!(
                "term {term:?}: a bound needs its unit, e.g. {}<{bound}ms",
                name.trim()
            ));
        }
        let us = crate::units::parse_duration(bound)
            .map_err(|e| format!("term {term:?}: {e}"))?
            .as_micros() as u64;
        if us == 0 {
            return Err(format!(
                "term {term:?}: no request takes 0 µs; give a bound above 0"
            ));
        }
        let slot = match name.trim() {
            "ttft" => &mut g.ttft_us,
            "tpot" => &mut g.tpot_us,
            "e2e" | "latency" => &mut g.e2e_us,
            other => {
                return Err(format!(
                    "term {term:?}: unknown measure {other:?}; use ttft, tpot or e2e"
                ))
            }
        };
        if slot.replace(us).is_some() {
            return Err(format!("{:?} is bounded twice; keep one term", name.trim()));
        }
    }
    Ok(g)
}

/// Parses `--llm-body`: a JSON object.
pub fn parse_body(s: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("must be a JSON object, e.g. '{\"temperature\":0}'".into()),
        Err(e) => Err(format!(
            "not valid JSON ({e}); write a JSON object, e.g. '{{\"temperature\":0}}'"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_follows_the_path_unless_told() {
        let c = |choice, path| Api::choose(choice, path);
        assert_eq!(
            c(ApiChoice::Auto, "/"),
            (Api::Chat, "/v1/chat/completions".into())
        );
        assert_eq!(
            c(ApiChoice::Auto, "/v1/completions"),
            (Api::Completions, "/v1/completions".into())
        );
        assert_eq!(
            c(ApiChoice::Auto, "/v1/chat/completions"),
            (Api::Chat, "/v1/chat/completions".into())
        );
        assert_eq!(
            c(ApiChoice::Completions, ""),
            (Api::Completions, "/v1/completions".into())
        );
        assert_eq!(
            c(ApiChoice::Chat, "/gw/x?k=1"),
            (Api::Chat, "/gw/x?k=1".into())
        );
        assert_eq!(
            c(ApiChoice::Auto, "/?v=2"),
            (Api::Chat, "/v1/chat/completions?v=2".into())
        );
    }

    #[test]
    fn a_body_holds_the_prompt_the_stream_and_the_options() {
        let o = BodyOptions {
            model: Some("m".into()),
            max_tokens: Some(8),
            ignore_eos: true,
            usage: true,
            extra: parse_body(r#"{"temperature":0,"max_tokens":9}"#).unwrap(),
        };
        let b: Value =
            serde_json::from_str(&body(Api::Chat, &Prompt::Text("hi".into()), &o).unwrap())
                .unwrap();
        assert_eq!(b["messages"][0]["content"], "hi");
        assert_eq!(b["stream"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(
            (b["max_tokens"].as_u64(), b["ignore_eos"].as_bool()),
            (Some(9), Some(true))
        );
        assert_eq!(b["temperature"], 0);
        let bare = BodyOptions::default();
        let b: Value = serde_json::from_str(
            &body(Api::Completions, &Prompt::Text("x".into()), &bare).unwrap(),
        )
        .unwrap();
        assert_eq!(b, serde_json::json!({"prompt": "x", "stream": true}));
        let m = Prompt::Messages(serde_json::json!([{"role":"user","content":"x"}]));
        assert!(body(Api::Completions, &m, &bare)
            .unwrap_err()
            .contains("--llm=chat"));
    }

    #[test]
    fn goodput_terms_name_their_bounds() {
        let g = parse_goodput("ttft<500ms, tpot<=50ms,e2e<10s").unwrap();
        assert_eq!(
            (g.ttft_us, g.tpot_us, g.e2e_us),
            (Some(500_000), Some(50_000), Some(10_000_000))
        );
        assert!(parse_goodput("ttft>5ms").unwrap_err().contains("no '<'"));
        assert!(parse_goodput("itl<5ms")
            .unwrap_err()
            .contains("use ttft, tpot or e2e"));
        assert!(parse_goodput("ttft<1s,ttft<2s")
            .unwrap_err()
            .contains("twice"));
        assert!(parse_goodput("ttft<500")
            .unwrap_err()
            .contains("needs its unit"));
        assert!(parse_goodput("ttft<0ms").unwrap_err().contains("above 0"));
        assert!(parse_body("[1]").unwrap_err().contains("JSON object"));
    }
}

//! `--llm`: an event stream read as an OpenAI-compatible completion
//! stream, chunk by chunk, as its bytes arrive.
//!
//! Each event's data is one JSON chunk (or the end marker `[DONE]`). A
//! chunk *carries a token* when one of its choices has generated text: a
//! completion's `text`, or a chat delta's `content`, `reasoning_content`
//! (or `reasoning`) or `tool_calls`. Only those chunks are timed as the
//! stream's events, so the first one is the time to first token: the chat
//! stream's opening chunk that names the role with empty content, and the
//! closing chunk that carries only `usage`, are not tokens. A chunk's
//! `usage` (the last one given wins: some servers repeat it on every
//! chunk) is the server's own count of the prompt's and the answer's
//! tokens. An `error` object in the stream is the server saying the
//! generation failed after its head said 200.

use std::borrow::Cow;

use serde::Deserialize;

use crate::clock::Nanos;

/// Most gaps kept per response. A longer answer's later gaps are not
/// divided over its tokens: 128 Ki gaps is past any model's output
/// length, and bounds what one stream may hold.
const MAX_GAPS: usize = 1 << 17;

/// One completed response's stream, as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// Chunks that carried generated text.
    pub chunks: u64,
    /// When the first of them came.
    pub first: Option<Nanos>,
    /// The gaps between consecutive token chunks (ns).
    pub gaps: Vec<u64>,
    /// The server's `usage`, when it gave it.
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// The stream ended with `[DONE]`.
    pub done: bool,
    /// The server reported an error in the stream.
    pub error: bool,
    /// Events whose data was not a JSON chunk.
    pub unreadable: u64,
}

impl Answer {
    /// Output tokens: the server's count, else one per token chunk.
    pub fn output_tokens(&self) -> u64 {
        self.completion_tokens.unwrap_or(self.chunks)
    }
}

/// What one event of the stream said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// Generated text: a token (or several) came.
    Token,
    /// A chunk without generated text (the role, a finish reason, usage).
    Other,
    /// `[DONE]`: the stream's end marker.
    Done,
    /// The server reported an error in the stream.
    Error,
    /// Data that is not a JSON chunk.
    Unreadable,
}

/// One response's chunks so far: its generated chunks, their gaps, and
/// the usage the server gave.
#[derive(Debug, Default)]
pub struct Tally {
    answer: Answer,
    /// The gaps between consecutive token chunks, in ns.
    gaps: Vec<u64>,
}

impl Tally {
    /// Reads an event's `data`, which came `now`; `previous` is when the
    /// last token chunk came. Says what the chunk was.
    pub fn read(&mut self, data: &[u8], previous: Option<Nanos>, now: Nanos) -> Chunk {
        // `[DONE]` ends the stream: whatever a server sends after it is
        // not part of the answer.
        if self.answer.done {
            return Chunk::Other;
        }
        let chunk = self.parse(data);
        match chunk {
            Chunk::Token => {
                self.answer.chunks += 1;
                match previous {
                    None => self.answer.first = Some(now),
                    Some(at) if self.gaps.len() < MAX_GAPS => {
                        self.gaps.push(now.saturating_sub(at));
                    }
                    Some(_) => {}
                }
            }
            Chunk::Done => self.answer.done = true,
            Chunk::Error => self.answer.error = true,
            Chunk::Unreadable => self.answer.unreadable += 1,
            Chunk::Other => {}
        }
        chunk
    }

    fn parse(&mut self, data: &[u8]) -> Chunk {
        let data = data.trim_ascii();
        if data == b"[DONE]" {
            return Chunk::Done;
        }
        let Ok(wire) = serde_json::from_slice::<Wire>(data) else {
            return Chunk::Unreadable;
        };
        if let Some(u) = wire.usage {
            self.answer.prompt_tokens = u.prompt_tokens.or(self.answer.prompt_tokens);
            self.answer.completion_tokens = u.completion_tokens.or(self.answer.completion_tokens);
        }
        if wire.error.is_some() || wire.object.as_deref() == Some("error") {
            return Chunk::Error;
        }
        if wire.choices.iter().any(Choice::generated) {
            Chunk::Token
        } else {
            Chunk::Other
        }
    }

    /// The response's tally, complete.
    pub fn finish(self) -> Answer {
        Answer {
            gaps: self.gaps,
            ..self.answer
        }
    }
}

/// The parts of a chunk that are read; everything else is skipped.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    /// A completion's text.
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    /// A chat completion's delta.
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
}

impl Choice<'_> {
    fn generated(&self) -> bool {
        let some = |s: &Option<Cow<str>>| s.as_deref().is_some_and(|s| !s.is_empty());
        some(&self.text)
            || self.delta.as_ref().is_some_and(|d| {
                some(&d.content)
                    || some(&d.reasoning_content)
                    || some(&d.reasoning)
                    || d.tool_calls.as_ref().is_some_and(|t| !t.is_empty())
            })
    }
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<serde::de::IgnoredAny>>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(t: &mut Tally, data: &str) -> Chunk {
        t.read(data.as_bytes(), None, 0)
    }

    #[test]
    fn only_chunks_with_generated_text_are_tokens() {
        let mut t = Tally::default();
        let role = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        assert_eq!(read(&mut t, role), Chunk::Other);
        let text = r#"{"choices":[{"delta":{"content":" w\"1"},"finish_reason":null}]}"#;
        assert_eq!(read(&mut t, text), Chunk::Token);
        let think = r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#;
        assert_eq!(read(&mut t, think), Chunk::Token);
        let tool = r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#;
        assert_eq!(read(&mut t, tool), Chunk::Token);
        let completion = r#"{"object":"text_completion","choices":[{"text":"x"}]}"#;
        assert_eq!(read(&mut t, completion), Chunk::Token);
        let end = r#"{"choices":[{"text":"","finish_reason":"length"}]}"#;
        assert_eq!(read(&mut t, end), Chunk::Other);
        assert_eq!(read(&mut t, "not json"), Chunk::Unreadable);
        assert_eq!(read(&mut t, " [DONE] "), Chunk::Done);
        // After the end marker, nothing is read.
        assert_eq!(read(&mut t, completion), Chunk::Other);
        let a = t.finish();
        assert_eq!((a.chunks, a.done, a.unreadable), (4, true, 1));
    }

    #[test]
    fn usage_is_the_servers_count_and_the_last_one_wins() {
        let mut t = Tally::default();
        let with = |p: u64, c: u64| {
            format!(
                r#"{{"choices":[],"usage":{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{}}}}}"#,
                p + c
            )
        };
        assert_eq!(read(&mut t, &with(5, 1)), Chunk::Other);
        assert_eq!(
            read(&mut t, r#"{"choices":[{"text":"a"}],"usage":null}"#),
            Chunk::Token
        );
        read(&mut t, &with(5, 9));
        let a = t.finish();
        assert_eq!((a.prompt_tokens, a.completion_tokens), (Some(5), Some(9)));
    }

    #[test]
    fn an_error_in_the_stream_is_the_servers_failure() {
        let mut t = Tally::default();
        let e = r#"{"error":{"message":"out of memory","code":500}}"#;
        assert_eq!(read(&mut t, e), Chunk::Error);
        assert!(t.finish().error);
        let mut t = Tally::default();
        assert_eq!(
            read(&mut t, r#"{"object":"error","message":"x"}"#),
            Chunk::Error
        );
    }

    #[test]
    fn gaps_run_between_token_chunks() {
        let mut t = Tally::default();
        let tok = br#"{"choices":[{"text":"a"}]}"#;
        t.read(tok, None, 100);
        t.read(tok, Some(100), 130);
        t.read(tok, Some(130), 200);
        let a = t.finish();
        assert_eq!((a.first, a.chunks, a.gaps), (Some(100), 3, vec![30, 70]));
    }
}

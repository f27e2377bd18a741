//! `--llm`'s prompts: read from a file, or made up of words.
//!
//! A prompts file is one of:
//! - JSON Lines, one object a line: `{"prompt": "..."}` or
//!   `{"messages": [...]}` (a chat's messages as the API takes them), with
//!   an optional `"max_tokens"` for that request;
//! - a JSON array of such objects, or of ShareGPT conversations
//!   (`{"conversations": [{"from": "human", "value": "..."}, ...]}`),
//!   whose first human turn is the prompt;
//! - plain text, one prompt a line.
//!
//! `--prompt-words N[±M]` makes [`SYNTHETIC_PROMPTS`] prompts of N words
//! each (drawn uniformly from N−M to N+M), from a fixed list of common
//! English words, seeded: every prompt differs, so a server's prefix cache
//! does not answer them for free.

use std::path::PathBuf;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::Value;

/// Largest prompts file read (ShareGPT's common file is about 670 MB).
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// How many prompts `--prompt-words` makes.
pub const SYNTHETIC_PROMPTS: usize = 1000;
/// Most words in a made-up prompt: past any model's context, and the
/// 1000 prompts stay under 200 MB.
pub const MAX_WORDS: u64 = 32_768;

/// One prompt: text, or a chat's messages.
#[derive(Clone, Debug, PartialEq)]
pub enum Prompt {
    Text(String),
    Messages(Value),
}

/// Where the prompts come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    File(PathBuf),
    Words { words: u64, spread: u64, seed: u64 },
}

#[derive(Debug, PartialEq)]
pub enum PromptError {
    Read(String),
    At { line: usize, why: String },
}

/// A prompt, the line it starts on, and its own `max_tokens`.
pub type Entry = (usize, Prompt, Option<u64>);

impl Source {
    /// As errors and the banner name it.
    pub fn label(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Words {
                words,
                spread: 0,
                seed,
            } => format!("--prompt-words {words} (seed {seed})"),
            Source::Words {
                words,
                spread,
                seed,
            } => format!("--prompt-words {words}±{spread} (seed {seed})"),
        }
    }

    /// Every prompt, in order.
    pub fn prompts(&self) -> Result<Vec<Entry>, PromptError> {
        match self {
            Source::File(p) => read_file(p),
            Source::Words {
                words,
                spread,
                seed,
            } => Ok(made_up(*words, *spread, *seed)),
        }
    }
}

fn read_file(path: &PathBuf) -> Result<Vec<Entry>, PromptError> {
    let read = |e: std::io::Error| PromptError::Read(e.to_string());
    let file = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    use std::io::Read as _;
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(PromptError::Read(format!(
            "it is larger than {} MiB; keep a part of it",
            MAX_FILE_BYTES >> 20
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| PromptError::Read("it is not UTF-8 text; save it as UTF-8".into()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let prompts = match text.trim_start().as_bytes().first() {
        Some(b'[') => array(text)?,
        Some(b'{') => lines(text)?,
        _ => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| (n + 1, Prompt::Text(l.to_string()), None))
            .collect(),
    };
    if prompts.is_empty() {
        return Err(PromptError::Read(
            "it holds no prompt; write JSON Lines of {\"prompt\": ...} or {\"messages\": [...]}, a ShareGPT file, or one prompt a line".into(),
        ));
    }
    Ok(prompts)
}

fn lines(text: &str) -> Result<Vec<Entry>, PromptError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |why: String| PromptError::At { line: n + 1, why };
        let v: Value =
            serde_json::from_str(line).map_err(|e| at(format!("not a JSON object: {e}")))?;
        let (prompt, max) = entry(v).map_err(at)?;
        out.push((n + 1, prompt, max));
    }
    Ok(out)
}

fn array(text: &str) -> Result<Vec<Entry>, PromptError> {
    let items: Vec<Value> = serde_json::from_str(text).map_err(|e| PromptError::At {
        line: e.line(),
        why: format!("not valid JSON: {e}"),
    })?;
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.into_iter().enumerate() {
        let at = |why: String| PromptError::At {
            line: 1,
            why: format!("item {}: {why}", i + 1),
        };
        if v.get("conversations").is_some() {
            // A conversation without a human turn has no prompt: ShareGPT's
            // files hold some, and tools that read them skip them.
            if let Some(p) = first_human_turn(&v) {
                out.push((1, Prompt::Text(p), None));
            }
            continue;
        }
        let (prompt, max) = entry(v).map_err(at)?;
        out.push((1, prompt, max));
    }
    Ok(out)
}

fn first_human_turn(v: &Value) -> Option<String> {
    v.get("conversations")?
        .as_array()?
        .iter()
        .find(|t| {
            matches!(
                t.get("from").and_then(Value::as_str),
                Some("human" | "user")
            )
        })
        .and_then(|t| t.get("value")?.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// One prompt object: its prompt and its own `max_tokens`.
fn entry(v: Value) -> Result<(Prompt, Option<u64>), String> {
    let Value::Object(mut o) = v else {
        return Err(
            "not a JSON object; write {\"prompt\": \"...\"} or {\"messages\": [...]}".into(),
        );
    };
    let max = match o.remove("max_tokens") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
        Some(other) => return Err(format!("\"max_tokens\" is {other}, not a whole number")),
    };
    let prompt = match (o.remove("prompt"), o.remove("messages")) {
        (Some(Value::String(p)), None) => Prompt::Text(p),
        (None, Some(m @ Value::Array(_))) => Prompt::Messages(m),
        (Some(_), Some(_)) => return Err("gives both \"prompt\" and \"messages\"; keep one".into()),
        (Some(_), None) => return Err("\"prompt\" must be a string".into()),
        (None, Some(_)) => return Err("\"messages\" must be an array of messages".into()),
        (None, None) => return Err("has no \"prompt\" or \"messages\"".into()),
    };
    Ok((prompt, max))
}

/// Common words, so a model's tokenizer gives about one token a word.
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "was", "for", "on", "are", "with", "as", "at", "be",
    "this", "have", "from", "or", "one", "had", "by", "word", "but", "not", "what", "all", "were",
    "we", "when", "your", "can", "said", "there", "use", "each", "which", "she", "do", "how",
    "their", "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so",
    "some", "her", "would", "make", "like", "him", "into", "time", "has", "look", "two", "more",
    "write", "go", "see", "number", "no", "way", "could", "people", "my", "than", "first", "water",
    "been", "call", "who", "oil", "its", "now", "find", "long", "down", "day", "did", "get",
    "come", "made", "may", "part",
];

fn made_up(words: u64, spread: u64, seed: u64) -> Vec<Entry> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..SYNTHETIC_PROMPTS)
        .map(|i| {
            let n = if spread == 0 {
                words
            } else {
                rng.random_range(words.saturating_sub(spread)..=words + spread)
            };
            let mut text = String::with_capacity(n as usize * 5);
            for w in 0..n {
                if w > 0 {
                    text.push(' ');
                }
                text.push_str(WORDS[rng.random_range(0..WORDS.len())]);
            }
            (i + 1, Prompt::Text(text), None)
        })
        .collect()
}

/// Parses `--prompt-words`: "N" or "N±M" (also "N+-M").
pub fn parse_words(s: &str) -> Result<(u64, u64), String> {
    let (n, m) = match s.split_once('±').or_else(|| s.split_once("+-")) {
        Some((n, m)) => (n, Some(m)),
        None => (s, None),
    };
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("{t:?} is not a whole number; write N or N±M, e.g. 200±50"))
    };
    let words = num(n)?;
    let spread = m.map(num).transpose()?.unwrap_or(0);
    if words == 0 {
        return Err("a prompt needs at least one word; write N ≥ 1".into());
    }
    if spread >= words {
        return Err(format!(
            "±{spread} would make prompts of 0 words or fewer; keep M below N"
        ));
    }
    if words + spread > MAX_WORDS {
        return Err(format!(
            "prompts of more than {MAX_WORDS} words are not made; use fewer"
        ));
    }
    Ok((words, spread))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(text: &str) -> Result<Vec<Entry>, PromptError> {
        let dir = std::env::temp_dir().join(format!("metron-prompts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{:x}", fastrand::u64(..)));
        std::fs::write(&p, text).unwrap();
        let got = Source::File(p.clone()).prompts();
        let _ = std::fs::remove_file(p);
        got
    }

    #[test]
    fn json_lines_give_prompts_messages_and_lengths() {
        let got = from("{\"prompt\":\"a b\",\"max_tokens\":5}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"c\"}]}\n").unwrap();
        assert_eq!(got[0], (1, Prompt::Text("a b".into()), Some(5)));
        assert!(matches!(&got[1], (3, Prompt::Messages(_), None)));
        let bad = from("{\"prompt\":1}\n").unwrap_err();
        assert_eq!(
            bad,
            PromptError::At {
                line: 1,
                why: "\"prompt\" must be a string".into()
            }
        );
        assert!(
            matches!(from("{\"text\":\"x\"}"), Err(PromptError::At { why, .. }) if why.contains("no \"prompt\""))
        );
    }

    #[test]
    fn a_sharegpt_file_gives_each_conversations_first_human_turn() {
        let file = r#"[{"id":"a","conversations":[{"from":"human","value":"q1"},{"from":"gpt","value":"a1"}]},
                       {"id":"b","conversations":[{"from":"gpt","value":"only"}]},
                       {"id":"c","conversations":[{"from":"system","value":"s"},{"from":"human","value":"q2"}]}]"#;
        let got: Vec<Prompt> = from(file).unwrap().into_iter().map(|e| e.1).collect();
        assert_eq!(got, [Prompt::Text("q1".into()), Prompt::Text("q2".into())]);
    }

    #[test]
    fn plain_lines_are_prompts_and_an_empty_file_is_refused() {
        let got = from("hello there\n\nbye\n").unwrap();
        assert_eq!(got.len(), 2);
        assert!(matches!(from("\n \n"), Err(PromptError::Read(why)) if why.contains("no prompt")));
    }

    #[test]
    fn made_up_prompts_have_their_word_counts_and_repeat_with_the_seed() {
        let a = Source::Words {
            words: 20,
            spread: 5,
            seed: 7,
        }
        .prompts()
        .unwrap();
        let b = Source::Words {
            words: 20,
            spread: 5,
            seed: 7,
        }
        .prompts()
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), SYNTHETIC_PROMPTS);
        for (_, p, _) in &a {
            let Prompt::Text(t) = p else { panic!() };
            let n = t.split(' ').count() as u64;
            assert!((15..=25).contains(&n), "{n}");
        }
        assert_eq!(parse_words("200±50"), Ok((200, 50)));
        assert_eq!(parse_words("8+-2"), Ok((8, 2)));
        assert!(parse_words("5±5").unwrap_err().contains("keep M below N"));
        assert!(parse_words("x").unwrap_err().contains("N±M"));
    }
}

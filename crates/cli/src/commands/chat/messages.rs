//! The conversation as OpenAI's message list: `--load FILE.json` reads one (a list of
//! `{"role", "content"}` objects, or `{"messages": […]}`; a content may be a string or a list
//! of `{"type": "text", "text": …}` parts), `/save FILE.json` writes one (a list, the system
//! message first).

use std::path::Path;

use anyhow::{bail, Context as _};
use serde_json::Value;
use sieve_text::Message;

/// The largest conversation file read.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// A conversation: the system message apart (it may change between turns), then the turns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversation {
    /// The system message, if any.
    pub system: Option<String>,
    /// The other messages, in order.
    pub turns: Vec<Message>,
}

impl Conversation {
    /// Every message as the chat template receives it: the system message first.
    pub fn messages(&self) -> Vec<Message> {
        let system = self
            .system
            .iter()
            .map(|s| Message::new("system", s.as_str()));
        system.chain(self.turns.iter().cloned()).collect()
    }

    /// Removes the last exchange (the last user message and every message after it); returns
    /// how many messages went.
    pub fn undo(&mut self) -> usize {
        match self.turns.iter().rposition(|m| m.role == "user") {
            Some(at) => {
                let removed = self.turns.len() - at;
                self.turns.truncate(at);
                removed
            }
            None => 0,
        }
    }

    /// The conversation as pretty JSON in OpenAI's format.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.messages()).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Reads the conversation in `path`: a leading system message becomes the system message.
///
/// # Errors
/// An unreadable or too large file, malformed JSON, or a message without a string role or
/// text content (named by its position).
pub fn load(path: &Path) -> anyhow::Result<Conversation> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if size > MAX_FILE_BYTES {
        bail!(
            "{} is {size} bytes, more than the {MAX_FILE_BYTES} read",
            path.display()
        );
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text).with_context(|| format!("in {}", path.display()))
}

/// Parses a conversation's JSON text.
///
/// # Errors
/// As [`load`].
pub fn parse(text: &str) -> anyhow::Result<Conversation> {
    let value: Value = serde_json::from_str(text).context("not valid JSON")?;
    let list = match &value {
        Value::Array(list) => list,
        Value::Object(map) => match map.get("messages") {
            Some(Value::Array(list)) => list,
            _ => bail!("expected a list of messages, or an object with a \"messages\" list"),
        },
        _ => bail!("expected a list of messages, or an object with a \"messages\" list"),
    };
    let mut turns = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let n = i + 1;
        let Some(role) = item.get("role").and_then(Value::as_str) else {
            bail!("message {n} has no \"role\" string");
        };
        let content = match item.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => {
                text_parts(parts).with_context(|| format!("message {n}"))?
            }
            Some(Value::Null) | None => String::new(),
            Some(_) => bail!("message {n}: \"content\" is neither text nor a list of parts"),
        };
        turns.push(Message::new(role, content));
    }
    let system = match turns.first() {
        Some(m) if m.role == "system" => Some(turns.remove(0).content),
        _ => None,
    };
    Ok(Conversation { system, turns })
}

/// The text of a content given as parts (`{"type": "text", "text": …}`), joined.
fn text_parts(parts: &[Value]) -> anyhow::Result<String> {
    let mut text = String::new();
    for (i, part) in parts.iter().enumerate() {
        match (part.get("type").and_then(Value::as_str), part.get("text")) {
            (Some("text"), Some(Value::String(t))) => text.push_str(t),
            _ => bail!("content part {} is not a text part", i + 1),
        }
    }
    Ok(text)
}

/// Writes `conversation` to `path`.
///
/// # Errors
/// When the file cannot be written.
pub fn save(path: &Path, conversation: &Conversation) -> anyhow::Result<()> {
    std::fs::write(path, conversation.to_json())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_system_apart() {
        let c = parse(
            r#"{"messages": [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "!"}]},
                {"role": "assistant", "content": "Hello."}]}"#,
        )
        .unwrap();
        assert_eq!(c.system.as_deref(), Some("Be brief."));
        assert_eq!(
            c.turns,
            [
                Message::new("user", "Hi!"),
                Message::new("assistant", "Hello.")
            ]
        );
        assert_eq!(parse(&c.to_json()).unwrap(), c);
    }

    #[test]
    fn undo_drops_the_last_exchange() {
        let mut c = parse(
            r#"[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]"#,
        )
        .unwrap();
        assert_eq!(c.undo(), 2);
        assert_eq!(c.turns.len(), 2);
        c.turns.pop();
        assert_eq!(c.undo(), 1);
        assert_eq!(c.undo(), 0);
    }

    #[test]
    fn errors_name_the_message() {
        let err = |t: &str| format!("{:#}", parse(t).unwrap_err());
        assert_eq!(
            err(r#"[{"content": "x"}]"#),
            "message 1 has no \"role\" string"
        );
        assert_eq!(
            err(r#"[{"role": "user", "content": "x"}, {"role": "user", "content": 3}]"#),
            "message 2: \"content\" is neither text nor a list of parts"
        );
        assert_eq!(
            err(r#"[{"role": "user", "content": [{"type": "image_url"}]}]"#),
            "message 1: content part 1 is not a text part"
        );
        assert!(err("{").starts_with("not valid JSON"));
    }
}

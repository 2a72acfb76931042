//! Tool calls in a chat answer: when a request offers `tools`, the model's text is searched
//! for the calls its chat template taught it to write, and they come back as OpenAI's
//! `tool_calls` (`finish_reason: "tool_calls"`), the rest of the text as `content`.
//!
//! Two formats cover the common templates (vLLM names its parsers the same way):
//!
//! - [`ToolFormat::Hermes`]: each call is a JSON object `{"name": …, "arguments": {…}}` between
//!   `<tool_call>` and `</tool_call>` (Hermes, Qwen 2.5 and 3, SmolLM3 and others whose
//!   template mentions `<tool_call>`); text around the calls is the content. The closing tag
//!   of the last call may be missing (the model stopped right after it).
//! - [`ToolFormat::Json`]: the whole answer is a call object, a list of them, or call objects
//!   separated by `;` (Llama 3.1–3.3, whose `<|python_tag|>` is a special token and so not in
//!   the text; Mistral's `[TOOL_CALLS]` likewise). `"parameters"` is accepted for
//!   `"arguments"`.
//!
//! An answer whose calls do not all parse as such objects is plain content, as vLLM does:
//! a malformed call is shown to the client rather than lost. `arguments` goes out as the JSON
//! text of the object (OpenAI's wire format).
//!
//! Streaming ([`Holdback`]): text is sent as content until it could be the start of a call
//! (whitespace before that point is held too, as the whole answer trims it before a call);
//! from there it is held, and at the end of the choice the held text is parsed and sent as one
//! `tool_calls` delta (or as content if it held no call).

use std::str::FromStr;

use serde_json::Value;

/// Which format the server looks for (`sieve serve --tool-call-parser`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolParser {
    /// [`ToolFormat::Hermes`] when the chat template mentions `<tool_call>`, else
    /// [`ToolFormat::Json`].
    #[default]
    Auto,
    /// Always this format.
    Format(ToolFormat),
    /// Never look for calls: the text is content.
    Off,
}

/// A format of tool calls in generated text (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// `<tool_call>{…}</tool_call>` blocks.
    Hermes,
    /// The answer is JSON call objects.
    Json,
}

impl FromStr for ToolParser {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ToolParser::Auto),
            "hermes" => Ok(ToolParser::Format(ToolFormat::Hermes)),
            "json" => Ok(ToolParser::Format(ToolFormat::Json)),
            "none" => Ok(ToolParser::Off),
            other => Err(format!(
                "unknown tool-call parser `{other}`: give auto, hermes, json or none"
            )),
        }
    }
}

impl ToolParser {
    /// The format to look for, given whether the chat template mentions `<tool_call>`.
    pub fn format(self, template_mentions_tag: bool) -> Option<ToolFormat> {
        match self {
            ToolParser::Auto if template_mentions_tag => Some(ToolFormat::Hermes),
            ToolParser::Auto => Some(ToolFormat::Json),
            ToolParser::Format(f) => Some(f),
            ToolParser::Off => None,
        }
    }
}

/// The opening tag of a [`ToolFormat::Hermes`] call.
pub const HERMES_OPEN: &str = "<tool_call>";
/// Its closing tag.
const HERMES_CLOSE: &str = "</tool_call>";

/// One call found in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The function's name.
    pub name: String,
    /// Its arguments as JSON text (an object).
    pub arguments: String,
}

/// A chat answer split into content and calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The text that is not a call (`None` when nothing is left but whitespace).
    pub content: Option<String>,
    /// The calls, in order (empty: the whole text is content).
    pub calls: Vec<ToolCall>,
}

impl Split {
    /// All of `text` as content.
    fn content(text: &str) -> Split {
        Split {
            content: Some(text.to_string()),
            calls: Vec::new(),
        }
    }
}

/// Splits `text` into content and the calls `format` finds in it.
pub fn split(text: &str, format: ToolFormat) -> Split {
    let found = match format {
        ToolFormat::Hermes => hermes(text),
        ToolFormat::Json => json(text).map(|calls| (String::new(), calls)),
    };
    match found {
        Some((rest, calls)) if !calls.is_empty() => {
            let rest = rest.trim();
            Split {
                content: (!rest.is_empty()).then(|| rest.to_string()),
                calls,
            }
        }
        _ => Split::content(text),
    }
}

/// The `<tool_call>` blocks of `text` and the text around them, or `None` if a block does not
/// hold a call.
fn hermes(text: &str) -> Option<(String, Vec<ToolCall>)> {
    let mut rest = String::new();
    let mut calls = Vec::new();
    let mut tail = text;
    while let Some(open) = tail.find(HERMES_OPEN) {
        rest.push_str(&tail[..open]);
        let body = &tail[open + HERMES_OPEN.len()..];
        let (inner, after) = match body.find(HERMES_CLOSE) {
            Some(close) => (&body[..close], &body[close + HERMES_CLOSE.len()..]),
            None => (body, ""),
        };
        calls.push(call(&serde_json::from_str(inner.trim()).ok()?)?);
        tail = after;
    }
    rest.push_str(tail);
    Some((rest, calls))
}

/// The calls of an answer that is nothing but JSON calls, or `None`.
fn json(text: &str) -> Option<Vec<ToolCall>> {
    let text = text.trim();
    let text = text.strip_prefix("<|python_tag|>").unwrap_or(text).trim();
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return match &value {
            Value::Array(items) if !items.is_empty() => items.iter().map(call).collect(),
            Value::Object(_) => call(&value).map(|c| vec![c]),
            _ => None,
        };
    }
    // `{…}; {…}`: every piece must be a call.
    let pieces: Vec<&str> = text.split(';').map(str::trim).collect();
    if pieces.len() < 2 {
        return None;
    }
    pieces
        .iter()
        .map(|p| call(&serde_json::from_str(p).ok()?))
        .collect()
}

/// A call object: a string `name` and an object `arguments` (or `parameters`; absent: `{}`;
/// a string holding JSON is taken as it is).
fn call(value: &Value) -> Option<ToolCall> {
    let name = value.get("name")?.as_str()?.to_string();
    let arguments = match value.get("arguments").or_else(|| value.get("parameters")) {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => {
            serde_json::from_str::<Value>(s).ok()?;
            s.clone()
        }
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => return None,
    };
    Some(ToolCall { name, arguments })
}

/// What a streamed choice may send now and what it holds back (see the module docs).
#[derive(Debug, Clone)]
pub struct Holdback {
    format: ToolFormat,
    /// All text so far.
    text: String,
    /// Bytes of `text` already sent as content.
    sent: usize,
    /// Whether the choice was found to be plain content (for [`ToolFormat::Json`]: it began
    /// with something else than a call), so nothing more is held.
    plain: bool,
}

impl Holdback {
    /// A choice's stream, looking for `format`.
    pub fn new(format: ToolFormat) -> Self {
        Holdback {
            format,
            text: String::new(),
            sent: 0,
            plain: false,
        }
    }

    /// Adds `more` text and returns what may be sent as content now (possibly empty).
    pub fn push(&mut self, more: &str) -> String {
        self.text.push_str(more);
        let upto = match (self.format, self.plain) {
            (_, true) => self.text.len(),
            (ToolFormat::Hermes, false) => match self.text.find(HERMES_OPEN) {
                Some(open) => open,
                None => self.text.len() - partial_tag(&self.text),
            },
            (ToolFormat::Json, false) => {
                let start = self.text.trim_start();
                let could_be_call = start.is_empty()
                    || start.starts_with(['{', '['])
                    || "<|python_tag|>".starts_with(start)
                    || start.starts_with("<|python_tag|>");
                if could_be_call {
                    0
                } else {
                    self.plain = true;
                    self.text.len()
                }
            }
        };
        // Whitespace just before a call is not content (the whole answer trims it): hold it
        // until something else follows.
        let upto = match self.plain {
            true => upto,
            false => self.text[..upto].trim_end().len(),
        };
        let upto = upto.max(self.sent);
        let out = self.text[self.sent..upto].to_string();
        self.sent = upto;
        out
    }

    /// The end of the choice: the held text split into content and calls (it is then
    /// counted as sent).
    pub fn finish(&mut self) -> Split {
        let held = &self.text[self.sent..];
        let out = if held.is_empty() {
            Split {
                content: None,
                calls: Vec::new(),
            }
        } else {
            split(held, self.format)
        };
        self.sent = self.text.len();
        out
    }
}

/// The length of the longest end of `text` that begins [`HERMES_OPEN`] (held back, as the
/// tag may be arriving).
fn partial_tag(text: &str) -> usize {
    (1..HERMES_OPEN.len())
        .rev()
        .find(|&n| text.ends_with(&HERMES_OPEN[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(split: &Split) -> Vec<(&str, &str)> {
        split
            .calls
            .iter()
            .map(|c| (c.name.as_str(), c.arguments.as_str()))
            .collect()
    }

    #[test]
    fn hermes_blocks_become_calls_and_the_rest_content() {
        let text = "Let me check.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>{\"name\": \"time\", \"arguments\": {}}</tool_call>";
        let s = split(text, ToolFormat::Hermes);
        assert_eq!(s.content.as_deref(), Some("Let me check."));
        assert_eq!(
            calls(&s),
            [("weather", "{\"city\":\"Paris\"}"), ("time", "{}")]
        );
        // The last closing tag may be missing; no text around: no content.
        let s = split(
            "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}",
            ToolFormat::Hermes,
        );
        assert_eq!(
            (s.content, calls_owned(&s.calls)),
            (None, owned(&[("f", "{\"x\":1}")]))
        );
    }

    fn calls_owned(c: &[ToolCall]) -> Vec<(String, String)> {
        c.iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect()
    }

    fn owned(c: &[(&str, &str)]) -> Vec<(String, String)> {
        c.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn a_malformed_call_leaves_the_text_as_content() {
        for text in [
            "<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>",
            "<tool_call>{\"arguments\": {}}</tool_call>",
            "<tool_call>[1, 2]</tool_call>",
            "no calls here",
        ] {
            let s = split(text, ToolFormat::Hermes);
            assert_eq!(s, Split::content(text), "{text}");
        }
    }

    #[test]
    fn json_answers_are_one_call_a_list_or_calls_separated_by_semicolons() {
        let s = split(
            " {\"name\": \"f\", \"parameters\": {\"a\": \"b\"}} ",
            ToolFormat::Json,
        );
        assert_eq!(
            (s.content.clone(), calls(&s)),
            (None, vec![("f", "{\"a\":\"b\"}")])
        );
        let s = split(
            "[{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"arguments\": \"{\\\"x\\\": 2}\"}]",
            ToolFormat::Json,
        );
        assert_eq!(calls(&s), [("f", "{}"), ("g", "{\"x\": 2}")]);
        let s = split(
            "<|python_tag|>{\"name\": \"f\"}; {\"name\": \"g\", \"parameters\": {\"k\": 1}}",
            ToolFormat::Json,
        );
        assert_eq!(calls(&s), [("f", "{}"), ("g", "{\"k\":1}")]);
        for text in [
            "The answer is 4.",
            "{\"answer\": 4}",
            "[]",
            "{\"name\": 3}",
            "{\"name\": \"f\", \"arguments\": [1]}",
        ] {
            assert_eq!(
                split(text, ToolFormat::Json),
                Split::content(text),
                "{text}"
            );
        }
    }

    #[test]
    fn parsers_parse_from_their_names() {
        assert_eq!("auto".parse(), Ok(ToolParser::Auto));
        assert_eq!("hermes".parse(), Ok(ToolParser::Format(ToolFormat::Hermes)));
        assert_eq!("json".parse(), Ok(ToolParser::Format(ToolFormat::Json)));
        assert_eq!("none".parse(), Ok(ToolParser::Off));
        let e = "xml".parse::<ToolParser>().unwrap_err();
        assert!(e.contains("auto, hermes, json or none"), "{e}");
        assert_eq!(ToolParser::Auto.format(true), Some(ToolFormat::Hermes));
        assert_eq!(ToolParser::Auto.format(false), Some(ToolFormat::Json));
        assert_eq!(ToolParser::Off.format(true), None);
    }

    /// Streams `pieces` and returns what was sent as content and the final split.
    fn stream(format: ToolFormat, pieces: &[&str]) -> (String, Split) {
        let mut h = Holdback::new(format);
        let sent: String = pieces.iter().map(|p| h.push(p)).collect();
        (sent, h.finish())
    }

    #[test]
    fn a_stream_sends_content_until_a_call_may_start_then_holds_it() {
        let (sent, end) = stream(
            ToolFormat::Hermes,
            &[
                "Sure",
                ". <tool",
                "_call>{\"name\": ",
                "\"f\", \"arguments\": {}}",
                "</tool_call>",
            ],
        );
        // The space before the call is held and dropped with it, as the whole answer trims it.
        assert_eq!(sent, "Sure.");
        assert_eq!(
            (end.content, calls_owned(&end.calls)),
            (None, owned(&[("f", "{}")]))
        );
        // Whitespace with no call after it is content in the end.
        let (sent, end) = stream(ToolFormat::Hermes, &["Done. ", " \n"]);
        assert_eq!(
            (sent.as_str(), end.content.as_deref()),
            ("Done.", Some("  \n"))
        );
        // A `<` that does not become the tag is released.
        let (sent, end) = stream(ToolFormat::Hermes, &["a <", "b> c"]);
        assert_eq!(
            (sent.as_str(), end.content, end.calls.len()),
            ("a <b> c", None, 0)
        );
        // Held text that is no call comes back as content.
        let (sent, end) = stream(ToolFormat::Hermes, &["x <tool_call>oops"]);
        assert_eq!(sent, "x");
        assert_eq!(end.content.as_deref(), Some(" <tool_call>oops"));
        // JSON: held from the start while it may be a call.
        let (sent, end) = stream(ToolFormat::Json, &[" {\"name\"", ": \"f\"}"]);
        assert_eq!((sent.as_str(), calls(&end)), ("", vec![("f", "{}")]));
        let (sent, end) = stream(ToolFormat::Json, &["  ", "Hello {\"name\": \"f\"}"]);
        assert_eq!(
            (sent.as_str(), end.calls.len()),
            ("  Hello {\"name\": \"f\"}", 0)
        );
        let (sent, end) = stream(ToolFormat::Json, &["{\"answer\": 4}"]);
        assert_eq!(
            (sent.as_str(), end.content.as_deref()),
            ("", Some("{\"answer\": 4}"))
        );
    }
}

//! Chat templates: the Jinja template a Hugging Face model directory ships to turn a list of
//! messages into the prompt the model was trained on, rendered as transformers'
//! `apply_chat_template` renders it.
//!
//! Where the template comes from (transformers' order): `chat_template.jinja`, else
//! `tokenizer_config.json`'s `chat_template`, a string or a list of `{"name", "template"}`
//! (the `default` one, or `tool_use` when tools are given and it exists).
//!
//! How it is rendered (transformers' `_compile_jinja_template`), with minijinja and
//! minijinja-contrib's Python string and dict methods (`.strip()`, `.split()`,
//! `.startswith()`, `.items()`, …):
//! - `trim_blocks` and `lstrip_blocks` on, a single trailing newline of the template dropped;
//! - `raise_exception(message)` fails the rendering with the message;
//! - `tojson` is Python's `json.dumps` (`", "` and `": "` separators, non-ASCII kept, nothing
//!   HTML-escaped; `indent`, `separators`, `sort_keys` and `ensure_ascii` arguments);
//! - `strftime_now(format)` formats the local time;
//! - the variables are `messages`, `add_generation_prompt`, `tools` and `documents` (`none`
//!   when not given: defined, as transformers passes them) and every
//!   special token of `tokenizer_config.json` (`bos_token`, `eos_token`, `unk_token`,
//!   `pad_token`, …), then the caller's extra variables (`enable_thinking`, …), which win.
//!
//! The rendered text holds the special tokens as text; encoding it without adding special
//! tokens (transformers' `add_special_tokens=False`) turns them into their ids, and adds no
//! second BOS.

use std::path::{Path, PathBuf};

use minijinja::value::ValueKind;
use minijinja::{ErrorKind, Value};
use serde::Serialize;
use serde_json::Value as Json;

use crate::{Error, Result};

mod python;

use python::environment;

/// `tokenizer_config.json`.
pub const TOKENIZER_CONFIG_FILE: &str = "tokenizer_config.json";

/// `chat_template.jinja`.
pub const CHAT_TEMPLATE_FILE: &str = "chat_template.jinja";

/// The special-token fields of `tokenizer_config.json` passed to the template.
const SPECIAL_TOKENS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// A model's chat template(s) and the special tokens it may refer to.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    /// The file the templates came from (for errors).
    path: PathBuf,
    /// `(name, source)`; a single unnamed template is named `default`.
    templates: Vec<(String, String)>,
    /// `(field, token)`: `bos_token`, `eos_token`, … as `tokenizer_config.json` gives them.
    special_tokens: Vec<(String, String)>,
}

/// One message of a conversation (OpenAI's `{"role", "content"}`), for callers that build a
/// conversation rather than read one from JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// `system`, `user`, `assistant`, `tool`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// A message with `role` and `content`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            role: role.into(),
            content: content.into(),
        }
    }
}

impl ChatTemplate {
    /// Reads the chat template of the model directory `dir`: `chat_template.jinja` when
    /// present, else `tokenizer_config.json`'s `chat_template`; the special tokens from
    /// `tokenizer_config.json` when present.
    ///
    /// # Errors
    /// [`Error::NoChatTemplate`] when there is none, [`Error::Io`] for an unreadable file,
    /// [`Error::Json`] for a malformed `tokenizer_config.json` or `chat_template` field.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let config_path = dir.join(TOKENIZER_CONFIG_FILE);
        let config: Option<Json> = match read_optional(&config_path)? {
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| Error::Json {
                path: config_path.clone(),
                field: None,
                message: e.to_string(),
            })?),
            None => None,
        };
        let special_tokens = config
            .as_ref()
            .map(|c| {
                SPECIAL_TOKENS
                    .iter()
                    .filter_map(|&field| {
                        let token = match c.get(field)? {
                            Json::String(s) => s.clone(),
                            // transformers 4.x may save an `AddedToken` as an object.
                            Json::Object(o) => o.get("content")?.as_str()?.to_string(),
                            _ => return None,
                        };
                        Some((field.to_string(), token))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let jinja_path = dir.join(CHAT_TEMPLATE_FILE);
        if let Some(source) = read_optional(&jinja_path)? {
            return Ok(ChatTemplate {
                path: jinja_path,
                templates: vec![("default".to_string(), source)],
                special_tokens,
            });
        }
        let field = config.as_ref().and_then(|c| c.get("chat_template"));
        let bad = |message: &str| Error::Json {
            path: config_path.clone(),
            field: Some("chat_template".to_string()),
            message: message.to_string(),
        };
        let templates = match field {
            None | Some(Json::Null) => {
                return Err(Error::NoChatTemplate {
                    path: dir.to_path_buf(),
                })
            }
            Some(Json::String(s)) => vec![("default".to_string(), s.clone())],
            Some(Json::Array(list)) => list
                .iter()
                .map(|entry| {
                    let name = entry.get("name").and_then(Json::as_str);
                    let source = entry.get("template").and_then(Json::as_str);
                    match (name, source) {
                        (Some(n), Some(s)) => Ok((n.to_string(), s.to_string())),
                        _ => Err(bad("expected {\"name\": …, \"template\": …} entries")),
                    }
                })
                .collect::<Result<Vec<_>>>()?,
            Some(_) => return Err(bad("expected a string or a list of named templates")),
        };
        Ok(ChatTemplate {
            path: config_path,
            templates,
            special_tokens,
        })
    }

    /// A template from its source, with the special tokens `(field, token)` it may refer to
    /// (`("bos_token", "<s>")`); `path` only names it in errors.
    pub fn from_source(
        path: impl Into<PathBuf>,
        source: impl Into<String>,
        special_tokens: Vec<(String, String)>,
    ) -> Self {
        ChatTemplate {
            path: path.into(),
            templates: vec![("default".to_string(), source.into())],
            special_tokens,
        }
    }

    /// Whether any of the templates' sources contains `text` (for example `<tool_call>`, the
    /// tag a template teaches the model to wrap tool calls in).
    pub fn mentions(&self, text: &str) -> bool {
        self.templates
            .iter()
            .any(|(_, source)| source.contains(text))
    }

    /// The names of the templates (`default` for a single one).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.templates.iter().map(|(n, _)| n.as_str())
    }

    /// The templates as `(name, source)`, the default first where there is one (what GGUF's
    /// `tokenizer.chat_template` and `tokenizer.chat_template.<name>` hold).
    pub fn templates(&self) -> impl Iterator<Item = (&str, &str)> {
        self.templates.iter().map(|(n, s)| (n.as_str(), s.as_str()))
    }

    /// The special token `field` (`"eos_token"`) of `tokenizer_config.json`, if given.
    pub fn special_token(&self, field: &str) -> Option<&str> {
        self.special_tokens
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, t)| t.as_str())
    }

    /// Renders `messages` with `add_generation_prompt` and no extra variables.
    ///
    /// # Errors
    /// As [`ChatTemplate::render_json`].
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String> {
        let json = serde_json::to_string(messages).map_err(|e| self.error(e))?;
        self.render_json(&json, add_generation_prompt, None)
    }

    /// Renders the conversation `messages_json` (a JSON array of OpenAI-style messages, or an
    /// object with a `messages` array and optionally `tools`), with `add_generation_prompt`
    /// and the extra variables of `kwargs_json` (a JSON object such as
    /// `{"enable_thinking": false}`). Keys keep their order, as Python's dicts do.
    ///
    /// # Errors
    /// [`Error::ChatTemplate`] for malformed JSON, a template that does not parse, or a
    /// rendering that fails (the template's own `raise_exception` message included).
    pub fn render_json(
        &self,
        messages_json: &str,
        add_generation_prompt: bool,
        kwargs_json: Option<&str>,
    ) -> Result<String> {
        let parsed: Value = serde_json::from_str(messages_json)
            .map_err(|e| self.error(format!("messages: {e}")))?;
        let (messages, mut tools) = match parsed.kind() {
            ValueKind::Seq => (parsed, Value::UNDEFINED),
            ValueKind::Map => (
                parsed.get_attr("messages").unwrap_or(Value::UNDEFINED),
                parsed.get_attr("tools").unwrap_or(Value::UNDEFINED),
            ),
            _ => return Err(self.error("messages: expected a JSON array or object")),
        };
        if messages.kind() != ValueKind::Seq {
            return Err(self.error("messages: expected an array of messages"));
        }
        let kwargs: Value = match kwargs_json {
            Some(text) => {
                serde_json::from_str(text).map_err(|e| self.error(format!("kwargs: {e}")))?
            }
            None => Value::from(()),
        };
        if !(kwargs.is_none() || kwargs.kind() == ValueKind::Map) {
            return Err(self.error("kwargs: expected a JSON object"));
        }
        if let Ok(t) = kwargs.get_attr("tools") {
            if !t.is_undefined() {
                tools = t;
            }
        }
        let with_tools = !(tools.is_undefined() || tools.is_none());
        let source = self.pick(with_tools)?;

        // A map, so that a keyword argument replaces a variable of the same name in one
        // lookup (a request may send many).
        let mut vars: std::collections::BTreeMap<String, Value> = self
            .special_tokens
            .iter()
            .map(|(f, t)| (f.clone(), Value::from(t.as_str())))
            .collect();
        vars.insert("messages".to_string(), messages);
        vars.insert(
            "add_generation_prompt".to_string(),
            Value::from(add_generation_prompt),
        );
        // transformers always passes `tools` and `documents`, `None` when absent, so a
        // template's `tools is defined` is true even without tools.
        let none = || Value::from(());
        vars.insert("tools".to_string(), if with_tools { tools } else { none() });
        vars.insert("documents".to_string(), none());
        if kwargs.kind() == ValueKind::Map {
            for key in kwargs.try_iter().map_err(|e| self.error(e))? {
                let value = kwargs.get_item(&key).map_err(|e| self.error(e))?;
                vars.insert(key.to_string(), value);
            }
        }
        let context = Value::from(vars);

        let env = environment();
        let template = env
            .template_from_str(source)
            .map_err(|e| self.error(describe(&e)))?;
        template
            .render(context)
            .map_err(|e| self.error(describe(&e)))
    }

    /// The template to use: `tool_use` when tools are given and it exists, else `default`
    /// (else the only one).
    fn pick(&self, with_tools: bool) -> Result<&str> {
        let find = |name: &str| {
            self.templates
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s.as_str())
        };
        let only = match self.templates.as_slice() {
            [(_, only)] => Some(only.as_str()),
            _ => None,
        };
        let chosen = if with_tools { find("tool_use") } else { None };
        chosen.or_else(|| find("default")).or(only).ok_or_else(|| {
            let names: Vec<_> = self.names().collect();
            self.error(format!(
                "no `default` template among the named ones ({})",
                names.join(", ")
            ))
        })
    }

    fn error(&self, e: impl std::fmt::Display) -> Error {
        Error::ChatTemplate {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }
}

/// A file's text, or `None` when it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A minijinja error with its cause chain and, where known, the template line.
fn describe(e: &minijinja::Error) -> String {
    let mut text = match e.kind() {
        ErrorKind::InvalidOperation if e.detail().is_some() => {
            e.detail().unwrap_or_default().to_string()
        }
        _ => e.to_string(),
    };
    if let Some(line) = e.line() {
        if !text.contains("line") {
            text.push_str(&format!(" (line {line})"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strftime_now_formats_the_current_time() {
        let t = ChatTemplate::from_source("t", "{{ strftime_now('%Y') }}", vec![]);
        let year = t.render(&[], false).unwrap();
        assert_eq!(year, chrono::Local::now().format("%Y").to_string());
    }

    #[test]
    fn raise_exception_fails_with_its_message() {
        let t = ChatTemplate::from_source(
            "t",
            "{% if messages | length == 0 %}{{ raise_exception('no messages!') }}{% endif %}",
            vec![],
        );
        let e = t.render(&[], true).unwrap_err();
        assert!(e.to_string().contains("no messages!"), "{e}");
    }

    #[test]
    fn tools_and_documents_are_defined_and_none_without_tools() {
        let t = ChatTemplate::from_source(
            "t",
            "{% if tools is defined %}d{% endif %}{% if tools is none %}n{% endif %}\
             {% if documents is defined and documents is none %}D{% endif %}",
            Vec::new(),
        );
        assert_eq!(
            t.render_json(r#"{"messages": []}"#, false, None).unwrap(),
            "dnD"
        );
    }

    #[test]
    fn named_templates_pick_tool_use_with_tools() {
        let t = ChatTemplate {
            path: "x".into(),
            templates: vec![
                ("default".into(), "plain".into()),
                ("tool_use".into(), "tools: {{ tools | length }}".into()),
            ],
            special_tokens: vec![],
        };
        assert_eq!(t.render_json("[]", false, None).unwrap(), "plain");
        assert_eq!(
            t.render_json(r#"{"messages": [], "tools": [{"a": 1}]}"#, false, None)
                .unwrap(),
            "tools: 1"
        );
    }
}

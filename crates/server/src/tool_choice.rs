//! `tool_choice`: whether a chat answer may, must, or must not call the offered tools.
//!
//! - `"auto"` (the default) and `"none"` leave the model free; `"none"` also stops the answer
//!   from being searched for calls.
//! - `"required"` and `{"type": "function", "function": {"name": …}}` force a call: the
//!   answer is constrained by the `grammar` plugin to JSON matching [`ToolChoice::schema`],
//!   and comes back as `tool_calls` whatever `--tool-call-parser` says (the constrained text
//!   is JSON, not the template's own call format). `"required"` takes a list of one or more
//!   calls to any of the tools, as vLLM does; a named tool takes one call object. The
//!   `arguments` follow the tool's `parameters` schema (any object when it has none).
//!
//! The JSON is written as Python's `json.dumps` writes it (`{"name": "f", "arguments": {…}}`,
//! no other whitespace), the way chat templates show calls to models, so the model cannot
//! spend its tokens on spaces; and `name` comes before `arguments`, the order models are
//! trained to write them in (the server's JSON keeps property order).
//! `"parallel_tool_calls": false` makes `"required"` a list of exactly one call.

use serde_json::{json, Value};

use crate::{Error, Result};

/// A request's `tool_choice`.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolChoice {
    /// The model may answer or call (`"auto"`, or no `tool_choice`).
    Auto,
    /// Plain content only (`"none"`).
    None,
    /// One or more calls, to any of the tools (`"required"`).
    Required,
    /// One call to this tool (`{"type": "function", "function": {"name": …}}`).
    Named(String),
}

impl ToolChoice {
    /// Reads `tool_choice` (absent or `null`: [`ToolChoice::Auto`]) against the offered
    /// `tools`.
    ///
    /// # Errors
    /// [`Error::BadRequest`] naming `tool_choice` for an unknown string, a malformed object,
    /// a forced call without tools, or a name no tool has.
    pub fn parse(choice: Option<&Value>, tools: &[Value]) -> Result<Self> {
        let bad = |why: String| Error::field("tool_choice", why);
        let choice = match choice {
            None | Some(Value::Null) => return Ok(ToolChoice::Auto),
            Some(Value::String(s)) => match s.as_str() {
                "auto" => ToolChoice::Auto,
                "none" => ToolChoice::None,
                "required" => ToolChoice::Required,
                other => {
                    return Err(bad(format!(
                        "unknown tool_choice `{other}`: give \"auto\", \"none\", \"required\" \
                         or {{\"type\": \"function\", \"function\": {{\"name\": …}}}}"
                    )))
                }
            },
            Some(object @ Value::Object(_)) => {
                let name = match (&object["type"], &object["function"]["name"]) {
                    (Value::String(kind), Value::String(name)) if kind == "function" => name,
                    _ => {
                        return Err(bad(format!(
                            "tool_choice {object} is not {{\"type\": \"function\", \
                             \"function\": {{\"name\": …}}}}"
                        )))
                    }
                };
                ToolChoice::Named(name.clone())
            }
            Some(other) => {
                return Err(bad(format!(
                    "tool_choice must be a string or an object, not {other}"
                )))
            }
        };
        match &choice {
            ToolChoice::Required if tools.is_empty() => Err(bad(
                "tool_choice \"required\" needs `tools` to choose from".into(),
            )),
            ToolChoice::Named(name) if !tools.iter().any(|t| tool_name(t) == Some(name)) => {
                Err(bad(format!(
                    "tool_choice names `{name}`, which no tool in `tools` is"
                )))
            }
            _ => Ok(choice),
        }
    }

    /// The JSON schema a forced answer must match (`None` for `Auto` and `None`, which force
    /// nothing):
    /// a call object `{"name": <const>, "arguments": <the tool's parameters>}` for a named
    /// tool, a non-empty list of calls to any tool for `"required"` (of one call unless
    /// `parallel`).
    ///
    /// # Errors
    /// [`Error::BadRequest`] naming `tools` for a tool without a string `function.name`.
    pub fn schema(&self, tools: &[Value], parallel: bool) -> Result<Option<Value>> {
        let call = |tool: &Value| -> Result<Value> {
            let name = tool_name(tool).ok_or_else(|| {
                Error::field(
                    "tools",
                    format!("tool {tool} has no `function.name` (a string)"),
                )
            })?;
            let arguments = match &tool["function"]["parameters"] {
                Value::Null => json!({"type": "object"}),
                parameters => parameters.clone(),
            };
            Ok(json!({
                "type": "object",
                "properties": {"name": {"const": name}, "arguments": arguments},
                "required": ["name", "arguments"],
                "additionalProperties": false,
            }))
        };
        let mut schema = match self {
            ToolChoice::Auto | ToolChoice::None => return Ok(None),
            ToolChoice::Named(name) => {
                let tool = tools
                    .iter()
                    .find(|t| tool_name(t) == Some(name))
                    .expect("parse checked that the tool exists");
                call(tool)?
            }
            ToolChoice::Required => {
                let calls: Vec<Value> = tools.iter().map(call).collect::<Result<_>>()?;
                let mut list = json!({"type": "array", "items": {"anyOf": calls}, "minItems": 1});
                if !parallel {
                    list["maxItems"] = json!(1);
                }
                list
            }
        };
        schema["x-guidance"] = json!({
            "item_separator": ", ",
            "key_separator": ": ",
            "whitespace_flexible": false,
        });
        Ok(Some(schema))
    }
}

/// `function.name` of an offered tool.
fn tool_name(tool: &Value) -> Option<&String> {
    match &tool["function"]["name"] {
        Value::String(name) => Some(name),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<Value> {
        vec![
            json!({"type": "function", "function": {"name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}),
            json!({"type": "function", "function": {"name": "now"}}),
        ]
    }

    #[test]
    fn every_form_parses() {
        let t = tools();
        assert_eq!(ToolChoice::parse(None, &t).unwrap(), ToolChoice::Auto);
        assert_eq!(
            ToolChoice::parse(Some(&Value::Null), &t).unwrap(),
            ToolChoice::Auto
        );
        assert_eq!(
            ToolChoice::parse(Some(&json!("none")), &[]).unwrap(),
            ToolChoice::None
        );
        assert_eq!(
            ToolChoice::parse(Some(&json!("required")), &t).unwrap(),
            ToolChoice::Required
        );
        let named = json!({"type": "function", "function": {"name": "now"}});
        assert_eq!(
            ToolChoice::parse(Some(&named), &t).unwrap(),
            ToolChoice::Named("now".into())
        );
    }

    #[test]
    fn bad_choices_name_the_field_and_the_reason() {
        let t = tools();
        for (choice, tools, says) in [
            (json!("always"), &t[..], "unknown tool_choice `always`"),
            (json!(3), &t[..], "a string or an object"),
            (json!({"type": "function"}), &t[..], "is not {"),
            (
                json!({"type": "tool", "function": {"name": "now"}}),
                &t[..],
                "is not {",
            ),
            (json!("required"), &[][..], "needs `tools`"),
            (
                json!({"type": "function", "function": {"name": "later"}}),
                &t[..],
                "`later`, which no tool",
            ),
        ] {
            let e = ToolChoice::parse(Some(&choice), tools).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(says), "{choice}: {text}");
            assert!(
                matches!(e, Error::BadRequest { ref param, .. } if param.as_deref() == Some("tool_choice")),
                "{e:?}"
            );
        }
    }

    #[test]
    fn a_named_tool_gets_its_call_object_and_required_a_list_of_any() {
        let t = tools();
        let named = ToolChoice::Named("get_weather".into())
            .schema(&t, true)
            .unwrap()
            .unwrap();
        let keys: Vec<&String> = named["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "arguments"], "name is written first");
        assert_eq!(named["properties"]["name"], json!({"const": "get_weather"}));
        assert_eq!(
            named["properties"]["arguments"],
            t[0]["function"]["parameters"]
        );
        assert_eq!(
            named["x-guidance"],
            json!({"item_separator": ", ", "key_separator": ": ", "whitespace_flexible": false})
        );
        let required = ToolChoice::Required.schema(&t, true).unwrap().unwrap();
        assert_eq!(required["type"], "array");
        assert_eq!(required["minItems"], 1);
        assert!(required.get("maxItems").is_none());
        let one = ToolChoice::Required.schema(&t, false).unwrap().unwrap();
        assert_eq!(one["maxItems"], 1);
        let any = required["items"]["anyOf"].as_array().unwrap();
        assert_eq!(any.len(), 2);
        assert_eq!(any[1]["properties"]["name"]["const"], "now");
        assert_eq!(any[1]["properties"]["arguments"], json!({"type": "object"}));
        assert_eq!(ToolChoice::Auto.schema(&t, true).unwrap(), None);
        assert_eq!(ToolChoice::None.schema(&t, true).unwrap(), None);
        let nameless = [json!({"type": "function", "function": {}})];
        let e = ToolChoice::Required.schema(&nameless, true).unwrap_err();
        assert!(e.to_string().contains("no `function.name`"), "{e}");
    }
}

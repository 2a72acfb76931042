//! `POST /v1/chat/completions`: the conversation rendered with the model's chat template
//! (the same code as `sieve generate --chat`) and encoded without adding special tokens (the
//! template writes them), as transformers does; the whole answer or a stream.

use std::cell::Cell;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use serde_json::{Map, Value};
use sieve_engine::scheduler::TokenLogprobs;
use sieve_engine::FinishReason;

use super::tokens::token_text;
use crate::body::JsonBody;
use crate::generation::{
    self, check_prompt_text, collect, prepare, submit, Chunks, Meta, Prepared,
};
use crate::log::TokenCounts;
use crate::metrics::Endpoint;
use crate::openai::chat::{
    ChatChoice, ChatChunk, ChatChunkChoice, ChatCompletion, ChatFields, ChatLogprobs, ChatMessage,
    Delta, FunctionCall, TokenLogprob, ToolCallOut, TopLogprob,
};
use crate::openai::common::{finish_reason, finite, Usage};
use crate::openai::fields::{OutputFields, SamplingFields};
use crate::sampling::Stages;
use crate::state::AppState;
use crate::tool_choice::ToolChoice;
use crate::tools::{self, Holdback, Split, ToolFormat};
use crate::{Error, Result};
use sieve_text::sampling::OutputFormat;

/// `POST /v1/chat/completions`.
///
/// # Errors
/// See [`prepare`] and [`submit`]; 400 for a malformed conversation, a model without a chat
/// template, a template that fails, `top_logprobs` without `logprobs`, a malformed
/// `tool_choice`, or a forced call (`"required"` or a named tool) without the `grammar`
/// stage, with `response_format`, or with a `sampler` pipeline.
pub async fn chat_completions(
    State(state): State<AppState>,
    counts: Option<Extension<TokenCounts>>,
    body: JsonBody,
) -> Result<Response> {
    let job = state.clone();
    let (prepared, logprobs, tool_format) =
        state.work.run(move || prepare_request(&job, &body)).await?;
    let stream = prepared.stream;
    let counts = counts.map(|Extension(c)| c);
    let submitted = submit(&state, prepared, Endpoint::Chat, "chatcmpl", counts)?;
    let chunks = ChatChunks {
        state: state.clone(),
        logprobs,
        tools: tool_format,
        held: Vec::new(),
        named: Cell::new(false),
    };
    if stream {
        return Ok(generation::stream(submitted, chunks).into_response());
    }
    let (meta, outputs) = collect(submitted).await?;
    let usage = Usage::new(
        meta.prompt_tokens,
        outputs.iter().map(|c| c.tokens.len()).sum(),
    );
    let choices = outputs
        .into_iter()
        .enumerate()
        .map(|(index, c)| {
            let split = match tool_format {
                Some(format) => tools::split(&c.text, format),
                None => Split {
                    content: Some(c.text.clone()),
                    calls: Vec::new(),
                },
            };
            let calls = tool_calls(&meta.id, index, &split, false);
            ChatChoice {
                index,
                logprobs: chunks.logprobs.then(|| ChatLogprobs {
                    content: c
                        .tokens
                        .iter()
                        .zip(&c.logprobs)
                        .map(|(&t, l)| chunks.entry(t, l))
                        .collect(),
                }),
                finish_reason: match calls {
                    Some(_) => "tool_calls",
                    None => finish_reason(c.finish.unwrap_or(FinishReason::Length)),
                },
                message: ChatMessage {
                    role: "assistant",
                    content: split.content,
                    tool_calls: calls,
                },
            }
        })
        .collect();
    let whole: ChatCompletion = meta.whole("chat.completion", choices, usage);
    Ok(Json(whole).into_response())
}

/// The request read, its conversation rendered and encoded and its pipelines built (on the
/// work pool); whether it asks for log-probabilities, and the tool-call format searched for.
fn prepare_request(
    state: &AppState,
    body: &JsonBody,
) -> Result<(Prepared, bool, Option<ToolFormat>)> {
    let output: OutputFields = body.fields()?;
    let mut sampling = body.sampling()?;
    let own: ChatFields = body.fields()?;
    let logprobs = match (own.logprobs, own.top_logprobs) {
        (Some(true), top) => Some(("top_logprobs", top.unwrap_or(0))),
        (_, Some(_)) => {
            return Err(Error::field(
                "top_logprobs",
                "`top_logprobs` needs `\"logprobs\": true`",
            ))
        }
        _ => None,
    };
    let tool_format = tool_format(state, &own, &mut sampling)?;
    let prompt = prompt_tokens(state, &own)?;
    let prepared = prepare(
        state,
        &output,
        &sampling,
        vec![prompt],
        "messages",
        logprobs,
    )?;
    Ok((prepared, logprobs.is_some(), tool_format))
}

/// The format the answer is searched for tool calls in: none without `tools` (or with an
/// empty list) or with `"tool_choice": "none"`; JSON when `tool_choice` forces a call (whose
/// schema then constrains the answer through `sampling.response_format`, see
/// [`crate::tool_choice`]); else the server's `--tool-call-parser`.
fn tool_format(
    state: &AppState,
    fields: &ChatFields,
    sampling: &mut SamplingFields,
) -> Result<Option<ToolFormat>> {
    let offered = match &fields.tools {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(list)) => &list[..],
        Some(_) => return Err(Error::field("tools", "`tools` must be a list")),
    };
    let choice = ToolChoice::parse(fields.tool_choice.as_ref(), offered)?;
    let parallel = fields.parallel_tool_calls.unwrap_or(true);
    if let Some(schema) = choice.schema(offered, parallel)? {
        let refuse = |why: &str| {
            Err(Error::field(
                "tool_choice",
                format!("a forced tool call {why}"),
            ))
        };
        if sampling.sampler.is_some() {
            return refuse(
                "constrains the answer through the sampling fields, which a `sampler` pipeline \
                 replaces: leave `sampler` out, or put grammar(json_schema=…) in it yourself",
            );
        }
        if !matches!(
            sampling.fields.response_format,
            None | Some(OutputFormat::Text)
        ) {
            return refuse("already makes the answer JSON: leave `response_format` out");
        }
        if !state.registry.has("grammar") {
            return refuse(
                "needs the `grammar` stage, which this server did not load (start it with \
                 --plugin PATH to the grammar plugin)",
            );
        }
        sampling.fields.response_format = Some(OutputFormat::Json(schema));
        return Ok(Some(ToolFormat::Json));
    }
    if offered.is_empty() || choice == ToolChoice::None {
        return Ok(None);
    }
    let tagged = state
        .model
        .chat_template
        .as_ref()
        .is_ok_and(|t| t.mentions(tools::HERMES_OPEN));
    Ok(state.settings.tool_parser.format(tagged))
}

/// The `tool_calls` of choice `choice` (`None` without calls), with ids unique in the
/// response `id`; `indexed` for stream deltas.
fn tool_calls(id: &str, choice: usize, split: &Split, indexed: bool) -> Option<Vec<ToolCallOut>> {
    if split.calls.is_empty() {
        return None;
    }
    let stem = id.strip_prefix("chatcmpl-").unwrap_or(id);
    Some(
        split
            .calls
            .iter()
            .enumerate()
            .map(|(k, call)| ToolCallOut {
                index: indexed.then_some(k),
                id: format!("call_{stem}_{choice}_{k}"),
                kind: "function",
                function: FunctionCall {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
            })
            .collect(),
    )
}

/// The conversation rendered and encoded.
fn prompt_tokens(state: &AppState, fields: &ChatFields) -> Result<Vec<u32>> {
    let Some(messages) = &fields.messages else {
        return Err(Error::field("messages", "`messages` is required"));
    };
    if messages.is_empty() {
        return Err(Error::field("messages", "`messages` is empty"));
    }
    let messages: Vec<Value> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| normalize(i, m))
        .collect::<Result<_>>()?;
    let conversation = match &fields.tools {
        Some(tools) if !tools.is_null() => {
            serde_json::json!({"messages": messages, "tools": tools})
        }
        _ => Value::Array(messages),
    };
    let kwargs = match &fields.chat_template_kwargs {
        Some(kwargs) => Some(template_kwargs(kwargs)?),
        None => None,
    };
    let template = state.model.chat_template.as_ref().map_err(|why| {
        Error::field(
            "messages",
            format!("this model has no chat template ({why}); use /v1/completions"),
        )
    })?;
    let text = template
        .render_json(
            &conversation.to_string(),
            fields.add_generation_prompt.unwrap_or(true),
            kwargs.as_deref(),
        )
        .map_err(|e| Error::field("messages", e.to_string()))?;
    check_prompt_text(state, &text, "messages")?;
    state
        .model
        .tokenizer
        .encode(&text, false)
        .map_err(|e| Error::field("messages", e.to_string()))
}

/// The most `chat_template_kwargs` a request may pass.
pub const MAX_TEMPLATE_KWARGS: usize = 64;

/// The template variables a request sets through its own fields, which
/// `chat_template_kwargs` may not replace (the fields' checks would be skipped).
const RESERVED_KWARGS: [&str; 3] = ["messages", "tools", "add_generation_prompt"];

/// `chat_template_kwargs` as JSON text for the template, checked: at most
/// [`MAX_TEMPLATE_KWARGS`], none of the variables the request's own fields set.
fn template_kwargs(kwargs: &Map<String, Value>) -> Result<String> {
    if kwargs.len() > MAX_TEMPLATE_KWARGS {
        return Err(Error::field(
            "chat_template_kwargs",
            format!(
                "{} keys given; at most {MAX_TEMPLATE_KWARGS} are accepted",
                kwargs.len()
            ),
        ));
    }
    for key in RESERVED_KWARGS {
        if kwargs.contains_key(key) {
            return Err(Error::field(
                &format!("chat_template_kwargs.{key}"),
                format!("`{key}` is the request's own field; it cannot be a template keyword"),
            ));
        }
    }
    Ok(Value::Object(kwargs.clone()).to_string())
}

/// Message `i` with its `role` checked and its `content` parts joined into one text.
fn normalize(i: usize, message: &Map<String, Value>) -> Result<Value> {
    let param = |field: &str| format!("messages[{i}].{field}");
    if !message.get("role").is_some_and(Value::is_string) {
        return Err(Error::field(
            &param("role"),
            "each message needs a `role` string",
        ));
    }
    let mut message = message.clone();
    if let Some(Value::Array(parts)) = message.get("content") {
        let mut text = String::new();
        for part in parts {
            match (part.get("type").and_then(Value::as_str), part.get("text")) {
                (Some("text"), Some(Value::String(t))) => text.push_str(t),
                _ => {
                    return Err(Error::field(
                        &param("content"),
                        "only text content parts ({\"type\": \"text\", \"text\": …}) are supported",
                    ))
                }
            }
        }
        message.insert("content".to_string(), Value::String(text));
    }
    match message.get("content") {
        None | Some(Value::String(_) | Value::Null) => Ok(Value::Object(message)),
        Some(_) => Err(Error::field(
            &param("content"),
            "`content` must be a string or a list of text parts",
        )),
    }
}

/// `chat.completion.chunk` objects.
struct ChatChunks {
    state: AppState,
    logprobs: bool,
    /// The tool-call format searched for, if any.
    tools: Option<ToolFormat>,
    /// Per choice, the text held back while it may be a tool call.
    held: Vec<Holdback>,
    /// Whether a chunk carried the pipeline and seed already.
    named: Cell<bool>,
}

impl ChatChunks {
    fn entry(&self, token: u32, l: &TokenLogprobs) -> TokenLogprob {
        let tokenizer = &self.state.model.tokenizer;
        let (text, bytes) = token_text(tokenizer, token);
        TokenLogprob {
            token: text,
            logprob: finite(l.logprob),
            bytes,
            top_logprobs: l
                .top
                .iter()
                .map(|&(id, x)| {
                    let (token, bytes) = token_text(tokenizer, id);
                    TopLogprob {
                        token,
                        logprob: finite(x),
                        bytes,
                    }
                })
                .collect(),
        }
    }

    /// Choice `choice`'s hold-back, when the answer is searched for tool calls.
    fn holdback(&mut self, meta: &Meta, choice: usize) -> Option<&mut Holdback> {
        let format = self.tools?;
        if self.held.len() < meta.n {
            self.held.resize_with(meta.n, || Holdback::new(format));
        }
        self.held.get_mut(choice)
    }

    /// A chunk of one choice's `delta`.
    fn delta(
        &self,
        meta: &Meta,
        choice: usize,
        delta: Delta,
        logprobs: Option<ChatLogprobs>,
        finish_reason: Option<&'static str>,
    ) -> String {
        let choice = ChatChunkChoice {
            index: choice,
            delta,
            logprobs,
            finish_reason,
        };
        self.chunk(meta, vec![choice], None)
    }

    fn chunk(&self, meta: &Meta, choices: Vec<ChatChunkChoice>, usage: Option<Usage>) -> String {
        let first = !self.named.replace(true);
        let chunk: ChatChunk = meta.chunk("chat.completion.chunk", choices, usage, first);
        serde_json::to_string(&chunk).unwrap_or_default()
    }
}

impl Chunks for ChatChunks {
    fn opening(&self, meta: &Meta) -> Vec<String> {
        (0..meta.n)
            .map(|index| {
                let choice = ChatChunkChoice {
                    index,
                    delta: Delta {
                        role: Some("assistant"),
                        content: Some(String::new()),
                        tool_calls: None,
                    },
                    logprobs: None,
                    finish_reason: None,
                };
                self.chunk(meta, vec![choice], None)
            })
            .collect()
    }

    fn text(
        &mut self,
        meta: &Meta,
        choice: usize,
        text: &str,
        token: Option<(u32, &TokenLogprobs)>,
        _offset: usize,
    ) -> Vec<String> {
        let logprobs = token.filter(|_| self.logprobs).map(|(id, l)| ChatLogprobs {
            content: vec![self.entry(id, l)],
        });
        let text = match self.holdback(meta, choice) {
            Some(held) => held.push(text),
            None => text.to_string(),
        };
        if text.is_empty() && logprobs.is_none() {
            return Vec::new();
        }
        let delta = Delta {
            content: (!text.is_empty()).then_some(text),
            ..Delta::default()
        };
        vec![self.delta(meta, choice, delta, logprobs, None)]
    }

    fn finish(&mut self, meta: &Meta, choice: usize, reason: FinishReason) -> Vec<String> {
        let mut out = Vec::new();
        let mut reason = finish_reason(reason);
        if let Some(held) = self.holdback(meta, choice) {
            let split = held.finish();
            if let Some(content) = split.content.clone() {
                let delta = Delta {
                    content: Some(content),
                    ..Delta::default()
                };
                out.push(self.delta(meta, choice, delta, None, None));
            }
            if let Some(calls) = tool_calls(&meta.id, choice, &split, true) {
                let delta = Delta {
                    tool_calls: Some(calls),
                    ..Delta::default()
                };
                out.push(self.delta(meta, choice, delta, None, None));
                reason = "tool_calls";
            }
        }
        out.push(self.delta(meta, choice, Delta::default(), None, Some(reason)));
        out
    }

    fn usage(&self, meta: &Meta, usage: Usage) -> String {
        self.chunk(meta, Vec::new(), Some(usage))
    }
}

//! `POST /v1/chat/completions`: the request's own fields and the response (whole, or
//! streamed as `chat.completion.chunk` objects).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::Envelope;

/// The fields only chat completions have.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ChatFields {
    /// The conversation: `{"role", "content"}` objects (content a string or a list of
    /// `{"type": "text", "text"}` parts); other fields reach the template as they are.
    pub messages: Option<Vec<Map<String, Value>>>,
    /// Report each token's log-probability.
    pub logprobs: Option<bool>,
    /// How many alternatives to list with each (0–20; needs `logprobs`).
    pub top_logprobs: Option<u32>,
    /// Tools, passed to the chat template; calls in the answer come back as `tool_calls`
    /// (see `crate::tools`).
    pub tools: Option<Value>,
    /// `"auto"` (default), `"none"` (the answer is never searched for calls), `"required"` or
    /// a named function (a call is forced: see `crate::tool_choice`).
    pub tool_choice: Option<Value>,
    /// `false`: a forced `"required"` call is exactly one call (default true: one or more).
    pub parallel_tool_calls: Option<bool>,
    /// Extra template variables (vLLM's extension), e.g. `{"enable_thinking": false}`.
    pub chat_template_kwargs: Option<Map<String, Value>>,
    /// End the prompt with the assistant's turn header (default true).
    pub add_generation_prompt: Option<bool>,
}

/// A chat completion (`chat.completion`).
pub type ChatCompletion = Envelope<ChatChoice>;

/// One choice of a chat completion.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChatChoice {
    /// Its index.
    pub index: usize,
    /// The assistant's message.
    pub message: ChatMessage,
    /// Log-probabilities, when asked for.
    pub logprobs: Option<ChatLogprobs>,
    /// `stop`, `length` or `tool_calls`.
    pub finish_reason: &'static str,
}

/// The assistant's message.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChatMessage {
    /// `assistant`.
    pub role: &'static str,
    /// The text (without the tool calls; `null` when nothing else was written).
    pub content: Option<String>,
    /// The tool calls found in the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallOut>>,
}

/// One tool call of an answer (OpenAI's `tool_calls` entry; in a stream, with its `index`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolCallOut {
    /// Its position among the answer's calls (streamed deltas only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// `call_…`, unique within the response.
    pub id: String,
    /// `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function and its arguments.
    pub function: FunctionCall,
}

/// The function a tool call names.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FunctionCall {
    /// Its name.
    pub name: String,
    /// Its arguments, as JSON text.
    pub arguments: String,
}

/// `logprobs` of a chat choice.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ChatLogprobs {
    /// One entry per generated token.
    pub content: Vec<TokenLogprob>,
}

/// One token's log-probability and its alternatives.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TokenLogprob {
    /// The token's text.
    pub token: String,
    /// Its log-probability.
    pub logprob: f32,
    /// Its bytes (its text may hold an incomplete UTF-8 character).
    pub bytes: Vec<u8>,
    /// The most likely tokens at this position.
    pub top_logprobs: Vec<TopLogprob>,
}

/// An alternative token.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TopLogprob {
    /// Its text.
    pub token: String,
    /// Its log-probability.
    pub logprob: f32,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// One chunk of a streamed chat completion (`chat.completion.chunk`).
pub type ChatChunk = Envelope<ChatChunkChoice>;

/// One choice's part of a chunk.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChatChunkChoice {
    /// The choice.
    pub index: usize,
    /// What it adds.
    pub delta: Delta,
    /// Log-probabilities of the tokens in this chunk.
    pub logprobs: Option<ChatLogprobs>,
    /// Set in the choice's last chunk.
    pub finish_reason: Option<&'static str>,
}

/// A message delta: the role in the first chunk, then text.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Delta {
    /// `assistant`, in the first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// New text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tool calls, each whole, in the choice's last chunks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallOut>>,
}

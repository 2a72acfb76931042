//! `POST /v1/completions`: the request's own fields and the response (whole, or streamed as
//! chunks of the same shape).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::Envelope;

/// `prompt`: text, or token ids, or a list of either (several prompts: each gets `n`
/// choices, numbered prompt by prompt).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Prompt {
    /// Text, encoded with the tokenizer's special tokens (BOS), as `sieve generate` does.
    Text(String),
    /// Token ids, used as they are.
    Tokens(Vec<u32>),
    /// Several texts.
    Texts(Vec<String>),
    /// Several token-id lists.
    TokenLists(Vec<Vec<u32>>),
}

/// The fields only completions have.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CompletionFields {
    /// The prompt.
    pub prompt: Option<Prompt>,
    /// How many alternatives to list with each token's log-probability (0–20); absent: no
    /// log-probabilities.
    pub logprobs: Option<u32>,
    /// Not supported: must be absent or false.
    pub echo: Option<bool>,
    /// Not supported: must be absent.
    pub suffix: Option<String>,
    /// Not supported: must be absent or 1.
    pub best_of: Option<u64>,
}

/// A completion, or (with `stream`) one chunk of one (`text_completion`).
pub type Completion = Envelope<CompletionChoice>;

/// One choice of a completion.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CompletionChoice {
    /// Its index.
    pub index: usize,
    /// The text (in a chunk: the new text).
    pub text: String,
    /// Log-probabilities, when asked for.
    pub logprobs: Option<CompletionLogprobs>,
    /// `stop` or `length` once it ended, else null.
    pub finish_reason: Option<&'static str>,
}

/// The log-probabilities of a completion's tokens (the legacy format).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CompletionLogprobs {
    /// Each token's text.
    pub tokens: Vec<String>,
    /// Each token's log-probability.
    pub token_logprobs: Vec<f32>,
    /// Each token's most likely alternatives: text → log-probability.
    pub top_logprobs: Vec<BTreeMap<String, f32>>,
    /// Where each token's text starts in the choice's text (bytes of text released before
    /// it).
    pub text_offset: Vec<usize>,
}

//! The request fields that completions and chat completions share: the sampling fields that
//! map to a pipeline ([`SamplingFields`], see `crate::sampling` for the order) and the
//! fields that shape the output ([`OutputFields`]).
//!
//! Unknown fields are ignored, as OpenAI clients send fields of their own.

use serde::Deserialize;
use sieve_text::sampling::Fields;

/// OpenAI's fields and the usual extras of vLLM and llama.cpp that choose how tokens are
/// sampled: `sampler` (a sieve pipeline), which overrides every other one, and the others as
/// `sieve_text::sampling` reads them.
#[derive(Debug, Clone, Default)]
pub struct SamplingFields {
    /// A sieve pipeline, e.g. `"penalty(1.1) | temp(0.7) | top_k(40)"` (or a list of stage
    /// objects, `[{"stage": "top_k", "k": 40}]`): overrides every other sampling field.
    pub sampler: Option<SamplerField>,
    /// Every other sampling field (`temperature`, `top_p`, …, `response_format`).
    pub fields: Fields,
}

/// The `sampler` field alone (read apart from the others: see `JsonBody::sampling`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SamplerOnly {
    /// As [`SamplingFields::sampler`].
    #[serde(default)]
    pub sampler: Option<SamplerField>,
}

/// `sampler`: pipeline text, or the list form of a pipeline (`sieve_dsl::PipelineSource`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum SamplerField {
    /// `"top_k(40) | temp(0.7)"`.
    Text(String),
    /// `[{"stage": "top_k", "k": 40}, {"stage": "temp", "t": 0.7}]`.
    Stages(Vec<serde_json::Value>),
}

/// `stop`: one string or a list.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Stop {
    /// One stop string.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Stop {
    /// The strings.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Stop::One(s) => vec![s],
            Stop::Many(v) => v,
        }
    }
}

/// `stream_options`.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct StreamOptions {
    /// Send a last chunk with the usage before `[DONE]`.
    pub include_usage: bool,
}

/// The fields that shape the output rather than the choice of tokens.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct OutputFields {
    /// The model (must be the one served, when given).
    pub model: Option<String>,
    /// The most tokens per choice.
    pub max_tokens: Option<u64>,
    /// The most tokens per choice (the newer name; wins over `max_tokens`).
    pub max_completion_tokens: Option<u64>,
    /// Stop strings (never part of the text).
    pub stop: Option<Stop>,
    /// Choices; choice `i` samples with seed `seed + i`.
    pub n: Option<u64>,
    /// The seed of the random stages (random when absent; the response says which).
    pub seed: Option<u64>,
    /// Server-sent events.
    pub stream: Option<bool>,
    /// `{"include_usage": true}`.
    pub stream_options: Option<StreamOptions>,
    /// Keep going after an end-of-sequence token.
    pub ignore_eos: Option<bool>,
    /// Leave special tokens (BOS, EOS, chat markers) out of the text (default `true`, as
    /// vLLM and `sieve generate`); `false` writes them, like `generate --special`.
    pub skip_special_tokens: Option<bool>,
    /// `processed` (default: the distribution the pipeline's selector drew from) or `raw`
    /// (the model's own softmax); vLLM's `processed_logprobs` and `raw_logprobs` too.
    pub logprobs_mode: Option<String>,
}

//! The request fields that completions and chat completions share: the sampling fields that
//! map to a pipeline ([`SamplingFields`], see `crate::sampling` for the order) and the
//! fields that shape the output ([`OutputFields`]).
//!
//! Unknown fields are ignored, as OpenAI clients send fields of their own.

use std::collections::BTreeMap;

use serde::Deserialize;

/// OpenAI's fields and the usual extras of vLLM and llama.cpp that choose how tokens are
/// sampled. `sampler` (a sieve pipeline) overrides every other one.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SamplingFields {
    /// A sieve pipeline, e.g. `"penalty(1.1) | temp(0.7) | top_k(40)"` (or a list of stage
    /// objects, `[{"stage": "top_k", "k": 40}]`): overrides every other sampling field.
    pub sampler: Option<SamplerField>,
    /// `temp(t)`; 0 selects greedily.
    pub temperature: Option<f64>,
    /// llama.cpp's dynamic temperature: `temp(range=…)`.
    pub dynatemp_range: Option<f64>,
    /// llama.cpp's dynamic temperature: `temp(exponent=…)`.
    pub dynatemp_exponent: Option<f64>,
    /// `top_p(p)`; 1 is off.
    pub top_p: Option<f64>,
    /// `top_k(k)`; 0 and -1 are off.
    pub top_k: Option<i64>,
    /// `min_p(p)`; 0 is off.
    pub min_p: Option<f64>,
    /// `typical(p)`; 1 is off.
    pub typical_p: Option<f64>,
    /// The `min_keep` of `top_p`, `min_p`, `typical` and `xtc`.
    pub min_keep: Option<u32>,
    /// `penalty(frequency=…)`.
    pub frequency_penalty: Option<f64>,
    /// `penalty(presence=…)`.
    pub presence_penalty: Option<f64>,
    /// `penalty(repeat=…)` (transformers' and vLLM's name).
    pub repetition_penalty: Option<f64>,
    /// `penalty(repeat=…)` (llama.cpp's name).
    pub repeat_penalty: Option<f64>,
    /// `penalty(last_n=…)`: the window of the penalties; -1 is the whole history.
    pub repeat_last_n: Option<i64>,
    /// `logit_bias({id: bias})`: token id (as a string) → bias in [-100, 100].
    pub logit_bias: Option<BTreeMap<String, f64>>,
    /// `xtc(threshold=…)`.
    pub xtc_threshold: Option<f64>,
    /// `xtc(probability=…)`; 0 is off.
    pub xtc_probability: Option<f64>,
    /// `dry(multiplier=…)` (the `dry` plugin); 0 is off.
    pub dry_multiplier: Option<f64>,
    /// `dry(base=…)`.
    pub dry_base: Option<f64>,
    /// `dry(allowed_length=…)`.
    pub dry_allowed_length: Option<u32>,
    /// `dry(last_n=…)`; -1 is the whole history.
    pub dry_penalty_last_n: Option<i64>,
    /// `dry(breakers=[…])`.
    pub dry_sequence_breakers: Option<Vec<String>>,
    /// `top_n_sigma(n)` (the `top_n_sigma` plugin).
    pub top_n_sigma: Option<f64>,
    /// 1: `mirostat(tau, eta)`, 2: `mirostat_v2(tau, eta)` as the selector; 0 is off.
    pub mirostat: Option<u8>,
    /// Mirostat's target surprise τ.
    pub mirostat_tau: Option<f64>,
    /// Mirostat's learning rate η.
    pub mirostat_eta: Option<f64>,
    /// `{"type": "json_object"}` or `{"type": "json_schema", "json_schema": {"schema": …}}`
    /// through the `grammar` plugin; `{"type": "text"}` is no constraint.
    pub response_format: Option<ResponseFormat>,
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

/// `response_format`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// No constraint.
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// `{"name", "schema", "strict"}`.
        json_schema: JsonSchemaFormat,
    },
}

/// The `json_schema` of a `response_format`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct JsonSchemaFormat {
    /// The schema's name (unused).
    #[serde(default)]
    pub name: Option<String>,
    /// The JSON schema.
    #[serde(default)]
    pub schema: Option<serde_json::Value>,
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

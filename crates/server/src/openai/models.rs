//! `GET /v1/models`, `/tokenize` and `/detokenize` bodies.

use serde::{Deserialize, Serialize};

/// `{"object": "list", "data": [...]}`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModelList {
    /// `list`.
    pub object: &'static str,
    /// The models served (one).
    pub data: Vec<ModelCard>,
}

/// One model.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModelCard {
    /// Its name in requests.
    pub id: String,
    /// `model`.
    pub object: &'static str,
    /// Unix seconds when the server started.
    pub created: u64,
    /// `sieve`.
    pub owned_by: &'static str,
    /// The model's context length (vLLM's extension).
    pub max_model_len: usize,
}

/// `POST /tokenize`: `{"prompt": …}` or llama.cpp's `{"content": …}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TokenizeRequest {
    /// The text.
    pub prompt: Option<String>,
    /// The text (llama.cpp's name).
    pub content: Option<String>,
    /// Add the tokenizer's special tokens (BOS) as a completion prompt gets them (default
    /// true).
    pub add_special_tokens: Option<bool>,
    /// The model (must be the one served, when given).
    pub model: Option<String>,
}

/// `{"tokens": […], "count": N, "max_model_len": C}`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TokenizeResponse {
    /// The ids.
    pub tokens: Vec<u32>,
    /// How many.
    pub count: usize,
    /// The model's context length.
    pub max_model_len: usize,
}

/// `POST /detokenize`: `{"tokens": […]}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DetokenizeRequest {
    /// The ids.
    pub tokens: Vec<u32>,
    /// The model (must be the one served, when given).
    pub model: Option<String>,
}

/// `{"prompt": …}`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DetokenizeResponse {
    /// The text.
    pub prompt: String,
}

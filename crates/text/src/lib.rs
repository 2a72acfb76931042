//! # sieve-text
//!
//! The text side of a Hugging Face model directory, without any tensor library: what a front
//! end needs to turn requests into token ids and token ids back into text, and what the
//! sampler stages need to know about tokens. `sieve-backends` (the Burn model) builds on it;
//! `sieve-server` uses it alone, so the server links no Burn.
//!
//! Data flows one way, and each module imports only those before it:
//!
//! ```text
//!  files          json                          generation_config
//!  read_regular ─► ConfigJson (config.json) ──► GenerationConfig (generation_config.json)
//!  (regular files   read_json / parse_json       .eos_ids_or(config's eos_token_id)
//!   only)           (errors name file + field)
//!        │
//!        └──► tokenizer: Tokenizer (tokenizer.json) ─► .vocab(size, eos) ─► sieve_core::Vocab
//!                        (impl sieve_engine::Detokenize)    └► .encode(text) ─► prompt ids
//!
//!  chat_template: ChatTemplate (chat_template.jinja | tokenizer_config.json)
//!                 ─► .render(&[Message]) ─► prompt text (special tokens as text)
//! ```
//!
//! - [`files`] opens a model directory's files safely (regular files only, index entries
//!   inside the directory);
//! - [`json`] reads JSON files into serde types with errors naming the file and the field,
//!   and holds [`ConfigJson`], `config.json` read field by field (a model family in
//!   `sieve-backends` reads it);
//! - [`generation_config`] reads [`GenerationConfig`], the model author's defaults;
//! - [`tokenizer`] wraps `tokenizer.json`: [`Tokenizer`];
//! - [`gguf_vocab`] builds the same [`Tokenizer`] from a GGUF file's tokenizer metadata
//!   ([`GgufVocab`], read by the GGUF reader) with [`gguf_tokenizer`], giving llama.cpp's ids;
//!   [`vocab_from_hf`] is its inverse, `tokenizer.json` as that metadata;
//! - [`chat_template`] renders [`ChatTemplate`] as transformers' `apply_chat_template` does,
//!   Python's `json.dumps` included;
//! - [`sampling`] holds the defaults every front end shares: the pipeline a run gets when it
//!   names none (from [`GenerationConfig`], else a fallback), parsed once, the default token
//!   limit and the random seed.
//!
//! Everything fails with the one [`Error`] of this crate, whose messages name the file.
#![warn(missing_docs)]

pub mod chat_template;
mod error;
pub mod files;
pub mod generation_config;
pub mod gguf_vocab;
pub mod json;
pub mod sampling;
pub mod tokenizer;

pub use chat_template::{ChatTemplate, Message, CHAT_TEMPLATE_FILE, TOKENIZER_CONFIG_FILE};
pub use error::{Error, Result};
pub use generation_config::GenerationConfig;
pub use gguf_vocab::export::{vocab_from_hf, HfVocab, ModelIds};
pub use gguf_vocab::{gguf_tokenizer, GgufVocab};
pub use json::ConfigJson;
pub use tokenizer::Tokenizer;

/// Name of the model configuration file.
pub const CONFIG_FILE: &str = "config.json";
/// Name of the generation defaults file (optional).
pub const GENERATION_CONFIG_FILE: &str = "generation_config.json";
/// Name of the tokenizer file.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

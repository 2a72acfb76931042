//! # sieve-backends
//!
//! The model side of sieve: a Llama-family transformer written against Burn's `Backend`
//! trait (run on burn-ndarray, burn-flex or, with the `cuda` feature, burn-cuda, chosen at run
//! time), one file per model family mapping `config.json` onto the modules' own configs, and
//! the loader of Hugging Face model directories. It implements `sieve_engine::LanguageModel`,
//! so the generation loop of `sieve-engine` (which knows no tensor library) runs on it.
//!
//! The text side of a model directory (`config.json` read field by field, the tokenizer, the
//! chat template, `generation_config.json`) lives in `sieve-text`, which knows no Burn; this
//! crate builds on it and re-exports what its callers use ([`ConfigJson`], [`Tokenizer`],
//! [`ChatTemplate`], [`Message`], [`GenerationConfig`]).
//!
//! Data flows one way, and each module imports only those before it:
//!
//! ```text
//!  sieve_text      families                     model                     backend
//!  config.json ─► family_of ─► Family ────────► TransformerConfig ─load─► Model<B> ─► LoadedModel
//!  (ConfigJson)   (registry)   (llama, mistral,  (Attention/Mlp/Norm/      (KV cache)  (ndarray | flex
//!                               qwen2, qwen3,     Rope/Embedding configs)               | cuda)
//!  hf                           gemma2, gemma3)
//!  safetensors ─► Checkpoint ───────────────────────────────────────────┘
//!
//!  dir: ModelDir::open(path) ─► .tokenizer() ─► Tokenizer (sieve-text; reads tokenizer.json only)
//!                            └► .load(BackendKind) ─► LoadedModel ─► sieve_engine::generate
//! ```
//!
//! - [`hf`] reads the weights without knowing any family: [`Checkpoint`], and `config.json`'s
//!   sizes checked against it;
//! - [`families`] maps a `config.json` onto a [`TransformerConfig`]: [`Family`],
//!   [`FAMILIES`];
//! - [`model`] holds the transformer in small `XConfig` + `X` files and [`Model`], generic
//!   over the backend;
//! - [`backend`] picks the backend: [`BackendKind`], [`LoadedModel`];
//! - [`gguf`] reads GGUF files (llama.cpp's format, through `sieve-gguf`) as the same
//!   [`Checkpoint`] and `config.json`, so the families and the model load them unchanged;
//! - [`dir`] is the one loading path: [`ModelDir`] (a Hugging Face directory or a GGUF file).
//!
//! Errors are the one [`Error`] of this crate; those of the text side are `sieve_text::Error`
//! inside [`Error::Text`], with the same message.
//!
//! Correctness is defined by Hugging Face transformers: the tests compare the logits of tiny
//! random checkpoints made by `tools/make_fixtures.py` with those transformers computed.
#![warn(missing_docs)]

pub mod backend;
pub mod dir;
pub mod dtype;
mod error;
pub mod families;
pub mod gguf;
pub mod hf;
pub mod model;

pub use backend::{BackendKind, LoadedModel};
pub use dir::{ModelDir, MAX_PADDING};
pub use dtype::{KvDtype, WeightDtype};
pub use error::{Error, Result};
pub use families::{Family, FAMILIES};
pub use hf::Checkpoint;
pub use model::{Model, TransformerConfig};
pub use sieve_gguf::GgufModel;
/// The text side, re-exported from `sieve-text` for the callers that load a model too.
pub use sieve_text::{ChatTemplate, ConfigJson, GenerationConfig, Message, Tokenizer};

/// Sizes the thread pool the CPU backends compute on to `threads` threads (0: one per core,
/// the default when this is never called). Results do not depend on it: the kernels split work
/// over output columns and attention heads, never over a reduction.
///
/// # Errors
/// [`Error::Backend`] when the pool was already built (call it before loading a model).
pub fn set_threads(threads: usize) -> Result<()> {
    sieve_kernels::set_threads(threads).map_err(|e| Error::Backend {
        message: e.to_string(),
    })
}

/// The number of threads the CPU backends compute on.
pub fn threads() -> usize {
    sieve_kernels::threads()
}

//! # sieve-backends
//!
//! The model side of sieve: a Llama-family transformer written against Burn's `Backend`
//! trait (run on burn-ndarray, burn-flex or, with the `cuda` feature, burn-cuda, chosen at run
//! time), one file per model family mapping `config.json` onto the modules' own configs, the
//! loader of Hugging Face model directories, and the tokenizer. It implements
//! `sieve_engine::LanguageModel` and `sieve_engine::Detokenize`, so the generation loop of
//! `sieve-engine` (which knows no tensor library) runs on it.
//!
//! Data flows one way, and each module imports only those before it:
//!
//! ```text
//!  hf            families                     model                     backend
//!  config.json ─► family_of ─► Family ────────► TransformerConfig ─load─► Model<B> ─► LoadedModel
//!  (ConfigJson)   (registry)   (llama, mistral,  (Attention/Mlp/Norm/      (KV cache)  (ndarray | flex
//!                               qwen2, qwen3,     Rope/Embedding configs)               | cuda)
//!                               gemma2, gemma3)
//!  safetensors ─► Checkpoint ───────────────────────────────────────────┘
//!
//!  dir: ModelDir::open(path) ─► .tokenizer() ─► Tokenizer   (reads tokenizer.json only)
//!                            └► .load(BackendKind) ─► LoadedModel ─► sieve_engine::generate
//! ```
//!
//! - [`hf`] reads the files without knowing any family: [`ConfigJson`], [`Checkpoint`],
//!   [`GenerationConfig`];
//! - [`families`] maps a `config.json` onto a [`TransformerConfig`]: [`Family`],
//!   [`FAMILIES`];
//! - [`model`] holds the transformer in small `XConfig` + `X` files and [`Model`], generic
//!   over the backend;
//! - [`backend`] picks the backend: [`BackendKind`], [`LoadedModel`];
//! - [`dir`] is the one loading path: [`ModelDir`];
//! - [`tokenizer`] wraps `tokenizer.json`: [`Tokenizer`].
//!
//! Correctness is defined by Hugging Face transformers: the tests compare the logits of tiny
//! random checkpoints made by `tools/make_fixtures.py` with those transformers computed.
#![warn(missing_docs)]

pub mod backend;
pub mod chat_template;
pub mod dir;
pub mod dtype;
mod error;
pub mod families;
pub mod hf;
pub mod model;
pub mod tokenizer;

pub use backend::{BackendKind, LoadedModel};
pub use chat_template::{ChatTemplate, Message};
pub use dir::{ModelDir, MAX_PADDING};
pub use dtype::{KvDtype, WeightDtype};
pub use error::{Error, Result};
pub use families::{Family, FAMILIES};
pub use hf::{Checkpoint, ConfigJson, GenerationConfig};
pub use model::{Model, TransformerConfig};
pub use tokenizer::Tokenizer;

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

//! # sieve-backends
//!
//! The model side of sieve: a Llama-family transformer written against Burn's `Backend`
//! trait (run on burn-ndarray, burn-flex or, with the `cuda` feature, burn-cuda, chosen at run
//! time), the loader of Hugging Face model directories (`config.json`, safetensors weights,
//! `tokenizer.json`, `generation_config.json`), and the generation loop that joins a model to
//! a `sieve_core::Pipeline`.
//!
//! ```text
//! ModelDir::open(dir) ─► .load(BackendKind) ─► LoadedModel ──┐ (LogitsSource)
//!                     └► .tokenizer()        ─► Tokenizer  ──┼► generate(…, Pipeline, …)
//!                                                            └─► Generation { text, tokens, finish, stats }
//! ```
//!
//! - [`hf`] reads directories: [`ModelDir`], [`ModelConfig`], [`GenerationConfig`],
//!   [`Checkpoint`];
//! - [`model`] holds the transformer in small files and [`Model`], generic over the backend;
//! - [`backend`] picks the backend: [`BackendKind`], [`LoadedModel`];
//! - [`tokenizer`] wraps `tokenizer.json`: [`Tokenizer`];
//! - [`generate`](mod@generate) is the loop: [`generate()`], [`LogitsSource`],
//!   [`Detokenize`], stop strings and stats;
//! - [`bench`](mod@bench) times a model alone: [`time_model`].
//!
//! Correctness is defined by Hugging Face transformers: the tests compare the logits of tiny
//! random checkpoints made by `tools/make_fixtures.py` with those transformers computed.
#![warn(missing_docs)]

pub mod backend;
pub mod bench;
mod error;
pub mod generate;
pub mod hf;
pub mod model;
pub mod tokenizer;

pub use backend::{BackendKind, LoadedModel};
pub use bench::{time_model, ModelTimings};
pub use error::{Error, Result};
pub use generate::{
    generate, Detokenize, FinishReason, GenerateOptions, Generation, GenerationStats, LogitsSource,
};
pub use hf::{Checkpoint, GenerationConfig, ModelConfig, ModelDir};
pub use model::Model;
pub use tokenizer::Tokenizer;

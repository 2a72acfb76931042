//! The files of a Hugging Face model directory, read without knowing any model family:
//! `config.json` as a [`ConfigJson`] (a family reads its fields), the safetensors
//! [`Checkpoint`] (single file or sharded), and [`GenerationConfig`].

mod checkpoint;
mod files;
mod generation_config;
mod json;
mod sizes;

pub use checkpoint::{Checkpoint, INDEX_FILE, SINGLE_FILE};
pub(crate) use files::read_regular;
pub use generation_config::GenerationConfig;
pub use json::ConfigJson;
pub(crate) use json::OneOrMany;
pub(crate) use sizes::check_sizes;

/// Name of the model configuration file.
pub const CONFIG_FILE: &str = "config.json";
/// Name of the generation defaults file (optional).
pub const GENERATION_CONFIG_FILE: &str = "generation_config.json";
/// Name of the tokenizer file.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

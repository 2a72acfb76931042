//! The weights of a Hugging Face model directory, read without knowing any model family:
//! the safetensors [`Checkpoint`] (single file or sharded), and `config.json`'s sizes checked
//! against it. The directory's text files (`config.json` as a
//! [`ConfigJson`](sieve_text::ConfigJson), `generation_config.json`, the tokenizer, the chat
//! template) are read by `sieve-text`.

mod checkpoint;
mod safetensors;
mod sizes;

pub use checkpoint::{Checkpoint, INDEX_FILE, SINGLE_FILE};
pub(crate) use sizes::check_sizes;

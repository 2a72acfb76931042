//! Reading a Hugging Face model directory: `config.json`, the safetensors checkpoint
//! (single file or sharded), `generation_config.json`; [`ModelDir`] opens one.

mod checkpoint;
mod config;
mod generation_config;
mod json;
mod rope_scaling;

use std::path::{Path, PathBuf};

pub use checkpoint::{Checkpoint, INDEX_FILE, SINGLE_FILE};
pub use config::{Architecture, ModelConfig};
pub use generation_config::GenerationConfig;
pub use rope_scaling::RopeScaling;

use crate::backend::{BackendKind, LoadedModel};
use crate::tokenizer::Tokenizer;
use crate::Result;

/// Name of the model configuration file.
pub const CONFIG_FILE: &str = "config.json";
/// Name of the generation defaults file (optional).
pub const GENERATION_CONFIG_FILE: &str = "generation_config.json";
/// Name of the tokenizer file.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// A Hugging Face model directory whose configuration has been read and validated; the
/// weights and the tokenizer are read when asked for.
#[derive(Debug, Clone)]
pub struct ModelDir {
    path: PathBuf,
    config: ModelConfig,
    generation: GenerationConfig,
}

impl ModelDir {
    /// Reads `config.json` (required) and `generation_config.json` (optional) of `path`.
    ///
    /// # Errors
    /// [`crate::Error::MissingFile`] when `config.json` is absent, and the errors of
    /// [`ModelConfig::from_file`] and [`GenerationConfig::from_file`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let config = ModelConfig::from_file(&path.join(CONFIG_FILE))?;
        let generation = GenerationConfig::from_file(&path.join(GENERATION_CONFIG_FILE))?;
        Ok(ModelDir {
            path,
            config,
            generation,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The validated `config.json`.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// `generation_config.json` (empty when absent).
    pub fn generation(&self) -> &GenerationConfig {
        &self.generation
    }

    /// The end-of-sequence ids: those of `generation_config.json` when it names any (it is
    /// what transformers' `generate` uses), else those of `config.json`.
    pub fn eos_ids(&self) -> Vec<u32> {
        if self.generation.eos_token_ids.is_empty() {
            self.config.eos_token_ids.clone()
        } else {
            self.generation.eos_token_ids.clone()
        }
    }

    /// Loads `tokenizer.json`.
    ///
    /// # Errors
    /// As [`Tokenizer::from_file`].
    pub fn tokenizer(&self) -> Result<Tokenizer> {
        Tokenizer::from_file(&self.path.join(TOKENIZER_FILE))
    }

    /// Opens the checkpoint (every safetensors file is read into memory).
    ///
    /// # Errors
    /// As [`Checkpoint::open`].
    pub fn checkpoint(&self) -> Result<Checkpoint> {
        Checkpoint::open(&self.path)
    }

    /// Loads the weights onto the backend `kind`.
    ///
    /// # Errors
    /// [`crate::Error::BackendUnavailable`] first, then the checkpoint's errors.
    pub fn load(&self, kind: BackendKind) -> Result<LoadedModel> {
        LoadedModel::load(self, kind)
    }
}

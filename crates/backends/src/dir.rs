//! [`ModelDir`]: the one way in. Opening a Hugging Face directory reads only its small JSON
//! files and resolves the model family; the tokenizer and the weights are read when asked
//! for, so a caller can check a sampler pipeline against the vocabulary before it loads any
//! weight.
//!
//! ```text
//! ModelDir::open(dir)   config.json ─► family_of ─► Family::transformer_config ─► TransformerConfig
//!                       generation_config.json ─► GenerationConfig
//!   .tokenizer()        tokenizer.json ─► Tokenizer (and .vocab(&tokenizer) for the stages)
//!   .load(kind)         Checkpoint ─► LoadedModel::from_checkpoint ─► Model<B> on the backend
//! ```

use std::path::{Path, PathBuf};

use sieve_core::Vocab;

use crate::backend::{BackendKind, LoadedModel};
use crate::chat_template::ChatTemplate;
use crate::families::{family_of, Family};
use crate::hf::{
    Checkpoint, ConfigJson, GenerationConfig, OneOrMany, CONFIG_FILE, GENERATION_CONFIG_FILE,
    TOKENIZER_FILE,
};
use crate::model::TransformerConfig;
use crate::tokenizer::Tokenizer;
use crate::Result;

/// A Hugging Face model directory whose configuration has been read and validated; the
/// tokenizer and the weights are read when asked for.
#[derive(Debug, Clone)]
pub struct ModelDir {
    path: PathBuf,
    family: &'static dyn Family,
    transformer: TransformerConfig,
    bos_token_id: Option<u32>,
    eos_token_ids: Vec<u32>,
    generation: GenerationConfig,
}

impl ModelDir {
    /// Reads `config.json` (required) and `generation_config.json` (optional) of `path`, and
    /// maps the config through its family. Reads no other file.
    ///
    /// # Errors
    /// [`crate::Error::MissingFile`] when `config.json` is absent, [`crate::Error::Json`]
    /// naming a malformed file and field, [`crate::Error::UnknownArchitecture`], and the
    /// family's [`crate::Error::InvalidConfig`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let config = ConfigJson::from_file(&path.join(CONFIG_FILE))?;
        let family = family_of(&config)?;
        let transformer = family.transformer_config(&config)?;
        let bos_token_id = config.get("bos_token_id")?;
        let eos_token_ids = config
            .get::<OneOrMany>("eos_token_id")?
            .map(OneOrMany::into_vec)
            .unwrap_or_default();
        let generation = GenerationConfig::from_file(&path.join(GENERATION_CONFIG_FILE))?;
        Ok(ModelDir {
            path,
            family,
            transformer,
            bos_token_id,
            eos_token_ids,
            generation,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model family `config.json` names.
    pub fn family(&self) -> &'static dyn Family {
        self.family
    }

    /// What the transformer is made of, as the family read it.
    pub fn transformer_config(&self) -> &TransformerConfig {
        &self.transformer
    }

    /// The model's vocabulary size (the logits length; may exceed the tokenizer's).
    pub fn vocab_size(&self) -> usize {
        self.transformer.vocab_size()
    }

    /// The context length (`max_position_embeddings`).
    pub fn context_len(&self) -> usize {
        self.transformer.context_len
    }

    /// `generation_config.json` (empty when absent).
    pub fn generation(&self) -> &GenerationConfig {
        &self.generation
    }

    /// `bos_token_id` of `generation_config.json`, else of `config.json`.
    pub fn bos_id(&self) -> Option<u32> {
        self.generation.bos_token_id.or(self.bos_token_id)
    }

    /// The end-of-sequence ids: those of `generation_config.json` when it names any (it is
    /// what transformers' `generate` uses), else those of `config.json`.
    pub fn eos_ids(&self) -> Vec<u32> {
        if self.generation.eos_token_ids.is_empty() {
            self.eos_token_ids.clone()
        } else {
            self.generation.eos_token_ids.clone()
        }
    }

    /// Reads the chat template (`chat_template.jinja`, else `tokenizer_config.json`'s
    /// `chat_template`) and the special tokens it may refer to.
    ///
    /// # Errors
    /// As [`ChatTemplate::from_dir`].
    pub fn chat_template(&self) -> Result<ChatTemplate> {
        ChatTemplate::from_dir(&self.path)
    }

    /// Loads `tokenizer.json` (and no other file).
    ///
    /// # Errors
    /// As [`Tokenizer::from_file`].
    pub fn tokenizer(&self) -> Result<Tokenizer> {
        Tokenizer::from_file(&self.path.join(TOKENIZER_FILE))
    }

    /// The vocabulary the sampler stages see: every token's bytes for the model's vocabulary
    /// size, and [`ModelDir::eos_ids`].
    pub fn vocab(&self, tokenizer: &Tokenizer) -> Vocab {
        tokenizer.vocab(self.vocab_size(), self.eos_ids())
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
    /// [`crate::Error::BackendUnavailable`] (checked before anything is read), then the
    /// errors of [`Checkpoint::open`] and [`TransformerConfig::load`].
    pub fn load(&self, kind: BackendKind) -> Result<LoadedModel> {
        self.load_with_progress(kind, |_, _| {})
    }

    /// [`ModelDir::load`], calling `on_progress(done, total)` (bytes of tensor data) as the
    /// weights are read, for a progress bar.
    ///
    /// # Errors
    /// As [`ModelDir::load`].
    pub fn load_with_progress(
        &self,
        kind: BackendKind,
        on_progress: impl Fn(u64, u64) + 'static,
    ) -> Result<LoadedModel> {
        kind.check_available()?;
        let checkpoint = self.checkpoint()?.with_progress(on_progress);
        LoadedModel::from_checkpoint(kind, self.transformer.clone(), &checkpoint)
    }
}

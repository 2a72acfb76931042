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
//!
//! A GGUF file (`model.gguf`, a directory holding one and no `config.json`, or the first shard
//! of a split) opens the same way: its metadata becomes the `config.json` the families read,
//! its tensors the [`Checkpoint`], its `tokenizer.*` keys the tokenizer, the chat template and
//! the end-of-generation ids (see [`crate::gguf`]); it has no generation config (the
//! defaults apply).

use std::path::{Path, PathBuf};

use sieve_core::Vocab;
use sieve_text::{
    ChatTemplate, ConfigJson, GenerationConfig, Tokenizer, CONFIG_FILE, GENERATION_CONFIG_FILE,
    TOKENIZER_FILE,
};

use crate::backend::{BackendKind, LoadedModel};
use crate::dtype::WeightDtype;
use crate::families::{family_of, Family};
use crate::gguf::find::gguf_in_dir;
use crate::gguf::{Arch, GgufTensors};
use crate::hf::{check_sizes, Checkpoint};
use crate::model::TransformerConfig;
use crate::Result;
use sieve_gguf::GgufModel;

/// The number of vocabulary rows without a token that always count as padding (see
/// [`ModelDir::tokenizer`]).
pub const MAX_PADDING: usize = 128;

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
    /// The GGUF model and its architecture, when the path is one.
    gguf: Option<(GgufModel, Arch)>,
}

impl ModelDir {
    /// Reads `config.json` (required) and `generation_config.json` (optional) of `path`,
    /// checks `config.json`'s sizes against the checkpoint's tensor headers (the weights are
    /// mapped, not read; a directory without weights is checked against fixed limits), and
    /// maps the config through its family. Nothing proportional to a size of `config.json` is
    /// allocated before it is checked.
    ///
    /// # Errors
    /// [`sieve_text::Error::MissingFile`] when `config.json` is absent, [`sieve_text::Error::Json`]
    /// naming a malformed file and field, [`crate::Error::UnknownArchitecture`], the errors
    /// of [`Checkpoint::open`] for a checkpoint that is present but bad, and
    /// [`sieve_text::Error::InvalidConfig`] (a size the tensors contradict, or the family's).
    ///
    /// A path that is a file, or a directory without `config.json` holding one `.gguf` file
    /// (or one split set), opens as a GGUF model ([`ModelDir::open_gguf`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if path.is_file() {
            return ModelDir::open_gguf(&path);
        }
        if path.is_dir() && path.join(CONFIG_FILE).symlink_metadata().is_err() {
            if let Some(file) = gguf_in_dir(&path)? {
                return ModelDir::open_gguf(&file);
            }
        }
        let config = ConfigJson::from_file(&path.join(CONFIG_FILE))?;
        let family = family_of(&config)?;
        let checkpoint = match Checkpoint::open(&path) {
            Ok(c) => Some(c),
            Err(crate::Error::Text(sieve_text::Error::MissingFile { path: missing }))
                if missing == path.join(crate::hf::SINGLE_FILE) =>
            {
                None
            }
            Err(e) => return Err(e),
        };
        check_sizes(&config, checkpoint.as_ref())?;
        drop(checkpoint);
        let transformer = family.transformer_config(&config)?;
        let bos_token_id = config.get("bos_token_id")?;
        let eos_token_ids = config.eos_token_ids()?;
        let generation = GenerationConfig::from_file(&path.join(GENERATION_CONFIG_FILE))?;
        Ok(ModelDir {
            path,
            family,
            transformer,
            bos_token_id,
            eos_token_ids,
            generation,
            gguf: None,
        })
    }

    /// Opens the GGUF file `file` (and, for the first shard of a split, the other shards):
    /// checks its header, reads its `{arch}.*` metadata as a `config.json` and maps it
    /// through the family, and checks the sizes against its tensors. No tensor data is read.
    ///
    /// # Errors
    /// [`crate::Error::Gguf`] for a file that is not valid GGUF or a metadata key of the
    /// wrong type or absent, [`crate::Error::UnsupportedGguf`] for an architecture or value
    /// the families cannot express, and the family's errors.
    pub fn open_gguf(file: &Path) -> Result<Self> {
        let model = GgufModel::open(file)?;
        let arch = crate::gguf::config::arch_of(model.metadata(), model.first().path())?;
        let config = crate::gguf::config::config_json(&model, arch)?;
        let family = family_of(&config)?;
        let heads = (
            config.get::<usize>("num_attention_heads")?.unwrap_or(0),
            config.get::<usize>("num_key_value_heads")?.unwrap_or(0),
        );
        let checkpoint = Checkpoint::from_gguf(GgufTensors::new(model.clone(), arch, heads)?);
        check_sizes(&config, Some(&checkpoint))?;
        drop(checkpoint);
        let mut transformer = family.transformer_config(&config)?;
        crate::gguf::adjust(&mut transformer, arch);
        Ok(ModelDir {
            path: model.first().path().to_path_buf(),
            family,
            transformer,
            bos_token_id: config.get("bos_token_id")?,
            eos_token_ids: crate::gguf::eos_ids(&model)?,
            generation: GenerationConfig::default(),
            gguf: Some((model, arch)),
        })
    }

    /// The GGUF model, when the path opened is one.
    pub fn gguf(&self) -> Option<&GgufModel> {
        self.gguf.as_ref().map(|(m, _)| m)
    }

    /// The directory (the file, for a GGUF model: its first shard).
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
        self.generation.eos_ids_or(&self.eos_token_ids)
    }

    /// Reads the chat template (`chat_template.jinja`, else `tokenizer_config.json`'s
    /// `chat_template`; for a GGUF model `tokenizer.chat_template`) and the special tokens it
    /// may refer to.
    ///
    /// # Errors
    /// As [`ChatTemplate::from_dir`].
    pub fn chat_template(&self) -> Result<ChatTemplate> {
        if let Some((model, _)) = &self.gguf {
            return crate::gguf::chat_template(model);
        }
        Ok(ChatTemplate::from_dir(&self.path)?)
    }

    /// Loads `tokenizer.json` (and no other file; for a GGUF model, builds the tokenizer from
    /// its `tokenizer.ggml.*` metadata with [`sieve_text::gguf_tokenizer`]), and checks that
    /// it can decode the ids the model emits.
    ///
    /// Checkpoints commonly pad their vocabulary past the tokenizer's (Qwen2 pads 151 665
    /// tokens to 151 936 rows, Phi-3 32 011 to 32 064) so that the matrices have friendly
    /// sizes; those rows are never trained to win and decode to nothing. The rule: the ids the
    /// tokenizer lacks are padding when there are at most [`MAX_PADDING`] of them or at most
    /// a sixteenth of `vocab_size`, whichever is more; more than that is a tokenizer of
    /// another model, refused.
    ///
    /// # Errors
    /// As [`Tokenizer::from_file`]; [`crate::Error::TokenizerTooSmall`].
    pub fn tokenizer(&self) -> Result<Tokenizer> {
        let (path, tokenizer) = match &self.gguf {
            Some((model, _)) => (self.path.clone(), crate::gguf::tokenizer(model)?),
            None => {
                let path = self.path.join(TOKENIZER_FILE);
                let tokenizer = Tokenizer::from_file(&path)?;
                (path, tokenizer)
            }
        };
        let vocab_size = self.vocab_size();
        let known = tokenizer.vocab_size();
        let padding = MAX_PADDING.max(vocab_size / 16);
        if known < vocab_size && vocab_size - known > padding {
            return Err(crate::Error::TokenizerTooSmall {
                path,
                tokenizer: known,
                vocab_size,
                detail: format!(
                    "; {} ids without a token are more than the {padding} that would be padding",
                    vocab_size - known
                ),
            });
        }
        Ok(tokenizer)
    }

    /// The vocabulary the sampler stages see: every token's bytes for the model's vocabulary
    /// size, and [`ModelDir::eos_ids`].
    pub fn vocab(&self, tokenizer: &Tokenizer) -> Vocab {
        tokenizer.vocab(self.vocab_size(), self.eos_ids())
    }

    /// Bytes of weights one decode step reads on the host kernels when the matrices are kept
    /// in `dtype` ([`WeightDtype::Auto`]: as the checkpoint stores them, a quantized matrix at
    /// the size of its blocks, a bf16 one at 2 bytes a weight; `--dtype`/`--quantize`: the
    /// size [`WeightDtype::matrix_bytes`] gives): every tensor the model loads once, except
    /// the embedding, whose one row a step reads is left out (as
    /// [`TransformerConfig::weights_read_per_token`] leaves it) — unless it is also the
    /// (tied) output projection, which reads all of it. Divided by the memory read bandwidth,
    /// the floor of a decode step's time.
    ///
    /// # Errors
    /// As [`ModelDir::checkpoint`].
    pub fn bytes_read_per_token(&self, dtype: WeightDtype) -> Result<u64> {
        let checkpoint = self.checkpoint()?;
        const EMBEDDING: &str = "model.embed_tokens.weight";
        const OUTPUT: &str = "lm_head.weight";
        let tied = self.transformer.embedding.tied;
        let loaded = |name: &str, shape: &[usize]| -> Result<u64> {
            let stored = checkpoint.stored_bytes(name).unwrap_or(0);
            Ok(match (dtype, shape) {
                (WeightDtype::Auto, _) | (_, [_]) => stored,
                (_, &[rows, cols]) => {
                    let kept = checkpoint.weights_dtype(name, rows, cols)?;
                    dtype.matrix_bytes(kept, rows, cols) as u64
                }
                _ => stored,
            })
        };
        let mut total = 0;
        for (_, name, shape) in checkpoint.shapes() {
            let read = match name {
                OUTPUT => !tied,
                EMBEDDING => tied,
                _ => true,
            };
            if read {
                total += loaded(name, shape)?;
            }
        }
        Ok(total)
    }

    /// Opens the checkpoint (every safetensors file is memory-mapped and its header checked;
    /// a GGUF model's tensors under Hugging Face names).
    ///
    /// # Errors
    /// As [`Checkpoint::open`].
    pub fn checkpoint(&self) -> Result<Checkpoint> {
        if let Some((model, arch)) = &self.gguf {
            let heads = self.transformer.layers.first().map_or((0, 0), |l| {
                (l.attention.num_heads, l.attention.num_kv_heads)
            });
            return Ok(Checkpoint::from_gguf(GgufTensors::new(
                model.clone(),
                *arch,
                heads,
            )?));
        }
        Checkpoint::open(&self.path)
    }

    /// Loads the weights onto the backend `kind`, in the checkpoint's own dtype.
    ///
    /// # Errors
    /// [`crate::Error::BackendUnavailable`] (checked before anything is read), then the
    /// errors of [`Checkpoint::open`] and [`TransformerConfig::load`].
    pub fn load(&self, kind: BackendKind) -> Result<LoadedModel> {
        self.load_with_progress(kind, WeightDtype::Auto, |_, _| {})
    }

    /// [`ModelDir::load`] with the weight matrices in `dtype` (see [`WeightDtype`]), calling
    /// `on_progress(done, total)` (bytes of tensor data) as the weights are read, for a
    /// progress bar.
    ///
    /// # Errors
    /// As [`ModelDir::load`], and [`crate::Error::DtypeUnavailable`] for `bf16`/`f16` on a
    /// backend that computes in `f32` tensors (CUDA).
    pub fn load_with_progress(
        &self,
        kind: BackendKind,
        dtype: WeightDtype,
        on_progress: impl Fn(u64, u64) + 'static,
    ) -> Result<LoadedModel> {
        kind.check_available()?;
        kind.check_dtype(dtype)?;
        let checkpoint = self
            .checkpoint()?
            .with_progress(on_progress)
            .with_weight_dtype(dtype);
        LoadedModel::from_checkpoint(kind, self.transformer.clone(), &checkpoint)
    }
}

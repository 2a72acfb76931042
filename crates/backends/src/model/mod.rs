//! The transformer, generic over the Burn [`Backend`], in one small file per concept
//! (candle's layout): [`linear`], [`norm`], [`embedding`], [`rope`], [`mask`], [`attention`],
//! [`mlp`], [`block`], [`cache`], [`transformer`]; [`Model`] joins the weights to a KV cache
//! and reads logits back to the host.
//!
//! Each module follows Burn's `XConfig` + `X` pattern: a small plain config
//! ([`LinearConfig`], [`NormConfig`], [`EmbeddingConfig`], [`RopeConfig`],
//! [`AttentionConfig`], [`MlpConfig`], [`DecoderLayerConfig`], [`TransformerConfig`]) whose
//! `load`/`init` builds the module from a checkpoint, and `X::forward` with a `# Shapes`
//! section. No module reads `config.json`: a model family (`crate::families`) maps it onto
//! these configs.
//!
//! Everything runs in `f32`; checkpoints in `f16`/`bf16` are widened on load. Batch size is 1.

pub mod attention;
pub mod block;
pub mod cache;
pub mod embedding;
pub mod linear;
mod loader;
pub mod mask;
pub mod mlp;
pub mod norm;
pub mod rope;
pub mod transformer;

use burn_tensor::backend::Backend;
use burn_tensor::{Int, Tensor, TensorData};
use sieve_engine::LanguageModel;

pub use attention::AttentionConfig;
pub use block::DecoderLayerConfig;
pub use embedding::EmbeddingConfig;
pub use linear::LinearConfig;
pub use mlp::{Activation, MlpConfig};
pub use norm::NormConfig;
pub use rope::{RopeConfig, RopeScaling};
pub use transformer::TransformerConfig;

use crate::hf::Checkpoint;
use crate::{Error, Result};
use cache::KvCache;
use transformer::{Positions, Transformer};

/// A loaded model with its KV cache on one device: feed tokens, get logits.
///
/// Prefill feeds the whole prompt in one forward pass; each later call feeds the new tokens
/// against the cache.
#[derive(Debug)]
pub struct Model<B: Backend> {
    transformer: Transformer<B>,
    cache: KvCache<B>,
    config: TransformerConfig,
    device: B::Device,
}

impl<B: Backend> Model<B> {
    /// Builds the model of `config` from an opened checkpoint, with an empty cache.
    ///
    /// # Errors
    /// As [`TransformerConfig::load`].
    pub fn from_checkpoint(
        config: TransformerConfig,
        checkpoint: &Checkpoint,
        device: B::Device,
    ) -> Result<Self> {
        let transformer = config.load(checkpoint, &device)?;
        let cache = KvCache::new(config.layers.len());
        Ok(Model {
            transformer,
            cache,
            config,
            device,
        })
    }

    /// What the model is made of.
    pub fn config(&self) -> &TransformerConfig {
        &self.config
    }

    /// The device the weights live on.
    pub fn device(&self) -> &B::Device {
        &self.device
    }

    /// Number of tokens in the cache (the position of the next token fed).
    pub fn position(&self) -> usize {
        self.cache.len()
    }

    /// Empties the cache: the next call starts a new sequence at position 0.
    pub fn reset(&mut self) {
        self.cache.clear();
    }

    /// Forgets every position from `len` on (see [`KvCache::truncate`]).
    pub fn truncate(&mut self, len: usize) {
        self.cache.truncate(len);
    }

    /// Feeds `tokens` after those already cached and returns the logits of the token that
    /// follows the last of them (`vocab_size` values).
    ///
    /// # Errors
    /// [`Error::EmptyPrompt`] for no token, [`Error::TokenOutOfRange`],
    /// [`Error::ContextOverflow`] past `max_position_embeddings`, [`Error::Backend`] when the
    /// device fails. On error nothing is appended to the cache.
    pub fn forward_last(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let ids = self.ids(tokens)?;
        let logits = self
            .transformer
            .forward(ids, &mut self.cache, Positions::Last);
        read_f32(logits)
    }

    /// Feeds `tokens` after those already cached and returns the logits at every one of
    /// their positions: row `i` predicts the token after `tokens[i]`.
    ///
    /// # Errors
    /// As [`Model::forward_last`].
    pub fn forward_all(&mut self, tokens: &[u32]) -> Result<Vec<Vec<f32>>> {
        let ids = self.ids(tokens)?;
        let logits = self
            .transformer
            .forward(ids, &mut self.cache, Positions::All);
        let flat = read_f32(logits)?;
        Ok(flat
            .chunks_exact(self.config.vocab_size())
            .map(<[f32]>::to_vec)
            .collect())
    }

    /// Checks `tokens` and moves them to the device.
    fn ids(&self, tokens: &[u32]) -> Result<Tensor<B, 1, Int>> {
        if tokens.is_empty() {
            return Err(Error::EmptyPrompt);
        }
        let vocab_size = self.config.vocab_size();
        if let Some(&token) = tokens.iter().find(|&&t| t as usize >= vocab_size) {
            return Err(Error::TokenOutOfRange { token, vocab_size });
        }
        let context = self.config.context_len;
        let total = self.cache.len() + tokens.len();
        if total > context {
            return Err(Error::ContextOverflow {
                tokens: total,
                context,
            });
        }
        let ids: Vec<i64> = tokens.iter().map(|&t| i64::from(t)).collect();
        Ok(Tensor::from_data(
            TensorData::new(ids, [tokens.len()]),
            &self.device,
        ))
    }
}

/// Reads a float tensor back to the host, in row-major order.
fn read_f32<B: Backend, const D: usize>(t: Tensor<B, D>) -> Result<Vec<f32>> {
    let data = t.try_into_data().map_err(|e| Error::Backend {
        message: format!("{e:?}"),
    })?;
    data.into_vec::<f32>().map_err(|e| Error::Backend {
        message: format!("{e:?}"),
    })
}

impl<B: Backend> LanguageModel for Model<B> {
    fn vocab_size(&self) -> usize {
        self.config.vocab_size()
    }

    fn context_len(&self) -> usize {
        self.config.context_len
    }

    fn position(&self) -> usize {
        Model::position(self)
    }

    fn reset(&mut self) {
        Model::reset(self);
    }

    fn truncate(&mut self, len: usize) {
        Model::truncate(self, len);
    }

    fn forward(&mut self, tokens: &[u32]) -> sieve_engine::Result<Vec<f32>> {
        self.forward_last(tokens).map_err(Into::into)
    }
}

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
//! Activations are `f32`. On the CPU backends ([`Kernels::Host`]) the linear layers multiply
//! the checkpoint's memory-mapped bytes in place (f32, bf16 or f16, widened in registers,
//! accumulated in f32) and attention runs on a host KV cache, both with `sieve-kernels`' fixed
//! reduction order; the attention and MLP sublayers then do their elementwise work (RoPE,
//! per-head norms, the gate's activation) as plain loops over the host rows, reading the
//! sublayer's input back once and making one tensor of its output, rather than through Burn
//! tensor ops on strided views. On CUDA the weights are widened to `f32` tensors on load. A forward pass
//! runs the new tokens of one or several sequences ([`Model`] as a `BatchModel`): their rows go
//! through every projection together, attention runs per sequence on its own cache.

pub mod attention;
pub mod block;
pub mod cache;
pub mod embedding;
pub mod kernels;
mod kv_elements;
pub mod linear;
mod loader;
pub mod mask;
pub mod mlp;
pub mod norm;
pub mod rope;
pub mod transformer;

use burn_tensor::backend::Backend;
use burn_tensor::{Int, Tensor, TensorData};
use sieve_engine::{BatchModel, Error as EngineError, Feed, LanguageModel, LogitsAt, SeqId};

pub use attention::AttentionConfig;
pub use block::DecoderLayerConfig;
pub use embedding::EmbeddingConfig;
pub use kernels::Kernels;
pub use linear::LinearConfig;
pub use mlp::{Activation, MlpConfig};
pub use norm::NormConfig;
pub use rope::{RopeConfig, RopeScaling};
pub use transformer::TransformerConfig;

use crate::dtype::KvDtype;
use crate::hf::Checkpoint;
use crate::{Error, Result};
use cache::KvCache;
use transformer::{Positions, SeqInput, Transformer};

/// A loaded model with its KV caches on one device: feed tokens, get logits.
///
/// Prefill feeds the whole prompt in one forward pass; each later call feeds the new tokens
/// against the cache. The single-sequence methods ([`Model::forward_last`],
/// [`Model::forward_all`], [`LanguageModel`]) drive one sequence; [`BatchModel`] drives any
/// number of others, several per forward pass.
#[derive(Debug)]
pub struct Model<B: Backend> {
    transformer: Transformer<B>,
    /// The sequence of the single-sequence methods ([`Model::forward_last`],
    /// [`LanguageModel`]).
    cache: KvCache<B>,
    /// The sequences of [`BatchModel`], by [`SeqId`]: `None` is a free slot.
    pool: Vec<Option<KvCache<B>>>,
    /// See [`Model::weights_dtype`].
    weights_dtype: sieve_kernels::Dtype,
    /// See [`Model::set_kv_dtype`].
    kv_dtype: KvDtype,
    kernels: Kernels,
    config: TransformerConfig,
    device: B::Device,
}

impl<B: Backend> Model<B> {
    /// Builds the model of `config` from an opened checkpoint, computed by `kernels`, with an
    /// empty cache.
    ///
    /// # Errors
    /// As [`TransformerConfig::load`].
    pub fn from_checkpoint(
        config: TransformerConfig,
        checkpoint: &Checkpoint,
        device: B::Device,
        kernels: Kernels,
    ) -> Result<Self> {
        let transformer = config.load(checkpoint, &device, kernels)?;
        let weights_dtype = match kernels {
            Kernels::Host => checkpoint.weights_dtype(
                "model.embed_tokens.weight",
                config.vocab_size(),
                config.hidden_size(),
            )?,
            Kernels::Backend => sieve_kernels::Dtype::F32,
        };
        let kv_dtype = KvDtype::default();
        let cache = KvCache::new(config.layers.len(), config.context_len, kv_dtype);
        Ok(Model {
            transformer,
            cache,
            pool: Vec::new(),
            weights_dtype,
            kv_dtype,
            kernels,
            config,
            device,
        })
    }

    /// Who computes the model (the host path or the Burn path).
    pub fn kernels(&self) -> Kernels {
        self.kernels
    }

    /// What the model is made of.
    pub fn config(&self) -> &TransformerConfig {
        &self.config
    }

    /// The element type the weight matrices are kept in: the checkpoint's (or `--dtype`'s)
    /// on the host kernels, which read it in place; `f32` on a backend's own kernels
    /// (widened on load).
    pub fn weights_dtype(&self) -> sieve_kernels::Dtype {
        self.weights_dtype
    }

    /// Keeps the keys and values of every cache opened from now on as `dtype` (see
    /// [`KvDtype`]), and empties the single-sequence cache; sequences already open keep
    /// theirs.
    ///
    /// # Errors
    /// [`Error::KvDtypeUnavailable`] for `bf16`/`f16` when the model computes on a backend's
    /// own kernels (CUDA), whose cache is `f32` tensors.
    pub fn set_kv_dtype(&mut self, dtype: KvDtype) -> Result<()> {
        if self.kernels == Kernels::Backend && dtype != KvDtype::F32 {
            return Err(Error::KvDtypeUnavailable {
                dtype: dtype.name(),
            });
        }
        self.kv_dtype = dtype;
        self.cache = self.new_cache();
        Ok(())
    }

    /// How caches opened now keep keys and values.
    pub fn kv_dtype(&self) -> KvDtype {
        self.kv_dtype
    }

    /// An empty cache for one sequence.
    fn new_cache(&self) -> KvCache<B> {
        KvCache::new(
            self.config.layers.len(),
            self.config.context_len,
            self.kv_dtype,
        )
    }

    /// Bytes one weight takes in memory: the size of [`Model::weights_dtype`].
    pub fn bytes_per_weight(&self) -> usize {
        self.weights_dtype.size()
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
    /// [`Error::Engine`] for no token or past `max_position_embeddings` (the prompt check,
    /// [`sieve_engine::check_prompt`]), [`Error::TokenOutOfRange`], [`Error::Backend`] when the
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

    /// Checks `tokens` for the single sequence and moves them to the device.
    fn ids(&self, tokens: &[u32]) -> Result<Tensor<B, 1, Int>> {
        self.check(tokens, self.cache.len())?;
        Ok(self.to_device(tokens))
    }

    /// Checks that `tokens` may be appended to a sequence holding `held` positions.
    fn check(&self, tokens: &[u32], held: usize) -> Result<()> {
        sieve_engine::check_prompt(tokens, held, self.config.context_len)?;
        let vocab_size = self.config.vocab_size();
        if let Some(&token) = tokens.iter().find(|&&t| t as usize >= vocab_size) {
            return Err(Error::TokenOutOfRange { token, vocab_size });
        }
        Ok(())
    }

    /// Moves token ids to the device.
    fn to_device(&self, tokens: &[u32]) -> Tensor<B, 1, Int> {
        let ids: Vec<i64> = tokens.iter().map(|&t| i64::from(t)).collect();
        Tensor::from_data(TensorData::new(ids, [tokens.len()]), &self.device)
    }

    /// The cache of `seq` in the pool.
    fn pooled(&self, seq: SeqId) -> sieve_engine::Result<&KvCache<B>> {
        self.pool
            .get(seq.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(EngineError::UnknownSequence(seq))
    }

    /// Puts `cache` in the first free slot of the pool.
    fn insert(&mut self, cache: KvCache<B>) -> SeqId {
        let slot = match self.pool.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                self.pool.push(None);
                self.pool.len() - 1
            }
        };
        self.pool[slot] = Some(cache);
        SeqId(slot as u32)
    }

    /// Checks every feed of a step before anything runs, so that a bad one changes no
    /// sequence.
    fn check_feeds(&self, feeds: &[Feed<'_>]) -> sieve_engine::Result<()> {
        for (i, feed) in feeds.iter().enumerate() {
            let held = self.pooled(feed.seq)?.len();
            if feeds[..i].iter().any(|f| f.seq == feed.seq) {
                return Err(EngineError::DuplicateSequence(feed.seq));
            }
            self.check(feed.tokens, held)?;
        }
        Ok(())
    }
}

impl<B: Backend> BatchModel for Model<B> {
    fn vocab_size(&self) -> usize {
        self.config.vocab_size()
    }

    fn context_len(&self) -> usize {
        self.config.context_len
    }

    fn open(&mut self) -> SeqId {
        let cache = self.new_cache();
        self.insert(cache)
    }

    fn fork(&mut self, seq: SeqId) -> sieve_engine::Result<SeqId> {
        self.pooled(seq)?;
        let copy = match self.pool.get_mut(seq.0 as usize) {
            Some(Some(cache)) => cache.fork(),
            _ => unreachable!("pooled above"),
        };
        Ok(self.insert(copy))
    }

    fn close(&mut self, seq: SeqId) {
        if let Some(slot) = self.pool.get_mut(seq.0 as usize) {
            *slot = None;
        }
        while self.pool.last().is_some_and(Option::is_none) {
            self.pool.pop();
        }
    }

    fn position(&self, seq: SeqId) -> sieve_engine::Result<usize> {
        Ok(self.pooled(seq)?.len())
    }

    fn truncate(&mut self, seq: SeqId, len: usize) -> sieve_engine::Result<()> {
        self.pooled(seq)?;
        if let Some(Some(cache)) = self.pool.get_mut(seq.0 as usize) {
            cache.truncate(len);
        }
        Ok(())
    }

    fn reserve(&mut self, seq: SeqId, positions: usize) {
        if let Some(Some(cache)) = self.pool.get_mut(seq.0 as usize) {
            cache.reserve(positions);
        }
    }

    fn step(&mut self, feeds: &[Feed<'_>]) -> sieve_engine::Result<Vec<Vec<f32>>> {
        self.check_feeds(feeds)?;
        if feeds.is_empty() {
            return Ok(Vec::new());
        }
        let tokens: Vec<u32> = feeds.iter().flat_map(|f| f.tokens).copied().collect();
        let ids = self.to_device(&tokens);
        // Take the caches out of the pool for the pass, and put them back after.
        let mut caches: Vec<KvCache<B>> = feeds
            .iter()
            .map(|f| {
                self.pool[f.seq.0 as usize]
                    .take()
                    .unwrap_or_else(|| unreachable!())
            })
            .collect();
        let mut seqs: Vec<SeqInput<'_, B>> = caches
            .iter_mut()
            .zip(feeds)
            .map(|(cache, feed)| SeqInput {
                rows: feed.tokens.len(),
                cache,
                positions: match feed.logits {
                    LogitsAt::Last => Positions::Last,
                    LogitsAt::All => Positions::All,
                },
            })
            .collect();
        let logits = self.transformer.forward_batch(ids, &mut seqs);
        for (cache, feed) in caches.into_iter().zip(feeds) {
            self.pool[feed.seq.0 as usize] = Some(cache);
        }
        let flat = read_f32(logits)?;
        let vocab = self.config.vocab_size();
        let mut rest = flat.as_slice();
        Ok(feeds
            .iter()
            .map(|f| {
                let (mine, tail) = rest.split_at(f.rows() * vocab);
                rest = tail;
                mine.to_vec()
            })
            .collect())
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

    fn reserve(&mut self, positions: usize) {
        self.cache.reserve(positions);
    }

    fn forward(&mut self, tokens: &[u32]) -> sieve_engine::Result<Vec<f32>> {
        self.forward_last(tokens).map_err(Into::into)
    }
}

//! The decoder-only transformer of the Llama family (`LlamaForCausalLM` and its Mistral and
//! Qwen2 variants): embedding, pre-norm decoder layers, final RMSNorm, output projection.

use burn_tensor::backend::Backend;
use burn_tensor::{Int, Tensor};

use super::block::DecoderLayer;
use super::cache::KvCache;
use super::embedding::Embedding;
use super::linear::Linear;
use super::loader::Loader;
use super::norm::RmsNorm;
use super::rope::Rope;
use crate::hf::{Checkpoint, ModelConfig};
use crate::Result;

/// Which positions a forward pass computes logits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positions {
    /// Only the last one (what generation needs; skips the output projection elsewhere).
    Last,
    /// Every position fed.
    All,
}

/// The weights of a model, generic over the Burn backend.
#[derive(Debug, Clone)]
pub struct Transformer<B: Backend> {
    embed_tokens: Embedding<B>,
    layers: Vec<DecoderLayer<B>>,
    norm: RmsNorm<B>,
    lm_head: Linear<B>,
    rope: Rope,
}

impl<B: Backend> Transformer<B> {
    /// Loads every weight of `cfg` from `checkpoint` onto `device`, under the Hugging Face
    /// names (`model.embed_tokens`, `model.layers.{i}.…`, `model.norm`, `lm_head`). With
    /// `tie_word_embeddings` the output projection is the embedding matrix and `lm_head.weight`
    /// is not read.
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub fn load(checkpoint: &Checkpoint, cfg: &ModelConfig, device: &B::Device) -> Result<Self> {
        let w = Loader::<B>::new(checkpoint, device);
        let (vocab, hidden) = (cfg.vocab_size, cfg.hidden_size);
        let (embed_tokens, lm_head) = if cfg.tie_word_embeddings {
            let shared = w.matrix_transposed("model.embed_tokens.weight", vocab, hidden)?;
            (
                Embedding::Columns(shared.clone()),
                Linear::from_transposed(shared),
            )
        } else {
            let rows = w.matrix("model.embed_tokens.weight", vocab, hidden)?;
            (
                Embedding::Rows(rows),
                Linear::load(&w, "lm_head", hidden, vocab, false)?,
            )
        };
        let layers = (0..cfg.num_layers)
            .map(|i| DecoderLayer::load(&w, cfg, i))
            .collect::<Result<_>>()?;
        let norm = RmsNorm::load(&w, "model.norm", hidden, cfg.rms_norm_eps)?;
        Ok(Transformer {
            embed_tokens,
            layers,
            norm,
            lm_head,
            rope: Rope::new(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling),
        })
    }

    /// Runs `ids` (already checked against the vocabulary) at the positions after those in
    /// `cache`, appends them to `cache`, and returns the logits.
    ///
    /// # Shapes
    /// `ids`: `[n]` (`n ≥ 1`) → `[n, vocab]` for [`Positions::All`], `[1, vocab]` for
    /// [`Positions::Last`].
    pub fn forward(
        &self,
        ids: Tensor<B, 1, Int>,
        cache: &mut KvCache<B>,
        positions: Positions,
    ) -> Tensor<B, 2> {
        let [n] = ids.dims();
        let past = cache.len();
        let rope = self.rope.tables::<B>(past, n, &ids.device());
        let mut x = self.embed_tokens.forward(ids);
        for (layer, layer_cache) in self.layers.iter().zip(cache.layers_mut()) {
            x = layer.forward(x, past, &rope, layer_cache);
        }
        cache.advance(n);
        if positions == Positions::Last && n > 1 {
            x = x.narrow(0, n - 1, 1);
        }
        self.lm_head.forward(self.norm.forward(x))
    }

    /// Number of decoder layers.
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }
}

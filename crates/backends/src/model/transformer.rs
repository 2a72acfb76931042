//! The decoder-only transformer of the Llama family (`LlamaForCausalLM` and its Mistral and
//! Qwen2 variants): embedding, pre-norm decoder layers, final RMSNorm, output projection.
//! [`TransformerConfig`] (built by a family from `config.json`) → [`Transformer`].

use burn_tensor::backend::Backend;
use burn_tensor::{Int, Tensor};

use super::block::{DecoderLayer, DecoderLayerConfig};
use super::cache::KvCache;
use super::embedding::{Embedding, EmbeddingConfig};
use super::linear::{Linear, LinearConfig};
use super::loader::Loader;
use super::norm::{NormConfig, RmsNorm};
use super::rope::{Rope, RopeConfig};
use crate::hf::Checkpoint;
use crate::Result;

/// Everything a [`Transformer`] is made of, layer by layer: what a model family's
/// `config.json` means, with the family's defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct TransformerConfig {
    /// The token embedding (and whether the output projection shares it).
    pub embedding: EmbeddingConfig,
    /// The decoder layers, in order (each with its own attention window).
    pub layers: Vec<DecoderLayerConfig>,
    /// The final norm (`model.norm`).
    pub norm: NormConfig,
    /// The rotary embedding shared by every layer.
    pub rope: RopeConfig,
    /// The most positions a sequence may hold (`max_position_embeddings`).
    pub context_len: usize,
}

impl TransformerConfig {
    /// The logits length.
    pub fn vocab_size(&self) -> usize {
        self.embedding.vocab_size
    }

    /// Width of the residual stream.
    pub fn hidden_size(&self) -> usize {
        self.embedding.hidden_size
    }

    /// Loads every weight from `checkpoint` onto `device`, under the Hugging Face names
    /// (`model.embed_tokens`, `lm_head`, `model.layers.{i}.…`, `model.norm`). With tied
    /// embeddings the output projection is the embedding matrix and `lm_head.weight` is not
    /// read.
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub fn load<B: Backend>(
        &self,
        checkpoint: &Checkpoint,
        device: &B::Device,
    ) -> Result<Transformer<B>> {
        let w = Loader::<B>::new(checkpoint, device);
        let embed_tokens = self.embedding.load(&w, "model.embed_tokens")?;
        let lm_head = match embed_tokens.tied_output() {
            Some(shared) => shared,
            None => LinearConfig::new(self.hidden_size(), self.vocab_size()).load(&w, "lm_head")?,
        };
        let layers = self
            .layers
            .iter()
            .enumerate()
            .map(|(i, layer)| layer.load(&w, &format!("model.layers.{i}")))
            .collect::<Result<_>>()?;
        let norm = self.norm.load(&w, "model.norm")?;
        Ok(Transformer {
            embed_tokens,
            layers,
            norm,
            lm_head,
            rope: self.rope.init(),
        })
    }
}

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

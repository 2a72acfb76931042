//! One pre-norm decoder layer: `h = x + attn(norm₁(x))`, `y = h + mlp(norm₂(h))`:
//! [`DecoderLayerConfig`] → [`DecoderLayer`].

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

use super::attention::{Attention, AttentionConfig};
use super::cache::LayerCache;
use super::loader::Loader;
use super::mlp::{Mlp, MlpConfig};
use super::norm::{NormConfig, RmsNorm};
use super::rope::RopeTables;
use crate::Result;

/// The parts of one [`DecoderLayer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecoderLayerConfig {
    /// The attention sublayer (with this layer's window).
    pub attention: AttentionConfig,
    /// The MLP sublayer.
    pub mlp: MlpConfig,
    /// Both norms (`input_layernorm`, `post_attention_layernorm`).
    pub norm: NormConfig,
}

impl DecoderLayerConfig {
    /// Loads `{prefix}.*` (`model.layers.{i}` in Hugging Face checkpoints).
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub(crate) fn load<B: Backend>(
        &self,
        w: &Loader<'_, B>,
        prefix: &str,
    ) -> Result<DecoderLayer<B>> {
        let p = prefix;
        Ok(DecoderLayer {
            input_layernorm: self.norm.load(w, &format!("{p}.input_layernorm"))?,
            self_attn: self.attention.load(w, &format!("{p}.self_attn"))?,
            post_attention_layernorm: self
                .norm
                .load(w, &format!("{p}.post_attention_layernorm"))?,
            mlp: self.mlp.load(w, &format!("{p}.mlp"))?,
        })
    }
}

/// `model.layers.{i}`: attention and MLP, each behind an RMSNorm and a residual connection.
#[derive(Debug, Clone)]
pub struct DecoderLayer<B: Backend> {
    input_layernorm: RmsNorm<B>,
    self_attn: Attention<B>,
    post_attention_layernorm: RmsNorm<B>,
    mlp: Mlp<B>,
}

impl<B: Backend> DecoderLayer<B> {
    /// Runs the layer on the `n` new positions (after `past` cached ones).
    ///
    /// # Shapes
    /// `x`: `[n, hidden]` → `[n, hidden]`.
    pub fn forward(
        &self,
        x: Tensor<B, 2>,
        past: usize,
        rope: &RopeTables<B>,
        cache: &mut LayerCache<B>,
    ) -> Tensor<B, 2> {
        let h = x.clone()
            + self
                .self_attn
                .forward(self.input_layernorm.forward(x), past, rope, cache);
        h.clone() + self.mlp.forward(self.post_attention_layernorm.forward(h))
    }
}

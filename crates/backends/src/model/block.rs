//! One pre-norm decoder layer: `h = x + attn(norm₁(x))`, `y = h + mlp(norm₂(h))`.

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

use super::attention::Attention;
use super::cache::LayerCache;
use super::loader::Loader;
use super::mlp::Mlp;
use super::norm::RmsNorm;
use super::rope::RopeTables;
use crate::hf::ModelConfig;
use crate::Result;

/// `model.layers.{i}`: attention and MLP, each behind an RMSNorm and a residual connection.
#[derive(Debug, Clone)]
pub struct DecoderLayer<B: Backend> {
    input_layernorm: RmsNorm<B>,
    self_attn: Attention<B>,
    post_attention_layernorm: RmsNorm<B>,
    mlp: Mlp<B>,
}

impl<B: Backend> DecoderLayer<B> {
    /// Loads layer `i` (`model.layers.{i}.*`).
    pub(crate) fn load(w: &Loader<'_, B>, cfg: &ModelConfig, i: usize) -> Result<Self> {
        let p = format!("model.layers.{i}");
        let (h, eps) = (cfg.hidden_size, cfg.rms_norm_eps);
        Ok(DecoderLayer {
            input_layernorm: RmsNorm::load(w, &format!("{p}.input_layernorm"), h, eps)?,
            self_attn: Attention::load(w, &format!("{p}.self_attn"), cfg, i)?,
            post_attention_layernorm: RmsNorm::load(
                w,
                &format!("{p}.post_attention_layernorm"),
                h,
                eps,
            )?,
            mlp: Mlp::load(w, &format!("{p}.mlp"), cfg)?,
        })
    }

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

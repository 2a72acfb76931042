//! The SwiGLU feed-forward block (Shazeer 2020, arXiv:2002.05202) of Llama-family models:
//! `down(silu(gate(x)) ⊙ up(x))`.

use burn_tensor::activation::silu;
use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

use super::linear::Linear;
use super::loader::Loader;
use crate::hf::ModelConfig;
use crate::Result;

/// The MLP sublayer of one decoder layer (`model.layers.{i}.mlp`).
#[derive(Debug, Clone)]
pub struct Mlp<B: Backend> {
    gate_proj: Linear<B>,
    up_proj: Linear<B>,
    down_proj: Linear<B>,
}

impl<B: Backend> Mlp<B> {
    /// Loads `{prefix}.{gate,up,down}_proj`.
    pub(crate) fn load(w: &Loader<'_, B>, prefix: &str, cfg: &ModelConfig) -> Result<Self> {
        let (hidden, inter, bias) = (cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias);
        Ok(Mlp {
            gate_proj: Linear::load(w, &format!("{prefix}.gate_proj"), hidden, inter, bias)?,
            up_proj: Linear::load(w, &format!("{prefix}.up_proj"), hidden, inter, bias)?,
            down_proj: Linear::load(w, &format!("{prefix}.down_proj"), inter, hidden, bias)?,
        })
    }

    /// # Shapes
    /// `x`: `[n, hidden]` → `[n, hidden]`.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let gate = silu(self.gate_proj.forward(x.clone()));
        self.down_proj.forward(gate * self.up_proj.forward(x))
    }
}

//! One pre-norm decoder layer: `h = x + attn(norm₁(x))`, `y = h + mlp(norm₂(h))`:
//! [`DecoderLayerConfig`] → [`DecoderLayer`].
//!
//! Gemma 2 and 3 put each sublayer between two norms ("sandwich"):
//! `h = x + norm₂(attn(norm₁(x)))`, `y = h + norm₄(mlp(norm₃(h)))`, with transformers' names
//! `input_layernorm`, `post_attention_layernorm`, `pre_feedforward_layernorm` and
//! `post_feedforward_layernorm` (so `post_attention_layernorm` is not the MLP's input norm
//! there).

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

use super::attention::{Attention, AttentionConfig, SeqAttention};
use super::kernels::{sized, window, window_mut, Scratch};
use super::loader::Loader;
use super::mlp::{Mlp, MlpConfig};
use super::norm::{NormConfig, RmsNorm};
use crate::Result;

/// The parts of one [`DecoderLayer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecoderLayerConfig {
    /// The attention sublayer (with this layer's window).
    pub attention: AttentionConfig,
    /// The MLP sublayer.
    pub mlp: MlpConfig,
    /// Every norm of the layer (`input_layernorm`, `post_attention_layernorm`, and with
    /// `sandwich_norms` `pre_feedforward_layernorm` and `post_feedforward_layernorm`).
    pub norm: NormConfig,
    /// Whether each sublayer's output is normalized too (Gemma's four norms per layer).
    pub sandwich_norms: bool,
    /// Whether the layer rotates with the local RoPE ([`super::TransformerConfig::local_rope`],
    /// Gemma 3's sliding layers) rather than the global one.
    pub local_rope: bool,
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
        let norm = |name: &str| self.norm.load(w, &format!("{p}.{name}"));
        let feedforward_norms = if self.sandwich_norms {
            Some((
                norm("pre_feedforward_layernorm")?,
                norm("post_feedforward_layernorm")?,
            ))
        } else {
            None
        };
        Ok(DecoderLayer {
            input_layernorm: norm("input_layernorm")?,
            self_attn: self.attention.load(w, &format!("{p}.self_attn"))?,
            post_attention_layernorm: norm("post_attention_layernorm")?,
            mlp: self.mlp.load(w, &format!("{p}.mlp"))?,
            feedforward_norms,
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
    /// `pre_feedforward_layernorm` and `post_feedforward_layernorm` of a sandwich layer.
    feedforward_norms: Option<(RmsNorm<B>, RmsNorm<B>)>,
}

impl<B: Backend> DecoderLayer<B> {
    /// Runs the layer on the new positions of the sequences in `seqs`, stacked row-wise in
    /// `x` (see [`Attention::forward`]).
    ///
    /// # Shapes
    /// `x`: `[Σ rows, hidden]` → `[Σ rows, hidden]`.
    pub fn forward(&self, x: Tensor<B, 2>, seqs: &mut [SeqAttention<'_, B>]) -> Tensor<B, 2> {
        let attn = self
            .self_attn
            .forward(self.input_layernorm.forward(x.clone()), seqs);
        match &self.feedforward_norms {
            None => {
                let h = x + attn;
                h.clone() + self.mlp.forward(self.post_attention_layernorm.forward(h))
            }
            Some((pre, post)) => {
                let h = x + self.post_attention_layernorm.forward(attn);
                h.clone() + post.forward(self.mlp.forward(pre.forward(h)))
            }
        }
    }

    /// [`DecoderLayer::forward`] on host rows ([`super::Kernels::Host`]), in place: `x` is
    /// `[n, hidden]` row-major. Norms and residual sums are loops over the rows (each row on
    /// its own), the sublayers run on the host too, so no tensor is made between layers.
    pub(crate) fn forward_host(
        &self,
        x: &mut [f32],
        n: usize,
        seqs: &mut [SeqAttention<'_, B>],
        s: &mut Scratch,
    ) {
        let add = |x: &mut [f32], y: &[f32]| x.iter_mut().zip(y).for_each(|(a, &b)| *a += b);
        let len = x.len();
        let mut h = std::mem::take(&mut s.h);
        sized(&mut h, len).copy_from_slice(x);
        self.input_layernorm.forward_host(window_mut(&mut h, len));
        self.self_attn.forward_host(window(&h, len), n, seqs, s);
        match &self.feedforward_norms {
            None => {
                add(x, window(&s.out, len));
                window_mut(&mut h, len).copy_from_slice(x);
                self.post_attention_layernorm
                    .forward_host(window_mut(&mut h, len));
                self.mlp.forward_host(window(&h, len), n, s);
                add(x, window(&s.out, len));
            }
            Some((pre, post)) => {
                self.post_attention_layernorm
                    .forward_host(window_mut(&mut s.out, len));
                add(x, window(&s.out, len));
                window_mut(&mut h, len).copy_from_slice(x);
                pre.forward_host(window_mut(&mut h, len));
                self.mlp.forward_host(window(&h, len), n, s);
                post.forward_host(window_mut(&mut s.out, len));
                add(x, window(&s.out, len));
            }
        }
        s.h = h;
    }
}

//! The gated feed-forward block (Shazeer 2020, arXiv:2002.05202):
//! `down(act(gate(x)) ⊙ up(x))`, SwiGLU (`act` = SiLU) in Llama-family models, GeGLU with the
//! tanh-approximated GELU in Gemma: [`MlpConfig`] → [`Mlp`].

use burn_tensor::activation::silu;
use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

use super::kernels::{from_rows, to_rows, window, window_mut, Scratch};
use super::linear::{Linear, LinearConfig};
use super::loader::Loader;
use crate::Result;

/// The shape of an [`Mlp`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MlpConfig {
    /// Width of the residual stream (`hidden_size`).
    pub hidden_size: usize,
    /// Width of the gated layer (`intermediate_size`).
    pub intermediate_size: usize,
    /// Whether the three projections have a bias (Llama's `mlp_bias`).
    pub bias: bool,
    /// The gate's activation.
    pub activation: Activation,
}

/// The activation applied to the gate projection (`hidden_act`/`hidden_activation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `silu`: `x·σ(x)`.
    Silu,
    /// `gelu_pytorch_tanh`: `x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    GeluTanh,
}

impl Activation {
    /// Applies the activation elementwise.
    pub fn forward<B: Backend>(self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        match self {
            Activation::Silu => silu(x),
            Activation::GeluTanh => {
                let k = (2.0 / std::f64::consts::PI).sqrt();
                let cube = x.clone() * x.clone() * x.clone();
                let inner = (x.clone() + cube.mul_scalar(0.044715)).mul_scalar(k);
                x.mul_scalar(0.5) * inner.tanh().add_scalar(1.0)
            }
        }
    }

    /// The activation of one value on the host: SiLU with `sieve_kernels::math`'s fixed
    /// `exp` (a loop over it vectorizes), the tanh GELU with the operations of
    /// [`Activation::forward`].
    #[inline(always)]
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Activation::Silu => sieve_kernels::math::silu(x),
            Activation::GeluTanh => {
                let k = (2.0 / std::f64::consts::PI).sqrt() as f32;
                let inner = (x + x * x * x * 0.044715) * k;
                x * 0.5 * (inner.tanh() + 1.0)
            }
        }
    }
}

impl MlpConfig {
    /// Loads `{prefix}.{gate,up,down}_proj`.
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub(crate) fn load<B: Backend>(&self, w: &Loader<'_, B>, prefix: &str) -> Result<Mlp<B>> {
        let up = LinearConfig::new(self.hidden_size, self.intermediate_size).with_bias(self.bias);
        let down = LinearConfig::new(self.intermediate_size, self.hidden_size).with_bias(self.bias);
        Ok(Mlp {
            gate_proj: up.load(w, &format!("{prefix}.gate_proj"))?,
            up_proj: up.load(w, &format!("{prefix}.up_proj"))?,
            down_proj: down.load(w, &format!("{prefix}.down_proj"))?,
            activation: self.activation,
            on_host: w.on_host(),
        })
    }
}

/// The MLP sublayer of one decoder layer (`model.layers.{i}.mlp`).
#[derive(Debug, Clone)]
pub struct Mlp<B: Backend> {
    gate_proj: Linear<B>,
    up_proj: Linear<B>,
    down_proj: Linear<B>,
    activation: Activation,
    /// Whether the layers multiply on the host ([`super::Kernels::Host`]).
    on_host: bool,
}

impl<B: Backend> Mlp<B> {
    /// # Shapes
    /// `x`: `[n, hidden]` → `[n, hidden]`.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        if self.on_host {
            let [n, hidden] = x.dims();
            let device = x.device();
            let mut s = Scratch::default();
            self.forward_host(&to_rows(x), n, &mut s);
            let out = window(&s.out, n * hidden).to_vec();
            return from_rows(out, n, hidden, &device);
        }
        let gate = self.activation.forward(self.gate_proj.forward(x.clone()));
        self.down_proj.forward(gate * self.up_proj.forward(x))
    }

    /// [`Mlp::forward`] on host rows: `x` is `[n, hidden]` row-major, the result
    /// `s.out[..n·hidden]`; the gating is one loop (SwiGLU through
    /// `sieve_kernels::math::silu_mul`). (Burn-path projections answer too, through
    /// [`Linear::forward_host`]; the model never mixes the paths.)
    pub(crate) fn forward_host(&self, x: &[f32], n: usize, s: &mut Scratch) {
        let projections = [&self.gate_proj, &self.up_proj];
        Linear::forward_host_many(&projections, x, n, &mut [&mut s.gate, &mut s.up]);
        // `[n, intermediate]` each (the buffers may be longer, from a larger call).
        let len = n * self.down_proj.d_input();
        let (gate, up) = (window_mut(&mut s.gate, len), window(&s.up, len));
        match self.activation {
            Activation::Silu => sieve_kernels::math::silu_mul(gate, up),
            act => gate
                .iter_mut()
                .zip(up)
                .for_each(|(g, &u)| *g = act.apply(*g) * u),
        }
        self.down_proj.forward_host_into(gate, n, &mut s.out);
    }
}

//! The gated feed-forward block (Shazeer 2020, arXiv:2002.05202):
//! `down(act(gate(x)) ⊙ up(x))`, SwiGLU (`act` = SiLU) in Llama-family models, GeGLU with the
//! tanh-approximated GELU in Gemma: [`MlpConfig`] → [`Mlp`].

use burn_tensor::activation::silu;
use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

use super::kernels::{from_rows, sized, to_rows, window, window_mut, Scratch};
use super::linear::{Linear, LinearConfig};
use super::loader::Loader;
use crate::Result;

/// The most rows the MLP computes at once ([`Mlp::forward_host`]): a longer prefill goes
/// through in runs of this many.
pub(crate) const MLP_ROWS: usize = 512;

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
    /// `s.out[..n·hidden]` (its window); the gating is one loop (SwiGLU through
    /// `sieve_kernels::math::silu_mul`). (Burn-path projections answer too, through
    /// [`Linear::forward_host`]; the model never mixes the paths.)
    ///
    /// More than [`MLP_ROWS`] rows (a long prefill) go through in runs of that many, so the
    /// `[rows, intermediate]` gate and up buffers stop growing with the prompt (at 4 096
    /// rows of Qwen2.5-0.5B's 4 864 they would be 160 MB; in runs of 512, 20 MB). A row's
    /// result does not depend on the other rows (the kernels' promise), so the bits are
    /// those of one run over all rows. Not shorter runs: each run reads the three matrices
    /// again and is one more parallel section per projection, and runs of 128 rows made a
    /// 256-token prefill about 6% slower on two threads (for 5 MB less at its peak).
    pub(crate) fn forward_host(&self, x: &[f32], n: usize, s: &mut Scratch) {
        if n <= MLP_ROWS {
            return self.forward_rows(x, n, s);
        }
        let (d_in, d_out) = (self.gate_proj.d_input(), self.down_proj.d_output());
        let mut out = std::mem::take(&mut s.out);
        let whole = sized(&mut out, n * d_out);
        for start in (0..n).step_by(MLP_ROWS) {
            let rows = MLP_ROWS.min(n - start);
            self.forward_rows(&x[start * d_in..][..rows * d_in], rows, s);
            whole[start * d_out..][..rows * d_out].copy_from_slice(window(&s.out, rows * d_out));
        }
        s.out = out;
    }

    /// [`Mlp::forward_host`] of `n` rows at once.
    fn forward_rows(&self, x: &[f32], n: usize, s: &mut Scratch) {
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

#[cfg(test)]
mod tests {
    use burn_flex::Flex;
    use sieve_kernels::Weights;

    use super::{Activation, Linear, Mlp, MLP_ROWS};
    use crate::model::kernels::{window, Scratch};
    use crate::model::linear::tests::values;

    fn layer(n_out: usize, n_in: usize, seed: u32) -> Linear<Flex> {
        let w = values(n_out * n_in, seed);
        Linear::from_weights(Weights::from_f32(&w, n_out, n_in).unwrap())
    }

    /// A prefill longer than [`MLP_ROWS`] goes through in runs; every row keeps the bits it
    /// has alone, the last, shorter run's included.
    #[test]
    fn rows_past_a_run_keep_the_bits_they_have_alone() {
        let (hidden, inter, rows) = (40, 96, 2 * MLP_ROWS + 5);
        for activation in [Activation::Silu, Activation::GeluTanh] {
            let mlp = Mlp::<Flex> {
                gate_proj: layer(inter, hidden, 1),
                up_proj: layer(inter, hidden, 2),
                down_proj: layer(hidden, inter, 3),
                activation,
                on_host: true,
            };
            let x = values(rows * hidden, 4);
            let mut s = Scratch::default();
            mlp.forward_host(&x, rows, &mut s);
            let all = window(&s.out, rows * hidden).to_vec();
            for r in [0, 1, MLP_ROWS - 1, MLP_ROWS, 2 * MLP_ROWS, rows - 1] {
                let mut one = Scratch::default();
                mlp.forward_host(&x[r * hidden..][..hidden], 1, &mut one);
                let same = window(&one.out, hidden)
                    .iter()
                    .zip(&all[r * hidden..][..hidden])
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(
                    same,
                    "{activation:?}: row {r} differs alone and in the prefill"
                );
            }
        }
    }
}

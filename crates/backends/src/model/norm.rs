//! RMSNorm (Zhang & Sennrich 2019, arXiv:1910.07467) as transformers' `LlamaRMSNorm`:
//! `y = w · x / sqrt(mean(x²) + ε)`, computed in `f32`: [`NormConfig`] → [`RmsNorm`].
//! Gemma's `GemmaRMSNorm` scales by `1 + w` instead ([`NormConfig::unit_offset`]); the `1` is
//! added to the weight in `f32` at load, as transformers adds it in `f32`.
//!
//! transformers multiplies by `rsqrt(mean(x²) + ε)`; we divide by the square root, which
//! differs by at most an ulp or two.

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

use super::loader::Loader;
use crate::Result;

/// The shape of an [`RmsNorm`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormConfig {
    /// Width of the normalized dimension.
    pub dim: usize,
    /// ε added to the mean square (`rms_norm_eps`).
    pub eps: f64,
    /// Whether the scale is `1 + w` (Gemma) rather than `w`.
    pub unit_offset: bool,
}

impl NormConfig {
    /// A plain (Llama) RMSNorm over `dim` features.
    pub fn new(dim: usize, eps: f64) -> Self {
        NormConfig {
            dim,
            eps,
            unit_offset: false,
        }
    }

    /// Loads `{prefix}.weight` (`[dim]`).
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub(crate) fn load<B: Backend>(&self, w: &Loader<'_, B>, prefix: &str) -> Result<RmsNorm<B>> {
        let mut weight = w
            .vector(&format!("{prefix}.weight"), self.dim)?
            .unsqueeze_dim(0);
        let mut host = w.values(&format!("{prefix}.weight"), self.dim)?;
        if self.unit_offset {
            weight = weight.add_scalar(1.0);
            host.iter_mut().for_each(|v| *v += 1.0);
        }
        Ok(RmsNorm {
            weight,
            host,
            eps: self.eps,
        })
    }
}

/// Root-mean-square normalization over the last dimension with a learned scale.
#[derive(Debug, Clone)]
pub struct RmsNorm<B: Backend> {
    /// `[1, dim]`.
    weight: Tensor<B, 2>,
    /// The same `[dim]` scale on the host.
    host: Vec<f32>,
    eps: f64,
}

impl<B: Backend> RmsNorm<B> {
    /// # Shapes
    /// `x`: `[n, dim]` → `[n, dim]`.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let variance = x.clone().square().mean_dim(1);
        // A division, not `recip()`: burn-ndarray 0.21's `recip` is a SIMD approximation
        // (relative error up to ~4e-4) that alone breaks the 1e-4 agreement with transformers.
        let rms = variance.add_scalar(self.eps).sqrt();
        x / rms * self.weight.clone()
    }

    /// [`RmsNorm::forward`] in place on row-major host rows of `dim` values. The mean square
    /// of a row is summed in `f64`, in 8 running sums (index `i` into sum `i mod 8`, then
    /// added in order), so a row's result depends on that row alone.
    ///
    /// # Panics
    /// If `x`'s length is not a multiple of `dim`.
    pub fn forward_host(&self, x: &mut [f32]) {
        let dim = self.host.len();
        assert!(
            dim > 0 && x.len().is_multiple_of(dim),
            "rms_norm: rows are not {dim} wide"
        );
        for row in x.chunks_exact_mut(dim) {
            let mut sums = [0f64; 8];
            for chunk in row.chunks(8) {
                for (s, &v) in sums.iter_mut().zip(chunk) {
                    *s += f64::from(v) * f64::from(v);
                }
            }
            let square: f64 = sums.iter().sum();
            let variance = (square / dim as f64) as f32;
            let rms = (variance + self.eps as f32).sqrt();
            for (v, &w) in row.iter_mut().zip(&self.host) {
                *v = *v / rms * w;
            }
        }
    }
}

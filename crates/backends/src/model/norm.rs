//! RMSNorm (Zhang & Sennrich 2019, arXiv:1910.07467) as transformers' `LlamaRMSNorm`:
//! `y = w · x / sqrt(mean(x²) + ε)`, computed in `f32`: [`NormConfig`] → [`RmsNorm`].
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
}

impl NormConfig {
    /// Loads `{prefix}.weight` (`[dim]`).
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub(crate) fn load<B: Backend>(&self, w: &Loader<'_, B>, prefix: &str) -> Result<RmsNorm<B>> {
        let weight = w
            .vector(&format!("{prefix}.weight"), self.dim)?
            .unsqueeze_dim(0);
        Ok(RmsNorm {
            weight,
            eps: self.eps,
        })
    }
}

/// Root-mean-square normalization over the last dimension with a learned scale.
#[derive(Debug, Clone)]
pub struct RmsNorm<B: Backend> {
    /// `[1, dim]`.
    weight: Tensor<B, 2>,
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
}

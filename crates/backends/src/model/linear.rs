//! A linear layer `y = x Wᵀ + b` with PyTorch's `[out, in]` weight stored transposed.

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

use super::loader::Loader;
use crate::Result;

/// `y = x Wᵀ + b`, loaded from `{prefix}.weight` (`[out, in]`) and, when it has one,
/// `{prefix}.bias` (`[out]`).
///
/// The weight is kept as the contiguous `[in, out]` matrix, so the forward pass is one plain
/// `x @ W` product.
#[derive(Debug, Clone)]
pub struct Linear<B: Backend> {
    /// `[in, out]`.
    weight: Tensor<B, 2>,
    /// `[1, out]`.
    bias: Option<Tensor<B, 2>>,
}

impl<B: Backend> Linear<B> {
    /// Loads `{prefix}.weight` of shape `[out_dim, in_dim]`, and `{prefix}.bias` when `bias`.
    pub(crate) fn load(
        w: &Loader<'_, B>,
        prefix: &str,
        in_dim: usize,
        out_dim: usize,
        bias: bool,
    ) -> Result<Self> {
        let weight = w.matrix_transposed(&format!("{prefix}.weight"), out_dim, in_dim)?;
        let bias = if bias {
            Some(
                w.vector(&format!("{prefix}.bias"), out_dim)?
                    .unsqueeze_dim(0),
            )
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }

    /// A layer from an `[in, out]` weight (already transposed) and no bias.
    pub(crate) fn from_transposed(weight: Tensor<B, 2>) -> Self {
        Linear { weight, bias: None }
    }

    /// # Shapes
    /// `x`: `[n, in]` → `[n, out]`.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let y = x.matmul(self.weight.clone());
        match &self.bias {
            Some(b) => y + b.clone(),
            None => y,
        }
    }
}

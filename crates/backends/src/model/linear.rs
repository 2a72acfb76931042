//! A linear layer `y = x Wᵀ + b` with PyTorch's `[out, in]` weight stored transposed:
//! [`LinearConfig`] → [`Linear`].

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

use super::loader::Loader;
use crate::Result;

/// The shape of a [`Linear`] layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinearConfig {
    /// Width of the input.
    pub d_input: usize,
    /// Width of the output.
    pub d_output: usize,
    /// Whether the layer adds a bias (`{prefix}.bias`).
    pub bias: bool,
}

impl LinearConfig {
    /// A layer from `d_input` to `d_output` features, without bias.
    pub fn new(d_input: usize, d_output: usize) -> Self {
        LinearConfig {
            d_input,
            d_output,
            bias: false,
        }
    }

    /// The same layer, with a bias when `bias`.
    pub fn with_bias(self, bias: bool) -> Self {
        LinearConfig { bias, ..self }
    }

    /// Loads `{prefix}.weight` of shape `[d_output, d_input]`, and `{prefix}.bias` when the
    /// layer has one.
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub(crate) fn load<B: Backend>(&self, w: &Loader<'_, B>, prefix: &str) -> Result<Linear<B>> {
        let (in_dim, out_dim) = (self.d_input, self.d_output);
        let weight = w.matrix_transposed(&format!("{prefix}.weight"), out_dim, in_dim)?;
        let bias = if self.bias {
            Some(
                w.vector(&format!("{prefix}.bias"), out_dim)?
                    .unsqueeze_dim(0),
            )
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }
}

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

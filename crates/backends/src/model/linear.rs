//! A linear layer `y = x Wᵀ + b` with PyTorch's `[out, in]` weight: [`LinearConfig`] →
//! [`Linear`].
//!
//! On the CPU backends (`ndarray`, `flex`) the weight stays what the checkpoint holds — its
//! bytes in the memory map, in their dtype (`bf16`, `f16` or `f32`) — and the product runs in
//! `sieve-kernels`' [`matmul_nt`](sieve_kernels::matmul_nt): one fixed reduction order per
//! output, so a row's result does not depend on the other rows in the batch or on the thread
//! count, and no `f32` copy of the weight is ever made. Other backends (CUDA) keep the weight
//! as a transposed `[in, out]` `f32` tensor on the device and use Burn's matmul.

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;
use sieve_kernels::Weights;

use super::kernels::{from_rows, sized, to_rows};
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
        let weight_name = format!("{prefix}.weight");
        let bias_name = format!("{prefix}.bias");
        if w.on_host() {
            let weights = w.weights(&weight_name, out_dim, in_dim)?;
            let bias = match self.bias {
                true => Some(w.values(&bias_name, out_dim)?),
                false => None,
            };
            return Ok(Linear(Kind::Host { weights, bias }));
        }
        let weight = w.matrix_transposed(&weight_name, out_dim, in_dim)?;
        let bias = match self.bias {
            true => Some(w.vector(&bias_name, out_dim)?.unsqueeze_dim(0)),
            false => None,
        };
        Ok(Linear(Kind::Device { weight, bias }))
    }
}

/// `y = x Wᵀ + b`, loaded from `{prefix}.weight` (`[out, in]`) and, when it has one,
/// `{prefix}.bias` (`[out]`).
#[derive(Debug, Clone)]
pub struct Linear<B: Backend>(Kind<B>);

/// Where a [`Linear`]'s weight lives and who multiplies by it.
#[derive(Debug, Clone)]
enum Kind<B: Backend> {
    /// The weight as the checkpoint's bytes, multiplied on the host by `sieve-kernels`.
    Host {
        /// `[out, in]`, in the checkpoint's dtype.
        weights: Weights,
        /// `[out]`.
        bias: Option<Vec<f32>>,
    },
    /// The weight as a device tensor, multiplied by Burn.
    Device {
        /// `[in, out]` (transposed once at load, so the product is a plain `x @ W`).
        weight: Tensor<B, 2>,
        /// `[1, out]`.
        bias: Option<Tensor<B, 2>>,
    },
}

impl<B: Backend> Linear<B> {
    /// A device layer from an `[in, out]` weight (already transposed) and no bias.
    pub(crate) fn from_transposed(weight: Tensor<B, 2>) -> Self {
        Linear(Kind::Device { weight, bias: None })
    }

    /// A host layer over `[out, in]` weights (e.g. the embedding matrix, for a tied output
    /// projection: the same bytes, not a copy) and no bias.
    pub(crate) fn from_weights(weights: Weights) -> Self {
        Linear(Kind::Host {
            weights,
            bias: None,
        })
    }

    /// The weight as the checkpoint's bytes, for a host layer.
    #[cfg(test)]
    pub(crate) fn host_weights(&self) -> Option<&Weights> {
        match &self.0 {
            Kind::Host { weights, .. } => Some(weights),
            Kind::Device { .. } => None,
        }
    }

    /// # Shapes
    /// `x`: `[n, in]` → `[n, out]`.
    ///
    /// # Panics
    /// If `x`'s width is not the layer's input width.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        match &self.0 {
            Kind::Host { weights, .. } => {
                let [n, width] = x.dims();
                assert_eq!(width, weights.k(), "linear: input width");
                let device = x.device();
                let out = self.forward_host(&to_rows(x), n);
                from_rows(out, n, weights.n(), &device)
            }
            Kind::Device { weight, bias } => {
                let y = x.matmul(weight.clone());
                match bias {
                    Some(b) => y + b.clone(),
                    None => y,
                }
            }
        }
    }

    /// The weights and bias of a host layer (`None` for a device layer).
    pub(crate) fn host_parts(&self) -> Option<(&Weights, Option<&[f32]>)> {
        match &self.0 {
            Kind::Host { weights, bias } => Some((weights, bias.as_deref())),
            Kind::Device { .. } => None,
        }
    }

    /// The products of several host layers with the same input width over the same rows, in
    /// one call (`sieve_kernels::matmul_nt_many`: the rows aligned once, one parallel
    /// section): `x` is `[n, in]`, output `i` becomes `[n, out_i]` (resized), each with the
    /// bits of [`Linear::forward_host`].
    ///
    /// # Panics
    /// If a layer is a device layer, or the widths differ from `x`'s.
    pub(crate) fn forward_host_many(
        layers: &[&Self],
        x: &[f32],
        n: usize,
        outs: &mut [&mut Vec<f32>],
    ) {
        let parts: Vec<(&Weights, Option<&[f32]>)> = layers
            .iter()
            .map(|l| {
                l.host_parts()
                    .expect("linear: a device layer has no host product")
            })
            .collect();
        let views: Vec<_> = parts.iter().map(|(w, _)| w.view()).collect();
        let mut jobs: Vec<_> = views
            .iter()
            .zip(&parts)
            .zip(outs.iter_mut())
            .map(|((view, (_, bias)), out)| (view, *bias, sized(out, n * view.n())))
            .collect();
        sieve_kernels::matmul_nt_many(x, n, &mut jobs);
    }

    /// The product on the host, over row-major rows: `x` is `[n, in]`, the result `[n, out]`.
    ///
    /// # Panics
    /// If the layer is a device layer ([`crate::model::Kernels::Backend`]), or `x` is not
    /// `[n, in]`.
    pub(crate) fn forward_host(&self, x: &[f32], n: usize) -> Vec<f32> {
        let Kind::Host { weights, bias } = &self.0 else {
            panic!("linear: a device layer has no host product");
        };
        assert_eq!(x.len(), n * weights.k(), "linear: input width");
        sieve_kernels::matmul_nt_vec(x, n, &weights.view(), bias.as_deref())
    }

    /// [`Linear::forward_host`] into `out` (resized to `[n, out]`, its old values overwritten).
    ///
    /// # Panics
    /// As [`Linear::forward_host`].
    pub(crate) fn forward_host_into(&self, x: &[f32], n: usize, out: &mut Vec<f32>) {
        let Kind::Host { weights, bias } = &self.0 else {
            panic!("linear: a device layer has no host product");
        };
        assert_eq!(x.len(), n * weights.k(), "linear: input width");
        let out = sized(out, n * weights.n());
        sieve_kernels::matmul_nt(x, n, &weights.view(), bias.as_deref(), out);
    }
}

#[cfg(test)]
mod tests {
    use burn_flex::{Flex, FlexDevice};
    use burn_tensor::{Tensor, TensorData};
    use sieve_kernels::Weights;

    use super::Linear;

    fn values(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| {
                ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32
                    / (1 << 24) as f32
                    - 0.5
            })
            .collect()
    }

    fn tensor(v: Vec<f32>, rows: usize, cols: usize) -> Tensor<Flex, 2> {
        Tensor::from_data(TensorData::new(v, [rows, cols]), &FlexDevice)
    }

    fn host(t: Tensor<Flex, 2>) -> Vec<f32> {
        t.into_data().to_vec::<f32>().unwrap()
    }

    #[test]
    fn host_rows_do_not_depend_on_the_batch_and_match_burn() {
        let (n_in, n_out, rows) = (70, 33, 11);
        let w = values(n_out * n_in, 1);
        let x = values(rows * n_in, 2);
        let layer = Linear::<Flex>::from_weights(Weights::from_f32(&w, n_out, n_in).unwrap());
        let batch = host(layer.forward(tensor(x.clone(), rows, n_in)));
        for r in 0..rows {
            let one = host(layer.forward(tensor(x[r * n_in..][..n_in].to_vec(), 1, n_in)));
            let same = one
                .iter()
                .zip(&batch[r * n_out..])
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "row {r} differs alone and in the batch");
        }
        // Burn's product over the transposed weight agrees to rounding.
        let wt: Vec<f32> = (0..n_in * n_out)
            .map(|i| w[(i % n_out) * n_in + i / n_out])
            .collect();
        let device = Linear::<Flex>::from_transposed(tensor(wt, n_in, n_out));
        let burn = host(device.forward(tensor(x, rows, n_in)));
        for (a, b) in batch.iter().zip(&burn) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }
}

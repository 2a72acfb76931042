//! A linear layer `y = x Wᵀ + b` with PyTorch's `[out, in]` weight: [`LinearConfig`] →
//! [`Linear`].
//!
//! On the CPU backends (`ndarray`, `flex`) the weight stays what the checkpoint holds — its
//! bytes in the memory map, in their dtype (`bf16`, `f16` or `f32`) — and the product runs in
//! `sieve-kernels`' [`matmul_nt`](sieve_kernels::matmul_nt): one fixed reduction order per
//! output, so a row's result does not depend on the other rows in the batch or on the thread
//! count, and no `f32` copy of the weight is ever made: a [`HostLinear`]. The Burn path (what
//! CUDA runs, and the CPU backends when loaded with [`super::Kernels::Backend`]) keeps the
//! weight as a transposed `[in, out]` `f32` tensor on the device and uses Burn's matmul: a
//! [`BurnLinear`]. [`Linear`] is one or the other, by the path the model was loaded for.

use std::sync::Arc;

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
            let (weights, order) = w.weights_stored(&weight_name, out_dim, in_dim)?;
            let bias = match self.bias {
                true => Some(w.values(&bias_name, out_dim)?),
                false => None,
            };
            // The bias is added to the product's outputs, which come in the weights' row order.
            let bias = match (&order, bias) {
                (Some(order), Some(b)) => Some(in_row_order(&b, order)),
                (_, b) => b,
            };
            return Ok(Linear::Host(HostLinear {
                weights,
                bias,
                outputs: order.map(Arc::from),
            }));
        }
        let weight = w.matrix_transposed(&weight_name, out_dim, in_dim)?;
        let bias = match self.bias {
            true => Some(w.vector(&bias_name, out_dim)?.unsqueeze_dim(0)),
            false => None,
        };
        Ok(Linear::Burn(BurnLinear { weight, bias }))
    }
}

/// `y = x Wᵀ + b`, loaded from `{prefix}.weight` (`[out, in]`) and, when it has one,
/// `{prefix}.bias` (`[out]`): one of two layers, by the path the model was loaded for
/// ([`super::Kernels`]). Both answer both entry points — [`Linear::forward`] on a tensor and
/// [`Linear::forward_host`] on host rows — so asking a layer for the other path's product
/// is a conversion, never a panic; the model keeps each path on its own layers.
#[derive(Debug, Clone)]
pub enum Linear<B: Backend> {
    /// The host path ([`super::Kernels::Host`], every CPU run).
    Host(HostLinear),
    /// The Burn path ([`super::Kernels::Backend`], what `--backend cuda` runs).
    Burn(BurnLinear<B>),
}

/// A linear layer of the host path: the weight as the checkpoint's bytes, multiplied by
/// `sieve-kernels` (one fixed reduction order per output).
#[derive(Debug, Clone)]
pub struct HostLinear {
    /// `[out, in]`, in the checkpoint's dtype and row order.
    weights: Weights,
    /// `[out]`, in the weights' row order.
    bias: Option<Vec<f32>>,
    /// The order to read the product's outputs in, when the checkpoint's rows are not in the
    /// model's order (the q/k matrices of a `llama` GGUF file): output `r` is the product's
    /// output `outputs[r]`. Each output is one row's dot product, so its bits do not change.
    outputs: Option<Arc<[usize]>>,
}

/// A linear layer of the Burn path: the weight as a device tensor, multiplied by Burn's
/// matmul.
#[derive(Debug, Clone)]
pub struct BurnLinear<B: Backend> {
    /// `[in, out]` (transposed once at load, so the product is a plain `x @ W`).
    weight: Tensor<B, 2>,
    /// `[1, out]`.
    bias: Option<Tensor<B, 2>>,
}

impl HostLinear {
    /// A layer over `[out, in]` weights and no bias.
    pub(crate) fn new(weights: Weights) -> Self {
        HostLinear {
            weights,
            bias: None,
            outputs: None,
        }
    }

    /// The weight, as the checkpoint's bytes.
    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    /// The product over row-major rows: `x` is `[n, in]`, the result `[n, out]`.
    ///
    /// # Panics
    /// If `x` is not `[n, in]`.
    pub fn forward_host(&self, x: &[f32], n: usize) -> Vec<f32> {
        assert_eq!(x.len(), n * self.weights.k(), "linear: input width");
        let mut out =
            sieve_kernels::matmul_nt_vec(x, n, &self.weights.view(), self.bias.as_deref());
        self.read_outputs_in_order(&mut out);
        out
    }

    /// Puts the outputs of each row of `out` (`[n, out]`, in the weights' row order) in the
    /// model's order, when they differ.
    fn read_outputs_in_order(&self, out: &mut [f32]) {
        let Some(order) = &self.outputs else { return };
        let mut product = vec![0f32; order.len()];
        for row in out.chunks_exact_mut(order.len()) {
            product.copy_from_slice(row);
            for (o, &i) in row.iter_mut().zip(order.iter()) {
                *o = product[i];
            }
        }
    }

    /// [`HostLinear::forward_host`] into `out` (resized to `[n, out]`, its old values
    /// overwritten).
    ///
    /// # Panics
    /// As [`HostLinear::forward_host`].
    pub(crate) fn forward_host_into(&self, x: &[f32], n: usize, out: &mut Vec<f32>) {
        assert_eq!(x.len(), n * self.weights.k(), "linear: input width");
        let out = sized(out, n * self.weights.n());
        sieve_kernels::matmul_nt(x, n, &self.weights.view(), self.bias.as_deref(), out);
        self.read_outputs_in_order(out);
    }
}

impl<B: Backend> BurnLinear<B> {
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

impl<B: Backend> Linear<B> {
    /// A Burn-path layer from an `[in, out]` weight (already transposed) and no bias.
    pub(crate) fn from_transposed(weight: Tensor<B, 2>) -> Self {
        Linear::Burn(BurnLinear { weight, bias: None })
    }

    /// A host-path layer over `[out, in]` weights (e.g. the embedding matrix, for a tied
    /// output projection: the same bytes, not a copy) and no bias.
    pub(crate) fn from_weights(weights: Weights) -> Self {
        Linear::Host(HostLinear::new(weights))
    }

    /// Width of the input.
    pub fn d_input(&self) -> usize {
        match self {
            Linear::Host(l) => l.weights.k(),
            Linear::Burn(l) => l.weight.dims()[0],
        }
    }

    /// Width of the output.
    pub fn d_output(&self) -> usize {
        match self {
            Linear::Host(l) => l.weights.n(),
            Linear::Burn(l) => l.weight.dims()[1],
        }
    }

    /// The host-path layer, or `None` on the Burn path.
    pub fn host(&self) -> Option<&HostLinear> {
        match self {
            Linear::Host(l) => Some(l),
            Linear::Burn(_) => None,
        }
    }

    /// The product on a tensor: Burn's matmul on the Burn path; on the host path the rows
    /// are read back and multiplied by `sieve-kernels`.
    ///
    /// # Shapes
    /// `x`: `[n, in]` → `[n, out]`.
    ///
    /// # Panics
    /// If `x`'s width is not the layer's input width.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        match self {
            Linear::Host(l) => {
                let [n, width] = x.dims();
                assert_eq!(width, l.weights.k(), "linear: input width");
                let device = x.device();
                let out = l.forward_host(&to_rows(x), n);
                from_rows(out, n, l.weights.n(), &device)
            }
            Linear::Burn(l) => l.forward(x),
        }
    }

    /// The product on row-major host rows: `x` is `[n, in]`, the result `[n, out]`.
    /// `sieve-kernels` on the host path; on the Burn path the rows go to the weight's device
    /// and Burn's matmul.
    ///
    /// # Panics
    /// If `x` is not `[n, in]`.
    pub fn forward_host(&self, x: &[f32], n: usize) -> Vec<f32> {
        match self {
            Linear::Host(l) => l.forward_host(x, n),
            Linear::Burn(l) => {
                let k = self.d_input();
                assert_eq!(x.len(), n * k, "linear: input width");
                let device = l.weight.device();
                to_rows(l.forward(from_rows(x.to_vec(), n, k, &device)))
            }
        }
    }

    /// [`Linear::forward_host`] into `out` (resized to `[n, out]`, its old values
    /// overwritten).
    ///
    /// # Panics
    /// As [`Linear::forward_host`].
    pub(crate) fn forward_host_into(&self, x: &[f32], n: usize, out: &mut Vec<f32>) {
        match self {
            Linear::Host(l) => l.forward_host_into(x, n, out),
            Linear::Burn(_) => {
                let y = self.forward_host(x, n);
                sized(out, y.len()).copy_from_slice(&y);
            }
        }
    }

    /// The products of several layers with the same input width over the same rows: `x` is
    /// `[n, in]`, output `i` becomes `[n, out_i]` (resized), each with the bits of
    /// [`Linear::forward_host`]. When every layer is on the host path they run in one call
    /// (`sieve_kernels::matmul_nt_many`: the rows aligned once, one parallel section);
    /// otherwise one by one.
    ///
    /// # Panics
    /// If the widths differ from `x`'s.
    pub(crate) fn forward_host_many(
        layers: &[&Self],
        x: &[f32],
        n: usize,
        outs: &mut [&mut Vec<f32>],
    ) {
        let Some(host) = layers.iter().map(|l| l.host()).collect::<Option<Vec<_>>>() else {
            for (layer, out) in layers.iter().zip(outs.iter_mut()) {
                layer.forward_host_into(x, n, out);
            }
            return;
        };
        for l in &host {
            assert_eq!(x.len(), n * l.weights.k(), "linear: input width");
        }
        let views: Vec<_> = host.iter().map(|l| l.weights.view()).collect();
        let mut jobs: Vec<_> = views
            .iter()
            .zip(&host)
            .zip(outs.iter_mut())
            .map(|((view, l), out)| (view, l.bias.as_deref(), sized(out, n * view.n())))
            .collect();
        sieve_kernels::matmul_nt_many(x, n, &mut jobs);
        for ((_, _, out), l) in jobs.iter_mut().zip(&host) {
            l.read_outputs_in_order(out);
        }
    }
}

/// `values` (one per output, in the model's order) in the order the product's outputs come
/// in: `order[r]` is where output `r` comes out.
fn in_row_order(values: &[f32], order: &[usize]) -> Vec<f32> {
    let mut stored = vec![0f32; values.len()];
    for (&v, &i) in values.iter().zip(order) {
        stored[i] = v;
    }
    stored
}

#[cfg(test)]
pub(crate) mod tests {
    use burn_flex::{Flex, FlexDevice};
    use burn_tensor::{Tensor, TensorData};
    use sieve_kernels::Weights;

    use super::Linear;

    /// `len` deterministic values in `[-0.5, 0.5)` (a multiplicative hash of the index).
    pub(crate) fn values(len: usize, seed: u32) -> Vec<f32> {
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
        let burn = host(device.forward(tensor(x.clone(), rows, n_in)));
        for (a, b) in batch.iter().zip(&burn) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
        // Each layer answers the other path's entry point too (a conversion, not a panic).
        assert_eq!(device.forward_host(&x, rows), burn);
        assert_eq!(layer.forward_host(&x, rows), batch);
        let mut outs = [Vec::new(), Vec::new()];
        let [a, b] = &mut outs;
        Linear::forward_host_many(&[&device, &layer], &x, rows, &mut [a, b]);
        let len = rows * n_out;
        assert_eq!(super::super::kernels::window(&outs[0], len), &burn[..]);
        assert_eq!(super::super::kernels::window(&outs[1], len), &batch[..]);
    }
}

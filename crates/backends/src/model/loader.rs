//! Moving checkpoint tensors onto a Burn device, by Hugging Face name — or, on the CPU
//! backends, handing the large matrices over as their bytes in the memory-mapped checkpoint
//! (see [`Loader::on_host`]).

use burn_tensor::backend::Backend;
use burn_tensor::{Tensor, TensorData};
use sieve_kernels::Weights;

use super::kernels::Kernels;
use crate::hf::Checkpoint;
use crate::Result;

/// Reads named weights from a [`Checkpoint`] into tensors on one device.
pub(crate) struct Loader<'a, B: Backend> {
    checkpoint: &'a Checkpoint,
    device: &'a B::Device,
    kernels: Kernels,
}

impl<'a, B: Backend> Loader<'a, B> {
    /// A loader reading `checkpoint` onto `device`, for modules computed by `kernels`.
    pub(crate) fn new(checkpoint: &'a Checkpoint, device: &'a B::Device, kernels: Kernels) -> Self {
        Loader {
            checkpoint,
            device,
            kernels,
        }
    }

    /// Who computes the modules loaded.
    pub(crate) fn kernels(&self) -> Kernels {
        self.kernels
    }

    /// Whether the modules compute on this CPU ([`Kernels::Host`]), so matrices stay in the
    /// checkpoint's bytes and go through `sieve-kernels` ([`Loader::weights`]) instead of
    /// becoming tensors.
    pub(crate) fn on_host(&self) -> bool {
        self.kernels == Kernels::Host
    }

    /// The `[rows, cols]` matrix `name` as its bytes in the memory map, in its stored dtype
    /// (no copy).
    pub(crate) fn weights(&self, name: &str, rows: usize, cols: usize) -> Result<Weights> {
        self.checkpoint.tensor_weights(name, rows, cols)
    }

    /// [`Loader::weights`] in the checkpoint's row order, with the order to read the
    /// product's outputs in when that differs (see `Checkpoint::tensor_weights_stored`).
    pub(crate) fn weights_stored(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> Result<(Weights, Option<Vec<usize>>)> {
        self.checkpoint.tensor_weights_stored(name, rows, cols)
    }

    /// The vector `name` of length `n`, on the host.
    pub(crate) fn values(&self, name: &str, n: usize) -> Result<Vec<f32>> {
        self.checkpoint.tensor_f32(name, &[n])
    }

    /// The vector `name` of length `n`.
    pub(crate) fn vector(&self, name: &str, n: usize) -> Result<Tensor<B, 1>> {
        let values = self.checkpoint.tensor_f32(name, &[n])?;
        Ok(Tensor::from_data(TensorData::new(values, [n]), self.device))
    }

    /// The matrix `name`, stored `[rows, cols]` (PyTorch's `[out, in]` for a linear layer).
    pub(crate) fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Tensor<B, 2>> {
        let values = self.checkpoint.tensor_f32(name, &[rows, cols])?;
        Ok(Tensor::from_data(
            TensorData::new(values, [rows, cols]),
            self.device,
        ))
    }

    /// The matrix `name`, stored `[rows, cols]`, transposed on the host into a contiguous
    /// `[cols, rows]` tensor (the `[in, out]` layout `x @ W` multiplies by).
    pub(crate) fn matrix_transposed(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> Result<Tensor<B, 2>> {
        let values = self.checkpoint.tensor_f32(name, &[rows, cols])?;
        let t = transpose(&values, rows, cols);
        Ok(Tensor::from_data(
            TensorData::new(t, [cols, rows]),
            self.device,
        ))
    }
}

/// The `[cols, rows]` transpose of the row-major `[rows, cols]` matrix `m`, in tiles so that
/// reads and writes both stay in cache.
fn transpose(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    const TILE: usize = 32;
    let mut t = vec![0f32; m.len()];
    for r0 in (0..rows).step_by(TILE) {
        for c0 in (0..cols).step_by(TILE) {
            for r in r0..(r0 + TILE).min(rows) {
                for c in c0..(c0 + TILE).min(cols) {
                    t[c * rows + r] = m[r * cols + c];
                }
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    #[test]
    fn transpose_moves_every_element() {
        let (rows, cols) = (37, 70);
        let m: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let t = super::transpose(&m, rows, cols);
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(t[c * rows + r], m[r * cols + c]);
            }
        }
    }
}

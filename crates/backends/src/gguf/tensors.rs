//! A GGUF model's tensors under the Hugging Face names the loader asks for (see
//! `names`), in the shape PyTorch gives them (GGUF's dims reversed), handed out as
//! their bytes in the memory map.
//!
//! For architecture `llama`, `convert_hf_to_gguf.py` (`LlamaModel.permute`) reorders the rows
//! of `q_proj` and `k_proj` (weights and biases) within each head so that the two rotary
//! halves interleave (llama.cpp's `LLAMA_ROPE_TYPE_NORM`): row `2i + j` of a head holds what
//! was row `j·d/2 + i` (`d` the head width, `i < d/2`, `j ∈ {0, 1}`). The model computes
//! exactly what it computes from the Hugging Face weights either way:
//!
//! - the host path's linear layers take the matrix as it lies in the map, in the file's row
//!   order, with the order to read their outputs in ([`GgufTensors::tensor_weights_stored`]):
//!   an output is one row's dot product, so reading the outputs in Hugging Face order gives
//!   the same bits, and nothing is copied (the q and k matrices are a sixth to a third of a
//!   layer's weights);
//! - everything else ([`GgufTensors::tensor_weights`], [`GgufTensors::tensor_f32`]) gets the
//!   rows put back in order in memory of its own (a whole row is whole blocks for every type,
//!   so this is a copy of rows, never a conversion), the map's pages of the permuted
//!   original given back to the kernel.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use sieve_gguf::{GgmlType, GgufFile, GgufModel, TensorInfo};
use sieve_kernels::quant::{self, QuantType};
use sieve_kernels::{Dtype as KernelDtype, Storage, Weights};

use super::config::Arch;
use super::names::{to_gguf, to_hf};
use crate::dtype::{convert, WeightDtype};
use crate::{Error, Result};

/// Where a tensor is: its shard and its index in that shard's tensors, and its shape in
/// PyTorch's order.
#[derive(Debug, Clone)]
struct Entry {
    shard: usize,
    index: usize,
    shape: Vec<usize>,
}

/// The tensors of a GGUF model by Hugging Face name.
#[derive(Debug, Clone)]
pub struct GgufTensors {
    model: GgufModel,
    arch: Arch,
    /// Hugging Face name to where the tensor is.
    entries: HashMap<String, Entry>,
    /// `(num_heads, num_kv_heads)` when the q/k rows are to be un-permuted.
    heads: Option<(usize, usize)>,
}

impl GgufTensors {
    /// The tensors of `model` (architecture `arch`); with `heads` (`num_attention_heads`,
    /// `num_key_value_heads`), the q/k rows of a `llama` file are put back in Hugging Face
    /// order.
    ///
    /// # Errors
    /// [`Error::BadTensor`] for a tensor whose dims do not fit this machine.
    pub fn new(model: GgufModel, arch: Arch, heads: (usize, usize)) -> Result<Self> {
        let mut entries = HashMap::new();
        for (s, shard) in model.shards().iter().enumerate() {
            for (i, t) in shard.tensors().iter().enumerate() {
                let Some(hf) = to_hf(&t.name, arch.sandwich()) else {
                    continue;
                };
                let shape = t
                    .shape()
                    .into_iter()
                    .map(usize::try_from)
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|_| Error::BadTensor {
                        path: shard.path().to_path_buf(),
                        name: t.name.clone(),
                        message: format!("dims {:?} do not fit this machine", t.dims),
                    })?;
                entries.insert(
                    hf,
                    Entry {
                        shard: s,
                        index: i,
                        shape,
                    },
                );
            }
        }
        Ok(GgufTensors {
            model,
            arch,
            entries,
            heads: arch.permuted_qk().then_some(heads),
        })
    }

    /// The model.
    pub fn model(&self) -> &GgufModel {
        &self.model
    }

    /// Bytes of tensor data in all shards.
    pub fn total_bytes(&self) -> u64 {
        self.model.data_bytes()
    }

    /// Every tensor the model may load: shard, Hugging Face name, PyTorch shape.
    pub fn shapes(&self) -> impl Iterator<Item = (&Path, &str, &[usize])> {
        self.entries.iter().map(|(name, e)| {
            (
                self.model.shards()[e.shard].path(),
                name.as_str(),
                e.shape.as_slice(),
            )
        })
    }

    /// Every shard's path.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.model.shards().iter().map(GgufFile::path)
    }

    /// Bytes the tensor `name` (Hugging Face naming) takes in its file, or `None`.
    pub fn stored_bytes(&self, name: &str) -> Option<u64> {
        let e = self.entries.get(name)?;
        Some(self.model.shards()[e.shard].tensors()[e.index].size)
    }

    /// Whether the model has the tensor `name` (Hugging Face naming).
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// The shard and info of `name`, checked against `shape`.
    fn find(&self, name: &str, shape: &[usize]) -> Result<(&GgufFile, &TensorInfo)> {
        let gguf = to_gguf(name, self.arch.sandwich()).unwrap_or_else(|| name.to_string());
        let Some(e) = self.entries.get(name) else {
            return Err(Error::MissingTensor {
                path: self.model.first().path().to_path_buf(),
                name: format!("{gguf}` (`{name}`"),
            });
        };
        let shard = &self.model.shards()[e.shard];
        let info = &shard.tensors()[e.index];
        if e.shape != shape {
            return Err(Error::TensorShape {
                path: shard.path().to_path_buf(),
                name: info.name.clone(),
                expected: shape.to_vec(),
                found: e.shape.clone(),
            });
        }
        Ok((shard, info))
    }

    /// How a stored tensor's elements are kept, or [`Error::UnsupportedGguf`] for a type the
    /// kernels do not compute with.
    fn stored(shard: &GgufFile, info: &TensorInfo) -> Result<Stored> {
        match info.ggml_type {
            GgmlType::F32 => return Ok(Stored::Float(KernelDtype::F32)),
            GgmlType::F16 => return Ok(Stored::Float(KernelDtype::F16)),
            GgmlType::BF16 => return Ok(Stored::Float(KernelDtype::Bf16)),
            _ => {}
        }
        match QuantType::from_ggml_type(info.ggml_type.id()) {
            Some(t) if quant::supported(t) => Ok(Stored::Quant(t)),
            _ => Err(Error::UnsupportedGguf {
                path: shard.path().to_path_buf(),
                what: format!("tensor `{}`", info.name),
                message: format!(
                    "type {} (GGUF type {}) is not computed; the supported types are F32, F16, BF16, {}",
                    info.ggml_type,
                    info.ggml_type.id(),
                    QuantType::ALL
                        .iter()
                        .filter(|t| quant::supported(**t))
                        .filter_map(|t| GgmlType::from_id(t.ggml_type()))
                        .map(GgmlType::name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        }
    }

    /// The order to read rows of `name` in (`rows` of them) so that they come out in Hugging
    /// Face order, or `None` when the stored order is that order.
    fn row_order(&self, name: &str, rows: usize) -> Option<Vec<usize>> {
        let (heads, kv_heads) = self.heads?;
        let n_head = if name.ends_with("self_attn.q_proj.weight")
            || name.ends_with("self_attn.q_proj.bias")
        {
            heads
        } else if name.ends_with("self_attn.k_proj.weight")
            || name.ends_with("self_attn.k_proj.bias")
        {
            kv_heads
        } else {
            return None;
        };
        if n_head == 0 || !rows.is_multiple_of(2 * n_head) {
            return None;
        }
        Some(unpermute_order(rows, n_head))
    }

    /// The element type [`GgufTensors::tensor_weights`] gives `name` in: `dtype` resolved
    /// against a float tensor's type; for a quantized tensor `F32` with [`WeightDtype::Auto`]
    /// (the type its rows dequantize to; it stays in its blocks), else `dtype`.
    ///
    /// # Errors
    /// As [`GgufTensors::tensor_weights`].
    pub fn weights_dtype(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        dtype: WeightDtype,
    ) -> Result<KernelDtype> {
        let (shard, info) = self.find(name, &[rows, cols])?;
        Ok(match Self::stored(shard, info)? {
            Stored::Float(d) => dtype.resolve(d),
            Stored::Quant(_) => dtype.resolve(KernelDtype::F32),
        })
    }

    /// The tensor `name` as `f32` values in row-major order (dequantized, q/k rows
    /// un-permuted), checked against `shape`, and the bytes it takes in the file.
    ///
    /// # Errors
    /// [`Error::MissingTensor`], [`Error::TensorShape`], [`Error::UnsupportedGguf`] for a
    /// type the kernels do not read.
    pub fn tensor_f32(&self, name: &str, shape: &[usize]) -> Result<(Vec<f32>, usize)> {
        let (values, bytes) = self.tensor_f32_stored(name, shape)?;
        let rows = shape.first().copied().unwrap_or(1);
        Ok(match self.row_order(name, rows) {
            Some(order) => (reorder(&values, &order), bytes),
            None => (values, bytes),
        })
    }

    /// [`GgufTensors::tensor_f32`] in the file's row order.
    fn tensor_f32_stored(&self, name: &str, shape: &[usize]) -> Result<(Vec<f32>, usize)> {
        let (shard, info) = self.find(name, shape)?;
        let stored = Self::stored(shard, info)?;
        let bytes = shard.tensor_bytes(info);
        let values: Vec<f32> = match stored {
            Stored::Float(KernelDtype::F32) => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Stored::Float(KernelDtype::F16) => bytes
                .chunks_exact(2)
                .map(|b| half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
                .collect(),
            Stored::Float(KernelDtype::Bf16) => bytes
                .chunks_exact(2)
                .map(|b| half::bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
                .collect(),
            Stored::Quant(t) => {
                // The reader checked that the row length is whole blocks and the bytes fit.
                let k = info.dims[0] as usize;
                let mut out = vec![0f32; info.elements() as usize];
                if let Some(row_bytes) = t.row_bytes(k).filter(|&r| r > 0) {
                    for (b, o) in bytes.chunks_exact(row_bytes).zip(out.chunks_exact_mut(k)) {
                        quant::dequantize_row(t, b, o);
                    }
                }
                out
            }
        };
        Ok((values, bytes.len()))
    }

    /// The `[rows, cols]` matrix `name` as its bytes in the memory map (no copy), in Hugging
    /// Face row order: a float tensor in `dtype` resolved against its type (converted into
    /// memory of its own when they differ), a quantized one in its blocks with
    /// [`WeightDtype::Auto`] (dequantized to `dtype` otherwise). The q/k rows of a `llama` file
    /// are put back in order in memory of their own.
    ///
    /// # Errors
    /// [`Error::MissingTensor`], [`Error::TensorShape`], [`Error::UnsupportedGguf`].
    pub fn tensor_weights(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        dtype: WeightDtype,
    ) -> Result<Weights> {
        let (weights, order) = self.tensor_weights_stored(name, rows, cols, dtype)?;
        let Some(order) = order else {
            return Ok(weights);
        };
        let (shard, info) = self.find(name, &[rows, cols])?;
        let bytes = reorder(weights.view().bytes(), &order);
        drop(weights);
        let (storage, range) = own(shard, info, bytes);
        let made = match Self::stored(shard, info)? {
            Stored::Quant(t) if dtype == WeightDtype::Auto => {
                Weights::quantized(storage, range, t, rows, cols)
            }
            Stored::Quant(_) => {
                Weights::new(storage, range, dtype.resolve(KernelDtype::F32), rows, cols)
            }
            Stored::Float(d) => Weights::new(storage, range, dtype.resolve(d), rows, cols),
        };
        made.map_err(|e| bad_tensor(shard, info, e))
    }

    /// [`GgufTensors::tensor_weights`] with the rows in the file's order, never copied for
    /// that: the weights, and — for the q/k matrices of a `llama` file — the order to read
    /// the product's outputs in (output `r` in Hugging Face order is output `order[r]` of
    /// these weights).
    ///
    /// # Errors
    /// As [`GgufTensors::tensor_weights`].
    pub fn tensor_weights_stored(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        dtype: WeightDtype,
    ) -> Result<(Weights, Option<Vec<usize>>)> {
        let (shard, info) = self.find(name, &[rows, cols])?;
        let bad = |e: sieve_kernels::Error| bad_tensor(shard, info, e);
        let start = info.file_offset as usize;
        let in_map = start..start + info.size as usize;
        let order = self.row_order(name, rows);
        // The stored float type, and the values already dequantized (empty for a float).
        let (stored, dequantized) = match Self::stored(shard, info)? {
            Stored::Quant(t) if dtype == WeightDtype::Auto => {
                let weights = Weights::quantized(shard.storage().clone(), in_map, t, rows, cols)
                    .map_err(bad)?;
                return Ok((weights, order));
            }
            Stored::Quant(_) => {
                let (values, _) = self.tensor_f32_stored(name, &[rows, cols])?;
                let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                (KernelDtype::F32, bytes)
            }
            Stored::Float(d) => (d, Vec::new()),
        };
        let wanted = dtype.resolve(stored);
        let (storage, range) = if dequantized.is_empty() && wanted == stored {
            (shard.storage().clone(), in_map)
        } else {
            let bytes = match dequantized.is_empty() {
                false => dequantized,
                true => shard.tensor_bytes(info).to_vec(),
            };
            let bytes = match wanted == stored {
                true => bytes,
                false => convert(&bytes, stored, wanted),
            };
            own(shard, info, bytes)
        };
        let weights = Weights::new(storage, range, wanted, rows, cols).map_err(bad)?;
        Ok((weights, order))
    }
}

/// A kernels error about `info`'s tensor, naming the file and the tensor.
fn bad_tensor(shard: &GgufFile, info: &TensorInfo, e: sieve_kernels::Error) -> Error {
    Error::BadTensor {
        path: shard.path().to_path_buf(),
        name: info.name.clone(),
        message: e.to_string(),
    }
}

/// `bytes` (a copy of `info`'s data) as storage of their own, the map's pages of the original
/// given back.
fn own(shard: &GgufFile, info: &TensorInfo, bytes: Vec<u8>) -> (Storage, Range<usize>) {
    shard.release(info);
    let len = bytes.len();
    (Arc::new(bytes), 0..len)
}

/// How a stored tensor's elements are kept.
#[derive(Debug, Clone, Copy)]
enum Stored {
    Float(KernelDtype),
    Quant(QuantType),
}

/// The rows of `items` (`order.len()` rows of equal width) in `order`: row `r` of the result
/// is row `order[r]` of `items`.
fn reorder<T: Copy>(items: &[T], order: &[usize]) -> Vec<T> {
    let width = items.len() / order.len().max(1);
    order
        .iter()
        .flat_map(|&r| &items[r * width..(r + 1) * width])
        .copied()
        .collect()
}

/// The stored row to read for each Hugging Face row of a matrix of `rows` rows in `n_head`
/// heads, undoing `LlamaModel.permute`: Hugging Face row `h·d + j·d/2 + i` is stored at row
/// `h·d + 2i + j`.
pub(crate) fn unpermute_order(rows: usize, n_head: usize) -> Vec<usize> {
    let d = rows / n_head;
    let half = d / 2;
    (0..rows)
        .map(|r| {
            let (h, within) = (r / d, r % d);
            let (j, i) = (within / half, within % half);
            h * d + 2 * i + j
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::unpermute_order;

    /// The converter's permutation, written from its definition: reshape the rows to
    /// `[n_head, 2, d/2]`, swap the last two axes, flatten.
    fn permute_order(rows: usize, n_head: usize) -> Vec<usize> {
        let half = rows / n_head / 2;
        let mut out = Vec::new();
        for h in 0..n_head {
            for i in 0..half {
                for j in 0..2 {
                    out.push(h * 2 * half + j * half + i);
                }
            }
        }
        out
    }

    #[test]
    fn unpermuting_undoes_the_converter() {
        for (rows, heads) in [(8, 1), (64, 4), (48, 3)] {
            // stored[k] = hf[permute[k]]; reading stored[unpermute[r]] gives hf[r].
            let permute = permute_order(rows, heads);
            let unpermute = unpermute_order(rows, heads);
            for r in 0..rows {
                assert_eq!(permute[unpermute[r]], r, "{rows} rows, {heads} heads");
            }
        }
        assert_eq!(unpermute_order(4, 1), [0, 2, 1, 3]);
    }
}

//! The weights of a Hugging Face directory: `model.safetensors`, or the shards listed by
//! `model.safetensors.index.json`, memory-mapped (no copy of a file is made): a tensor is
//! either converted to `f32` when it is read ([`Checkpoint::tensor_f32`]) or handed out as its
//! bytes in the map, in its stored dtype ([`Checkpoint::tensor_weights`], for the CPU
//! kernels; the map stays alive as long as any such tensor).
//!
//! A checkpoint may instead be a GGUF model ([`Checkpoint::from_gguf`]): its tensors are then
//! asked for by the same Hugging Face names and come out in the same layout (see
//! [`crate::gguf::GgufTensors`]), so the model loader does not know which it reads.
//!
//! Only regular files are mapped (a FIFO or a device, also behind a symlink, is refused before
//! it is opened), an index may list only files inside the model directory, and each file's
//! header is checked against the file's length before anything is read: every tensor's dtype,
//! shape and offsets, with errors naming the file and the tensor.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sieve_kernels::quant::QuantType;
use sieve_kernels::{Dtype as KernelDtype, Storage, Weights};

use crate::dtype::{convert, quant_type_for, quantize_matrix, WeightDtype};
use crate::gguf::GgufTensors;

use super::safetensors::{kernel_dtype, release_pages, Dtype, Index, SafetensorsFile, TensorInfo};

use sieve_text::files::stays_inside;
use sieve_text::json::read_json;

use crate::{Error, Result};

/// Name of the single-file checkpoint.
pub const SINGLE_FILE: &str = "model.safetensors";
/// Name of the index of a sharded checkpoint.
pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// Where each tensor of a checkpoint lives, with the files mapped.
pub struct Checkpoint {
    files: Vec<SafetensorsFile>,
    /// Tensor name to index in `files`.
    by_name: HashMap<String, usize>,
    /// The file named in "missing tensor" errors when a name is in no file.
    listing: PathBuf,
    /// The GGUF model, when the checkpoint is one (`files` is then empty).
    gguf: Option<GgufTensors>,
    /// Bytes of tensor data converted so far, and who to tell (a progress bar).
    progress: Cell<u64>,
    on_progress: Option<Box<dyn Fn(u64, u64)>>,
    /// The element type weight matrices are handed out in ([`Checkpoint::with_weight_dtype`]).
    weight_dtype: WeightDtype,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("files", &self.files().collect::<Vec<_>>())
            .field("tensors", &self.shapes().count())
            .finish()
    }
}

impl Checkpoint {
    /// Opens the checkpoint of `dir`: `model.safetensors` when present, else the shards of
    /// `model.safetensors.index.json`.
    ///
    /// Maps the files and checks their headers; reads no tensor data.
    ///
    /// # Errors
    /// [`sieve_text::Error::MissingFile`] (naming `model.safetensors` when neither file
    /// exists, or a shard the index names), [`sieve_text::Error::NotRegularFile`],
    /// [`Error::OutsideModelDir`] for an index entry that leaves the directory,
    /// [`sieve_text::Error::Json`] for a malformed index, [`Error::Safetensors`] for a
    /// truncated or corrupt header, [`Error::BadTensor`] for a tensor whose entry does not fit
    /// its file, [`sieve_text::Error::Io`] (the text side's errors inside [`Error::Text`]).
    pub fn open(dir: &Path) -> Result<Self> {
        let single = dir.join(SINGLE_FILE);
        let index = dir.join(INDEX_FILE);
        // `symlink_metadata` tells "absent" from "present but not a file" (which is refused).
        if single.symlink_metadata().is_ok() || index.symlink_metadata().is_err() {
            let file = SafetensorsFile::open(single.clone())?;
            let by_name = file.tensors.keys().map(|name| (name.clone(), 0)).collect();
            return Ok(Checkpoint {
                files: vec![file],
                by_name,
                listing: single,
                gguf: None,
                progress: Cell::new(0),
                on_progress: None,
                weight_dtype: WeightDtype::Auto,
            });
        }
        let parsed: Index = read_json(&index)?;
        let mut shard_names: Vec<&String> = parsed.weight_map.values().collect();
        shard_names.sort();
        shard_names.dedup();
        let mut files = Vec::with_capacity(shard_names.len());
        let mut slot = HashMap::new();
        for name in shard_names {
            if !stays_inside(name) {
                return Err(Error::OutsideModelDir {
                    path: index,
                    entry: name.clone(),
                });
            }
            slot.insert(name.clone(), files.len());
            files.push(SafetensorsFile::open(dir.join(name))?);
        }
        let by_name = parsed
            .weight_map
            .into_iter()
            .map(|(t, f)| (t, slot[&f]))
            .collect();
        Ok(Checkpoint {
            files,
            by_name,
            listing: index,
            gguf: None,
            progress: Cell::new(0),
            on_progress: None,
            weight_dtype: WeightDtype::Auto,
        })
    }

    /// The tensors of a GGUF model, under Hugging Face names (nothing is read).
    pub fn from_gguf(tensors: GgufTensors) -> Self {
        Checkpoint {
            files: Vec::new(),
            by_name: HashMap::new(),
            listing: tensors.model().first().path().to_path_buf(),
            gguf: Some(tensors),
            progress: Cell::new(0),
            on_progress: None,
            weight_dtype: WeightDtype::Auto,
        }
    }

    /// The GGUF model, when the checkpoint is one.
    pub fn gguf(&self) -> Option<&GgufTensors> {
        self.gguf.as_ref()
    }

    /// Calls `on_progress(done, total)` (bytes of tensor data) each time a tensor has been
    /// read, so a caller can draw a progress bar while the weights load.
    pub fn with_progress(mut self, on_progress: impl Fn(u64, u64) + 'static) -> Self {
        self.on_progress = Some(Box::new(on_progress));
        self
    }

    /// Hands weight matrices ([`Checkpoint::tensor_weights`]) out in `dtype`: converted once
    /// into memory of their own where it is not the stored one (see [`WeightDtype`]).
    pub fn with_weight_dtype(mut self, dtype: WeightDtype) -> Self {
        self.weight_dtype = dtype;
        self
    }

    /// The element type [`Checkpoint::tensor_weights`] gives the matrix `name` in (without
    /// reading it).
    ///
    /// # Errors
    /// As [`Checkpoint::tensor_weights`].
    pub fn weights_dtype(&self, name: &str, rows: usize, cols: usize) -> Result<KernelDtype> {
        if let WeightDtype::Quant(ty) = self.weight_dtype {
            if quant_type_for(ty, cols).is_some() {
                // Blocks, read as the `f32` they dequantize to (as a quantized GGUF tensor).
                self.tensor_shape_checked(name, rows, cols)?;
                return Ok(KernelDtype::F32);
            }
        }
        if let Some(g) = &self.gguf {
            return g.weights_dtype(name, rows, cols, self.weight_dtype);
        }
        let (file, info) = self.find(name, &[rows, cols])?;
        Ok(self
            .weight_dtype
            .resolve(kernel_dtype(file, name, &info.dtype)?))
    }

    /// Bytes of tensor data in all files.
    pub fn total_bytes(&self) -> u64 {
        let gguf = self.gguf.as_ref().map_or(0, GgufTensors::total_bytes);
        self.files.iter().map(|f| f.data_len).sum::<u64>() + gguf
    }

    /// Every tensor's file, name and shape, in no particular order (for checking
    /// `config.json`'s sizes before anything proportional to them is allocated).
    pub fn shapes(&self) -> impl Iterator<Item = (&Path, &str, &[usize])> {
        self.files
            .iter()
            .flat_map(|f| {
                f.tensors
                    .iter()
                    .map(|(name, info)| (f.path.as_path(), name.as_str(), info.shape.as_slice()))
            })
            .chain(self.gguf.iter().flat_map(GgufTensors::shapes))
    }

    /// The files read, in the order they were read.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files
            .iter()
            .map(|f| f.path.as_path())
            .chain(self.gguf.iter().flat_map(GgufTensors::files))
    }

    /// Bytes the tensor `name` takes in its file (as stored: a quantized tensor's blocks), or
    /// `None` when the checkpoint has no such tensor.
    pub fn stored_bytes(&self, name: &str) -> Option<u64> {
        if let Some(g) = &self.gguf {
            return g.stored_bytes(name);
        }
        let file = &self.files[*self.by_name.get(name)?];
        let info = file.tensors.get(name)?;
        Some((info.end - info.start) as u64)
    }

    /// Whether the checkpoint lists a tensor of this name.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name) || self.gguf.as_ref().is_some_and(|g| g.contains(name))
    }

    /// The tensor `name` as `f32` values in row-major order, checked against `shape`.
    ///
    /// # Errors
    /// [`Error::MissingTensor`], [`Error::TensorShape`] or [`Error::TensorDtype`], naming the
    /// file.
    pub fn tensor_f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        if let Some(g) = &self.gguf {
            let (values, stored) = g.tensor_f32(name, shape)?;
            self.advance(stored);
            return Ok(values);
        }
        let (file, info) = self.find(name, shape)?;
        // `parse_header` checked that the range lies in the file and matches dtype and shape.
        let bytes = &file.map[info.start..info.end];
        self.advance(bytes.len());
        match &info.dtype {
            Dtype::F32 => Ok(bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()),
            Dtype::F16 => Ok(bytes
                .chunks_exact(2)
                .map(|b| half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
                .collect()),
            Dtype::BF16 => Ok(bytes
                .chunks_exact(2)
                .map(|b| half::bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
                .collect()),
            Dtype::Other(other) => Err(Error::TensorDtype {
                path: file.path.clone(),
                name: name.to_string(),
                found: other.clone(),
            }),
        }
    }

    /// The `[rows, cols]` matrix `name` as its bytes in the memory map, in the stored dtype
    /// (`f32`, `bf16` or `f16`): nothing is copied or converted, and the map stays alive as
    /// long as the returned weights. With a [`Checkpoint::with_weight_dtype`] other than the
    /// stored one, the matrix is converted into memory of its own instead.
    ///
    /// # Errors
    /// [`Error::MissingTensor`], [`Error::TensorShape`], or [`Error::TensorDtype`] for a dtype
    /// the kernels do not read, naming the file.
    pub fn tensor_weights(&self, name: &str, rows: usize, cols: usize) -> Result<Weights> {
        if let WeightDtype::Quant(ty) = self.weight_dtype {
            if let Some(t) = quant_type_for(ty, cols) {
                return self.quantized_weights(name, rows, cols, t);
            }
        }
        if let Some(g) = &self.gguf {
            let weights = g.tensor_weights(name, rows, cols, self.weight_dtype)?;
            self.advance(weights.view().bytes().len());
            return Ok(weights);
        }
        let (file, info) = self.find(name, &[rows, cols])?;
        let stored = kernel_dtype(file, name, &info.dtype)?;
        let wanted = self.weight_dtype.resolve(stored);
        self.advance(info.end - info.start);
        let (storage, range): (Storage, _) = if wanted == stored {
            (file.map.clone(), info.start..info.end)
        } else {
            let bytes = convert(&file.map[info.start..info.end], stored, wanted);
            release_pages(&file.map, info.start..info.end);
            let len = bytes.len();
            (std::sync::Arc::new(bytes), 0..len)
        };
        // `parse_header` checked that the range lies in the file and matches dtype and shape,
        // so this cannot fail; an error would still be reported, not a panic.
        Weights::new(storage, range, wanted, rows, cols).map_err(|e| Error::BadTensor {
            path: file.path.clone(),
            name: name.to_string(),
            message: e.to_string(),
        })
    }

    /// [`Checkpoint::tensor_weights`] for a layer that can read its outputs in another order
    /// than its rows: the q/k matrices of a `llama` GGUF file stay in the file's row order
    /// (no copy) and come with the order to read the product's outputs in (output `r` in
    /// Hugging Face order is output `order[r]`, see `gguf::tensors`); every other matrix is
    /// [`Checkpoint::tensor_weights`]' with no order.
    ///
    /// # Errors
    /// As [`Checkpoint::tensor_weights`].
    pub fn tensor_weights_stored(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> Result<(Weights, Option<Vec<usize>>)> {
        let quantize_at_load = matches!(self.weight_dtype, WeightDtype::Quant(ty)
            if quant_type_for(ty, cols).is_some());
        match &self.gguf {
            Some(g) if !quantize_at_load => {
                let (weights, order) =
                    g.tensor_weights_stored(name, rows, cols, self.weight_dtype)?;
                self.advance(weights.view().bytes().len());
                Ok((weights, order))
            }
            _ => Ok((self.tensor_weights(name, rows, cols)?, None)),
        }
    }

    /// Checks that the checkpoint has the `[rows, cols]` matrix `name` (reads nothing).
    fn tensor_shape_checked(&self, name: &str, rows: usize, cols: usize) -> Result<()> {
        match &self.gguf {
            Some(g) => g
                .weights_dtype(name, rows, cols, WeightDtype::Auto)
                .map(|_| ()),
            None => self.find(name, &[rows, cols]).map(|_| ()),
        }
    }

    /// The `[rows, cols]` matrix `name` quantized into `ty` blocks (`--quantize`): read as
    /// `f32` (a GGUF tensor dequantized, its rows in Hugging Face order), quantized with
    /// GGML's reference rounding, and the map's pages of the original given back, so only
    /// one matrix is ever held in `f32`.
    ///
    /// # Errors
    /// As [`Checkpoint::tensor_f32`]; [`Error::BadTensor`] for a value that is not finite.
    fn quantized_weights(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        ty: QuantType,
    ) -> Result<Weights> {
        let values = self.tensor_f32(name, &[rows, cols])?;
        let path = match self.gguf.as_ref() {
            Some(_) => self.listing.clone(),
            None => {
                let (file, info) = self.find(name, &[rows, cols])?;
                release_pages(&file.map, info.start..info.end);
                file.path.clone()
            }
        };
        let bad = |e: sieve_kernels::Error| Error::BadTensor {
            path: path.clone(),
            name: name.to_string(),
            message: format!("--quantize {ty}: {e}"),
        };
        quantize_matrix(&values, ty, rows, cols).map_err(bad)
    }

    /// The file and header entry of `name`, checked against `shape`.
    fn find(&self, name: &str, shape: &[usize]) -> Result<(&SafetensorsFile, &TensorInfo)> {
        let Some(&slot) = self.by_name.get(name) else {
            return Err(Error::MissingTensor {
                path: self.listing.clone(),
                name: name.to_string(),
            });
        };
        let file = &self.files[slot];
        let Some(info) = file.tensors.get(name) else {
            return Err(Error::MissingTensor {
                path: file.path.clone(),
                name: name.to_string(),
            });
        };
        if info.shape != shape {
            return Err(Error::TensorShape {
                path: file.path.clone(),
                name: name.to_string(),
                expected: shape.to_vec(),
                found: info.shape.clone(),
            });
        }
        Ok((file, info))
    }

    /// Counts `bytes` more of tensor data as loaded, and tells the progress callback.
    fn advance(&self, bytes: usize) {
        if let Some(on_progress) = &self.on_progress {
            self.progress.set(self.progress.get() + bytes as u64);
            on_progress(self.progress.get(), self.total_bytes());
        }
    }
}

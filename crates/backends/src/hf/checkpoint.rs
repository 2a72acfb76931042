//! The weights of a Hugging Face directory: `model.safetensors`, or the shards listed by
//! `model.safetensors.index.json`, read with the `safetensors` crate and converted to `f32`.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use safetensors::tensor::{Dtype, Metadata};
use safetensors::SafeTensors;
use serde::Deserialize;

use super::json::read_json;
use crate::{Error, Result};

/// Name of the single-file checkpoint.
pub const SINGLE_FILE: &str = "model.safetensors";
/// Name of the index of a sharded checkpoint.
pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// One safetensors file, read into memory with its validated header.
struct SafetensorsFile {
    path: PathBuf,
    bytes: Vec<u8>,
    header_len: usize,
    metadata: Metadata,
}

impl SafetensorsFile {
    fn read(path: PathBuf) -> Result<Self> {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::MissingFile { path })
            }
            Err(source) => return Err(Error::Io { path, source }),
        };
        // Validates the header, the offsets and that the file is exactly as long as they say.
        let (header_len, metadata) =
            SafeTensors::read_metadata(&bytes).map_err(|e| Error::Safetensors {
                path: path.clone(),
                message: e.to_string(),
            })?;
        Ok(SafetensorsFile {
            path,
            bytes,
            header_len,
            metadata,
        })
    }
}

#[derive(Deserialize)]
struct Index {
    weight_map: HashMap<String, String>,
}

/// Where each tensor of a checkpoint lives, with the files' bytes.
pub struct Checkpoint {
    files: Vec<SafetensorsFile>,
    /// Tensor name to index in `files`.
    by_name: HashMap<String, usize>,
    /// The file named in "missing tensor" errors when a name is in no file.
    listing: PathBuf,
    /// Bytes of tensor data converted so far, and who to tell (a progress bar).
    progress: Cell<u64>,
    on_progress: Option<Box<dyn Fn(u64, u64)>>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field(
                "files",
                &self.files.iter().map(|x| &x.path).collect::<Vec<_>>(),
            )
            .field("tensors", &self.by_name.len())
            .finish()
    }
}

impl Checkpoint {
    /// Opens the checkpoint of `dir`: `model.safetensors` when present, else the shards of
    /// `model.safetensors.index.json`.
    ///
    /// # Errors
    /// [`Error::MissingFile`] (naming `model.safetensors` when neither file exists, or a shard
    /// the index names), [`Error::Json`] for a malformed index, [`Error::Safetensors`] for a
    /// truncated or corrupt file, [`Error::Io`].
    pub fn open(dir: &Path) -> Result<Self> {
        let single = dir.join(SINGLE_FILE);
        let index = dir.join(INDEX_FILE);
        if single.is_file() || !index.is_file() {
            let file = SafetensorsFile::read(single.clone())?;
            let by_name = file
                .metadata
                .tensors()
                .into_keys()
                .map(|name| (name, 0))
                .collect();
            return Ok(Checkpoint {
                files: vec![file],
                by_name,
                listing: single,
                progress: Cell::new(0),
                on_progress: None,
            });
        }
        let parsed: Index = read_json(&index)?;
        let mut shard_names: Vec<&String> = parsed.weight_map.values().collect();
        shard_names.sort();
        shard_names.dedup();
        let mut files = Vec::with_capacity(shard_names.len());
        let mut slot = HashMap::new();
        for name in shard_names {
            slot.insert(name.clone(), files.len());
            files.push(SafetensorsFile::read(dir.join(name))?);
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
            progress: Cell::new(0),
            on_progress: None,
        })
    }

    /// Calls `on_progress(done, total)` (bytes of tensor data) each time a tensor has been
    /// read, so a caller can draw a progress bar while the weights load.
    pub fn with_progress(mut self, on_progress: impl Fn(u64, u64) + 'static) -> Self {
        self.on_progress = Some(Box::new(on_progress));
        self
    }

    /// Bytes of tensor data in all files.
    pub fn total_bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|f| (f.bytes.len() - 8 - f.header_len) as u64)
            .sum()
    }

    /// The files read, in the order they were read.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|f| f.path.as_path())
    }

    /// Whether the checkpoint lists a tensor of this name.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The tensor `name` as `f32` values in row-major order, checked against `shape`.
    ///
    /// # Errors
    /// [`Error::MissingTensor`], [`Error::TensorShape`] or [`Error::TensorDtype`], naming the
    /// file.
    pub fn tensor_f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let Some(&slot) = self.by_name.get(name) else {
            return Err(Error::MissingTensor {
                path: self.listing.clone(),
                name: name.to_string(),
            });
        };
        let file = &self.files[slot];
        let Some(info) = file.metadata.info(name) else {
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
        let start = 8 + file.header_len + info.data_offsets.0;
        let end = 8 + file.header_len + info.data_offsets.1;
        // `read_metadata` checked that the offsets lie in the file and match dtype and shape.
        let bytes = &file.bytes[start..end];
        if let Some(on_progress) = &self.on_progress {
            self.progress.set(self.progress.get() + bytes.len() as u64);
            on_progress(self.progress.get(), self.total_bytes());
        }
        match info.dtype {
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
            other => Err(Error::TensorDtype {
                path: file.path.clone(),
                name: name.to_string(),
                found: format!("{other:?}"),
            }),
        }
    }
}

//! One safetensors file: memory-mapped, its header parsed and checked against the file's
//! length (every tensor's dtype, shape and offsets) before anything is read; and how its
//! stored dtypes map onto the kernels' and give their pages back once converted.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use serde::Deserialize;
use serde_json::Value;

use sieve_kernels::Dtype as KernelDtype;
use sieve_text::files::open_regular;

use crate::{Error, Result};

/// The largest header accepted (the `safetensors` format's own limit).
pub(super) const MAX_HEADER: u64 = 100 * 1024 * 1024;

/// A tensor's element type, as a safetensors header spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Dtype {
    F32,
    F16,
    BF16,
    /// A dtype this crate does not convert (checked only when such a tensor is read).
    Other(String),
}

impl Dtype {
    pub(super) fn parse(name: &str) -> Self {
        match name {
            "F32" => Dtype::F32,
            "F16" => Dtype::F16,
            "BF16" => Dtype::BF16,
            other => Dtype::Other(other.to_string()),
        }
    }

    /// Bytes per element, for the dtypes whose size is a whole number of bytes.
    pub(super) fn size(&self) -> Option<u64> {
        match self {
            Dtype::F32 => Some(4),
            Dtype::F16 | Dtype::BF16 => Some(2),
            Dtype::Other(name) => match name.as_str() {
                "BOOL" | "U8" | "I8" | "F8_E4M3" | "F8_E5M2" | "F8_E8M0" => Some(1),
                "U16" | "I16" => Some(2),
                "U32" | "I32" => Some(4),
                "U64" | "I64" | "F64" => Some(8),
                _ => None,
            },
        }
    }
}

/// One tensor's header entry, checked against its file.
#[derive(Debug, Clone)]
pub(super) struct TensorInfo {
    pub(super) dtype: Dtype,
    pub(super) shape: Vec<usize>,
    /// Byte range in the file (the header's offsets plus the header's length).
    pub(super) start: usize,
    pub(super) end: usize,
}

/// A header entry as written.
#[derive(Deserialize)]
pub(super) struct RawInfo {
    pub(super) dtype: String,
    pub(super) shape: Vec<u64>,
    pub(super) data_offsets: (u64, u64),
}

/// One memory-mapped safetensors file with its checked header.
pub(super) struct SafetensorsFile {
    pub(super) path: PathBuf,
    /// Shared with every [`sieve_kernels::Weights`] handed out.
    pub(super) map: Arc<Mmap>,
    pub(super) tensors: HashMap<String, TensorInfo>,
    /// Bytes of tensor data (the file less its header).
    pub(super) data_len: u64,
}

impl SafetensorsFile {
    pub(super) fn open(path: PathBuf) -> Result<Self> {
        let file = open_regular(&path)?;
        // SAFETY: the map is read-only and private to this process. Like every loader that
        // maps weights, this assumes no other process truncates or rewrites the file while
        // it is loaded (which would be a bus error or changed weights, not memory
        // unsafety in this process's own data). Only regular files get here.
        let map = unsafe { Mmap::map(&file) }.map_err(|source| {
            Error::Text(sieve_text::Error::Io {
                path: path.clone(),
                source,
            })
        })?;
        let (tensors, data_len) = parse_header(&path, &map)?;
        Ok(SafetensorsFile {
            path,
            map: Arc::new(map),
            tensors,
            data_len,
        })
    }
}

/// Parses and checks the header of the safetensors bytes `bytes` (the contents of `path`):
/// the tensors by name, and the length of the data section.
pub(super) fn parse_header(
    path: &Path,
    bytes: &[u8],
) -> Result<(HashMap<String, TensorInfo>, u64)> {
    let corrupt = |message: String| Error::Safetensors {
        path: path.to_path_buf(),
        message,
    };
    let file_len = bytes.len() as u64;
    let Some(len_bytes) = bytes.get(..8) else {
        return Err(corrupt(format!(
            "{file_len} bytes, shorter than the 8-byte header length"
        )));
    };
    let header_len = u64::from_le_bytes(len_bytes.try_into().expect("8 bytes"));
    if header_len > MAX_HEADER {
        return Err(corrupt(format!(
            "header length {header_len} exceeds the limit of {MAX_HEADER} bytes"
        )));
    }
    if header_len > file_len - 8 {
        return Err(corrupt(format!(
            "header length {header_len} exceeds the file's {} bytes after it",
            file_len - 8
        )));
    }
    let data_start = 8 + header_len as usize;
    let header: BTreeMap<String, Value> = serde_json::from_slice(&bytes[8..data_start])
        .map_err(|e| corrupt(format!("header is not a JSON object of tensors: {e}")))?;
    let data_len = file_len - data_start as u64;
    let mut tensors = HashMap::with_capacity(header.len());
    let mut covered = 0;
    for (name, value) in header {
        if name == "__metadata__" {
            continue;
        }
        let bad = |message: String| Error::BadTensor {
            path: path.to_path_buf(),
            name: name.clone(),
            message,
        };
        let raw =
            RawInfo::deserialize(&value).map_err(|e| bad(format!("bad header entry: {e}")))?;
        let dtype = Dtype::parse(&raw.dtype);
        let (start, end) = raw.data_offsets;
        if start > end || end > data_len {
            return Err(bad(format!(
                "data offsets {start}..{end} are outside the {data_len} bytes of tensor data"
            )));
        }
        covered = covered.max(end);
        let elements = raw
            .shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .ok_or_else(|| bad(format!("shape {:?} has too many elements", raw.shape)))?;
        if let Some(size) = dtype.size() {
            let expected = elements.checked_mul(size);
            if expected != Some(end - start) {
                return Err(bad(format!(
                    "shape {:?} of {} needs {} bytes, the offsets give {}",
                    raw.shape,
                    raw.dtype,
                    expected.map_or_else(|| "more than 2^64".to_string(), |e| e.to_string()),
                    end - start
                )));
            }
        }
        let shape = raw
            .shape
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad(format!("shape {:?} does not fit this machine", raw.shape)))?;
        tensors.insert(
            name,
            TensorInfo {
                dtype,
                shape,
                start: data_start + start as usize,
                end: data_start + end as usize,
            },
        );
    }
    if covered != data_len {
        return Err(corrupt(format!(
            "{} bytes after the last tensor's data",
            data_len - covered
        )));
    }
    Ok((tensors, data_len))
}

#[derive(Deserialize)]
pub(super) struct Index {
    pub(super) weight_map: HashMap<String, String>,
}

/// The kernels' element type for a tensor stored as `dtype`, or [`Error::TensorDtype`].
pub(super) fn kernel_dtype(
    file: &SafetensorsFile,
    name: &str,
    dtype: &Dtype,
) -> Result<KernelDtype> {
    match dtype {
        Dtype::F32 => Ok(KernelDtype::F32),
        Dtype::BF16 => Ok(KernelDtype::Bf16),
        Dtype::F16 => Ok(KernelDtype::F16),
        Dtype::Other(other) => Err(Error::TensorDtype {
            path: file.path.clone(),
            name: name.to_string(),
            found: other.clone(),
        }),
    }
}

/// Gives the pages of `range` of a read-only file map back to the kernel once their bytes have
/// been converted into memory of their own, so that `--dtype` conversion does not keep both
/// copies resident (peak memory: the converted weights plus one matrix, not plus the file).
/// The pages stay in the page cache; a later read of the range faults them back in from the
/// file with the same bytes. Elsewhere than Unix nothing is done.
pub(super) fn release_pages(map: &Mmap, range: std::ops::Range<usize>) {
    #[cfg(unix)]
    {
        // SAFETY: the map is a read-only, private mapping of a file that is assumed not to
        // change while loaded (see `SafetensorsFile::open`); nothing was ever written to its
        // pages, so dropping them loses nothing, and any later read gets the file's bytes
        // again. Failure only means the pages stay resident.
        let _ = unsafe {
            map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                range.start,
                range.end - range.start,
            )
        };
    }
    #[cfg(not(unix))]
    let _ = (map, range);
}

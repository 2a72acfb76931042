//! Reading one GGUF file: the header, every metadata pair, the tensor infos and the data
//! section, each checked against the file before it is used (see the crate docs for the
//! layout). Tensor data is not read: [`GgufFile::tensor_bytes`] hands out the bytes in the
//! map.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cursor::Cursor;
use crate::ggml_type::GgmlType;
use crate::metadata::{Metadata, Parsed};
use crate::value::ValueType;
use crate::{Error, Result};

/// `GGUF` read as a little-endian `u32`.
pub const MAGIC: u32 = 0x4655_4747;
/// The alignment of the data section and of each tensor when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// The metadata key that sets the alignment.
pub const ALIGNMENT_KEY: &str = "general.alignment";
/// The most dimensions a tensor may have (`GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;
/// The longest tensor name accepted, in bytes (llama.cpp's own limit is 63).
pub const MAX_NAME: u64 = 256;

use crate::storage::Storage;

/// One tensor's entry, checked against the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The name (`blk.0.attn_q.weight`).
    pub name: String,
    /// The dimensions in GGML's order: `dims[0]` is the contiguous one (the row length), the
    /// reverse of PyTorch's shape.
    pub dims: Vec<u64>,
    /// The element type.
    pub ggml_type: GgmlType,
    /// Offset of the data from the start of the data section.
    pub offset: u64,
    /// Bytes of data.
    pub size: u64,
    /// Offset of the data from the start of the file.
    pub file_offset: u64,
}

impl TensorInfo {
    /// Number of elements.
    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }

    /// The shape in PyTorch's order (outermost first): `[rows, row_len]` for a matrix.
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().rev().copied().collect()
    }
}

/// What a GGUF file's header holds, checked against its bytes.
#[derive(Debug, Clone)]
pub struct Header {
    /// The format version (2 or 3).
    pub version: u32,
    /// Every metadata pair.
    pub metadata: Metadata,
    /// Every tensor, in file order.
    pub tensors: Vec<TensorInfo>,
    /// The alignment of the data section and of each tensor's offset.
    pub alignment: u64,
    /// Offset of the data section from the start of the file.
    pub data_offset: u64,
}

impl Header {
    /// Parses and checks the header of `bytes`, the contents of `path` (named in errors).
    ///
    /// # Errors
    /// [`Error::BadMagic`], [`Error::UnsupportedVersion`], [`Error::Malformed`] for anything
    /// truncated or out of range in the header or metadata, [`Error::Metadata`] for a bad
    /// `general.alignment` or a duplicate key, [`Error::BadTensor`] for a tensor whose type,
    /// shape or offset does not fit the file.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Header> {
        Header::parse_in(path, bytes, None)
    }

    /// [`Header::parse`] of `storage`, leaving the metadata's arrays in it: they are checked
    /// element by element as they would be parsed, and read from `storage` when asked for
    /// (see [`Metadata`]), so a vocabulary's strings are not copied.
    ///
    /// # Errors
    /// As [`Header::parse`].
    pub fn parse_shared(path: &Path, storage: &Storage) -> Result<Header> {
        Header::parse_in(path, (**storage).as_ref(), Some(storage))
    }

    /// [`Header::parse`], arrays left in `storage` (the same bytes as `bytes`) when given.
    fn parse_in(path: &Path, bytes: &[u8], storage: Option<&Storage>) -> Result<Header> {
        let mut c = Cursor::new(path, bytes);
        let magic = bytes.get(..4).unwrap_or(bytes);
        if magic != MAGIC.to_le_bytes() {
            return Err(Error::BadMagic {
                path: path.to_path_buf(),
                found: magic.to_vec(),
            });
        }
        c.take(4, &|| "magic".into())?;
        let version = c.u32(&|| "version".into())?;
        if version != 2 && version != 3 {
            let hint = if version.swap_bytes() == 2 || version.swap_bytes() == 3 {
                " (the file looks big-endian, which is not supported)"
            } else if version == 1 {
                " (version 1 is obsolete; convert the file again)"
            } else {
                ""
            };
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                version,
                hint,
            });
        }
        // A tensor info takes at least 8 (name) + 4 (dims) + 4 (type) + 8 (offset) bytes; a
        // metadata pair at least 8 (key) + 4 (type) + 1.
        let n_tensors = c.count(24, &|| "tensor count".into())?;
        let n_kv = c.count(13, &|| "metadata count".into())?;
        let mut entries = Vec::with_capacity(n_kv);
        for i in 0..n_kv {
            let key = c.string(&|| format!("metadata key {i}"))?;
            let what = || format!("metadata key `{key}`");
            let t = c.value_type(&what)?;
            let value = match (t, storage) {
                (ValueType::Array, Some(_)) => Parsed::Raw(c.raw_array(&what)?),
                _ => Parsed::Value(c.value(t, 0, &what)?),
            };
            entries.push((key, value));
        }
        let metadata = Metadata::with_bytes(path, entries, storage.cloned())?;
        let alignment = match metadata.get(ALIGNMENT_KEY) {
            None => DEFAULT_ALIGNMENT,
            Some(v) => {
                let a = metadata.get_u32(ALIGNMENT_KEY)?.unwrap_or(0);
                if a == 0 || !a.is_power_of_two() || v.value_type() != ValueType::U32 {
                    return Err(metadata.error(
                        ALIGNMENT_KEY,
                        format!("{v:?} is not a power of two stored as u32"),
                    ));
                }
                u64::from(a)
            }
        };
        let mut infos = Vec::with_capacity(n_tensors);
        for i in 0..n_tensors {
            infos.push(read_info(&mut c, i)?);
        }
        let end = c.pos() as u64;
        let file_len = bytes.len() as u64;
        // `end` ≤ file_len < 2^63, so this cannot overflow.
        let data_offset = end.next_multiple_of(alignment);
        let data_len = file_len.saturating_sub(data_offset);
        let mut tensors = Vec::with_capacity(infos.len());
        let mut seen = HashMap::with_capacity(infos.len());
        for (name, dims, type_id, offset) in infos {
            let bad = |message: String| Error::BadTensor {
                path: path.to_path_buf(),
                name: name.clone(),
                message,
            };
            if seen.insert(name.clone(), ()).is_some() {
                return Err(bad("the name appears twice".into()));
            }
            let Some(ggml_type) = GgmlType::from_id(type_id) else {
                return Err(bad(format!("unknown tensor type id {type_id}")));
            };
            let size = tensor_size(ggml_type, &dims).map_err(bad)?;
            if !offset.is_multiple_of(alignment) {
                return Err(bad(format!(
                    "offset {offset} is not a multiple of the alignment {alignment}"
                )));
            }
            if offset.checked_add(size).is_none_or(|e| e > data_len) {
                return Err(bad(format!(
                    "data {offset}..{} past the end of the {data_len} bytes of tensor data",
                    offset as u128 + size as u128
                )));
            }
            tensors.push(TensorInfo {
                name,
                dims,
                ggml_type,
                offset,
                size,
                file_offset: data_offset + offset,
            });
        }
        check_overlaps(path, &tensors)?;
        Ok(Header {
            version,
            metadata,
            tensors,
            alignment,
            data_offset,
        })
    }
}

/// A tensor info as read: name, dims, type id, offset.
type RawInfo = (String, Vec<u64>, u32, u64);

/// Reads tensor info `i`.
fn read_info(c: &mut Cursor<'_>, i: usize) -> Result<RawInfo> {
    let what = || format!("tensor info {i}");
    let start = c.pos();
    let len = c.u64(&what)?;
    if len > MAX_NAME {
        return Err(c.malformed(
            &what,
            format!("name length {len} exceeds {MAX_NAME} bytes (byte {start})"),
        ));
    }
    let name_bytes = c.take(len, &what)?;
    let name = String::from_utf8(name_bytes.to_vec())
        .map_err(|_| c.malformed(&what, "name is not UTF-8".into()))?;
    let what = || format!("tensor `{name}`");
    let n_dims = c.u32(&what)?;
    if n_dims == 0 || n_dims > MAX_DIMS {
        return Err(c.malformed(
            &what,
            format!("{n_dims} dimensions, expected 1 to {MAX_DIMS}"),
        ));
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    for _ in 0..n_dims {
        dims.push(c.u64(&what)?);
    }
    let type_id = c.u32(&what)?;
    let offset = c.u64(&what)?;
    Ok((name, dims, type_id, offset))
}

/// Bytes of a tensor of `ty` with GGML dims `dims`, or why it cannot exist.
fn tensor_size(ty: GgmlType, dims: &[u64]) -> std::result::Result<u64, String> {
    let overflow = || format!("dims {dims:?} of {ty} overflow");
    dims.iter()
        .try_fold(1u64, |e, &d| e.checked_mul(d))
        .ok_or_else(overflow)?;
    let row = dims[0];
    let row_bytes = ty.row_bytes(row).ok_or_else(|| {
        format!(
            "row length {row} is not a multiple of {ty}'s block of {} elements",
            ty.block_len()
        )
    })?;
    dims[1..]
        .iter()
        .try_fold(row_bytes, |n, &d| n.checked_mul(d))
        .ok_or_else(overflow)
}

/// Refuses tensors whose data overlap.
fn check_overlaps(path: &Path, tensors: &[TensorInfo]) -> Result<()> {
    let mut order: Vec<&TensorInfo> = tensors.iter().filter(|t| t.size > 0).collect();
    order.sort_by_key(|t| t.offset);
    for pair in order.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.offset + a.size > b.offset {
            return Err(Error::BadTensor {
                path: path.to_path_buf(),
                name: b.name.clone(),
                message: format!(
                    "data {}..{} overlaps tensor `{}` at {}..{}",
                    b.offset,
                    b.offset + b.size,
                    a.name,
                    a.offset,
                    a.offset + a.size
                ),
            });
        }
    }
    Ok(())
}

/// A GGUF file: its checked [`Header`] and its bytes (memory-mapped by
/// [`GgufFile::open`]). A clone shares both (the metadata of a large vocabulary is megabytes
/// of strings).
#[derive(Clone)]
pub struct GgufFile {
    path: PathBuf,
    storage: Storage,
    /// The same bytes as `storage` when they are a file map ([`GgufFile::release`]).
    map: Option<Arc<memmap2::Mmap>>,
    header: Arc<Header>,
    by_name: Arc<HashMap<String, usize>>,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("path", &self.path)
            .field("version", &self.header.version)
            .field("metadata", &self.header.metadata.len())
            .field("tensors", &self.header.tensors.len())
            .finish_non_exhaustive()
    }
}

impl GgufFile {
    /// Memory-maps the regular file `path` and checks its header.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::NotRegularFile`], and those of [`Header::parse`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        if !meta.is_file() {
            return Err(Error::NotRegularFile {
                path: path.to_path_buf(),
            });
        }
        let file = std::fs::File::open(path).map_err(io)?;
        if meta.len() == 0 {
            return GgufFile::from_storage(path, Arc::new(Vec::<u8>::new()));
        }
        // SAFETY: a read-only private map of a regular file. Like every loader that maps
        // weights, this assumes no other process truncates or rewrites the file while it is
        // open (that would be a bus error or changed weights, not memory unsafety in this
        // process's own data).
        let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.map_err(io)?);
        let storage: Storage = map.clone();
        let mut file = GgufFile::from_storage(path, storage)?;
        file.map = Some(map);
        Ok(file)
    }

    /// Checks the header of `storage`, the contents of `path` (named in errors).
    ///
    /// # Errors
    /// As [`Header::parse`].
    pub fn from_storage(path: impl AsRef<Path>, storage: Storage) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let header = Header::parse_shared(&path, &storage)?;
        let by_name = header
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        Ok(GgufFile {
            path,
            storage,
            map: None,
            header: Arc::new(header),
            by_name: Arc::new(by_name),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's bytes, shared.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The checked header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.header.metadata
    }

    /// Every tensor, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.header.tensors
    }

    /// The tensor `name`, if the file holds it.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.by_name.get(name).map(|&i| &self.header.tensors[i])
    }

    /// Gives the pages of `info`'s data back to the kernel when the file is memory-mapped
    /// (a caller that copied the tensor into memory of its own no longer needs them
    /// resident). The pages stay in the page cache; a later read faults the same bytes back
    /// in. Does nothing for bytes that are not a map, or elsewhere than Unix.
    pub fn release(&self, info: &TensorInfo) {
        #[cfg(unix)]
        if let Some(map) = &self.map {
            let (start, len) = (info.file_offset as usize, info.size as usize);
            if start.checked_add(len).is_some_and(|end| end <= map.len()) {
                // SAFETY: the map is read-only and private, of a file assumed not to change
                // while open (see `GgufFile::open`); nothing was written to its pages, so
                // dropping them loses nothing and a later read gets the file's bytes again.
                // Failure only means the pages stay resident.
                let _ = unsafe {
                    map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len)
                };
            }
        }
        #[cfg(not(unix))]
        let _ = info;
    }

    /// The bytes of `info`, a tensor of this file (checked at open to lie in the file).
    ///
    /// # Panics
    /// If `info` is not one of this file's tensors and lies outside it.
    pub fn tensor_bytes(&self, info: &TensorInfo) -> &[u8] {
        let start = info.file_offset as usize;
        &(*self.storage).as_ref()[start..start + info.size as usize]
    }
}

//! # sieve-gguf
//!
//! GGUF, the file format of llama.cpp (its `ggml/docs/gguf.md` is the specification), read
//! from a memory map and written. No tensor library: this crate knows the layout and the
//! GGML types' block sizes, not what a model does with them.
//!
//! ```text
//! u32 magic "GGUF" | u32 version (2, 3) | u64 tensor_count | u64 metadata_kv_count
//! metadata_kv_count × (string key | u32 value_type | value)         string = u64 len + UTF-8
//! tensor_count × (string name | u32 n_dims | u64 dims[n_dims] | u32 ggml_type | u64 offset)
//! padding to general.alignment (default 32)
//! tensor data: each tensor at data_start + offset, offsets multiples of the alignment
//! ```
//!
//! Everything is little-endian. `dims[0]` is the contiguous axis (the row length), the
//! reverse of PyTorch's shape.
//!
//! A file is never trusted: every length, count, type id, shape and offset is checked
//! against the file before it is used, with overflow-checked arithmetic, and nothing is
//! allocated in proportion to a count before the file is shown to hold that many items (a
//! count of 2^60 is "count past the end of the file", not an out-of-memory abort). Tensor
//! data must lie in the data section, aligned, and no two tensors may overlap. Errors name
//! the file, the key or tensor, and the byte offset ([`Error`]).
//!
//! - [`GgufFile`]: one file, memory-mapped, with its checked [`Header`]: [`Metadata`]
//!   (typed accessors accepting every integer width a file may use; arrays, such as a
//!   vocabulary's 150 000 token strings, checked at open and then read in place from the map
//!   rather than copied) and [`TensorInfo`]s;
//! - [`GgufModel`]: one file or the shards of a split model (`-00001-of-0000N.gguf`);
//! - [`Writer`]: metadata and tensors to a GGUF v3 file;
//! - [`GgmlType`]: the tensor types, their ids and block sizes.
#![warn(missing_docs)]

mod cursor;
mod error;
mod ggml_type;
mod metadata;
mod reader;
mod split;
mod storage;
mod value;
mod writer;

pub use error::{Error, Result};
pub use ggml_type::GgmlType;
pub use metadata::Metadata;
pub use reader::{
    GgufFile, Header, TensorInfo, ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAGIC, MAX_DIMS, MAX_NAME,
};
pub use split::{shard_name, split_name, GgufModel, SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT};
pub use storage::Storage;
pub use value::{Value, ValueType};
pub use writer::Writer;

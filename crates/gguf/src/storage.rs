//! The bytes a GGUF file is read from, shared by the header's metadata and the tensors.

use std::sync::Arc;

/// Shared bytes of a file: a memory map, or a `Vec<u8>` in tests. The same type as
/// `sieve_kernels::Storage`, so tensors can be handed to the kernels without a copy.
pub type Storage = Arc<dyn AsRef<[u8]> + Send + Sync>;

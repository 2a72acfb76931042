//! The one error type of `sieve-gguf`.

use std::path::PathBuf;

/// Everything that can go wrong reading or writing a GGUF file. Every message names the file
/// and, where there is one, the metadata key or tensor, and the byte offset where the
/// problem was found.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened, mapped, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system reported.
        source: std::io::Error,
    },
    /// The path is not a regular file (a directory, a FIFO, a device).
    #[error("{}: not a regular file", path.display())]
    NotRegularFile {
        /// The path.
        path: PathBuf,
    },
    /// The first four bytes are not `GGUF`.
    #[error("{}: not a GGUF file (the first bytes are {found:02x?}, expected \"GGUF\")", path.display())]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// The bytes found (up to four).
        found: Vec<u8>,
    },
    /// A format version other than 2 or 3.
    #[error("{}: GGUF version {version} is not supported (2 and 3 are){hint}", path.display())]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version field.
        version: u32,
        /// A hint (e.g. that the file looks big-endian).
        hint: &'static str,
    },
    /// The header or metadata is truncated or inconsistent: a count, a length or a type
    /// that the file cannot hold.
    #[error("{}: {what} at byte {offset}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What was being read (e.g. "metadata key `llama.block_count`", "tensor info 3").
        what: String,
        /// Where in the file.
        offset: u64,
        /// What is wrong, with the numbers.
        message: String,
    },
    /// A tensor's entry does not fit the file (type, shape, offset, overlap).
    #[error("{}: tensor `{name}`: {message}", path.display())]
    BadTensor {
        /// The file.
        path: PathBuf,
        /// The tensor's name.
        name: String,
        /// What is wrong, with the numbers.
        message: String,
    },
    /// A metadata value has another type than the caller asked for, or is out of range.
    #[error("{}: metadata key `{key}`: {message}", path.display())]
    Metadata {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The shards of a split model do not fit together.
    #[error("{}: split model: {message}", path.display())]
    Split {
        /// The shard at fault (or the first).
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A file being written would be invalid (bad alignment, a tensor whose bytes do not
    /// match its type and shape, a duplicate name).
    #[error("writing GGUF: {message}")]
    Write {
        /// What is wrong.
        message: String,
    },
}

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

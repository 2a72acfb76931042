//! The errors of this crate.

/// What can go wrong building a weight or a thread pool.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The byte slice does not hold exactly `n * k` elements of the dtype.
    #[error("a [{n}, {k}] {dtype} weight needs {expected} bytes, got {actual}")]
    WeightLength {
        /// Rows (outputs).
        n: usize,
        /// Columns (inputs).
        k: usize,
        /// Element type.
        dtype: crate::Dtype,
        /// `n * k * dtype.size()`.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// `n * k * dtype.size()` overflows `usize`.
    #[error("a [{n}, {k}] weight is too large to address")]
    WeightTooLarge {
        /// Rows (outputs).
        n: usize,
        /// Columns (inputs).
        k: usize,
    },
    /// The byte range of an owned weight lies outside its storage.
    #[error("byte range {start}..{end} is outside a storage of {len} bytes")]
    StorageRange {
        /// Start of the range.
        start: usize,
        /// End of the range.
        end: usize,
        /// Length of the storage.
        len: usize,
    },
    /// Rayon could not build the global pool (for example because it already exists).
    #[error("could not set up the thread pool: {0}")]
    ThreadPool(#[from] rayon::ThreadPoolBuildError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

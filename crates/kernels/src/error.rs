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
    /// A name that is no [`crate::quant::QuantType`].
    #[error("unknown quantization type `{name}` (expected one of q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k)")]
    UnknownQuantType {
        /// The text given.
        name: String,
    },
    /// A quantized weight's row length is not a whole number of blocks.
    #[error("a {ty} weight needs rows of a multiple of {block_len} elements, got k = {k}")]
    QuantWidth {
        /// The block type.
        ty: crate::quant::QuantType,
        /// Its block length.
        block_len: usize,
        /// The row length given.
        k: usize,
    },
    /// The byte slice does not hold exactly the `n * k / block_len` blocks of a quantized
    /// weight.
    #[error("a [{n}, {k}] {ty} weight needs {expected} bytes, got {actual}")]
    QuantLength {
        /// Rows (outputs).
        n: usize,
        /// Columns (inputs).
        k: usize,
        /// The block type.
        ty: crate::quant::QuantType,
        /// `n * (k / block_len) * block_bytes`.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// A block type this build cannot compute with yet.
    #[error("{ty} weights are not supported yet")]
    QuantUnsupported {
        /// The block type.
        ty: crate::quant::QuantType,
    },
    /// A value to quantize is not finite (GGML's block formats cannot hold it).
    #[error("cannot quantize to {ty}: element {index} of row {row} is {value}")]
    QuantNotFinite {
        /// The block type.
        ty: crate::quant::QuantType,
        /// The row.
        row: usize,
        /// The element within the row.
        index: usize,
        /// The value.
        value: f32,
    },
    /// Rayon could not build the global pool (for example because it already exists).
    #[error("could not set up the thread pool: {0}")]
    ThreadPool(#[from] rayon::ThreadPoolBuildError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

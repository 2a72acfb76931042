//! A `[n, k]` weight matrix in PyTorch's `[out, in]` layout, as raw little-endian bytes: borrowed
//! ([`WeightView`], e.g. straight from a memory-mapped safetensors file) or owned ([`Weights`]).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::{Dtype, Error, Result};

/// A row-major `[n, k]` matrix borrowed as little-endian bytes: row `j` holds output `j`'s `k`
/// weights contiguously.
///
/// The bytes need no alignment (the kernels use unaligned loads).
#[derive(Clone, Copy)]
pub struct WeightView<'a> {
    bytes: &'a [u8],
    dtype: Dtype,
    n: usize,
    k: usize,
}

impl<'a> WeightView<'a> {
    /// `bytes` read as a `[n, k]` matrix of `dtype`.
    ///
    /// # Errors
    /// [`Error::WeightLength`] unless `bytes` holds exactly `n * k` elements;
    /// [`Error::WeightTooLarge`] if that count overflows.
    pub fn new(bytes: &'a [u8], dtype: Dtype, n: usize, k: usize) -> Result<Self> {
        let expected = n
            .checked_mul(k)
            .and_then(|e| e.checked_mul(dtype.size()))
            .ok_or(Error::WeightTooLarge { n, k })?;
        if bytes.len() != expected {
            return Err(Error::WeightLength {
                n,
                k,
                dtype,
                expected,
                actual: bytes.len(),
            });
        }
        Ok(WeightView { bytes, dtype, n, k })
    }

    /// The raw bytes, `n * k * dtype.size()` of them.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Rows: the number of outputs.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Columns: the number of inputs (the reduction length).
    pub fn k(&self) -> usize {
        self.k
    }

    /// The weight `[j, i]`, widened to `f32`.
    ///
    /// # Panics
    /// If `j >= n` or `i >= k`.
    pub fn get(&self, j: usize, i: usize) -> f32 {
        assert!(j < self.n && i < self.k, "weight index out of range");
        self.dtype.get(self.bytes, j * self.k + i)
    }

    /// Row `j` widened to `f32` (a copy; for tests and slow paths).
    ///
    /// # Panics
    /// If `j >= n`.
    pub fn row_f32(&self, j: usize) -> Vec<f32> {
        (0..self.k).map(|i| self.get(j, i)).collect()
    }
}

impl fmt::Debug for WeightView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeightView")
            .field("dtype", &self.dtype)
            .field("n", &self.n)
            .field("k", &self.k)
            .finish_non_exhaustive()
    }
}

/// Shared byte storage a [`Weights`] can point into: a memory map, a `Vec<u8>`, …
pub type Storage = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A `[n, k]` weight that owns (a share of) its bytes: a byte range of a [`Storage`], so many
/// weights can point into one memory-mapped file without copying it, and a tied weight can be
/// the same bytes twice.
#[derive(Clone)]
pub struct Weights {
    storage: Storage,
    range: Range<usize>,
    dtype: Dtype,
    n: usize,
    k: usize,
}

impl Weights {
    /// The bytes `range` of `storage`, read as a `[n, k]` matrix of `dtype`.
    ///
    /// # Errors
    /// [`Error::StorageRange`] if `range` is not inside the storage; the errors of
    /// [`WeightView::new`].
    pub fn new(
        storage: Storage,
        range: Range<usize>,
        dtype: Dtype,
        n: usize,
        k: usize,
    ) -> Result<Self> {
        let len = (*storage).as_ref().len();
        if range.start > range.end || range.end > len {
            return Err(Error::StorageRange {
                start: range.start,
                end: range.end,
                len,
            });
        }
        WeightView::new(&(*storage).as_ref()[range.clone()], dtype, n, k)?;
        Ok(Weights {
            storage,
            range,
            dtype,
            n,
            k,
        })
    }

    /// An `f32` weight owning `values` (row-major `[n, k]`).
    ///
    /// # Errors
    /// [`Error::WeightLength`] unless `values.len() == n * k`.
    pub fn from_f32(values: &[f32], n: usize, k: usize) -> Result<Self> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let len = bytes.len();
        Weights::new(Arc::new(bytes), 0..len, Dtype::F32, n, k)
    }

    /// The matrix as a borrowed view.
    pub fn view(&self) -> WeightView<'_> {
        WeightView {
            bytes: &(*self.storage).as_ref()[self.range.clone()],
            dtype: self.dtype,
            n: self.n,
            k: self.k,
        }
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Rows: the number of outputs.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Columns: the number of inputs.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Whether `self` and `other` read the very same bytes (e.g. tied embeddings).
    pub fn shares_bytes_with(&self, other: &Weights) -> bool {
        std::ptr::eq(self.view().bytes.as_ptr(), other.view().bytes.as_ptr())
            && self.range.len() == other.range.len()
    }
}

impl fmt::Debug for Weights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Weights")
            .field("dtype", &self.dtype)
            .field("n", &self.n)
            .field("k", &self.k)
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

//! A `[n, k]` weight matrix in PyTorch's `[out, in]` layout, as raw little-endian bytes: borrowed
//! ([`WeightView`], e.g. straight from a memory-mapped safetensors file) or owned ([`Weights`]),
//! stored as floats ([`Dtype`]) or in GGML blocks ([`QuantType`]).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::quant::{self, QuantType};
use crate::{Dtype, Error, Result};

/// How a weight's elements are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// One float per element.
    Float(Dtype),
    /// GGML blocks: each row is `k / block_len` blocks.
    Quant(QuantType),
}

impl Format {
    /// Bytes of a row of `k` elements; `None` on overflow or, for blocks, unless `k` is a
    /// multiple of the block length.
    pub fn row_bytes(self, k: usize) -> Option<usize> {
        match self {
            Format::Float(d) => k.checked_mul(d.size()),
            Format::Quant(t) => t.row_bytes(k),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Format::Float(d) => d.fmt(f),
            Format::Quant(t) => t.fmt(f),
        }
    }
}

/// A row-major `[n, k]` matrix borrowed as little-endian bytes: row `j` holds output `j`'s `k`
/// weights contiguously.
///
/// The bytes need no alignment (the kernels use unaligned loads).
#[derive(Clone, Copy)]
pub struct WeightView<'a> {
    bytes: &'a [u8],
    format: Format,
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
        Ok(WeightView {
            bytes,
            format: Format::Float(dtype),
            n,
            k,
        })
    }

    /// `bytes` read as a `[n, k]` matrix of `ty` blocks: row `j` is the `k / block_len` blocks
    /// at `j * row_bytes`, exactly as a GGUF tensor of shape `[k, n]` (GGML order) stores it.
    ///
    /// # Errors
    /// [`Error::QuantWidth`] unless `k` is a multiple of `ty.block_len()`;
    /// [`Error::QuantLength`] unless `bytes` holds exactly `n` such rows;
    /// [`Error::WeightTooLarge`] if that size overflows; [`Error::QuantUnsupported`] for a
    /// type this build cannot multiply yet ([`quant::supported`]).
    pub fn quantized(bytes: &'a [u8], ty: QuantType, n: usize, k: usize) -> Result<Self> {
        if !quant::supported(ty) {
            return Err(Error::QuantUnsupported { ty });
        }
        let row = ty.row_bytes(k).ok_or(Error::QuantWidth {
            ty,
            block_len: ty.block_len(),
            k,
        })?;
        let expected = n.checked_mul(row).ok_or(Error::WeightTooLarge { n, k })?;
        if bytes.len() != expected {
            return Err(Error::QuantLength {
                n,
                k,
                ty,
                expected,
                actual: bytes.len(),
            });
        }
        Ok(WeightView {
            bytes,
            format: Format::Quant(ty),
            n,
            k,
        })
    }

    /// The raw bytes, `n` rows of [`WeightView::row_bytes`] each.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// How the elements are stored.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The block type of a quantized weight; `None` for floats.
    pub fn quant(&self) -> Option<QuantType> {
        match self.format {
            Format::Quant(t) => Some(t),
            Format::Float(_) => None,
        }
    }

    /// The float element type; [`Dtype::F32`] for a quantized weight (the type its rows
    /// dequantize to: see [`WeightView::format`] for how it is stored).
    pub fn dtype(&self) -> Dtype {
        match self.format {
            Format::Float(d) => d,
            Format::Quant(_) => Dtype::F32,
        }
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        // The constructors checked that `n` rows of this size fit in `bytes`; `n = 0` leaves
        // the size unchecked, but it still cannot overflow for a constructible `k`.
        self.format.row_bytes(self.k).unwrap_or(0)
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
        match self.format {
            Format::Float(d) => d.get(self.bytes, j * self.k + i),
            Format::Quant(t) => {
                let (len, size) = (t.block_len(), t.block_bytes());
                let at = j * self.row_bytes() + (i / len) * size;
                let mut block = vec![0f32; len];
                quant::dequantize_row(t, &self.bytes[at..at + size], &mut block);
                block[i % len]
            }
        }
    }

    /// Row `j` widened to `f32` (dequantized, for a quantized weight: the embedding lookup
    /// of a quantized table uses it).
    ///
    /// # Panics
    /// If `j >= n`.
    pub fn row_f32(&self, j: usize) -> Vec<f32> {
        assert!(j < self.n, "weight row out of range");
        match self.format {
            Format::Float(_) => (0..self.k).map(|i| self.get(j, i)).collect(),
            Format::Quant(t) => {
                let row = self.row_bytes();
                let mut out = vec![0f32; self.k];
                quant::dequantize_row(t, &self.bytes[j * row..(j + 1) * row], &mut out);
                out
            }
        }
    }
}

impl fmt::Debug for WeightView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeightView")
            .field("format", &self.format)
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
    format: Format,
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
        WeightView::new(stored(&storage, &range)?, dtype, n, k)?;
        Ok(Weights {
            storage,
            range,
            format: Format::Float(dtype),
            n,
            k,
        })
    }

    /// The bytes `range` of `storage`, read as a `[n, k]` matrix of `ty` blocks (a GGUF
    /// tensor's data, used in place).
    ///
    /// # Errors
    /// [`Error::StorageRange`] if `range` is not inside the storage; the errors of
    /// [`WeightView::quantized`].
    pub fn quantized(
        storage: Storage,
        range: Range<usize>,
        ty: QuantType,
        n: usize,
        k: usize,
    ) -> Result<Self> {
        WeightView::quantized(stored(&storage, &range)?, ty, n, k)?;
        Ok(Weights {
            storage,
            range,
            format: Format::Quant(ty),
            n,
            k,
        })
    }

    /// `values` (row-major `[n, k]`) quantized to `ty` with GGML's reference rounding
    /// (`quantize_row_*_ref`), owned (what `--quantize` does to a float checkpoint).
    ///
    /// # Errors
    /// [`Error::WeightLength`] unless `values.len() == n * k`; [`Error::QuantNotFinite`] for
    /// a NaN or infinite value; the errors of [`WeightView::quantized`].
    pub fn quantize_f32(values: &[f32], ty: QuantType, n: usize, k: usize) -> Result<Self> {
        let bytes = quant::quantize_matrix(values, ty, n, k)?;
        let len = bytes.len();
        Weights::quantized(Arc::new(bytes), 0..len, ty, n, k)
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
            format: self.format,
            n: self.n,
            k: self.k,
        }
    }

    /// How the elements are stored.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The block type of a quantized weight; `None` for floats.
    pub fn quant(&self) -> Option<QuantType> {
        self.view().quant()
    }

    /// The float element type; [`Dtype::F32`] for a quantized weight (see
    /// [`WeightView::dtype`]).
    pub fn dtype(&self) -> Dtype {
        self.view().dtype()
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
            .field("format", &self.format)
            .field("n", &self.n)
            .field("k", &self.k)
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

/// The bytes `range` of `storage`.
///
/// # Errors
/// [`Error::StorageRange`] if `range` is not inside the storage.
fn stored<'s>(storage: &'s Storage, range: &Range<usize>) -> Result<&'s [u8]> {
    let bytes = (**storage).as_ref();
    bytes.get(range.clone()).ok_or(Error::StorageRange {
        start: range.start,
        end: range.end,
        len: bytes.len(),
    })
}

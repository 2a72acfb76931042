//! [`KeysValues`]: a run of cached keys and values, position-major or head-major, in f32,
//! bf16 or f16, and how the kernels address it.

#[allow(unused_imports)]
use super::*;

/// Keys and values of consecutive positions, stored as `f32`, `bf16` or `f16` (a
/// [`CacheElement`]), in either of two layouts: position-major (`[len, kv_heads, head_dim]`,
/// as a projection writes them) or head-major (`[kv_heads, capacity, head_dim]`, the first
/// `len` positions of each kv head used, as a growing cache keeps them). Kv head `h`'s key of
/// position `t` starts at element `h · head_stride + t · position_stride` of `keys`, its value
/// at the same element of `values`.
///
/// Head-major is the faster layout for decode: a task reads one kv head's keys and values
/// as one contiguous stream instead of `head_dim`-element pieces `kv_heads · head_dim` apart.
/// A 16-bit element halves the bytes attention reads; it is widened to `f32` exactly as it is
/// loaded, so a `bf16` run gives the same bits as an `f32` run holding the widened values.
#[derive(Debug, Clone, Copy)]
pub struct KeysValues<'a> {
    pub(super) keys: &'a [u8],
    pub(super) values: &'a [u8],
    pub(super) dtype: Dtype,
    pub(super) len: usize,
    pub(super) head_dim: usize,
    pub(super) head_stride: usize,
    pub(super) position_stride: usize,
}

impl Default for KeysValues<'_> {
    /// No positions (an `f32` run).
    fn default() -> Self {
        KeysValues {
            keys: &[],
            values: &[],
            dtype: Dtype::F32,
            len: 0,
            head_dim: 0,
            head_stride: 0,
            position_stride: 0,
        }
    }
}

/// An element type keys and values can be stored in: `f32`, [`half::bf16`] or [`half::f16`].
/// Sealed: the kernels read exactly these.
pub trait CacheElement: sealed::Sealed + Copy {
    /// Its [`Dtype`].
    const DTYPE: Dtype;
}

impl CacheElement for f32 {
    const DTYPE: Dtype = Dtype::F32;
}

impl CacheElement for half::bf16 {
    const DTYPE: Dtype = Dtype::Bf16;
}

impl CacheElement for half::f16 {
    const DTYPE: Dtype = Dtype::F16;
}

mod sealed {
    /// Keeps [`super::CacheElement`] to the types the kernels know.
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// The bytes of `elements` (plain numbers: every byte is initialized, any alignment of `u8`
/// holds).
pub(super) fn bytes_of<T: CacheElement>(elements: &[T]) -> &[u8] {
    // SAFETY: `T` is `f32`, `bf16` or `f16` (sealed): no padding, every bit pattern a number,
    // and `u8` needs no alignment; the length covers exactly the same memory.
    unsafe { std::slice::from_raw_parts(elements.as_ptr().cast(), std::mem::size_of_val(elements)) }
}

impl<'a> KeysValues<'a> {
    /// Position-major runs: `keys` and `values` are `[len, kv_heads, head_dim]` each.
    ///
    /// # Panics
    /// If `kv_heads · head_dim` is 0, or does not divide the keys' length, or the values are
    /// not as long as the keys.
    pub fn position_major<T: CacheElement>(
        keys: &'a [T],
        values: &'a [T],
        kv_heads: usize,
        head_dim: usize,
    ) -> Self {
        let width = kv_heads * head_dim;
        assert!(
            width > 0 && keys.len().is_multiple_of(width) && values.len() == keys.len(),
            "KeysValues: {} keys and {} values are not [len, {kv_heads}, {head_dim}] each",
            keys.len(),
            values.len()
        );
        let len = keys.len() / width;
        KeysValues::of(keys, values, len, head_dim, head_dim, width)
    }

    /// Head-major runs: `keys` and `values` are `[kv_heads, capacity, head_dim]` each, of
    /// which the first `len` positions of every kv head hold keys and values.
    ///
    /// # Panics
    /// If `capacity · head_dim` is 0 (with `len > 0`) or does not divide the keys' length,
    /// the values are not as long as the keys, or `len > capacity`.
    pub fn head_major<T: CacheElement>(
        keys: &'a [T],
        values: &'a [T],
        len: usize,
        capacity: usize,
        head_dim: usize,
    ) -> Self {
        let head = capacity * head_dim;
        assert!(
            len <= capacity
                && values.len() == keys.len()
                && (head > 0 && keys.len().is_multiple_of(head) || len == 0),
            "KeysValues: {} keys and {} values are not [kv_heads, {capacity}, {head_dim}] \
             each with {len} positions used",
            keys.len(),
            values.len()
        );
        KeysValues::of(keys, values, len, head_dim, head, head_dim)
    }

    /// A run over `keys` and `values` with the given strides (checked by the callers).
    pub(super) fn of<T: CacheElement>(
        keys: &'a [T],
        values: &'a [T],
        len: usize,
        head_dim: usize,
        head_stride: usize,
        position_stride: usize,
    ) -> Self {
        KeysValues {
            keys: bytes_of(keys),
            values: bytes_of(values),
            dtype: T::DTYPE,
            len,
            head_dim,
            head_stride,
            position_stride,
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How the elements are stored.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Kv head `kv_head`'s key of position `t`, widened to `f32` (`head_dim` floats).
    ///
    /// # Panics
    /// If the position or the kv head is out of range.
    pub fn key(&self, t: usize, kv_head: usize) -> Vec<f32> {
        self.widened(self.keys, t, kv_head)
    }

    /// Kv head `kv_head`'s value of position `t`, widened to `f32` (`head_dim` floats).
    ///
    /// # Panics
    /// If the position or the kv head is out of range.
    pub fn value(&self, t: usize, kv_head: usize) -> Vec<f32> {
        self.widened(self.values, t, kv_head)
    }

    /// The row of position `t`, kv head `kv_head` of `bytes` (the keys or the values), widened.
    pub(super) fn widened(&self, bytes: &[u8], t: usize, kv_head: usize) -> Vec<f32> {
        let mut row = vec![0.0; self.head_dim];
        self.widen_into(bytes, t, kv_head, &mut row);
        row
    }

    /// Writes the row of position `t`, kv head `kv_head` of `bytes` widened into `row`
    /// (`head_dim` floats).
    pub(super) fn widen_into(&self, bytes: &[u8], t: usize, kv_head: usize, row: &mut [f32]) {
        assert!(t < self.len, "KeysValues: position {t} of {}", self.len);
        let size = self.dtype.size();
        let at = self.offset(t, kv_head) * size;
        let bytes = &bytes[at..at + self.head_dim * size];
        // One loop per type (the prefill path widens every key of the cache per call).
        let halves = bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]));
        match self.dtype {
            Dtype::F32 => {
                for (x, b) in row.iter_mut().zip(bytes.chunks_exact(4)) {
                    *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            Dtype::Bf16 => row
                .iter_mut()
                .zip(halves)
                .for_each(|(x, h)| *x = bf16_to_f32(h)),
            Dtype::F16 => row
                .iter_mut()
                .zip(halves)
                .for_each(|(x, h)| *x = f16_to_f32(h)),
        }
    }

    /// Where kv head `kv_head`'s row of position `t` starts, in elements.
    pub(super) fn offset(&self, t: usize, kv_head: usize) -> usize {
        kv_head * self.head_stride + t * self.position_stride
    }

    /// Whether `kv_heads` heads of `head_dim` elements fit every position held.
    pub(super) fn fits(&self, kv_heads: usize, head_dim: usize) -> bool {
        self.len == 0
            || self.head_dim == head_dim
                && (self.offset(self.len - 1, kv_heads - 1) + head_dim) * self.dtype.size()
                    <= self.keys.len()
    }

    /// Kv head `kv_head`'s keys from position `t` on (stride [`Self::position_stride`]
    /// elements).
    pub(super) fn keys_from(&self, t: usize, kv_head: usize) -> *const u8 {
        self.keys[self.offset(t, kv_head) * self.dtype.size()..].as_ptr()
    }

    /// Kv head `kv_head`'s values from position 0 on.
    pub(super) fn values_of(&self, kv_head: usize) -> *const u8 {
        self.values[self.offset(0, kv_head) * self.dtype.size()..].as_ptr()
    }
}

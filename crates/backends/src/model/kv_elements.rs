//! The memory of a host key/value cache: one buffer of keys or values in the element type
//! `--kv-cache` chose, written from `f32` rows (narrowed to nearest, ties to even) and read
//! by the kernels as it lies.

use half::{bf16, f16};
use sieve_kernels::KeysValues;

use crate::dtype::KvDtype;

/// Keys or values stored as one of the [`KvDtype`]s.
#[derive(Debug, Clone)]
pub(crate) enum Elements {
    /// Exact.
    F32(Vec<f32>),
    /// Half the bytes, 8 significant bits.
    Bf16(Vec<bf16>),
    /// Half the bytes, 11 significant bits, range ±65504.
    F16(Vec<f16>),
}

impl Elements {
    /// `len` zeros of type `dtype`.
    pub(crate) fn zeros(dtype: KvDtype, len: usize) -> Self {
        match dtype {
            KvDtype::F32 => Elements::F32(vec![0.0; len]),
            KvDtype::Bf16 => Elements::Bf16(vec![bf16::ZERO; len]),
            KvDtype::F16 => Elements::F16(vec![f16::ZERO; len]),
        }
    }

    /// The element type.
    pub(crate) fn dtype(&self) -> KvDtype {
        match self {
            Elements::F32(_) => KvDtype::F32,
            Elements::Bf16(_) => KvDtype::Bf16,
            Elements::F16(_) => KvDtype::F16,
        }
    }

    /// Writes `rows` from element `at` on, narrowed to the element type.
    pub(crate) fn write(&mut self, at: usize, rows: &[f32]) {
        match self {
            Elements::F32(e) => e[at..][..rows.len()].copy_from_slice(rows),
            Elements::Bf16(e) => narrow(&mut e[at..][..rows.len()], rows, bf16::from_f32),
            Elements::F16(e) => narrow(&mut e[at..][..rows.len()], rows, f16::from_f32),
        }
    }

    /// Copies `from` of `other` (the same element type) to element `to` on.
    ///
    /// # Panics
    /// If the element types differ.
    pub(crate) fn copy(&mut self, to: usize, other: &Elements, from: std::ops::Range<usize>) {
        let n = from.len();
        match (self, other) {
            (Elements::F32(a), Elements::F32(b)) => a[to..][..n].copy_from_slice(&b[from]),
            (Elements::Bf16(a), Elements::Bf16(b)) => a[to..][..n].copy_from_slice(&b[from]),
            (Elements::F16(a), Elements::F16(b)) => a[to..][..n].copy_from_slice(&b[from]),
            (a, b) => unreachable!("copying {} elements into {}", b.dtype(), a.dtype()),
        }
    }

    /// Keys `self` and values `values` (the same element type) as a head-major run of the
    /// kernels.
    pub(crate) fn head_major<'a>(
        &'a self,
        values: &'a Elements,
        len: usize,
        capacity: usize,
        head_dim: usize,
    ) -> KeysValues<'a> {
        match (self, values) {
            (Elements::F32(k), Elements::F32(v)) => {
                KeysValues::head_major(k, v, len, capacity, head_dim)
            }
            (Elements::Bf16(k), Elements::Bf16(v)) => {
                KeysValues::head_major(k, v, len, capacity, head_dim)
            }
            (Elements::F16(k), Elements::F16(v)) => {
                KeysValues::head_major(k, v, len, capacity, head_dim)
            }
            (k, v) => unreachable!("keys in {} beside values in {}", k.dtype(), v.dtype()),
        }
    }
}

/// `out[i] = to(rows[i])`.
fn narrow<T>(out: &mut [T], rows: &[f32], to: fn(f32) -> T) {
    for (o, &x) in out.iter_mut().zip(rows) {
        *o = to(x);
    }
}

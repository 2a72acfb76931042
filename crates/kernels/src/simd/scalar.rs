//! The portable instruction set: a 16-lane vector is `[f32; 16]`, FMA is `f32::mul_add`.

use super::driver::{rows_table, Tile};
use super::{Elem, Lanes};
use crate::dtype::{bf16_to_f32, f16_to_f32};
use crate::reference::fold;
use crate::LANES;

/// Plain Rust lanes (every target; aarch64 and x86-64 CPUs without AVX2 use it).
pub(crate) struct Scalar;

type V = [f32; LANES];

/// # Safety
/// `p` is readable at bytes `2 · i` and `2 · i + 1`.
#[inline(always)]
unsafe fn u16_at(p: *const u8, i: usize) -> u16 {
    // SAFETY: our caller guarantees bytes `2i` and `2i + 1` at `p` are
    // readable.
    unsafe { u16::from_le_bytes([*p.add(2 * i), *p.add(2 * i + 1)]) }
}

impl Lanes for Scalar {
    type V = V;
    const DECODE_ROWS: usize = 4;
    const PREFILL_ROWS: usize = 4;
    const PREFILL_COLS: usize = 1;
    const ATTN_ROWS: usize = 1;

    #[inline(always)]
    unsafe fn zero() -> V {
        [0.0; LANES]
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> V {
        [v; LANES]
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> V {
        // SAFETY: `Lanes::load`'s contract: `p` is readable for 16 `f32`;
        // `read_unaligned` needs no alignment.
        unsafe { std::array::from_fn(|l| p.add(l).read_unaligned()) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, len: usize) -> V {
        // SAFETY: `Lanes::load_part`'s contract: `p` is readable for `len`
        // `f32`, and only lanes `l < len` are read.
        unsafe {
            std::array::from_fn(|l| {
                if l < len {
                    p.add(l).read_unaligned()
                } else {
                    0.0
                }
            })
        }
    }
    #[inline(always)]
    unsafe fn load_bf16(p: *const u8) -> V {
        // SAFETY: `Lanes::load_bf16`'s contract: `p` is readable for the 32
        // bytes `u16_at` reads for `l < 16`.
        unsafe { std::array::from_fn(|l| bf16_to_f32(u16_at(p, l))) }
    }
    #[inline(always)]
    unsafe fn load_bf16_part(p: *const u8, len: usize) -> V {
        // SAFETY: `Lanes::load_bf16_part`'s contract: `p` is readable for
        // `2 · len` bytes, and only lanes `l < len` are read.
        unsafe {
            std::array::from_fn(|l| {
                if l < len {
                    bf16_to_f32(u16_at(p, l))
                } else {
                    0.0
                }
            })
        }
    }
    #[inline(always)]
    unsafe fn load_f16(p: *const u8) -> V {
        // SAFETY: `Lanes::load_f16`'s contract: `p` is readable for the 32
        // bytes `u16_at` reads for `l < 16`.
        unsafe { std::array::from_fn(|l| f16_to_f32(u16_at(p, l))) }
    }
    #[inline(always)]
    unsafe fn load_f16_part(p: *const u8, len: usize) -> V {
        // SAFETY: `Lanes::load_f16_part`'s contract: `p` is readable for
        // `2 · len` bytes, and only lanes `l < len` are read.
        unsafe {
            std::array::from_fn(|l| {
                if l < len {
                    f16_to_f32(u16_at(p, l))
                } else {
                    0.0
                }
            })
        }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: V) {
        // SAFETY: `Lanes::store`'s contract: `p` is writable for 16 `f32`;
        // `write_unaligned` needs no alignment.
        unsafe {
            for (l, x) in v.into_iter().enumerate() {
                p.add(l).write_unaligned(x);
            }
        }
    }
    #[inline(always)]
    unsafe fn store_part(p: *mut f32, v: V, len: usize) {
        // SAFETY: `Lanes::store_part`'s contract: `p` is writable for `len`
        // `f32`, and only the first `len` lanes are written.
        unsafe {
            for (l, x) in v.into_iter().take(len).enumerate() {
                p.add(l).write_unaligned(x);
            }
        }
    }
    #[inline(always)]
    unsafe fn add(a: V, b: V) -> V {
        std::array::from_fn(|l| a[l] + b[l])
    }
    #[inline(always)]
    unsafe fn fma(a: V, b: V, c: V) -> V {
        std::array::from_fn(|l| a[l].mul_add(b[l], c[l]))
    }
    #[inline(always)]
    unsafe fn sum(v: V) -> f32 {
        fold(v)
    }
    #[inline(always)]
    unsafe fn rows<E: Elem>(rows: usize, tile: &Tile, ncols: usize) {
        // SAFETY: our caller meets `Lanes::rows`' contract, which is
        // `driver::cols`' for every row count in the table.
        unsafe { rows_table!(rows, tile, ncols, E; 1 => 4, 2 => 2, 3 => 1, 4 => 1) }
    }
    #[inline(always)]
    unsafe fn rows_packed(rows: usize, tile: &Tile, ncols: usize) {
        // SAFETY: our caller meets `Lanes::rows_packed`' contract, which is
        // `driver::cols`' for every row count in the table.
        unsafe { rows_table!(rows, tile, ncols, super::F32; 1 => 1, 2 => 1, 3 => 1, 4 => 1) }
    }
}

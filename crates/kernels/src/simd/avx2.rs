//! AVX2 with FMA and F16C: a 16-lane accumulator is a pair of 8-lane `ymm` registers (lanes
//! 0..8 and 8..16), so the lane tree's first step is adding the pair.
//!
//! With 16 registers, tiles are small: up to 4 rows share one pass over the weights, prefill
//! uses 2 rows × 2 columns.

use std::arch::x86_64::*;

use super::driver::{self, rows_table, Tile};
use super::{AttnRow, Elem, Gemm, Lanes, Scores, Values};

/// AVX2 lanes.
pub(crate) struct Avx2;

/// Lanes 0..8 and 8..16.
#[derive(Clone, Copy)]
pub(crate) struct V2(__m256, __m256);

/// The first `len < 16` 16-bit elements at `p`, zero-extended into a 16-element buffer.
///
/// # Safety
/// `len < 16` and `p` is readable for `2 · len` bytes.
#[inline(always)]
unsafe fn part_u16(p: *const u8, len: usize) -> [u16; 16] {
    // SAFETY: our caller guarantees `p` is readable for `2 · len` bytes, and
    // `len < 16` keeps the `2 · len` bytes written inside `buf`'s 32; the two never overlap.
    unsafe {
        let mut buf = [0u16; 16];
        std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr().cast::<u8>(), 2 * len);
        buf
    }
}

/// # Safety
/// The CPU has AVX2 (the module's *features* contract) and `p` is readable for 32 bytes (16
/// `bf16`); no alignment.
#[inline(always)]
unsafe fn widen_bf16(p: *const u8) -> V2 {
    // SAFETY: our caller guarantees the CPU has AVX2 and that `p` is readable for 32
    // bytes: the two unaligned 16-byte loads at `p` and `p + 16`.
    unsafe {
        let lo = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.cast()));
        let hi = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.add(16).cast()));
        V2(
            _mm256_castsi256_ps(_mm256_slli_epi32::<16>(lo)),
            _mm256_castsi256_ps(_mm256_slli_epi32::<16>(hi)),
        )
    }
}

/// # Safety
/// The CPU has AVX and F16C (the module's *features* contract) and `p` is readable for 32
/// bytes (16 `f16`); no alignment.
#[inline(always)]
unsafe fn widen_f16(p: *const u8) -> V2 {
    // SAFETY: our caller guarantees the CPU has AVX and F16C and that `p` is readable for 32
    // bytes: the two unaligned 16-byte loads at `p` and `p + 16`.
    unsafe {
        V2(
            _mm256_cvtph_ps(_mm_loadu_si128(p.cast())),
            _mm256_cvtph_ps(_mm_loadu_si128(p.add(16).cast())),
        )
    }
}

impl Lanes for Avx2 {
    type V = V2;
    const DECODE_ROWS: usize = 4;
    const PREFILL_ROWS: usize = 2;
    const PREFILL_COLS: usize = 2;
    const ATTN_ROWS: usize = 1;

    #[inline(always)]
    unsafe fn zero() -> V2 {
        // SAFETY: `Lanes`' contract: our caller runs with AVX2, FMA and F16C enabled, which is all
        // these register-only intrinsics need.
        unsafe { V2(_mm256_setzero_ps(), _mm256_setzero_ps()) }
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> V2 {
        // SAFETY: `Lanes`' contract: our caller runs with AVX2, FMA and F16C enabled, which is all
        // these register-only intrinsics need.
        unsafe { V2(_mm256_set1_ps(v), _mm256_set1_ps(v)) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> V2 {
        // SAFETY: `Lanes::load`'s contract: AVX is enabled and `p` is readable for 16 `f32`, so
        // both unaligned 8-float loads (at `p` and `p + 8`) are in bounds.
        unsafe { V2(_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, len: usize) -> V2 {
        // SAFETY: `Lanes::load_part`'s contract: `p` is readable for `len < 16` `f32`, so the
        // `4 · len` bytes copied fit in `buf` and are in bounds at `p`; `buf` is a fresh local, so no
        // overlap; `Self::load` then reads `buf`'s 16 floats.
        unsafe {
            // Byte copy: `p` may be unaligned (a weight in a memory-mapped file).
            let mut buf = [0f32; 16];
            std::ptr::copy_nonoverlapping(p.cast::<u8>(), buf.as_mut_ptr().cast::<u8>(), 4 * len);
            Self::load(buf.as_ptr())
        }
    }
    #[inline(always)]
    unsafe fn load_bf16(p: *const u8) -> V2 {
        // SAFETY: `Lanes::load_bf16`'s contract is `widen_bf16`'s: AVX2 and 32 readable bytes.
        unsafe { widen_bf16(p) }
    }
    #[inline(always)]
    unsafe fn load_bf16_part(p: *const u8, len: usize) -> V2 {
        // SAFETY: `Lanes::load_bf16_part`'s contract is `part_u16`'s (`len < 16`, `2 · len`
        // bytes at `p`); `widen_bf16` then reads the 32 bytes of the local `buf`.
        unsafe {
            let buf = part_u16(p, len);
            widen_bf16(buf.as_ptr().cast())
        }
    }
    #[inline(always)]
    unsafe fn load_f16(p: *const u8) -> V2 {
        // SAFETY: `Lanes::load_f16`'s contract is `widen_f16`'s: F16C and 32 readable bytes.
        unsafe { widen_f16(p) }
    }
    #[inline(always)]
    unsafe fn load_f16_part(p: *const u8, len: usize) -> V2 {
        // SAFETY: `Lanes::load_f16_part`'s contract is `part_u16`'s (`len < 16`, `2 · len` bytes
        // at `p`); `widen_f16` then reads the 32 bytes of the local `buf`.
        unsafe {
            let buf = part_u16(p, len);
            widen_f16(buf.as_ptr().cast())
        }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: V2) {
        // SAFETY: `Lanes::store`'s contract: AVX is enabled and `p` is writable for 16 `f32`, so
        // both unaligned 8-float stores (at `p` and `p + 8`) are in bounds.
        unsafe {
            _mm256_storeu_ps(p, v.0);
            _mm256_storeu_ps(p.add(8), v.1);
        }
    }
    #[inline(always)]
    unsafe fn store_part(p: *mut f32, v: V2, len: usize) {
        // SAFETY: `Lanes::store_part`'s contract: `p` is writable for `len < 16` `f32`; `buf` is a
        // local of 16, so the store into it and the `4 · len` bytes copied out are in bounds and
        // disjoint from `p`.
        unsafe {
            let mut buf = [0f32; 16];
            Self::store(buf.as_mut_ptr(), v);
            std::ptr::copy_nonoverlapping(buf.as_ptr().cast::<u8>(), p.cast::<u8>(), 4 * len);
        }
    }
    #[inline(always)]
    unsafe fn add(a: V2, b: V2) -> V2 {
        // SAFETY: `Lanes`' contract: our caller runs with AVX2, FMA and F16C enabled, which is all
        // these register-only intrinsics need.
        unsafe { V2(_mm256_add_ps(a.0, b.0), _mm256_add_ps(a.1, b.1)) }
    }
    #[inline(always)]
    unsafe fn fma(a: V2, b: V2, c: V2) -> V2 {
        // SAFETY: `Lanes`' contract: our caller runs with AVX2, FMA and F16C enabled, which is all
        // these register-only intrinsics need.
        unsafe {
            V2(
                _mm256_fmadd_ps(a.0, b.0, c.0),
                _mm256_fmadd_ps(a.1, b.1, c.1),
            )
        }
    }
    #[inline(always)]
    unsafe fn prefetch(p: *const u8) {
        // SAFETY: a prefetch is a hint that never faults or dereferences `p`; SSE is part of
        // the x86-64 baseline.
        unsafe {
            _mm_prefetch::<_MM_HINT_T1>(p.cast());
        }
    }
    #[inline(always)]
    unsafe fn sum(v: V2) -> f32 {
        // SAFETY: `Lanes`' contract: our caller runs with AVX2, FMA and F16C enabled, which is all
        // these register-only intrinsics need.
        unsafe {
            // Lanes l + 8 (the pair), then + 4, + 2, + 1: the tree of `reference_dot`.
            let s8 = _mm256_add_ps(v.0, v.1);
            let s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps::<1>(s8));
            let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
            let s1 = _mm_add_ss(s2, _mm_shuffle_ps::<1>(s2, s2));
            _mm_cvtss_f32(s1)
        }
    }
    #[inline(always)]
    unsafe fn rows<E: Elem>(rows: usize, tile: &Tile, ncols: usize) {
        // SAFETY: our caller meets `Lanes::rows`' contract, which is `driver::cols`' for every
        // row count in the table.
        unsafe { rows_table!(rows, tile, ncols, E; 1 => 4, 2 => 2, 3 => 1, 4 => 1) }
    }
    #[inline(always)]
    unsafe fn rows_packed(rows: usize, tile: &Tile, ncols: usize) {
        // SAFETY: our caller meets `Lanes::rows_packed`' contract, which is `driver::cols`' for
        // every row count in the table.
        unsafe { rows_table!(rows, tile, ncols, super::F32; 1 => 2, 2 => 2) }
    }
}

/// [`super::gemm_cols`] with AVX2.
///
/// # Safety
/// As [`super::gemm_cols`]; the CPU has the enabled features.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn gemm_cols(g: &Gemm, j0: usize, j1: usize, scratch: &mut Vec<f32>) {
    // SAFETY: this function enables AVX2, FMA and F16C (present on the CPU, as our caller
    // guarantees), so `Avx2`'s lanes may run; the memory contract is our caller's.
    unsafe { driver::gemm_cols::<Avx2>(g, j0, j1, scratch) }
}

/// [`super::attn_scores`] with AVX2.
///
/// # Safety
/// As `attn::scores`; the CPU has the enabled features.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn attn_scores(rows: &[AttnRow], s: &Scores) {
    // SAFETY: the features are enabled here and present (our caller's contract); the rest of
    // `attn::scores`' contract is our caller's.
    unsafe { super::attn::scores::<Avx2>(rows, s) }
}

/// [`super::attn_sums`] with AVX2.
///
/// # Safety
/// As `attn::weighted_sums`; the CPU has the enabled features.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn attn_sums(rows: &[AttnRow], base: usize, v: &Values) {
    // SAFETY: the features are enabled here and present (our caller's contract); the rest of
    // `attn::weighted_sums`' contract is our caller's.
    unsafe { super::attn::weighted_sums::<Avx2>(rows, base, v) }
}

//! AVX-512 (F, BW, VL, DQ) with FMA and F16C: one 16-lane accumulator per `zmm` register.
//!
//! Up to 8 rows share one pass over the weights (decode); prefill uses 4 rows × 6 columns, 24
//! accumulators of the 32 registers. Blocked attention takes 5 query rows at a time (scores:
//! up to 5 live partial trees of a few registers each; weighted sums: 5 × 4 accumulators).

use std::arch::x86_64::*;

use super::driver::{self, rows_table, Tile};
use super::{AttnRow, Elem, Gemm, Lanes, Scores, Values};

/// AVX-512 lanes.
pub(crate) struct Avx512;

/// The mask of the first `len` of 16 lanes.
#[inline(always)]
fn mask(len: usize) -> __mmask16 {
    ((1u32 << len) - 1) as __mmask16
}

impl Lanes for Avx512 {
    type V = __m512;
    const DECODE_ROWS: usize = 8;
    const PREFILL_ROWS: usize = 4;
    const PREFILL_COLS: usize = 6;
    const ATTN_ROWS: usize = 5;

    #[inline(always)]
    unsafe fn zero() -> __m512 {
        // SAFETY: `Lanes`' contract: our caller runs with the AVX-512 set, FMA
        // and F16C enabled, which is all these register-only intrinsics need.
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> __m512 {
        // SAFETY: `Lanes`' contract: our caller runs with the AVX-512 set, FMA
        // and F16C enabled, which is all these register-only intrinsics need.
        unsafe { _mm512_set1_ps(v) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m512 {
        // SAFETY: `Lanes::load`'s contract: AVX-512F is enabled and `p` is
        // readable for 16 `f32` (an unaligned load).
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, len: usize) -> __m512 {
        // SAFETY: `Lanes::load_part`'s contract: `p` is readable for
        // `len < 16` `f32`; the masked-off lanes are not accessed, so nothing past them is read.
        unsafe {
            // Masked-off lanes are not read (no fault past the end) and come back zero.
            _mm512_maskz_loadu_ps(mask(len), p)
        }
    }
    #[inline(always)]
    unsafe fn load_bf16(p: *const u8) -> __m512 {
        // SAFETY: `Lanes::load_bf16`'s contract: AVX-512 enabled and `p`
        // readable for 32 bytes (one unaligned 256-bit load).
        unsafe {
            let h = _mm256_loadu_si256(p.cast());
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
        }
    }
    #[inline(always)]
    unsafe fn load_bf16_part(p: *const u8, len: usize) -> __m512 {
        // SAFETY: `Lanes::load_bf16_part`'s contract: `p` is readable for
        // `2 · len` bytes; the masked load (AVX-512BW/VL) reads only the first `len < 16` elements.
        unsafe {
            let h = _mm256_maskz_loadu_epi16(mask(len), p.cast());
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
        }
    }
    #[inline(always)]
    unsafe fn load_f16(p: *const u8) -> __m512 {
        // SAFETY: `Lanes::load_f16`'s contract: AVX-512F enabled and `p`
        // readable for 32 bytes (one unaligned 256-bit load).
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(p.cast())) }
    }
    #[inline(always)]
    unsafe fn load_f16_part(p: *const u8, len: usize) -> __m512 {
        // SAFETY: `Lanes::load_f16_part`'s contract: `p` is readable for
        // `2 · len` bytes; the masked load (AVX-512BW/VL) reads only the first `len < 16` elements.
        unsafe { _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(len), p.cast())) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m512) {
        // SAFETY: `Lanes::store`'s contract: AVX-512F enabled and `p`
        // writable for 16 `f32` (an unaligned store).
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn store_part(p: *mut f32, v: __m512, len: usize) {
        // SAFETY: `Lanes::store_part`'s contract: `p` is writable for
        // `len < 16` `f32`, and the masked store writes only those lanes.
        unsafe { _mm512_mask_storeu_ps(p, mask(len), v) }
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        // SAFETY: `Lanes`' contract: our caller runs with the AVX-512 set, FMA
        // and F16C enabled, which is all these register-only intrinsics need.
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn fma(a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: `Lanes`' contract: our caller runs with the AVX-512 set, FMA
        // and F16C enabled, which is all these register-only intrinsics need.
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn sum(v: __m512) -> f32 {
        // SAFETY: `Lanes`' contract: our caller runs with the AVX-512 set, FMA
        // and F16C enabled, which is all these register-only intrinsics need.
        unsafe {
            // Lanes l + 8, then + 4, + 2, + 1: the tree of `reference_dot`.
            let s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps::<1>(v));
            let s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps::<1>(s8));
            let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
            let s1 = _mm_add_ss(s2, _mm_shuffle_ps::<1>(s2, s2));
            _mm_cvtss_f32(s1)
        }
    }
    #[inline(always)]
    unsafe fn prefetch(p: *const u8) {
        // SAFETY: a prefetch is a hint that never faults or dereferences
        // `p`; SSE is part of the x86-64 baseline.
        unsafe {
            _mm_prefetch::<_MM_HINT_T1>(p.cast());
        }
    }
    #[inline(always)]
    unsafe fn sum4(v: [__m512; 4]) -> [f32; 4] {
        // SAFETY: `Lanes`' contract: our caller runs with the AVX-512 set, FMA
        // and F16C enabled, which is all these intrinsics need; the one store
        // writes the 4 floats of the local `out`.
        unsafe {
            // The same tree for four vectors at once, halves of different vectors side by side.
            let [a, b, c, d] = v;
            // Lanes l + 8: [a | b] and [c | d], 8 lanes each.
            let ab = _mm512_add_ps(
                _mm512_shuffle_f32x4::<0x44>(a, b),
                _mm512_shuffle_f32x4::<0xEE>(a, b),
            );
            let cd = _mm512_add_ps(
                _mm512_shuffle_f32x4::<0x44>(c, d),
                _mm512_shuffle_f32x4::<0xEE>(c, d),
            );
            // Lanes l + 4: [a | b | c | d], 4 lanes each.
            let s4 = _mm512_add_ps(
                _mm512_shuffle_f32x4::<0x88>(ab, cd),
                _mm512_shuffle_f32x4::<0xDD>(ab, cd),
            );
            // Lanes l + 2, then l + 1, within each quarter.
            let s2 = _mm512_add_ps(s4, _mm512_shuffle_ps::<0xEE>(s4, s4));
            let s1 = _mm512_add_ps(s2, _mm512_shuffle_ps::<0x55>(s2, s2));
            let first = _mm512_permutexvar_ps(
                _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                s1,
            );
            let mut out = [0f32; 4];
            _mm_storeu_ps(out.as_mut_ptr(), _mm512_castps512_ps128(first));
            out
        }
    }
    #[inline(always)]
    unsafe fn rows<E: Elem>(rows: usize, tile: &Tile, ncols: usize) {
        // SAFETY: our caller meets `Lanes::rows`' contract, which is
        // `driver::cols`' for every row count in the table.
        unsafe {
            rows_table!(rows, tile, ncols, E;
            1 => 8, 2 => 8, 3 => 7, 4 => 6, 5 => 4, 6 => 4, 7 => 3, 8 => 3)
        }
    }
    #[inline(always)]
    unsafe fn rows_packed(rows: usize, tile: &Tile, ncols: usize) {
        // SAFETY: our caller meets `Lanes::rows_packed`' contract, which is
        // `driver::cols`' for every row count in the table.
        unsafe { rows_table!(rows, tile, ncols, super::F32; 1 => 6, 2 => 6, 3 => 6, 4 => 6) }
    }
}

/// [`super::gemm_cols`] with AVX-512.
///
/// # Safety
/// As [`super::gemm_cols`]; the CPU has the enabled features.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")]
pub(super) unsafe fn gemm_cols(g: &Gemm, j0: usize, j1: usize, scratch: &mut Vec<f32>) {
    // SAFETY: this function enables the AVX-512 set, FMA and F16C (present
    // on the CPU, as our caller guarantees), so `Avx512`'s lanes may run; the memory contract
    // is our caller's.
    unsafe { driver::gemm_cols::<Avx512>(g, j0, j1, scratch) }
}

/// [`super::attn_scores`] with AVX-512.
///
/// # Safety
/// As `attn::scores`; the CPU has the enabled features.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")]
pub(super) unsafe fn attn_scores(rows: &[AttnRow], s: &Scores) {
    // SAFETY: the features are enabled here and present (our caller's
    // contract); the rest of `attn::scores`' contract is our caller's.
    unsafe { super::attn::scores::<Avx512>(rows, s) }
}

/// [`super::attn_sums`] with AVX-512.
///
/// # Safety
/// As `attn::weighted_sums`; the CPU has the enabled features.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")]
pub(super) unsafe fn attn_sums(rows: &[AttnRow], base: usize, v: &Values) {
    // SAFETY: the features are enabled here and present (our caller's
    // contract); the rest of `attn::weighted_sums`' contract is our caller's.
    unsafe { super::attn::weighted_sums::<Avx512>(rows, base, v) }
}

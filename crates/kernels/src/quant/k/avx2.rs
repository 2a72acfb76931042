//! The integer sums of a K-quant block with its Q8_K block in 256-bit registers, as
//! llama.cpp's AVX2 kernels compute them: levels unpacked to unsigned bytes, `vpmaddubsw`
//! against the activations (pairs of products in `i16`, exact: `|2 · 63 · 128| < 2¹⁵`), then
//! the sub-block scales applied with `vpmaddwd` into `i32` lanes ([`Madd`]: or VNNI's
//! `vpdpwssd`, which fuses that multiply-add with the accumulation). One horizontal sum per
//! block; the float formula is the type's own `contribution`, shared with the reference.
//!
//! The kernels are `#[inline(always)]` and generic over [`Madd`]; the `#[target_feature]`
//! entry points ([`dot_row`] here, `avx512::dot_row*`) instantiate them.
//!
//! # Safety
//!
//! Every `unsafe fn` here needs the CPU features of the entry point that inlines it: AVX2 at
//! least, and AVX512-VNNI + AVX512-VL for [`Vnni`]. Loads go through [`load`], which reads
//! from bounds-checked slices.

use std::arch::x86_64::*;

use super::common::{unpack_scale_min_k4, unpack_scales_q3k};
use super::q8k::BlockQ8K;
use super::{blocks, q2k, q3k, q4k, q5k, q6k, QuantType};
use crate::quant::{tree, BLOCK_LANES};

/// How the `i16` pair products of a sub-block are scaled and accumulated into `i32` lanes:
/// `acc + madd(p, s)` exactly (the sums never overflow `i32`).
pub(super) trait Madd {
    /// `acc + vpmaddwd(p, s)`.
    ///
    /// # Safety
    /// The module's contract: the CPU features of the implementing type.
    unsafe fn madd(acc: __m256i, p: __m256i, s: __m256i) -> __m256i;
}

/// AVX2: `vpmaddwd` then `vpaddd`.
pub(super) struct Plain;

impl Madd for Plain {
    #[inline(always)]
    unsafe fn madd(acc: __m256i, p: __m256i, s: __m256i) -> __m256i {
        // SAFETY: the module's contract: the CPU has AVX2, all these register operations need.
        unsafe { _mm256_add_epi32(acc, _mm256_madd_epi16(p, s)) }
    }
}

/// AVX512-VNNI (256-bit, VL): `vpdpwssd`, the multiply-add and accumulation in one.
pub(super) struct Vnni;

impl Madd for Vnni {
    #[inline(always)]
    unsafe fn madd(acc: __m256i, p: __m256i, s: __m256i) -> __m256i {
        // SAFETY: the module's contract: the CPU has AVX512-VNNI and AVX512-VL.
        unsafe { _mm256_dpwssd_epi32(acc, p, s) }
    }
}

/// 32 bytes from `bytes[at..at + 32]` (bounds-checked), unaligned.
///
/// # Safety
/// The CPU has AVX.
#[inline(always)]
unsafe fn load<T: Copy>(bytes: &[T], at: usize) -> __m256i {
    let s = &bytes[at..at + 32 / std::mem::size_of::<T>()];
    // SAFETY: `s` is a checked sub-slice of 32 bytes; the load is unaligned; the CPU has AVX
    // (our contract).
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// The 16 `bsums` of a Q8_K block.
///
/// # Safety
/// The CPU has AVX.
#[inline(always)]
unsafe fn bsums(a: &BlockQ8K) -> __m256i {
    // SAFETY: `bsums` is 16 `i16` = 32 bytes; unaligned load; the CPU has AVX.
    unsafe { _mm256_loadu_si256(a.bsums.as_ptr().cast()) }
}

/// 16 signed byte scales in both 128-bit halves (for [`pair`] and [`same`]).
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn scale_bytes(sc: &[i8; 16]) -> __m256i {
    // SAFETY: `sc` is 16 bytes; unaligned load; register ops need AVX2 (our contract).
    unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(sc.as_ptr().cast())) }
}

/// `i16` lanes 0..8 = `sc[2g]`, lanes 8..16 = `sc[2g + 1]` (sign-extended): the scales of the
/// two 16-element sub-blocks a `vpmaddubsw` of 32 elements starting at `32·g` covers.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn pair(v: __m256i, g: usize) -> __m256i {
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe {
        let mask = _mm256_set_m128i(
            _mm_set1_epi8((2 * g + 1) as i8),
            _mm_set1_epi8((2 * g) as i8),
        );
        _mm256_srai_epi16::<8>(_mm256_shuffle_epi8(v, mask))
    }
}

/// Every `i16` lane = `sc[s]` (sign-extended): the scale of one 32-element sub-block.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn same(v: __m256i, s: usize) -> __m256i {
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe { _mm256_srai_epi16::<8>(_mm256_shuffle_epi8(v, _mm256_set1_epi8(s as i8))) }
}

/// The sum of 8 `i32` lanes (exact: wrapping adds of values whose true sum fits).
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn hsum(v: __m256i) -> i32 {
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b0100_1110>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b1011_0001>(s));
        _mm_cvtsi128_si32(s)
    }
}

/// The sums of the lanes of `a` (8 `i32`) and of `b` (4 `i32`), in one reduction.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn hsum2(a: __m256i, b: __m128i) -> (i32, i32) {
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe {
        let a = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256::<1>(a));
        let h = _mm_hadd_epi32(a, b);
        let h = _mm_hadd_epi32(h, h);
        (_mm_cvtsi128_si32(h), _mm_extract_epi32::<1>(h))
    }
}

/// Q2_K: `(isum, msum)` of [`q2k::dot`].
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q2k_sums<M: Madd>(b: &[u8; q2k::BYTES], a: &BlockQ8K) -> (i32, i32) {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let raw = _mm_loadu_si128(b.as_ptr().cast());
        let low4 = _mm_set1_epi8(0x0f);
        let sc = _mm256_broadcastsi128_si256(_mm_and_si128(raw, low4));
        let mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16::<4>(raw), low4));
        let msum = _mm256_madd_epi16(mins, bsums(a));
        let three = _mm256_set1_epi8(3);
        let mut acc = _mm256_setzero_si256();
        for h in 0..2 {
            let q = load(b, q2k::QS + 32 * h);
            for j in 0..4 {
                let g = 4 * h + j;
                let u =
                    _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * j as i32)), three);
                let p = _mm256_maddubs_epi16(u, load(&a.qs, 32 * g));
                acc = M::madd(acc, p, pair(sc, g));
            }
        }
        (hsum(acc), hsum(msum))
    }
}

/// Q3_K: `isum` of [`q3k::dot`], with levels `q + 4` and `4·Σ sc·bsums` taken back out.
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q3k_sum<M: Madd>(b: &[u8; q3k::BYTES], a: &BlockQ8K) -> i32 {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let scales = unpack_scales_q3k(q3k::scale_bytes(b));
        let sc = scale_bytes(&scales);
        let sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(scales.as_ptr().cast()));
        let offset = _mm256_madd_epi16(sc16, bsums(a));
        let three = _mm256_set1_epi8(3);
        let one = _mm256_set1_epi8(1);
        let mut hm = load(b, 0);
        let mut acc = _mm256_setzero_si256();
        for h in 0..2 {
            let q = load(b, q3k::QS + 32 * h);
            for j in 0..4 {
                let g = 4 * h + j;
                let low =
                    _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * j as i32)), three);
                let high = _mm256_slli_epi16::<2>(_mm256_and_si256(hm, one));
                hm = _mm256_srli_epi16::<1>(hm);
                let u = _mm256_or_si256(low, high);
                let p = _mm256_maddubs_epi16(u, load(&a.qs, 32 * g));
                acc = M::madd(acc, p, pair(sc, g));
            }
        }
        hsum(_mm256_sub_epi32(acc, _mm256_slli_epi32::<2>(offset)))
    }
}

/// The mins' share `Σ_s m_s · (bsums_{2s} + bsums_{2s+1})` of a Q4_K / Q5_K block, as 4 lanes.
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn k4_mins(m: &[u8; 8], a: &BlockQ8K) -> __m128i {
    // SAFETY: the module's contract (CPU features); `m` is 8 bytes, `bsums` 32.
    unsafe {
        let mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(m.as_ptr().cast()));
        let bs = bsums(a);
        let pairs = _mm_hadd_epi16(
            _mm256_castsi256_si128(bs),
            _mm256_extracti128_si256::<1>(bs),
        );
        _mm_madd_epi16(mins, pairs)
    }
}

/// Q4_K: `(isum, msum)` of [`q4k::dot`].
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q4k_sums<M: Madd>(b: &[u8; q4k::BYTES], a: &BlockQ8K) -> (i32, i32) {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let (sc, m) = unpack_scale_min_k4(q4k::scale_bytes(b));
        let mut sc16 = [0i8; 16];
        for (d, s) in sc16.iter_mut().zip(sc) {
            *d = s as i8;
        }
        let scv = scale_bytes(&sc16);
        let low4 = _mm256_set1_epi8(0x0f);
        let mut acc = _mm256_setzero_si256();
        for c in 0..4 {
            let q = load(b, q4k::QS + 32 * c);
            let lo = _mm256_and_si256(q, low4);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(q), low4);
            let p0 = _mm256_maddubs_epi16(lo, load(&a.qs, 64 * c));
            let p1 = _mm256_maddubs_epi16(hi, load(&a.qs, 64 * c + 32));
            acc = M::madd(acc, p0, same(scv, 2 * c));
            acc = M::madd(acc, p1, same(scv, 2 * c + 1));
        }
        hsum2(acc, k4_mins(&m, a))
    }
}

/// Q5_K: `(isum, msum)` of [`q5k::dot`].
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q5k_sums<M: Madd>(b: &[u8; q5k::BYTES], a: &BlockQ8K) -> (i32, i32) {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let (sc, m) = unpack_scale_min_k4(q4k::scale_bytes(b));
        let mut sc16 = [0i8; 16];
        for (d, s) in sc16.iter_mut().zip(sc) {
            *d = s as i8;
        }
        let scv = scale_bytes(&sc16);
        let low4 = _mm256_set1_epi8(0x0f);
        let one = _mm256_set1_epi8(1);
        let mut qh = load(b, q5k::QH);
        let mut acc = _mm256_setzero_si256();
        for c in 0..4 {
            let q = load(b, q5k::QS + 32 * c);
            let h0 = _mm256_slli_epi16::<4>(_mm256_and_si256(qh, one));
            qh = _mm256_srli_epi16::<1>(qh);
            let h1 = _mm256_slli_epi16::<4>(_mm256_and_si256(qh, one));
            qh = _mm256_srli_epi16::<1>(qh);
            let lo = _mm256_or_si256(_mm256_and_si256(q, low4), h0);
            let hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(q), low4), h1);
            let p0 = _mm256_maddubs_epi16(lo, load(&a.qs, 64 * c));
            let p1 = _mm256_maddubs_epi16(hi, load(&a.qs, 64 * c + 32));
            acc = M::madd(acc, p0, same(scv, 2 * c));
            acc = M::madd(acc, p1, same(scv, 2 * c + 1));
        }
        hsum2(acc, k4_mins(&m, a))
    }
}

/// Q6_K: `isum` of [`q6k::dot`], with levels `q + 32` and `32·Σ sc·bsums` taken back out.
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q6k_sum<M: Madd>(b: &[u8; q6k::BYTES], a: &BlockQ8K) -> i32 {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let raw = _mm_loadu_si128(b[q6k::SCALES..q6k::SCALES + 16].as_ptr().cast());
        let sc = _mm256_broadcastsi128_si256(raw);
        let offset = _mm256_madd_epi16(_mm256_cvtepi8_epi16(raw), bsums(a));
        let low4 = _mm256_set1_epi8(0x0f);
        let top2 = _mm256_set1_epi8(0x30);
        let mut acc = _mm256_setzero_si256();
        for h in 0..2 {
            let ql0 = load(b, 64 * h);
            let ql1 = load(b, 64 * h + 32);
            let qh = load(b, q6k::QH + 32 * h);
            let u = [
                _mm256_or_si256(
                    _mm256_and_si256(ql0, low4),
                    _mm256_and_si256(_mm256_slli_epi16::<4>(qh), top2),
                ),
                _mm256_or_si256(
                    _mm256_and_si256(ql1, low4),
                    _mm256_and_si256(_mm256_slli_epi16::<2>(qh), top2),
                ),
                _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16::<4>(ql0), low4),
                    _mm256_and_si256(qh, top2),
                ),
                _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16::<4>(ql1), low4),
                    _mm256_and_si256(_mm256_srli_epi16::<2>(qh), top2),
                ),
            ];
            for (j, u) in u.into_iter().enumerate() {
                let g = 4 * h + j;
                let p = _mm256_maddubs_epi16(u, load(&a.qs, 32 * g));
                acc = M::madd(acc, p, pair(sc, g));
            }
        }
        hsum(_mm256_sub_epi32(acc, _mm256_slli_epi32::<5>(offset)))
    }
}

/// A row's dot product (see [`super::dot_row`]) with the kernels above: block `i`'s
/// contribution into lane `i % 8`, then the contract's tree (exactly [`super::super::sum_blocks`],
/// written as a loop so that everything inlines into the `#[target_feature]` entry point).
///
/// # Safety
/// The module's contract.
#[inline(always)]
pub(super) unsafe fn row<M: Madd>(ty: QuantType, w_row: &[u8], act: &[BlockQ8K]) -> f32 {
    let mut acc = [0f32; BLOCK_LANES];
    // SAFETY: the module's contract, passed on to each kernel.
    unsafe {
        match ty {
            QuantType::Q2K => {
                for (i, (b, a)) in blocks::<{ q2k::BYTES }>(w_row, act).enumerate() {
                    let (s, m) = q2k_sums::<M>(b, a);
                    acc[i % BLOCK_LANES] += q2k::contribution(b, a.d, s, m);
                }
            }
            QuantType::Q3K => {
                for (i, (b, a)) in blocks::<{ q3k::BYTES }>(w_row, act).enumerate() {
                    acc[i % BLOCK_LANES] += q3k::contribution(b, a.d, q3k_sum::<M>(b, a));
                }
            }
            QuantType::Q4K => {
                for (i, (b, a)) in blocks::<{ q4k::BYTES }>(w_row, act).enumerate() {
                    let (s, m) = q4k_sums::<M>(b, a);
                    acc[i % BLOCK_LANES] += q4k::contribution(b, a.d, s, m);
                }
            }
            QuantType::Q5K => {
                for (i, (b, a)) in blocks::<{ q5k::BYTES }>(w_row, act).enumerate() {
                    let (s, m) = q5k_sums::<M>(b, a);
                    acc[i % BLOCK_LANES] += q4k::contribution(b, a.d, s, m);
                }
            }
            QuantType::Q6K => {
                for (i, (b, a)) in blocks::<{ q6k::BYTES }>(w_row, act).enumerate() {
                    acc[i % BLOCK_LANES] += q6k::contribution(b, a.d, q6k_sum::<M>(b, a));
                }
            }
            _ => return f32::NAN,
        }
    }
    tree(&acc)
}

/// [`super::dot_row`] with AVX2.
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn dot_row(ty: QuantType, w_row: &[u8], act: &[BlockQ8K]) -> f32 {
    // SAFETY: this function's features are the module's contract for `Plain`.
    unsafe { row::<Plain>(ty, w_row, act) }
}

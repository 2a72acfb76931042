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
//! Every `unsafe fn` here needs the CPU features of the entry point that inlines it: AVX2 and
//! F16C at least, and AVX512-VNNI + AVX512-VL for [`Vnni`]. Loads go through [`load`], which reads
//! from bounds-checked slices.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;

use super::q8k::BlockQ8K;
use super::{q2k, q3k, q4k, q5k, q6k, QuantType};
use crate::quant::BLOCK_LANES;

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

/// [`pair`] for unsigned byte scales (`< 128`): zero-extended by the shuffle itself.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn pair_u(v: __m256i, g: usize) -> __m256i {
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe {
        let mask = _mm256_set_m128i(
            _mm_set1_epi16((0x8000 | (2 * g + 1)) as u16 as i16),
            _mm_set1_epi16((0x8000 | (2 * g)) as u16 as i16),
        );
        _mm256_shuffle_epi8(v, mask)
    }
}

/// Every `i16` lane = `sc[s]` zero-extended, for unsigned byte scales (`< 128`).
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn same_u(v: __m256i, s: usize) -> __m256i {
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe { _mm256_shuffle_epi8(v, _mm256_set1_epi16((0x8000 | s) as u16 as i16)) }
}

/// A Q4_K / Q5_K block's 8 scales (bytes 0..8) and 8 mins (bytes 8..16), unpacked from their
/// 12 bytes in general registers (as `common::unpack_scale_min_k4`) and moved to a vector
/// without a round trip through memory.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn k4_scales(b: &[u8]) -> __m128i {
    let q = q4k::scale_bytes(b);
    let a0 = u32::from_le_bytes([q[0], q[1], q[2], q[3]]);
    let a1 = u32::from_le_bytes([q[4], q[5], q[6], q[7]]);
    let a2 = u32::from_le_bytes([q[8], q[9], q[10], q[11]]);
    let sc_lo = a0 & 0x3f3f_3f3f;
    let m_lo = a1 & 0x3f3f_3f3f;
    let sc_hi = (a2 & 0x0f0f_0f0f) | ((a0 >> 2) & 0x3030_3030);
    let m_hi = ((a2 >> 4) & 0x0f0f_0f0f) | ((a1 >> 2) & 0x3030_3030);
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe { _mm_set_epi32(m_hi as i32, m_lo as i32, sc_hi as i32, sc_lo as i32) }
}

/// A Q3_K block's 16 signed scales (as `common::unpack_scales_q3k`), in a vector.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn q3_scales(b: &[u8; q3k::BYTES]) -> __m128i {
    let q = q3k::scale_bytes(b);
    let a0 = u32::from_le_bytes([q[0], q[1], q[2], q[3]]);
    let a1 = u32::from_le_bytes([q[4], q[5], q[6], q[7]]);
    let t = u32::from_le_bytes([q[8], q[9], q[10], q[11]]);
    const LOW4: u32 = 0x0f0f_0f0f;
    const LOW2: u32 = 0x0303_0303;
    let w0 = (a0 & LOW4) | ((t & LOW2) << 4);
    let w1 = (a1 & LOW4) | (((t >> 2) & LOW2) << 4);
    let w2 = ((a0 >> 4) & LOW4) | (((t >> 4) & LOW2) << 4);
    let w3 = ((a1 >> 4) & LOW4) | (((t >> 6) & LOW2) << 4);
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe {
        _mm_sub_epi8(
            _mm_set_epi32(w3 as i32, w2 as i32, w1 as i32, w0 as i32),
            _mm_set1_epi8(32),
        )
    }
}

/// Q2_K: `(isum, msum)` of [`q2k::dot`], spread over 8 lanes each.
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q2k_sums<M: Madd>(b: &[u8; q2k::BYTES], a: &BlockQ8K) -> (__m256i, __m256i) {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let raw = _mm_loadu_si128(b.as_ptr().cast());
        let low4 = _mm_set1_epi8(0x0f);
        let sc = _mm256_broadcastsi128_si256(_mm_and_si128(raw, low4));
        let mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16::<4>(raw), low4));
        let msum = _mm256_madd_epi16(mins, bsums(a));
        let three = _mm256_set1_epi8(3);
        let mut acc = [_mm256_setzero_si256(); 2];
        for h in 0..2 {
            let q = load(b, q2k::QS + 32 * h);
            for j in 0..4 {
                let g = 4 * h + j;
                let u =
                    _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * j as i32)), three);
                let p = _mm256_maddubs_epi16(u, load(&a.qs, 32 * g));
                acc[g % 2] = M::madd(acc[g % 2], p, pair_u(sc, g));
            }
        }
        (_mm256_add_epi32(acc[0], acc[1]), msum)
    }
}

/// Q3_K: `isum` of [`q3k::dot`] over 8 lanes, with levels `q + 4` and `4·Σ sc·bsums` taken
/// back out.
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q3k_sum<M: Madd>(b: &[u8; q3k::BYTES], a: &BlockQ8K) -> __m256i {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let scales = q3_scales(b);
        let sc = _mm256_broadcastsi128_si256(scales);
        let sc16 = _mm256_cvtepi8_epi16(scales);
        let offset = _mm256_madd_epi16(sc16, bsums(a));
        let three = _mm256_set1_epi8(3);
        let one = _mm256_set1_epi8(1);
        let mut hm = load(b, 0);
        let mut acc = [_mm256_setzero_si256(); 2];
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
                acc[g % 2] = M::madd(acc[g % 2], p, pair(sc, g));
            }
        }
        _mm256_sub_epi32(
            _mm256_add_epi32(acc[0], acc[1]),
            _mm256_slli_epi32::<2>(offset),
        )
    }
}

/// The mins' share `Σ_s m_s · (bsums_{2s} + bsums_{2s+1})` of a Q4_K / Q5_K block, as 4 lanes
/// (`scales` from [`k4_scales`]).
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn k4_mins(scales: __m128i, a: &BlockQ8K) -> __m128i {
    // SAFETY: the module's contract (CPU features); `bsums` is 32 bytes.
    unsafe {
        let mins = _mm_cvtepu8_epi16(_mm_srli_si128::<8>(scales));
        let bs = bsums(a);
        let pairs = _mm_hadd_epi16(
            _mm256_castsi256_si128(bs),
            _mm256_extracti128_si256::<1>(bs),
        );
        _mm_madd_epi16(mins, pairs)
    }
}

/// Q4_K: `(isum, msum)` of [`q4k::dot`], spread over 8 lanes each.
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q4k_sums<M: Madd>(b: &[u8; q4k::BYTES], a: &BlockQ8K) -> (__m256i, __m256i) {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let scales = k4_scales(b);
        let scv = _mm256_broadcastsi128_si256(scales);
        let low4 = _mm256_set1_epi8(0x0f);
        let mut acc = [_mm256_setzero_si256(); 2];
        for c in 0..4 {
            let q = load(b, q4k::QS + 32 * c);
            let lo = _mm256_and_si256(q, low4);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(q), low4);
            let p0 = _mm256_maddubs_epi16(lo, load(&a.qs, 64 * c));
            let p1 = _mm256_maddubs_epi16(hi, load(&a.qs, 64 * c + 32));
            acc[0] = M::madd(acc[0], p0, same_u(scv, 2 * c));
            acc[1] = M::madd(acc[1], p1, same_u(scv, 2 * c + 1));
        }
        (
            _mm256_add_epi32(acc[0], acc[1]),
            _mm256_set_m128i(_mm_setzero_si128(), k4_mins(scales, a)),
        )
    }
}

/// Q5_K: `(isum, msum)` of [`q5k::dot`], spread over 8 lanes each.
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q5k_sums<M: Madd>(b: &[u8; q5k::BYTES], a: &BlockQ8K) -> (__m256i, __m256i) {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let scales = k4_scales(b);
        let scv = _mm256_broadcastsi128_si256(scales);
        let low4 = _mm256_set1_epi8(0x0f);
        let one = _mm256_set1_epi8(1);
        let mut qh = load(b, q5k::QH);
        let mut acc = [_mm256_setzero_si256(); 2];
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
            acc[0] = M::madd(acc[0], p0, same_u(scv, 2 * c));
            acc[1] = M::madd(acc[1], p1, same_u(scv, 2 * c + 1));
        }
        (
            _mm256_add_epi32(acc[0], acc[1]),
            _mm256_set_m128i(_mm_setzero_si128(), k4_mins(scales, a)),
        )
    }
}

/// Q6_K: `isum` of [`q6k::dot`] over 8 lanes, with levels `q + 32` and `32·Σ sc·bsums` taken
/// back out.
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn q6k_sum<M: Madd>(b: &[u8; q6k::BYTES], a: &BlockQ8K) -> __m256i {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let raw = _mm_loadu_si128(b[q6k::SCALES..q6k::SCALES + 16].as_ptr().cast());
        let sc = _mm256_broadcastsi128_si256(raw);
        let offset = _mm256_madd_epi16(_mm256_cvtepi8_epi16(raw), bsums(a));
        let low4 = _mm256_set1_epi8(0x0f);
        let top2 = _mm256_set1_epi8(0x30);
        let mut acc = [_mm256_setzero_si256(); 2];
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
                acc[g % 2] = M::madd(acc[g % 2], p, pair(sc, g));
            }
        }
        _mm256_sub_epi32(
            _mm256_add_epi32(acc[0], acc[1]),
            _mm256_slli_epi32::<5>(offset),
        )
    }
}

/// One K type's block kernel, as the row loop sees it.
trait Kernel {
    /// Bytes per block.
    const BYTES: usize;
    /// Whether the type has mins (the second sum and `dmin`).
    const MINS: bool;
    /// Offset of the `f16` `d` (then `dmin` when [`Kernel::MINS`]).
    const D: usize;
    /// The block's `isum` and `msum` (zero without mins), each spread over 8 `i32` lanes.
    ///
    /// # Safety
    /// The module's contract; `b` holds [`Kernel::BYTES`] bytes.
    unsafe fn sums<M: Madd>(b: &[u8], a: &BlockQ8K) -> (__m256i, __m256i);
}

/// The kernel of Q2_K, Q3_K, … (`T` = 2..=6).
struct K<const T: u8>;

/// The first `N` bytes of `b` as an array (the row loop hands out exact blocks).
#[inline(always)]
fn exact<const N: usize>(b: &[u8]) -> &[u8; N] {
    b[..N].try_into().unwrap_or(&[0; N])
}

macro_rules! kernel {
    ($t:literal, $module:ident, $mins:literal, $d:expr, |$b:ident, $a:ident| $body:expr) => {
        impl Kernel for K<$t> {
            const BYTES: usize = $module::BYTES;
            const MINS: bool = $mins;
            const D: usize = $d;
            #[inline(always)]
            unsafe fn sums<M: Madd>(b: &[u8], $a: &BlockQ8K) -> (__m256i, __m256i) {
                let $b = exact::<{ $module::BYTES }>(b);
                // SAFETY: the module's contract, passed on.
                unsafe { $body }
            }
        }
    };
}

kernel!(2, q2k, true, q2k::D, |b, a| q2k_sums::<M>(b, a));
kernel!(3, q3k, false, q3k::D, |b, a| (
    q3k_sum::<M>(b, a),
    _mm256_setzero_si256()
));
kernel!(4, q4k, true, 0, |b, a| q4k_sums::<M>(b, a));
kernel!(5, q5k, true, 0, |b, a| q5k_sums::<M>(b, a));
kernel!(6, q6k, false, q6k::D, |b, a| (
    q6k_sum::<M>(b, a),
    _mm256_setzero_si256()
));

/// Lane `j` = the sum of the 8 lanes of `v[j]` (exact: the true sums fit in `i32`).
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn reduce8(v: &[__m256i; 8]) -> __m256i {
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe {
        let h01 = _mm256_hadd_epi32(v[0], v[1]);
        let h23 = _mm256_hadd_epi32(v[2], v[3]);
        let h45 = _mm256_hadd_epi32(v[4], v[5]);
        let h67 = _mm256_hadd_epi32(v[6], v[7]);
        let lo = _mm256_hadd_epi32(h01, h23);
        let hi = _mm256_hadd_epi32(h45, h67);
        _mm256_add_epi32(
            _mm256_permute2x128_si256::<0x20>(lo, hi),
            _mm256_permute2x128_si256::<0x31>(lo, hi),
        )
    }
}

/// A row's dot product (see [`super::dot_row`]) with the kernel `T`, 8 blocks at a time:
/// each block's integer sums stay in vectors, one transposing reduction gives the 8 blocks'
/// `isum` (and `msum`) in lanes 0..8, and the float formula runs lane-wise, so block
/// `8·g + j` is added to lane `j` of the accumulator: exactly [`crate::quant::sum_blocks`]'s
/// order. Lanes past the row's last block add `±0.0`, which changes no accumulator (they
/// start at `+0.0` and so are never `−0.0`). The formula is `common::contribution[_min]`'s,
/// operation for operation (`vmulps`, `vsubps`, no fma).
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn row_of<T: Kernel, M: Madd>(w_row: &[u8], act: &[BlockQ8K]) -> f32 {
    let nblocks = (w_row.len() / T::BYTES).min(act.len());
    // SAFETY: the module's contract; every slice access below is bounds-checked, and every
    // element of `isums` / `msums` is written (by a block or as zero) before it is read.
    unsafe {
        let zero = _mm256_setzero_si256();
        let mut acc = _mm256_setzero_ps();
        let mut g0 = 0;
        while g0 < nblocks {
            let len = (nblocks - g0).min(BLOCK_LANES);
            let mut isums = [MaybeUninit::<__m256i>::uninit(); 8];
            let mut msums = [MaybeUninit::<__m256i>::uninit(); 8];
            let mut d = [0u16; 8];
            let mut dmin = [0u16; 8];
            let mut ad = [0f32; 8];
            for j in 0..len {
                let b = &w_row[(g0 + j) * T::BYTES..(g0 + j + 1) * T::BYTES];
                let a = &act[g0 + j];
                let (i, m) = T::sums::<M>(b, a);
                isums[j].write(i);
                msums[j].write(m);
                d[j] = u16::from_le_bytes([b[T::D], b[T::D + 1]]);
                if T::MINS {
                    dmin[j] = u16::from_le_bytes([b[T::D + 2], b[T::D + 3]]);
                }
                ad[j] = a.d;
            }
            for j in len..BLOCK_LANES {
                isums[j].write(zero);
                msums[j].write(zero);
            }
            let isums = isums.map(|v| v.assume_init());
            let ad = _mm256_loadu_ps(ad.as_ptr());
            let dd = _mm256_mul_ps(ad, _mm256_cvtph_ps(_mm_loadu_si128(d.as_ptr().cast())));
            let mut c = _mm256_mul_ps(dd, _mm256_cvtepi32_ps(reduce8(&isums)));
            if T::MINS {
                let dmin = _mm256_cvtph_ps(_mm_loadu_si128(dmin.as_ptr().cast()));
                let dm = _mm256_mul_ps(ad, dmin);
                let msums = msums.map(|v| v.assume_init());
                c = _mm256_sub_ps(c, _mm256_mul_ps(dm, _mm256_cvtepi32_ps(reduce8(&msums))));
            }
            acc = _mm256_add_ps(acc, c);
            g0 += len;
        }
        // The contract's tree: `vhaddps` adds neighbours (a0+a1, a2+a3 | a4+a5, a6+a7), then
        // those pairs, then the two halves: ((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7)).
        let h = _mm256_hadd_ps(acc, acc);
        let h = _mm256_hadd_ps(h, h);
        _mm_cvtss_f32(_mm_add_ss(
            _mm256_castps256_ps128(h),
            _mm256_extractf128_ps::<1>(h),
        ))
    }
}

/// A row's dot product (see [`super::dot_row`]) with the kernels above.
///
/// # Safety
/// The module's contract.
#[inline(always)]
pub(super) unsafe fn row<M: Madd>(ty: QuantType, w_row: &[u8], act: &[BlockQ8K]) -> f32 {
    // SAFETY: the module's contract, passed on.
    unsafe {
        match ty {
            QuantType::Q2K => row_of::<K<2>, M>(w_row, act),
            QuantType::Q3K => row_of::<K<3>, M>(w_row, act),
            QuantType::Q4K => row_of::<K<4>, M>(w_row, act),
            QuantType::Q5K => row_of::<K<5>, M>(w_row, act),
            QuantType::Q6K => row_of::<K<6>, M>(w_row, act),
            _ => f32::NAN,
        }
    }
}

/// [`super::dot_row`] with AVX2.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_row(ty: QuantType, w_row: &[u8], act: &[BlockQ8K]) -> f32 {
    // SAFETY: this function's features are the module's contract for `Plain`.
    unsafe { row::<Plain>(ty, w_row, act) }
}

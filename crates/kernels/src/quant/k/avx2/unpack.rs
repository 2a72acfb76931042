//! Each K-quant type's 256-element block unpacked for the AVX2 kernels of the parent module
//! ([`super`]): its levels as unsigned bytes, 32 elements a vector, and its sub-block scales
//! as `i16` lanes, with the offset and min corrections the kernel applies through `bsums`
//! ([`Unpacked`]); one function per type ([`q2k_unpack`] … [`q6k_unpack`]) and the scale
//! helpers they share.
//!
//! # Safety
//!
//! The parent module's contract: every `unsafe fn` here needs the CPU features of the entry
//! point that inlines it (AVX2 and F16C at least); loads go through [`load`], which reads
//! from bounds-checked slices.

use std::arch::x86_64::*;

use super::super::{q2k, q3k, q4k, q5k, q6k};
use super::load;

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

/// A block's levels and scales, unpacked once and usable against any number of Q8_K blocks
/// (the activation rows of a prefill share each weight block's unpacking).
///
/// `isum = Σ_g madd(maddubs(lv[g], a[32g..32g+32]), sc[g]) + madd(bsums, ibias)` and
/// `msum = madd(bsums, mbias)`, lane-wise `i32`, summed over lanes: exactly the reference's
/// integer sums. `ibias` takes the unsigned levels' offset back out (Q3_K: `−4·sc`, Q6_K:
/// `−32·sc` per group of 16), `mbias` weighs each group of 16 by its min (Q2_K: `m_s`,
/// Q4_K / Q5_K: `m_{s/2}`).
#[derive(Clone, Copy)]
pub(super) struct Unpacked {
    /// Elements `32·g..32·g + 32` as unsigned levels.
    pub(super) lv: [__m256i; 8],
    /// Their sub-block scales as `i16` (one per 16-element half of a `vpmaddubsw` result).
    pub(super) sc: [__m256i; 8],
    /// Per 16-element group: the offset correction (zero for Q2_K, Q4_K, Q5_K).
    pub(super) ibias: __m256i,
    /// Per 16-element group: the min (zero for Q3_K, Q6_K).
    pub(super) mbias: __m256i,
}

/// Q2_K's [`Unpacked`].
///
/// # Safety
/// The module's contract.
#[inline(always)]
pub(super) unsafe fn q2k_unpack(b: &[u8; q2k::BYTES]) -> Unpacked {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let raw = _mm_loadu_si128(b.as_ptr().cast());
        let low4 = _mm_set1_epi8(0x0f);
        let sc = _mm256_broadcastsi128_si256(_mm_and_si128(raw, low4));
        let mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16::<4>(raw), low4));
        let three = _mm256_set1_epi8(3);
        let q0 = load(b, q2k::QS);
        let q1 = load(b, q2k::QS + 32);
        let level = |q: __m256i, j: i32| {
            _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * j)), three)
        };
        Unpacked {
            lv: [
                level(q0, 0),
                level(q0, 1),
                level(q0, 2),
                level(q0, 3),
                level(q1, 0),
                level(q1, 1),
                level(q1, 2),
                level(q1, 3),
            ],
            sc: std::array::from_fn(|g| pair_u(sc, g)),
            ibias: _mm256_setzero_si256(),
            mbias: mins,
        }
    }
}

/// Q3_K's [`Unpacked`]: levels `q + 4` (the high bit, set for `q ≥ 0`, adds 4).
///
/// # Safety
/// The module's contract.
#[inline(always)]
pub(super) unsafe fn q3k_unpack(b: &[u8; q3k::BYTES]) -> Unpacked {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let scales = q3_scales(b);
        let sc = _mm256_broadcastsi128_si256(scales);
        let sc16 = _mm256_cvtepi8_epi16(scales);
        let three = _mm256_set1_epi8(3);
        let one = _mm256_set1_epi8(1);
        let hm = load(b, 0);
        let q = [load(b, q3k::QS), load(b, q3k::QS + 32)];
        let lv = std::array::from_fn(|g| {
            let low = _mm256_and_si256(
                _mm256_srl_epi16(q[g / 4], _mm_cvtsi32_si128(2 * (g % 4) as i32)),
                three,
            );
            let high = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(g as i32)), one);
            _mm256_or_si256(low, _mm256_slli_epi16::<2>(high))
        });
        Unpacked {
            lv,
            sc: std::array::from_fn(|g| pair(sc, g)),
            ibias: _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16::<2>(sc16)),
            mbias: _mm256_setzero_si256(),
        }
    }
}

/// Q4_K's and Q5_K's scales and `mbias` (each min for both of its groups of 16).
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn k4_common(b: &[u8]) -> ([__m256i; 8], __m256i) {
    // SAFETY: the module's contract (CPU features).
    unsafe {
        let scales = k4_scales(b);
        let scv = _mm256_broadcastsi128_si256(scales);
        let mins = _mm_srli_si128::<8>(scales);
        let mbias = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mins, mins));
        (std::array::from_fn(|s| same_u(scv, s)), mbias)
    }
}

/// Q4_K's [`Unpacked`].
///
/// # Safety
/// The module's contract.
#[inline(always)]
pub(super) unsafe fn q4k_unpack(b: &[u8; q4k::BYTES]) -> Unpacked {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let (sc, mbias) = k4_common(b);
        let low4 = _mm256_set1_epi8(0x0f);
        let lv = std::array::from_fn(|g| {
            let q = load(b, q4k::QS + 32 * (g / 2));
            if g % 2 == 0 {
                _mm256_and_si256(q, low4)
            } else {
                _mm256_and_si256(_mm256_srli_epi16::<4>(q), low4)
            }
        });
        Unpacked {
            lv,
            sc,
            ibias: _mm256_setzero_si256(),
            mbias,
        }
    }
}

/// Q5_K's [`Unpacked`].
///
/// # Safety
/// The module's contract.
#[inline(always)]
pub(super) unsafe fn q5k_unpack(b: &[u8; q5k::BYTES]) -> Unpacked {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let (sc, mbias) = k4_common(b);
        let low4 = _mm256_set1_epi8(0x0f);
        let one = _mm256_set1_epi8(1);
        let qh = load(b, q5k::QH);
        let lv = std::array::from_fn(|g| {
            let q = load(b, q5k::QS + 32 * (g / 2));
            let nibble = if g % 2 == 0 {
                _mm256_and_si256(q, low4)
            } else {
                _mm256_and_si256(_mm256_srli_epi16::<4>(q), low4)
            };
            let high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(g as i32)), one);
            _mm256_or_si256(nibble, _mm256_slli_epi16::<4>(high))
        });
        Unpacked {
            lv,
            sc,
            ibias: _mm256_setzero_si256(),
            mbias,
        }
    }
}

/// Q6_K's [`Unpacked`]: levels `q + 32`.
///
/// # Safety
/// The module's contract.
#[inline(always)]
pub(super) unsafe fn q6k_unpack(b: &[u8; q6k::BYTES]) -> Unpacked {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let raw = _mm_loadu_si128(b[q6k::SCALES..q6k::SCALES + 16].as_ptr().cast());
        let sc = _mm256_broadcastsi128_si256(raw);
        let sc16 = _mm256_cvtepi8_epi16(raw);
        let low4 = _mm256_set1_epi8(0x0f);
        let top2 = _mm256_set1_epi8(0x30);
        let lv = std::array::from_fn(|g| {
            let (h, j) = (g / 4, g % 4);
            let ql = load(b, 64 * h + 32 * (j % 2));
            let qh = load(b, q6k::QH + 32 * h);
            let nibble = if j < 2 {
                _mm256_and_si256(ql, low4)
            } else {
                _mm256_and_si256(_mm256_srli_epi16::<4>(ql), low4)
            };
            // Bits 2j, 2j+1 of qh to bits 4, 5.
            let top = match j {
                0 => _mm256_slli_epi16::<4>(qh),
                1 => _mm256_slli_epi16::<2>(qh),
                2 => qh,
                _ => _mm256_srli_epi16::<2>(qh),
            };
            _mm256_or_si256(nibble, _mm256_and_si256(top, top2))
        });
        Unpacked {
            lv,
            sc: std::array::from_fn(|g| pair(sc, g)),
            ibias: _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16::<5>(sc16)),
            mbias: _mm256_setzero_si256(),
        }
    }
}

//! The legacy types' dot products with AVX-512 BW (`vpmaddubsw` + `vpmaddwd`) or AVX-512 VNNI
//! (`vpdpbusd`), two 32-element blocks per 512-bit register.
//!
//! The same scheme as `avx2` (whose unpacking and scale loads it shares): 8 blocks at a time,
//! register `i` (`i < 4`) holding block `i` in its low half and block `i + 4` in its high half,
//! so the reduction of the 4 registers' 16 partial sums each lands block `l` in lane `l` of one
//! 8-lane vector; from there the float steps are `avx2`'s, one for one.
//!
//! # Safety
//! As `avx2`'s module: the entry points run only on a CPU with their features; `w_row` holds
//! whole blocks and every activation row at least as many, rounded up to a multiple of 8.

use std::arch::x86_64::*;

use super::act::ActRow;
use super::avx2::{
    block_bytes, offset, offset_shift, scales, unpack, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
};
use super::{tree, QuantType};

/// Two 256-bit halves as one register: `lo` in the low half.
///
/// # Safety
/// AVX-512F enabled.
#[inline(always)]
unsafe fn pair(lo: __m256i, hi: __m256i) -> __m512i {
    // SAFETY: register-only AVX-512F intrinsics (caller enables them).
    unsafe { _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1) }
}

/// The 16 `i32` partial sums of two blocks (8 per 256-bit half).
///
/// # Safety
/// AVX-512 BW (and VNNI when `VNNI`) enabled.
#[inline(always)]
unsafe fn blocks<const T: u8, const VNNI: bool>(w: __m512i, a: __m512i) -> __m512i {
    // SAFETY: register-only intrinsics of the enabled sets (caller).
    unsafe {
        if VNNI {
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, a)
        } else if T == Q8_0 {
            // |w| times a·sign(w): negate `a` where `w` is negative, zero it where `w` is 0
            // (|0| = 0 makes the product 0 anyway).
            let neg = _mm512_movepi8_mask(w);
            let signed = _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
            let pairs = _mm512_maddubs_epi16(_mm512_abs_epi8(w), signed);
            _mm512_madd_epi16(pairs, _mm512_set1_epi16(1))
        } else {
            _mm512_madd_epi16(_mm512_maddubs_epi16(w, a), _mm512_set1_epi16(1))
        }
    }
}

/// Block `l`'s total in lane `l`: register `i` holds blocks `i` (low half) and `i + 4`.
///
/// # Safety
/// AVX-512F enabled.
#[inline(always)]
unsafe fn reduce4(v: &[__m512i; 4]) -> __m256i {
    // SAFETY: register-only AVX-512F/AVX2 intrinsics (caller enables them).
    unsafe {
        let t01 = _mm512_add_epi32(
            _mm512_unpacklo_epi32(v[0], v[1]),
            _mm512_unpackhi_epi32(v[0], v[1]),
        );
        let t23 = _mm512_add_epi32(
            _mm512_unpacklo_epi32(v[2], v[3]),
            _mm512_unpackhi_epi32(v[2], v[3]),
        );
        // Each 128-bit quarter q: [Σv0, Σv1, Σv2, Σv3] over that quarter.
        let u = _mm512_add_epi32(
            _mm512_unpacklo_epi64(t01, t23),
            _mm512_unpackhi_epi64(t01, t23),
        );
        // Quarters 0+1 are blocks 0..4, quarters 2+3 blocks 4..8.
        let even = _mm512_shuffle_i32x4(u, u, 0b00_00_10_00);
        let odd = _mm512_shuffle_i32x4(u, u, 0b00_00_11_01);
        _mm256_add_epi32(_mm512_castsi512_si256(even), _mm512_castsi512_si256(odd))
    }
}

/// AVX-512 BW entry point.
///
/// # Safety
/// The module's contract; AVX-512 F/BW/VL/DQ, AVX2, FMA and F16C present.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
pub(super) unsafe fn dot_rows(ty: QuantType, w_row: &[u8], rows: &[ActRow<'_>], out: &mut [f32]) {
    // SAFETY: forwarded contract.
    unsafe { by_type::<false>(ty, w_row, rows, out) }
}

/// AVX-512 VNNI entry point.
///
/// # Safety
/// The module's contract; AVX-512 F/BW/VL/DQ/VNNI, AVX2, FMA and F16C present.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(super) unsafe fn dot_rows_vnni(
    ty: QuantType,
    w_row: &[u8],
    rows: &[ActRow<'_>],
    out: &mut [f32],
) {
    // SAFETY: forwarded contract.
    unsafe { by_type::<true>(ty, w_row, rows, out) }
}

/// Dispatches on the type and the row count.
///
/// # Safety
/// The module's contract, with the features `VNNI` needs enabled.
#[inline(always)]
unsafe fn by_type<const VNNI: bool>(
    ty: QuantType,
    w_row: &[u8],
    rows: &[ActRow<'_>],
    out: &mut [f32],
) {
    /// One type: by row count.
    ///
    /// # Safety
    /// As `by_type`.
    #[inline(always)]
    unsafe fn rows_of<const T: u8, const VNNI: bool>(
        w_row: &[u8],
        rows: &[ActRow<'_>],
        out: &mut [f32],
    ) {
        // SAFETY: forwarded contract.
        unsafe {
            match rows.len() {
                1 => body::<T, VNNI, 1>(w_row, rows, out),
                2 => body::<T, VNNI, 2>(w_row, rows, out),
                3 => body::<T, VNNI, 3>(w_row, rows, out),
                _ => body::<T, VNNI, 4>(w_row, rows, out),
            }
        }
    }
    // SAFETY: forwarded contract.
    unsafe {
        match ty {
            QuantType::Q4_0 => rows_of::<Q4_0, VNNI>(w_row, rows, out),
            QuantType::Q4_1 => rows_of::<Q4_1, VNNI>(w_row, rows, out),
            QuantType::Q5_0 => rows_of::<Q5_0, VNNI>(w_row, rows, out),
            QuantType::Q5_1 => rows_of::<Q5_1, VNNI>(w_row, rows, out),
            _ => rows_of::<Q8_0, VNNI>(w_row, rows, out),
        }
    }
}

/// The kernel: `R` activation rows against one weight row of type code `T`.
///
/// # Safety
/// The module's contract, with the features `VNNI` needs enabled; `rows.len() == R` and
/// `out.len() ≥ R`.
#[inline(always)]
unsafe fn body<const T: u8, const VNNI: bool, const R: usize>(
    w_row: &[u8],
    rows: &[ActRow<'_>],
    out: &mut [f32],
) {
    let bs = block_bytes(T);
    let nb = w_row.len() / bs;
    let groups = nb.div_ceil(8);
    for a in rows {
        assert!(a.d.len() >= groups * 8 && a.qs.len() >= groups * 256);
    }
    // SAFETY: every pointer below stays inside `w_row` (whole groups), `tail` (the last
    // partial group, zero-padded) or the activation rows (asserted above); the features are
    // the caller's.
    unsafe {
        let mut acc = [_mm256_setzero_ps(); R];
        let mut tail = [0u8; 8 * 34];
        for g in 0..groups {
            let base = if (g + 1) * 8 <= nb {
                w_row.as_ptr().add(g * 8 * bs)
            } else {
                let rest = &w_row[g * 8 * bs..];
                tail[..rest.len()].copy_from_slice(rest);
                tail.as_ptr()
            };
            let mut w = [_mm512_setzero_si512(); 4];
            for (i, w) in w.iter_mut().enumerate() {
                *w = pair(
                    unpack::<T, VNNI>(base.add(i * bs)),
                    unpack::<T, VNNI>(base.add((i + 4) * bs)),
                );
            }
            let dw = scales(base, bs, 0);
            let mw = if offset(T) {
                scales(base, bs, 2)
            } else {
                _mm256_setzero_ps()
            };
            for r in 0..R {
                let a = &rows[r];
                let qa = a.qs.as_ptr().add(g * 256);
                let mut v = [_mm512_setzero_si512(); 4];
                for (i, v) in v.iter_mut().enumerate() {
                    let x = pair(
                        _mm256_loadu_si256(qa.add(i * 32).cast()),
                        _mm256_loadu_si256(qa.add((i + 4) * 32).cast()),
                    );
                    *v = blocks::<T, VNNI>(w[i], x);
                }
                let mut s = reduce4(&v);
                let shift = offset_shift(T, VNNI);
                if shift > 0 {
                    let sums = _mm256_loadu_si256(a.sum.as_ptr().add(g * 8).cast());
                    let off = match shift {
                        3 => _mm256_slli_epi32(sums, 3),
                        4 => _mm256_slli_epi32(sums, 4),
                        _ => _mm256_slli_epi32(sums, 7),
                    };
                    s = _mm256_sub_epi32(s, off);
                }
                let p = _mm256_mul_ps(dw, _mm256_loadu_ps(a.d.as_ptr().add(g * 8)));
                let sf = _mm256_cvtepi32_ps(s);
                let c = if offset(T) {
                    let ms = _mm256_mul_ps(mw, _mm256_loadu_ps(a.s.as_ptr().add(g * 8)));
                    _mm256_fmadd_ps(p, sf, ms)
                } else {
                    _mm256_mul_ps(p, sf)
                };
                acc[r] = _mm256_add_ps(acc[r], c);
            }
        }
        for r in 0..R {
            let mut lanes = [0f32; 8];
            _mm256_storeu_ps(lanes.as_mut_ptr(), acc[r]);
            out[r] = tree(&lanes);
        }
    }
}

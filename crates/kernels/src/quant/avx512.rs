//! The legacy types' dot products with AVX-512 BW (`vpmaddubsw` + `vpmaddwd`) or AVX-512 VNNI
//! (`vpdpbusd`), two 32-element blocks per 512-bit register.
//!
//! The same scheme as `avx2` (whose scale loads and float steps it shares): 8 blocks at a time,
//! as 4 pairs of adjacent blocks, a pair's levels in one register in the activations' pair
//! layout (see `act`), so one `vpdpbusd` takes a pair and the reduction of the 4 registers'
//! 16 partial sums each lands the group's blocks in `avx2`'s lane order.
//!
//! # Safety
//! As `avx2`'s module: the entry points run only on a CPU with their features; `w_row` holds
//! whole blocks and every activation row at least as many, rounded up to a multiple of 8.

use std::arch::x86_64::*;

use super::act::ActRow;
use super::avx2::{
    block_bytes, contributions, finish, halves, heads, heads_of, offset, offset_shift, qh_pair,
    qs_offset, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, ZERO_BLOCK,
};
use super::QuantType;

/// The levels of blocks `p0` and `p1` as one register in the activations' pair layout
/// (128-bit quarters: elements 0..16 of `p0`, of `p1`, then 16..32 of `p0`, of `p1`).
/// Unsigned for the 4- and 5-bit types, `w ^ 0x80` for Q8_0 under VNNI, raw `i8` otherwise.
///
/// # Safety
/// AVX-512 F/BW enabled; both blocks readable.
#[inline(always)]
unsafe fn pair<const T: u8, const VNNI: bool>(p0: *const u8, p1: *const u8) -> __m512i {
    // SAFETY: the features are enabled and both blocks readable at their layout's offsets
    // (caller).
    unsafe {
        let o = qs_offset(T);
        if T == Q8_0 {
            // [p0's 32, p1's 32] -> quarters 0, 2, 1, 3.
            let both = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256(p0.add(o).cast())),
                _mm256_loadu_si256(p1.add(o).cast()),
                1,
            );
            let w = _mm512_shuffle_i64x2(both, both, 0b11_01_10_00);
            return if VNNI {
                _mm512_xor_si512(w, _mm512_set1_epi8(-128))
            } else {
                w
            };
        }
        let y = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128(p0.add(o).cast())),
            _mm_loadu_si128(p1.add(o).cast()),
            1,
        );
        let z = _mm512_inserti64x4(_mm512_castsi256_si512(y), _mm256_srli_epi16(y, 4), 1);
        let w = _mm512_and_si512(z, _mm512_set1_epi8(0x0F));
        if T == Q5_0 || T == Q5_1 {
            let v = _mm512_set1_epi64(qh_pair::<T>(p0, p1) as i64);
            // Byte t of quarter q takes byte t / 8 of its block's `qh` half-word: quarters
            // 0, 1 bits 0..16 of p0, p1 (bytes 0, 1 and 4, 5), quarters 2, 3 bits 16..32.
            let idx = _mm512_set_epi64(
                0x0707_0707_0707_0707,
                0x0606_0606_0606_0606,
                0x0303_0303_0303_0303,
                0x0202_0202_0202_0202,
                0x0505_0505_0505_0505,
                0x0404_0404_0404_0404,
                0x0101_0101_0101_0101,
                0,
            );
            let bit = _mm512_set1_epi64(0x8040_2010_0804_0201u64 as i64);
            let set = _mm512_test_epi8_mask(_mm512_shuffle_epi8(v, idx), bit);
            _mm512_mask_add_epi8(w, set, w, _mm512_set1_epi8(0x10))
        } else {
            w
        }
    }
}

/// The 16 `i32` partial sums of a pair: quarters 0 and 2 belong to block `2p`, 1 and 3 to
/// block `2p + 1`.
///
/// # Safety
/// AVX-512 BW (and VNNI when `VNNI`) enabled.
#[inline(always)]
unsafe fn pair_sums<const T: u8, const VNNI: bool>(w: __m512i, a: __m512i) -> __m512i {
    // SAFETY: register-only intrinsics of the enabled sets (caller).
    unsafe {
        if VNNI {
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, a)
        } else if T == Q8_0 {
            // |w| times a·sign(w): negate `a` where `w` is negative (|0| = 0 zeroes the rest).
            let neg = _mm512_movepi8_mask(w);
            let signed = _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
            let pairs = _mm512_maddubs_epi16(_mm512_abs_epi8(w), signed);
            _mm512_madd_epi16(pairs, _mm512_set1_epi16(1))
        } else {
            _mm512_madd_epi16(_mm512_maddubs_epi16(w, a), _mm512_set1_epi16(1))
        }
    }
}

/// A group's 8 block sums in lane order (`LANE_BLOCK`: blocks 0, 2, 4, 6, 1, 3, 5, 7) from its
/// 4 pairs' partial sums.
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
        // Quarters 0 + 2: the even blocks; 1 + 3: the odd ones.
        _mm256_add_epi32(_mm512_castsi512_si256(u), _mm512_extracti64x4_epi64(u, 1))
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
        let full = nb / 8;
        for g in 0..full {
            let base = w_row.as_ptr().add(g * 8 * bs);
            let blocks: [*const u8; 8] = std::array::from_fn(|j| base.add(j * bs));
            group::<T, VNNI, R>(&blocks, heads(base, bs), 4, g, rows, &mut acc);
        }
        if full < groups {
            // The last group's missing blocks read as all-zero blocks (read in place: a copy
            // would stall the loads on store forwarding).
            let rest = nb - full * 8;
            let base = w_row.as_ptr().add(full * 8 * bs);
            let blocks: [*const u8; 8] = std::array::from_fn(|j| {
                if j < rest {
                    base.add(j * bs)
                } else {
                    ZERO_BLOCK.as_ptr()
                }
            });
            let head = heads_of(&blocks);
            group::<T, VNNI, R>(&blocks, head, rest.div_ceil(2), full, rows, &mut acc);
        }
        for r in 0..R {
            out[r] = finish(acc[r]);
        }
    }
}

/// Group `g`, its 8 blocks at `blocks` (`head` their [`heads`]; blocks past the first
/// `2 · pairs` all-zero), against `R` activation rows, added to their accumulators.
///
/// # Safety
/// As [`body`]; every pointer of `blocks` readable for a block; `pairs ≤ 4`.
#[inline(always)]
unsafe fn group<const T: u8, const VNNI: bool, const R: usize>(
    blocks: &[*const u8; 8],
    head: __m256i,
    pairs: usize,
    g: usize,
    rows: &[ActRow<'_>],
    acc: &mut [__m256; R],
) {
    // SAFETY: the caller's contract: the group's 8 blocks are readable, every
    // activation row holds group `g`, the features are enabled.
    unsafe {
        let zero = _mm512_setzero_si512();
        let mut w = [zero; 4];
        for (p, w) in w.iter_mut().enumerate().take(pairs) {
            *w = pair::<T, VNNI>(blocks[2 * p], blocks[2 * p + 1]);
        }
        let dw = halves::<false>(head);
        let mw = if offset(T) {
            halves::<true>(head)
        } else {
            _mm256_setzero_ps()
        };
        for r in 0..R {
            let a = &rows[r];
            let qa = a.qs.as_ptr().add(g * 256);
            let mut v = [zero; 4];
            for p in 0..pairs {
                v[p] = pair_sums::<T, VNNI>(w[p], _mm512_loadu_si512(qa.add(p * 64).cast()));
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
            acc[r] = _mm256_add_ps(acc[r], contributions::<T>(s, dw, mw, a, g));
        }
    }
}

//! The legacy types' dot products with AVX2 (`vpmaddubsw` + `vpmaddwd`) or AVX-VNNI
//! (`vpdpbusd`), one 32-element block per 256-bit register.
//!
//! A weight row is taken 8 blocks at a time (a group), as 4 pairs of adjacent blocks: a pair
//! is unpacked once into two registers of levels in the activations' pair layout (see `act`:
//! elements 0..16 of both blocks, then 16..32), then for each of up to
//! [`TILE_ROWS`](super::dot::TILE_ROWS) activation rows the pairs' integer sums are reduced
//! together into one vector of the group's 8 block sums (lane `l` holding block
//! `LANE_BLOCK[l]`), and turned into contributions lane-wise by the contract's float formula;
//! lane `l` accumulates the blocks `≡ LANE_BLOCK[l] (mod 8)` in increasing order, and the
//! lanes go back to block order for the final tree: [`super::sum_blocks`]' order. Integer sums are exact in any order, so only the float steps
//! matter, and they are the reference's operations one for one.
//!
//! Unsigned weights times signed activations is what `vpmaddubsw`/`vpdpbusd` multiply, so
//! Q4_0's and Q5_0's levels stay unsigned (`0..16`, `0..32`) and their offset comes back out
//! exactly through the activation block's `Σ q`: `Σ (u − 8)·a = Σ u·a − 8·Σ a`. Q8_0 uses the
//! sign trick (`|w|` times `a·sign(w)`) with `vpmaddubsw`, and `w + 128` (`w ^ 0x80`) minus
//! `128·Σ a` with `vpdpbusd`. No `vpmaddubsw` pair sum can saturate: `2·128·127 < 2^15`.
//!
//! # Safety
//! The kernels' shared contract (`crate::simd`'s module docs): the entry points run only on a
//! CPU with their features; `w_row` holds whole blocks and every activation row at least as
//! many blocks, rounded up to a multiple of 8 (the padding all-zero).

use std::arch::x86_64::*;

use super::act::{ActRow, LANE_BLOCK};
use super::{tree, QuantType};

/// Type codes for the const-generic kernels.
pub(super) const Q4_0: u8 = 0;
/// Q4_1.
pub(super) const Q4_1: u8 = 1;
/// Q5_0.
pub(super) const Q5_0: u8 = 2;
/// Q5_1.
pub(super) const Q5_1: u8 = 3;
/// Q8_0.
pub(super) const Q8_0: u8 = 4;

/// Bytes of a block of type code `t`.
pub(super) const fn block_bytes(t: u8) -> usize {
    match t {
        Q4_0 => 18,
        Q4_1 => 20,
        Q5_0 => 22,
        Q5_1 => 24,
        _ => 34,
    }
}

/// The shift taking a type's level offset back out (`Σ u·a − (Σ a << shift)`), 0 for none.
pub(super) const fn offset_shift(t: u8, vnni: bool) -> i32 {
    match t {
        Q4_0 => 3,
        Q5_0 => 4,
        Q8_0 if vnni => 7,
        _ => 0,
    }
}

/// Whether type code `t` has a per-block offset `m`.
pub(super) const fn offset(t: u8) -> bool {
    matches!(t, Q4_1 | Q5_1)
}

/// Byte offset of the level bytes (`qs`) in a block of type code `t`.
pub(super) const fn qs_offset(t: u8) -> usize {
    match t {
        Q4_0 | Q8_0 => 2,
        Q4_1 => 4,
        Q5_0 => 6,
        _ => 8,
    }
}

/// The fifth bits of blocks `p0` and `p1` (Q5_0/Q5_1) as one word: `p0`'s in the low half.
///
/// # Safety
/// Both blocks readable.
#[inline(always)]
pub(super) unsafe fn qh_pair<const T: u8>(p0: *const u8, p1: *const u8) -> u64 {
    let at = if T == Q5_0 { 2 } else { 4 };
    // SAFETY: `qh` lies inside each block (caller).
    unsafe {
        let h0 = u32::from_le(std::ptr::read_unaligned(p0.add(at).cast::<u32>()));
        let h1 = u32::from_le(std::ptr::read_unaligned(p1.add(at).cast::<u32>()));
        u64::from(h0) | (u64::from(h1) << 32)
    }
}

/// The levels of blocks `p0` and `p1` as two vectors in the activations' pair layout: the
/// first holds elements 0..16 of `p0` then of `p1`, the second elements 16..32. Unsigned for
/// the 4- and 5-bit types, `w ^ 0x80` for Q8_0 under VNNI, raw `i8` for Q8_0 otherwise.
///
/// # Safety
/// AVX2 enabled; both blocks readable.
#[inline(always)]
unsafe fn pair<const T: u8, const VNNI: bool>(p0: *const u8, p1: *const u8) -> (__m256i, __m256i) {
    // SAFETY: AVX2 enabled and both blocks readable at their layout's offsets (caller).
    unsafe {
        let o = qs_offset(T);
        let halves = |a: usize| {
            _mm256_inserti128_si256(
                _mm256_castsi128_si256(_mm_loadu_si128(p0.add(a).cast())),
                _mm_loadu_si128(p1.add(a).cast()),
                1,
            )
        };
        match T {
            Q8_0 => {
                let (lo, hi) = (halves(o), halves(o + 16));
                if VNNI {
                    let flip = _mm256_set1_epi8(-128);
                    (_mm256_xor_si256(lo, flip), _mm256_xor_si256(hi, flip))
                } else {
                    (lo, hi)
                }
            }
            _ => {
                let y = halves(o);
                let nib = _mm256_set1_epi8(0x0F);
                let lo = _mm256_and_si256(y, nib);
                let hi = _mm256_and_si256(_mm256_srli_epi16(y, 4), nib);
                if T == Q5_0 || T == Q5_1 {
                    let v = _mm256_set1_epi64x(qh_pair::<T>(p0, p1) as i64);
                    // Byte t of each 128-bit half takes byte t / 8 of its block's `qh`
                    // half-word: low halves bits 0..16 (bytes 0, 1 of p0; 4, 5 of p1), high
                    // halves bits 16..32 (bytes 2, 3; 6, 7).
                    let lo_idx = _mm256_setr_epi8(
                        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 4, 4, 4, 4, 4, 5,
                        5, 5, 5, 5, 5, 5, 5,
                    );
                    let hi_idx = _mm256_add_epi8(lo_idx, _mm256_set1_epi8(2));
                    (
                        _mm256_or_si256(lo, fifth_bits(v, lo_idx)),
                        _mm256_or_si256(hi, fifth_bits(v, hi_idx)),
                    )
                } else {
                    (lo, hi)
                }
            }
        }
    }
}

/// `0x10` in byte `t` where bit `t % 8` of byte `idx[t]` of `v` (per 128-bit half) is set.
///
/// # Safety
/// AVX2 enabled.
#[inline(always)]
unsafe fn fifth_bits(v: __m256i, idx: __m256i) -> __m256i {
    // SAFETY: register-only AVX2 intrinsics (caller enables AVX2).
    unsafe {
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        let hit = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, idx), bit), bit);
        _mm256_and_si256(hit, _mm256_set1_epi8(0x10))
    }
}

/// The scale (`d`, low 16 bits) and offset (`m`, high 16 bits, for Q4_1/Q5_1) fields of
/// the 8 blocks of a group (`bytes` apart from `base`), one 32-bit word a lane, in lane order
/// (lane `l` from block `LANE_BLOCK[l]`).
///
/// # Safety
/// AVX2 enabled; the first 4 bytes of each of the 8 blocks readable.
#[inline(always)]
pub(super) unsafe fn heads(base: *const u8, bytes: usize) -> __m256i {
    let b = bytes as i32;
    // SAFETY: AVX2 enabled; each lane reads the 4 bytes at the start of one of the group's
    // blocks, which the caller guarantees readable.
    unsafe {
        let at = _mm256_setr_epi32(0, 2 * b, 4 * b, 6 * b, b, 3 * b, 5 * b, 7 * b);
        _mm256_i32gather_epi32::<1>(base.cast(), at)
    }
}

/// [`heads`] of 8 blocks anywhere (lane `l` from `blocks[LANE_BLOCK[l]]`).
///
/// # Safety
/// AVX2 enabled; the first 4 bytes of each block readable.
#[inline(always)]
pub(super) unsafe fn heads_of(blocks: &[*const u8; 8]) -> __m256i {
    // SAFETY: each pointer is readable for 4 bytes (caller); AVX2 enabled.
    unsafe {
        let h = |j: usize| {
            u32::from_le(std::ptr::read_unaligned(
                blocks[LANE_BLOCK[j]].cast::<u32>(),
            )) as i32
        };
        _mm256_setr_epi32(h(0), h(1), h(2), h(3), h(4), h(5), h(6), h(7))
    }
}

/// An all-zero block of any legacy type (scale 0, levels 0): what a row's last group reads
/// in place of the blocks it lacks.
pub(super) static ZERO_BLOCK: [u8; 34] = [0; 34];

/// The `f16` in the low (`HIGH = false`) or high half of each lane of `heads`, widened
/// (exact).
///
/// # Safety
/// AVX2 and F16C enabled.
#[inline(always)]
pub(super) unsafe fn halves<const HIGH: bool>(heads: __m256i) -> __m256 {
    // SAFETY: register-only AVX2/F16C intrinsics (caller enables them).
    unsafe {
        let h = if HIGH {
            _mm256_srli_epi32(heads, 16)
        } else {
            _mm256_and_si256(heads, _mm256_set1_epi32(0xFFFF))
        };
        // Lanes of 16 significant bits pack without saturating; the pack interleaves the
        // 128-bit halves, which the 64-bit permute undoes.
        let packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(h, h), 0b10_00);
        _mm256_cvtph_ps(_mm256_castsi256_si128(packed))
    }
}

/// The 8 `i32` partial sums of a pair: lanes 0..4 block `2p`, lanes 4..8 block `2p + 1`.
///
/// # Safety
/// AVX2 (and AVX-VNNI when `VNNI`) enabled.
#[inline(always)]
unsafe fn pair_sums<const T: u8, const VNNI: bool>(
    w: (__m256i, __m256i),
    a: (__m256i, __m256i),
) -> __m256i {
    // SAFETY: register-only intrinsics of the enabled sets (caller).
    unsafe {
        let ones = _mm256_set1_epi16(1);
        if VNNI {
            let v = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w.0, a.0);
            _mm256_dpbusd_avx_epi32(v, w.1, a.1)
        } else if T == Q8_0 {
            let lo = _mm256_maddubs_epi16(_mm256_abs_epi8(w.0), _mm256_sign_epi8(a.0, w.0));
            let hi = _mm256_maddubs_epi16(_mm256_abs_epi8(w.1), _mm256_sign_epi8(a.1, w.1));
            _mm256_add_epi32(_mm256_madd_epi16(lo, ones), _mm256_madd_epi16(hi, ones))
        } else {
            // 4- and 5-bit levels: each pair sum is at most 2·31·127, so two add in i16.
            let both = _mm256_add_epi16(
                _mm256_maddubs_epi16(w.0, a.0),
                _mm256_maddubs_epi16(w.1, a.1),
            );
            _mm256_madd_epi16(both, ones)
        }
    }
}

/// AVX2 entry point.
///
/// # Safety
/// The module's contract; AVX2, FMA and F16C present.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_rows(ty: QuantType, w_row: &[u8], rows: &[ActRow<'_>], out: &mut [f32]) {
    // SAFETY: forwarded contract.
    unsafe { by_type::<false>(ty, w_row, rows, out) }
}

/// AVX-VNNI entry point.
///
/// # Safety
/// The module's contract; AVX2, FMA, F16C and AVX-VNNI present.
#[target_feature(enable = "avx2,fma,f16c,avxvnni")]
pub(super) unsafe fn dot_rows_vnni(
    ty: QuantType,
    w_row: &[u8],
    rows: &[ActRow<'_>],
    out: &mut [f32],
) {
    // SAFETY: forwarded contract with AVX-VNNI enabled.
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
    debug_assert_eq!(
        ty.has_offset(),
        matches!(ty, QuantType::Q4_1 | QuantType::Q5_1)
    );
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

/// The contract's tree over a row's 8 lane accumulators (lane `l` holds the blocks
/// `≡ LANE_BLOCK[l] (mod 8)`).
///
/// # Safety
/// AVX enabled.
#[inline(always)]
pub(super) unsafe fn finish(acc: __m256) -> f32 {
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` is 8 writable floats; AVX enabled (caller).
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
    let mut by_block = [0f32; 8];
    for (l, &v) in lanes.iter().enumerate() {
        by_block[LANE_BLOCK[l]] = v;
    }
    tree(&by_block)
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
        let zero = _mm256_setzero_si256();
        let mut w = [(zero, zero); 4];
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
                let x = (
                    _mm256_loadu_si256(qa.add(p * 64).cast()),
                    _mm256_loadu_si256(qa.add(p * 64 + 32).cast()),
                );
                v[p] = pair_sums::<T, VNNI>(w[p], x);
            }
            // Lanes: blocks 0, 2, 4, 6, 1, 3, 5, 7 of the group (`LANE_BLOCK`).
            let mut s =
                _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
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

/// The contract's float formula on a group's 8 integer sums (lane order).
///
/// # Safety
/// AVX2 and FMA enabled; `a` holds group `g`.
#[inline(always)]
pub(super) unsafe fn contributions<const T: u8>(
    s: __m256i,
    dw: __m256,
    mw: __m256,
    a: &ActRow<'_>,
    g: usize,
) -> __m256 {
    // SAFETY: `a`'s arrays hold group `g`'s 8 lanes (caller); the features are enabled.
    unsafe {
        let p = _mm256_mul_ps(dw, _mm256_loadu_ps(a.d.as_ptr().add(g * 8)));
        let sf = _mm256_cvtepi32_ps(s);
        if offset(T) {
            let ms = _mm256_mul_ps(mw, _mm256_loadu_ps(a.s.as_ptr().add(g * 8)));
            _mm256_fmadd_ps(p, sf, ms)
        } else {
            _mm256_mul_ps(p, sf)
        }
    }
}

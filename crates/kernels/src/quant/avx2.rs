//! The legacy types' dot products with AVX2 (`vpmaddubsw` + `vpmaddwd`) or AVX-VNNI
//! (`vpdpbusd`), one 32-element block per 256-bit register.
//!
//! A weight row is taken 8 blocks at a time: the 8 blocks are unpacked once to bytes
//! (element order), then for each of up to [`TILE_ROWS`](super::dot::TILE_ROWS) activation
//! rows the 8 integer block sums are computed, reduced together into one vector of 8 sums
//! (block `g·8 + l` in lane `l`), and turned into contributions lane-wise by the contract's
//! float formula; lane `l` accumulates blocks `≡ l (mod 8)` in increasing order, which is
//! [`super::sum_blocks`]' order. Integer sums are exact in any order, so only the float steps
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

use super::act::ActRow;
use super::dot::has_offset;
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

/// The 32 levels of the block at `p`, in element order, as bytes: unsigned for the 4- and
/// 5-bit types, `w ^ 0x80` for Q8_0 under VNNI, raw `i8` for Q8_0 otherwise.
///
/// # Safety
/// AVX2 enabled; `p` readable for one block of type `T`.
#[inline(always)]
pub(super) unsafe fn unpack<const T: u8, const VNNI: bool>(p: *const u8) -> __m256i {
    // SAFETY: the caller's contract: AVX2 is enabled and the block's bytes are readable at
    // the offsets of type `T`'s layout (all unaligned loads).
    unsafe {
        match T {
            Q4_0 | Q4_1 => nibbles(p.add(if T == Q4_0 { 2 } else { 4 })),
            Q5_0 | Q5_1 => {
                let (h, q) = if T == Q5_0 { (2, 6) } else { (4, 8) };
                let qh = std::ptr::read_unaligned(p.add(h).cast::<u32>());
                _mm256_or_si256(nibbles(p.add(q)), fifth_bits(qh))
            }
            _ => {
                let w = _mm256_loadu_si256(p.add(2).cast());
                if VNNI {
                    _mm256_xor_si256(w, _mm256_set1_epi8(-128))
                } else {
                    w
                }
            }
        }
    }
}

/// The 16 bytes at `p` split into their low nibbles (elements 0..16) and high nibbles
/// (16..32).
///
/// # Safety
/// AVX2 enabled; `p` readable for 16 bytes.
#[inline(always)]
unsafe fn nibbles(p: *const u8) -> __m256i {
    // SAFETY: AVX2 enabled (caller); `p` readable for 16 bytes.
    unsafe {
        let x = _mm_loadu_si128(p.cast());
        let both = _mm256_set_m128i(_mm_srli_epi16(x, 4), x);
        _mm256_and_si256(both, _mm256_set1_epi8(0x0F))
    }
}

/// `0x10` in byte `i` where bit `i` of `qh` is set, else 0.
///
/// # Safety
/// AVX2 enabled.
#[inline(always)]
unsafe fn fifth_bits(qh: u32) -> __m256i {
    // SAFETY: register-only AVX2 intrinsics (caller enables AVX2).
    unsafe {
        let v = _mm256_set1_epi32(qh as i32);
        // Byte i takes byte i / 8 of `qh` (each 128-bit half holds all four).
        let spread = _mm256_setr_epi8(
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3,
            3, 3, 3,
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        let hit = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, spread), bit), bit);
        _mm256_and_si256(hit, _mm256_set1_epi8(0x10))
    }
}

/// The 8 `f16` at byte offset `off` of 8 consecutive blocks of `bytes` bytes from `base`,
/// widened (exact).
///
/// # Safety
/// F16C enabled; the 8 fields readable.
#[inline(always)]
pub(super) unsafe fn scales(base: *const u8, bytes: usize, off: usize) -> __m256 {
    // SAFETY: the 8 two-byte fields are readable (caller); F16C enabled.
    unsafe {
        let mut h = [0u16; 8];
        for (i, h) in h.iter_mut().enumerate() {
            *h = u16::from_le(std::ptr::read_unaligned(
                base.add(i * bytes + off).cast::<u16>(),
            ));
        }
        _mm256_cvtph_ps(_mm_loadu_si128(h.as_ptr().cast()))
    }
}

/// The 8 `i32` partial sums of one block: `Σ w·a` over its 32 elements.
///
/// # Safety
/// AVX2 (and AVX-VNNI when `VNNI`) enabled.
#[inline(always)]
unsafe fn block<const T: u8, const VNNI: bool>(w: __m256i, a: __m256i) -> __m256i {
    // SAFETY: register-only intrinsics of the enabled sets (caller).
    unsafe {
        if VNNI {
            _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w, a)
        } else if T == Q8_0 {
            let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(a, w));
            _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))
        } else {
            _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1))
        }
    }
}

/// Block `l`'s total in lane `l`, from 8 vectors of 8 partial sums.
///
/// # Safety
/// AVX2 enabled.
#[inline(always)]
unsafe fn reduce8(v: &[__m256i; 8]) -> __m256i {
    // SAFETY: register-only AVX2 intrinsics (caller enables AVX2).
    unsafe {
        let h01 = _mm256_hadd_epi32(v[0], v[1]);
        let h23 = _mm256_hadd_epi32(v[2], v[3]);
        let h45 = _mm256_hadd_epi32(v[4], v[5]);
        let h67 = _mm256_hadd_epi32(v[6], v[7]);
        // Per 128-bit half: [Σv0, Σv1, Σv2, Σv3] over that half's lanes.
        let lo = _mm256_hadd_epi32(h01, h23);
        let hi = _mm256_hadd_epi32(h45, h67);
        _mm256_add_epi32(
            _mm256_permute2x128_si256(lo, hi, 0x20),
            _mm256_permute2x128_si256(lo, hi, 0x31),
        )
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
        has_offset(ty),
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
        let mut tail = [0u8; 8 * 34];
        for g in 0..groups {
            let base = if (g + 1) * 8 <= nb {
                w_row.as_ptr().add(g * 8 * bs)
            } else {
                let rest = &w_row[g * 8 * bs..];
                tail[..rest.len()].copy_from_slice(rest);
                tail.as_ptr()
            };
            let mut w = [_mm256_setzero_si256(); 8];
            for (i, w) in w.iter_mut().enumerate() {
                *w = unpack::<T, VNNI>(base.add(i * bs));
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
                let mut v = [_mm256_setzero_si256(); 8];
                for (i, v) in v.iter_mut().enumerate() {
                    *v = block::<T, VNNI>(w[i], _mm256_loadu_si256(qa.add(i * 32).cast()));
                }
                let mut s = reduce8(&v);
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

//! Prefill's kernel for the K-quants on AVX2: the AVX-512 K-quant panel (`k::panel`) with
//! [`PANEL`] = 8 weight rows, one per 32-bit lane of a 256-bit register. The panel holds the
//! same registers at the same places (levels unsigned, 4 elements a lane: Q5_K's fifth bit
//! put in, Q3_K's `q + 4`, Q6_K's `q + 32`), except that each sub-block scale is stored in
//! both 16-bit halves of its lane.
//!
//! Without VNNI a sub-block's products are `vpmaddubsw` (unsigned levels times signed Q8_K
//! quants, pairs added into signed 16-bit lanes, saturating), a few of them added in 16
//! bits, then one `vpmaddwd` against the lane's scale pair: `sc·(x_lo + x_hi)`, exact in 32
//! bits, so the scale multiplies in for free. The `bsums` terms are `vpmaddwd` of the mins
//! (or scales) stored as 16-bit pairs against broadcast `bsums` pairs, as `vpdpwssd` does in
//! `k::panel`. Then the float formula, lane-wise, and [`crate::quant::sum_blocks`]' order.
//!
//! # Why `vpmaddubsw` and the 16-bit sums cannot saturate
//!
//! Q8_K quants `a` lie in `-128..=127`, so one `vpmaddubsw` lane is at most `2·u·128` in
//! magnitude for levels `u ≤ u_max`, and `w` of them added in 16 bits at most
//! `w·2·u_max·128`, which stays below `2^15 = 32768` for the words added per `vpmaddwd`:
//!
//! | type | `u_max` | one `vpmaddubsw` | words added | bound |
//! |---|---|---|---|---|
//! | Q4_K | 15 | 3840 | 8 (a sub-block of 32) | 30720 |
//! | Q5_K | 31 | 7936 | 4 (half a sub-block) | 31744 |
//! | Q6_K | 63 (`q + 32`) | 16128 | 2 (half a sub-block of 16) | 32256 |
//! | Q3_K | 7 (`q + 4`) | 1792 | 4 (a sub-block of 16) | 7168 |
//! | Q2_K | 3 | 768 | 4 | 3072 |
//!
//! `vpmaddwd` then multiplies those 16-bit sums by scales of at most 128 in magnitude and
//! adds pairs: exact in 32 bits, as are the `bsums` products (`|bsums| ≤ 16·128`). Every
//! integer sum is the scalar reference's, so every output has its bits.
//!
//! # Safety
//! The entry points run only on a CPU with AVX2, FMA and F16C.

use std::arch::x86_64::*;

use super::q8k::BlockQ8K;
use super::{q2k, q3k, q4k, q5k, q6k};
pub(crate) use crate::quant::panel_avx2::PANEL;
use crate::quant::panel_avx2::{halves, store_rows, transpose8x4};
use crate::quant::QuantType;

/// Activation rows one pass over a panel serves.
const ROWS: usize = 4;

/// Q4_K (and Q5_K) registers a super-block: 64 of levels (`[sub-block][word]`), 8 scales,
/// 8 min pairs, `d`, `dmin`.
const Q4K_REGS: usize = 82;
/// Q6_K (and Q3_K) registers a super-block: 64 of levels (`[sub-block][word]`, 16
/// sub-blocks of 4 words), 16 scales, 8 scale pairs, `d`.
const Q6K_REGS: usize = 89;
/// Q2_K registers a super-block: Q6_K's, with 8 min pairs for the scale pairs, then `dmin`.
const Q2K_REGS: usize = 90;

/// The kernel's variants ([`kind`]): 8 sub-blocks with mins, 4-bit levels (Q4_K).
const EIGHT_MINS: u8 = 0;
/// 8 sub-blocks with mins, 5-bit levels (Q5_K).
const EIGHT_MINS_5: u8 = 1;
/// 16 signed sub-blocks, levels stored `+ 32` (Q6_K).
const SIXTEEN_32: u8 = 2;
/// 16 signed sub-blocks, levels stored `+ 4` (Q3_K).
const SIXTEEN_4: u8 = 3;
/// 16 sub-blocks with mins (Q2_K).
const SIXTEEN_MINS: u8 = 4;

/// The kernel variant of `ty` (a type [`takes`] accepts).
fn kind(ty: QuantType) -> u8 {
    match ty {
        QuantType::Q6K => SIXTEEN_32,
        QuantType::Q3K => SIXTEEN_4,
        QuantType::Q2K => SIXTEEN_MINS,
        QuantType::Q5K => EIGHT_MINS_5,
        _ => EIGHT_MINS,
    }
}

/// Words of a sub-block whose `vpmaddubsw` results are added in 16 bits (see the module
/// docs).
const fn run(k: u8) -> usize {
    match k {
        EIGHT_MINS => 8,
        SIXTEEN_32 => 2,
        _ => 4,
    }
}

/// The unpacked levels and scales of up to [`PANEL`] K-quant weight rows.
pub(crate) struct Panel {
    /// The registers of each super-block, one after the other.
    regs: Vec<__m256i>,
    /// Registers a super-block.
    per_block: usize,
    /// Super-blocks a row.
    blocks: usize,
    /// Weight rows held (`1..=PANEL`); lanes past them repeat the last row.
    rows: usize,
}

/// Whether the panel kernel takes weights of type `ty` (every K-quant).
pub(crate) fn takes(ty: QuantType) -> bool {
    ty.is_k()
}

impl Panel {
    /// An empty panel for `ty` (a type [`takes`] accepts) rows of `blocks` super-blocks.
    pub(crate) fn new(ty: QuantType, blocks: usize) -> Panel {
        let per_block = regs_per_block(ty);
        // SAFETY: an all-zero `__m256i` is a valid value.
        let zero = unsafe { std::mem::zeroed::<__m256i>() };
        Panel {
            regs: vec![zero; blocks * per_block],
            per_block,
            blocks,
            rows: 0,
        }
    }
}

/// Registers a super-block of `ty`.
fn regs_per_block(ty: QuantType) -> usize {
    match kind(ty) {
        EIGHT_MINS | EIGHT_MINS_5 => Q4K_REGS,
        SIXTEEN_MINS => Q2K_REGS,
        _ => Q6K_REGS,
    }
}

/// Each lane's `i32` (a value in `-32768..32768`) in both of its 16-bit halves.
///
/// # Safety
/// AVX2 enabled.
#[inline(always)]
unsafe fn twice(v: __m256i) -> __m256i {
    // SAFETY: register-only; the feature is the caller's.
    unsafe {
        _mm256_or_si256(
            _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)),
            _mm256_slli_epi32(v, 16),
        )
    }
}

/// 16-bit pairs of 16 values: lane `t` of register `t` holds `v[2t]` low, `v[2t + 1]` high.
///
/// # Safety
/// AVX2 enabled.
#[inline(always)]
unsafe fn pairs16(v: &[__m256i; 16]) -> [__m256i; 8] {
    // SAFETY: register-only; the feature is the caller's.
    unsafe {
        std::array::from_fn(|t| {
            _mm256_or_si256(
                _mm256_and_si256(v[2 * t], _mm256_set1_epi32(0xFFFF)),
                _mm256_slli_epi32(v[2 * t + 1], 16),
            )
        })
    }
}

/// The register of 16-sub-block level words holding element `e` (a multiple of 4).
#[inline(always)]
fn word16(e: usize) -> usize {
    4 * (e / 16) + (e % 16) / 4
}

/// `v` shifted right by `k` bits in each 32-bit lane.
///
/// # Safety
/// AVX2 enabled.
#[inline(always)]
unsafe fn shr(v: __m256i, k: usize) -> __m256i {
    // SAFETY: register-only; the feature is the caller's.
    unsafe { _mm256_srl_epi32(v, _mm_cvtsi32_si128(k as i32)) }
}

/// Fills `panel` (made for `ty`) with `rows` (`1..=PANEL`) weight rows: row `i` is
/// `w[i · row_bytes ..][.. row_bytes]`.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; `w` holds `rows` rows of the panel's super-blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn fill(ty: QuantType, w: &[u8], rows: usize, panel: &mut Panel) {
    let bs = ty.block_bytes();
    let rb = panel.blocks * bs;
    assert!(
        (1..=PANEL).contains(&rows)
            && w.len() >= rows * rb
            && takes(ty)
            && panel.per_block == regs_per_block(ty),
        "k::panel_avx2::fill: rows"
    );
    panel.rows = rows;
    // SAFETY: every transpose reads 16 bytes, every `f16` 2, at `row · rb + b · bs + o` with
    // `row < rows`, `b < blocks` and `o + 16 ≤ bs` (`o + 2 ≤ bs`): inside `w` (asserted);
    // the features are the caller's.
    unsafe {
        let row_bytes: [usize; PANEL] = std::array::from_fn(|j| j.min(rows - 1) * rb);
        let base = w.as_ptr();
        let nib = _mm256_set1_epi8(0x0F);
        for b in 0..panel.blocks {
            let at = |o: usize| row_bytes.map(|r| r + b * bs + o);
            let regs = &mut panel.regs[b * panel.per_block..(b + 1) * panel.per_block];
            let f16s = |o: usize| {
                let h = at(o).map(|p| u32::from(u16::from_le_bytes([w[p], w[p + 1]])));
                _mm256_castps_si256(halves(&h))
            };
            // Bytes `o .. o + 32` of the 8 rows' blocks as 8 words a lane.
            let words32 = |o: usize| {
                let (lo, hi) = (transpose8x4(base, &at(o)), transpose8x4(base, &at(o + 16)));
                [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]
            };
            if matches!(kind(ty), EIGHT_MINS | EIGHT_MINS_5) {
                let five = ty == QuantType::Q5K;
                let qs = if five { q5k::QS } else { q4k::QS };
                // Q5_K: the fifth bit of sub-block `s`'s element at `l` is bit `s` of `qh[l]`.
                let qh = if five {
                    words32(q5k::QH)
                } else {
                    [_mm256_setzero_si256(); 8]
                };
                let one = _mm256_set1_epi8(0x01);
                let fifth =
                    |e: usize, s: usize| _mm256_slli_epi32(_mm256_and_si256(shr(qh[e], s), one), 4);
                for c in 0..4 {
                    let words = words32(qs + 32 * c);
                    for (e, &g) in words.iter().enumerate() {
                        let (lo, hi) = (
                            _mm256_and_si256(g, nib),
                            _mm256_and_si256(_mm256_srli_epi32(g, 4), nib),
                        );
                        (regs[16 * c + e], regs[16 * c + 8 + e]) = if five {
                            (
                                _mm256_or_si256(lo, fifth(e, 2 * c)),
                                _mm256_or_si256(hi, fifth(e, 2 * c + 1)),
                            )
                        } else {
                            (lo, hi)
                        };
                    }
                }
                // `unpack_scale_min_k4` lane-wise on the 12 scale bytes (words 0..3), at the
                // same offset in Q4_K and Q5_K.
                let q = transpose8x4(base, &at(q4k::SCALES));
                let (a0, a1, a2) = (q[0], q[1], q[2]);
                let c3f = _mm256_set1_epi8(0x3f);
                let c0f = _mm256_set1_epi8(0x0f);
                let c30 = _mm256_set1_epi8(0x30);
                let sc_lo = _mm256_and_si256(a0, c3f);
                let m_lo = _mm256_and_si256(a1, c3f);
                let sc_hi = _mm256_or_si256(
                    _mm256_and_si256(a2, c0f),
                    _mm256_and_si256(_mm256_srli_epi32(a0, 2), c30),
                );
                let m_hi = _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi32(a2, 4), c0f),
                    _mm256_and_si256(_mm256_srli_epi32(a1, 2), c30),
                );
                let ff = _mm256_set1_epi32(0xFF);
                for s in 0..8 {
                    let (sc, m) = if s < 4 { (sc_lo, m_lo) } else { (sc_hi, m_hi) };
                    let sc = _mm256_and_si256(shr(sc, 8 * (s % 4)), ff);
                    let m = _mm256_and_si256(shr(m, 8 * (s % 4)), ff);
                    regs[64 + s] = twice(sc);
                    regs[72 + s] = twice(m);
                }
                regs[80] = f16s(0);
                regs[81] = f16s(2);
            } else if ty == QuantType::Q6K {
                let mask2 = _mm256_set1_epi8(0x03);
                for h in 0..2 {
                    let (ql0, ql1) = (words32(64 * h), words32(64 * h + 32));
                    let qhs = words32(q6k::QH + 32 * h);
                    for l in (0..32).step_by(4) {
                        let ql = [ql0[l / 4], ql1[l / 4]];
                        let qh = qhs[l / 4];
                        for g in 0..4 {
                            let low = if g < 2 {
                                _mm256_and_si256(ql[g % 2], nib)
                            } else {
                                _mm256_and_si256(_mm256_srli_epi32(ql[g % 2], 4), nib)
                            };
                            let top = _mm256_and_si256(shr(qh, 2 * g), mask2);
                            regs[word16(128 * h + 32 * g + l)] =
                                _mm256_or_si256(low, _mm256_slli_epi32(top, 4));
                        }
                    }
                }
                // The 16 signed scales, sign-extended from the transposed bytes.
                let q = transpose8x4(base, &at(q6k::SCALES));
                let sc: [__m256i; 16] = std::array::from_fn(|s| {
                    let up = _mm256_sll_epi32(q[s / 4], _mm_cvtsi32_si128(24 - 8 * (s % 4) as i32));
                    _mm256_srai_epi32(up, 24)
                });
                put_scales16(regs, &sc, &sc);
                regs[88] = f16s(q6k::D);
            } else if ty == QuantType::Q3K {
                // `q + 4` = the 2 low bits, plus 4 where bit `e / 32` of `hmask[e % 32]` is set.
                let hm = words32(0);
                let (three, one) = (_mm256_set1_epi8(0x03), _mm256_set1_epi8(0x01));
                for h in 0..2 {
                    let qs = words32(q3k::QS + 32 * h);
                    for (wd, (&q, &hb)) in qs.iter().zip(&hm).enumerate() {
                        for g in 0..4 {
                            let low = _mm256_and_si256(shr(q, 2 * g), three);
                            let high = _mm256_and_si256(shr(hb, 4 * h + g), one);
                            regs[word16(128 * h + 32 * g + 4 * wd)] =
                                _mm256_or_si256(low, _mm256_slli_epi32(high, 2));
                        }
                    }
                }
                // `unpack_scales_q3k` lane-wise. The 12 scale bytes end 2 bytes before the
                // block does: loaded from 2 bytes earlier (so the load stays in the block),
                // then each word put together from two halves.
                let q = transpose8x4(base, &at(q3k::SCALES - 2));
                let join = |k: usize| {
                    _mm256_or_si256(_mm256_srli_epi32(q[k], 16), _mm256_slli_epi32(q[k + 1], 16))
                };
                let (a0, a1, t) = (join(0), join(1), join(2));
                let (low4, low2) = (_mm256_set1_epi8(0x0f), _mm256_set1_epi8(0x03));
                let top = |k: usize| _mm256_slli_epi32(_mm256_and_si256(shr(t, k), low2), 4);
                let words = [
                    _mm256_or_si256(_mm256_and_si256(a0, low4), top(0)),
                    _mm256_or_si256(_mm256_and_si256(a1, low4), top(2)),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(a0, 4), low4), top(4)),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(a1, 4), low4), top(6)),
                ];
                let sc: [__m256i; 16] = std::array::from_fn(|s| {
                    let biased =
                        _mm256_and_si256(shr(words[s / 4], 8 * (s % 4)), _mm256_set1_epi32(0xFF));
                    _mm256_sub_epi32(biased, _mm256_set1_epi32(32))
                });
                put_scales16(regs, &sc, &sc);
                regs[88] = f16s(q3k::D);
            } else {
                // Q2_K: 2-bit levels; scale bytes (at 0) hold the scale low, the min high.
                let three = _mm256_set1_epi8(0x03);
                for h in 0..2 {
                    let qs = words32(q2k::QS + 32 * h);
                    for (wd, &q) in qs.iter().enumerate() {
                        for g in 0..4 {
                            regs[word16(128 * h + 32 * g + 4 * wd)] =
                                _mm256_and_si256(shr(q, 2 * g), three);
                        }
                    }
                }
                let q = transpose8x4(base, &at(0));
                let f = _mm256_set1_epi32(0x0F);
                let byte = |s: usize| shr(q[s / 4], 8 * (s % 4));
                let sc: [__m256i; 16] = std::array::from_fn(|s| _mm256_and_si256(byte(s), f));
                let m: [__m256i; 16] =
                    std::array::from_fn(|s| _mm256_and_si256(_mm256_srli_epi32(byte(s), 4), f));
                // The scales, then the mins' pairs where the 16-bit scale pairs would be.
                put_scales16(regs, &sc, &m);
                regs[88] = f16s(q2k::D);
                regs[89] = f16s(q2k::D + 2);
            }
        }
    }
}

/// Stores 16 sub-block scales, each in both halves of its lanes (`regs[64..80]`), and the
/// 16-bit pairs of `pair` (`regs[80..88]`: the scales again, or Q2_K's mins).
///
/// # Safety
/// AVX2 enabled; `regs` holds at least 88 registers.
#[inline(always)]
unsafe fn put_scales16(regs: &mut [__m256i], sc: &[__m256i; 16], pair: &[__m256i; 16]) {
    // SAFETY: register-only; the feature is the caller's.
    unsafe {
        for (r, &s) in regs[64..80].iter_mut().zip(sc) {
            *r = twice(s);
        }
        regs[80..88].copy_from_slice(&pairs16(pair));
    }
}

/// `out[r · n + j] = ` the dot product of activation row `r` (`acts[r · blocks ..]`, the
/// panel's super-block count a row) with the panel's row `j` (plus `bias[j]`), for every
/// activation row and every `j <` the panel's rows.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; `panel` was filled with `ty` rows; `acts` holds whole
/// rows; `out` is writable at `r · n + j` for those `r` and `j`; `bias`, when given, holds
/// the panel's rows.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn multiply(
    ty: QuantType,
    panel: &Panel,
    acts: &[BlockQ8K],
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    /// One type: every tile of activation rows.
    ///
    /// # Safety
    /// As `multiply`.
    #[inline(always)]
    unsafe fn tiles<const K: u8>(
        panel: &Panel,
        acts: &[BlockQ8K],
        bias: Option<&[f32]>,
        out: *mut f32,
        n: usize,
    ) {
        let nb = panel.blocks.max(1);
        for (i, tile) in acts.chunks(ROWS * nb).enumerate() {
            // SAFETY: forwarded contract; tile `i` starts at activation row `i · ROWS`.
            unsafe {
                let out = out.add(i * ROWS * n);
                match tile.len() / nb {
                    0 => {}
                    1 => tile_t::<K, 1>(panel, tile, bias, out, n),
                    2 => tile_t::<K, 2>(panel, tile, bias, out, n),
                    3 => tile_t::<K, 3>(panel, tile, bias, out, n),
                    _ => tile_t::<K, ROWS>(panel, tile, bias, out, n),
                }
            }
        }
    }
    assert_eq!(
        panel.per_block,
        regs_per_block(ty),
        "k::panel_avx2::multiply: type"
    );
    // SAFETY: forwarded contract.
    unsafe {
        match kind(ty) {
            SIXTEEN_32 => tiles::<SIXTEEN_32>(panel, acts, bias, out, n),
            SIXTEEN_4 => tiles::<SIXTEEN_4>(panel, acts, bias, out, n),
            SIXTEEN_MINS => tiles::<SIXTEEN_MINS>(panel, acts, bias, out, n),
            EIGHT_MINS_5 => tiles::<EIGHT_MINS_5>(panel, acts, bias, out, n),
            _ => tiles::<EIGHT_MINS>(panel, acts, bias, out, n),
        }
    }
}

/// The 32-bit word of `a`'s quants at element `e` (a multiple of 4), broadcast.
///
/// # Safety
/// AVX enabled; `e + 4 ≤ 256`.
#[inline(always)]
unsafe fn quad(a: &BlockQ8K, e: usize) -> __m256i {
    // SAFETY: 4 bytes inside `a.qs` (caller).
    unsafe { _mm256_set1_epi32(std::ptr::read_unaligned(a.qs.as_ptr().add(e).cast::<i32>())) }
}

/// `bsums[2t]` and `bsums[2t + 1]` of `a` as one 32-bit word, broadcast.
///
/// # Safety
/// AVX enabled; `t < 8`.
#[inline(always)]
unsafe fn bsum_pair(a: &BlockQ8K, t: usize) -> __m256i {
    // SAFETY: 4 bytes inside `a.bsums` (caller).
    unsafe {
        _mm256_set1_epi32(std::ptr::read_unaligned(
            a.bsums.as_ptr().add(2 * t).cast::<i32>(),
        ))
    }
}

/// `R` activation rows (`acts`, `R` rows of the panel's super-blocks) against the panel.
///
/// # Safety
/// As [`multiply`], with its features enabled; `acts.len() == R · blocks`.
// The lane classes index the rows' sums (`class[r][c]`) in the loops' order.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn tile_t<const K: u8, const R: usize>(
    panel: &Panel,
    acts: &[BlockQ8K],
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    let nb = panel.blocks;
    assert!(acts.len() == R * nb && panel.regs.len() == nb * panel.per_block && panel.rows >= 1);
    let wide = !matches!(K, EIGHT_MINS | EIGHT_MINS_5);
    let subs = if wide { 16 } else { 8 };
    let words = if wide { 4 } else { 8 };
    let run = run(K);
    // SAFETY: every read stays inside the panel (`b < nb`) or `acts` (asserted); the writes
    // are the caller's; the features are the caller's.
    unsafe {
        let regs = panel.regs.as_ptr();
        let mut class = [[_mm256_setzero_ps(); 8]; R];
        for c in 0..8 {
            let mut acc = [_mm256_setzero_ps(); R];
            let mut b = c;
            while b < nb {
                let p = regs.add(b * panel.per_block);
                let a: [&BlockQ8K; R] = std::array::from_fn(|r| acts.get_unchecked(r * nb + b));
                let mut isum = [_mm256_setzero_si256(); R];
                for s in 0..subs {
                    let sc = *p.add(64 + s);
                    for e0 in (0..words).step_by(run) {
                        let mut s16 = [_mm256_setzero_si256(); R];
                        for e in e0..e0 + run {
                            let wv = *p.add(words * s + e);
                            for r in 0..R {
                                let x =
                                    _mm256_maddubs_epi16(wv, quad(a[r], (256 / subs) * s + 4 * e));
                                s16[r] = if e == e0 {
                                    x
                                } else {
                                    _mm256_add_epi16(s16[r], x)
                                };
                            }
                        }
                        for r in 0..R {
                            isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(s16[r], sc));
                        }
                    }
                }
                // With mins: Σ m_s · bsums of s; Q6_K, Q3_K: Σ sc_s · bsums_s (the `+ 32` or
                // `+ 4` to take out).
                let pairs = if wide { 80 } else { 72 };
                let mut extra = [_mm256_setzero_si256(); R];
                for t in 0..8 {
                    let wv = *p.add(pairs + t);
                    for r in 0..R {
                        let x = _mm256_madd_epi16(wv, bsum_pair(a[r], t));
                        extra[r] = _mm256_add_epi32(extra[r], x);
                    }
                }
                let at_d = if wide { 88 } else { 80 };
                let d = _mm256_castsi256_ps(*p.add(at_d));
                for r in 0..R {
                    let ad = _mm256_set1_ps(a[r].d);
                    let cb = if K == SIXTEEN_32 || K == SIXTEEN_4 {
                        let off = if K == SIXTEEN_32 {
                            _mm256_slli_epi32(extra[r], 5)
                        } else {
                            _mm256_slli_epi32(extra[r], 2)
                        };
                        let i = _mm256_sub_epi32(isum[r], off);
                        _mm256_mul_ps(_mm256_mul_ps(ad, d), _mm256_cvtepi32_ps(i))
                    } else {
                        let dmin = _mm256_castsi256_ps(*p.add(at_d + 1));
                        let v = _mm256_mul_ps(_mm256_mul_ps(ad, d), _mm256_cvtepi32_ps(isum[r]));
                        let m =
                            _mm256_mul_ps(_mm256_mul_ps(ad, dmin), _mm256_cvtepi32_ps(extra[r]));
                        _mm256_sub_ps(v, m)
                    };
                    acc[r] = _mm256_add_ps(acc[r], cb);
                }
                b += 8;
            }
            for r in 0..R {
                class[r][c] = acc[r];
            }
        }
        store_rows(&class, panel.rows, bias, out, n);
    }
}

//! Prefill's kernel for the K-quants on AVX-512 VNNI: the legacy types' panel scheme
//! (`quant::panel`) for super-blocks of 256. [`PANEL`] weight rows are unpacked once into a
//! scratch panel whose 32-bit lane `j` holds row `j`'s levels (4 elements a lane, unsigned;
//! Q5_K's are Q4_K's nibbles with the fifth bit from `qh` put in, so the two share the rest;
//! Q3_K's are `q + 4`, its `hmask` bit put in as the third bit), so a sub-block's exact level
//! products for 16 rows are a few `vpdpbusd` against broadcast words of the Q8_K block, with
//! no reduction; the scales multiply in lane-wise (`vpmulld`), and the `bsums` terms (the
//! mins of Q2_K, Q4_K and Q5_K; the `+ 32` of Q6_K and the `+ 4` of Q3_K) are `vpdpwssd` of
//! the mins or scales, stored as 16-bit pairs, against the broadcast `bsums` pairs. Then each lane
//! evaluates the type's float formula (`common::contribution[_min]`, each product rounded, no
//! fma) and accumulates its row's block contributions in [`crate::quant::sum_blocks`]' order
//! (the blocks of lane class `c ≡ b mod 8` in increasing order, the fixed tree over the 8
//! class sums, the bias last). All integer sums are exact, so every output has the scalar
//! reference's bits.
//!
//! # Safety
//! The entry points run only on a CPU with AVX-512 F/BW/VL/DQ and VNNI, AVX2, FMA and F16C.

use std::arch::x86_64::*;

use super::q8k::BlockQ8K;
use super::{q2k, q3k, q4k, q5k, q6k};
use crate::quant::panel::{store_rows, transpose16x4};
use crate::quant::QuantType;

/// Weight rows a panel holds: one per 32-bit lane of a 512-bit register.
pub(crate) const PANEL: usize = 16;

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

/// The kernel's variants ([`kind`]): 8 sub-blocks with mins (Q4_K, Q5_K).
const EIGHT_MINS: u8 = 0;
/// 16 signed sub-blocks, levels stored `+ 32` (Q6_K).
const SIXTEEN_32: u8 = 1;
/// 16 signed sub-blocks, levels stored `+ 4` (Q3_K).
const SIXTEEN_4: u8 = 2;
/// 16 sub-blocks with mins (Q2_K).
const SIXTEEN_MINS: u8 = 3;

/// The kernel variant of `ty` (a type [`takes`] accepts).
fn kind(ty: QuantType) -> u8 {
    match ty {
        QuantType::Q6K => SIXTEEN_32,
        QuantType::Q3K => SIXTEEN_4,
        QuantType::Q2K => SIXTEEN_MINS,
        _ => EIGHT_MINS,
    }
}

/// The unpacked levels and scales of up to [`PANEL`] K-quant weight rows.
pub(crate) struct Panel {
    /// The registers of each super-block, one after the other.
    regs: Vec<__m512i>,
    /// Registers a super-block.
    per_block: usize,
    /// Super-blocks a row.
    blocks: usize,
    /// Weight rows held (`1..=PANEL`); lanes past them repeat the last row.
    rows: usize,
}

/// Whether the panel kernel takes weights of type `ty` with `row_bytes` a row.
pub(crate) fn takes(ty: QuantType, row_bytes: usize) -> bool {
    matches!(
        ty,
        QuantType::Q2K | QuantType::Q3K | QuantType::Q4K | QuantType::Q5K | QuantType::Q6K
    ) && row_bytes
        .checked_mul(PANEL + 1)
        .is_some_and(|b| b <= i32::MAX as usize)
}

impl Panel {
    /// An empty panel for `ty` (a type [`takes`] accepts) rows of `blocks` super-blocks.
    pub(crate) fn new(ty: QuantType, blocks: usize) -> Panel {
        let per_block = regs_per_block(ty);
        // SAFETY: an all-zero `__m512i` is a valid value.
        let zero = unsafe { std::mem::zeroed::<__m512i>() };
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
        EIGHT_MINS => Q4K_REGS,
        SIXTEEN_MINS => Q2K_REGS,
        _ => Q6K_REGS,
    }
}

/// Stores 16 sub-block scales (`regs[64..80]`) and their 16-bit pairs (`regs[80..88]`).
///
/// # Safety
/// AVX-512F enabled; `regs` holds at least 88 registers.
#[inline(always)]
unsafe fn put_scales16(regs: &mut [__m512i], sc: &[__m512i; 16]) {
    regs[64..80].copy_from_slice(sc);
    // SAFETY: register-only; the feature is the caller's.
    unsafe {
        for t in 0..8 {
            regs[80 + t] = _mm512_or_si512(
                _mm512_and_si512(sc[2 * t], _mm512_set1_epi32(0xFFFF)),
                _mm512_slli_epi32(sc[2 * t + 1], 16),
            );
        }
    }
}

/// The register of 16-sub-block level words holding element `e` (a multiple of 4).
#[inline(always)]
fn word16(e: usize) -> usize {
    4 * (e / 16) + (e % 16) / 4
}

/// 16 `i32` (one per lane) as a register.
///
/// # Safety
/// AVX-512F enabled.
#[inline(always)]
unsafe fn lanes(v: &[i32; PANEL]) -> __m512i {
    // SAFETY: 16 readable `i32`; the feature is the caller's.
    unsafe { _mm512_loadu_si512(v.as_ptr().cast()) }
}

/// Fills `panel` (made for `ty`) with `rows` (`1..=PANEL`) weight rows: row `i` is
/// `w[i · row_bytes ..][.. row_bytes]`.
///
/// # Safety
/// The CPU has the module's features; `w` holds `rows` rows of the panel's super-blocks;
/// [`takes`]`(ty, row_bytes)`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(crate) unsafe fn fill(ty: QuantType, w: &[u8], rows: usize, panel: &mut Panel) {
    let bs = ty.block_bytes();
    let rb = panel.blocks * bs;
    assert!(
        (1..=PANEL).contains(&rows) && w.len() >= rows * rb && takes(ty, rb),
        "k::panel::fill: rows"
    );
    panel.rows = rows;
    let row = |j: usize| j.min(rows - 1);
    // SAFETY: every transpose reads 16 bytes at `row · rb + b · bs + o` with `row < rows`,
    // `b < blocks` and `o + 16 ≤ bs`: inside `w` (asserted); the features are the caller's.
    unsafe {
        let row_bytes: [usize; PANEL] = std::array::from_fn(|j| row(j) * rb);
        let base = w.as_ptr();
        let nib = _mm512_set1_epi8(0x0F);
        for b in 0..panel.blocks {
            let block = |j: usize| &w[row(j) * rb + b * bs..row(j) * rb + (b + 1) * bs];
            let regs = &mut panel.regs[b * panel.per_block..(b + 1) * panel.per_block];
            let half = |j: usize, at: usize| u16::from_le_bytes([block(j)[at], block(j)[at + 1]]);
            let halves = |at: usize| {
                let h: [i32; PANEL] = std::array::from_fn(|j| i32::from(half(j, at)));
                _mm512_castps_si512(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(lanes(&h))))
            };
            // Bytes `o .. o + 32` of the 16 rows' blocks as 8 words a lane.
            let words32 = |o: usize| {
                let at = |o: usize| row_bytes.map(|r| r + b * bs + o);
                let (lo, hi) = (
                    transpose16x4(base, &at(o)),
                    transpose16x4(base, &at(o + 16)),
                );
                [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]
            };
            if kind(ty) == EIGHT_MINS {
                let five = ty == QuantType::Q5K;
                let qs = if five { q5k::QS } else { q4k::QS };
                // Q5_K: the fifth bit of sub-block `s`'s element at `l` is bit `s` of `qh[l]`.
                let qh = if five {
                    words32(q5k::QH)
                } else {
                    [_mm512_setzero_si512(); 8]
                };
                let one = _mm512_set1_epi8(0x01);
                let fifth = |e: usize, s: usize| {
                    let bit = _mm512_srl_epi32(qh[e], _mm_cvtsi32_si128(s as i32));
                    _mm512_slli_epi32(_mm512_and_si512(bit, one), 4)
                };
                for c in 0..4 {
                    let words = words32(qs + 32 * c);
                    for (e, &g) in words.iter().enumerate() {
                        let (lo, hi) = (
                            _mm512_and_si512(g, nib),
                            _mm512_and_si512(_mm512_srli_epi32(g, 4), nib),
                        );
                        (regs[16 * c + e], regs[16 * c + 8 + e]) = if five {
                            (
                                _mm512_or_si512(lo, fifth(e, 2 * c)),
                                _mm512_or_si512(hi, fifth(e, 2 * c + 1)),
                            )
                        } else {
                            (lo, hi)
                        };
                    }
                }
                // `unpack_scale_min_k4` lane-wise on the 12 scale bytes (words 0..3), at the
                // same offset in Q4_K and Q5_K.
                let q = transpose16x4(base, &row_bytes.map(|r| r + b * bs + q4k::SCALES));
                let (a0, a1, a2) = (q[0], q[1], q[2]);
                let c3f = _mm512_set1_epi8(0x3f);
                let c0f = _mm512_set1_epi8(0x0f);
                let c30 = _mm512_set1_epi8(0x30);
                let sc_lo = _mm512_and_si512(a0, c3f);
                let m_lo = _mm512_and_si512(a1, c3f);
                let sc_hi = _mm512_or_si512(
                    _mm512_and_si512(a2, c0f),
                    _mm512_and_si512(_mm512_srli_epi32(a0, 2), c30),
                );
                let m_hi = _mm512_or_si512(
                    _mm512_and_si512(_mm512_srli_epi32(a2, 4), c0f),
                    _mm512_and_si512(_mm512_srli_epi32(a1, 2), c30),
                );
                for s in 0..8 {
                    let (sc, m) = if s < 4 { (sc_lo, m_lo) } else { (sc_hi, m_hi) };
                    let byte = _mm_cvtsi32_si128(8 * (s % 4) as i32);
                    let ff = _mm512_set1_epi32(0xFF);
                    let sc = _mm512_and_si512(_mm512_srl_epi32(sc, byte), ff);
                    let m = _mm512_and_si512(_mm512_srl_epi32(m, byte), ff);
                    regs[64 + s] = sc;
                    regs[72 + s] = _mm512_or_si512(m, _mm512_slli_epi32(m, 16));
                }
                regs[80] = halves(0);
                regs[81] = halves(2);
            } else if ty == QuantType::Q6K {
                let mask2 = _mm512_set1_epi8(0x03);
                for h in 0..2 {
                    let (ql0, ql1) = (words32(64 * h), words32(64 * h + 32));
                    let qhs = words32(q6k::QH + 32 * h);
                    for l in (0..32).step_by(4) {
                        let ql = [ql0[l / 4], ql1[l / 4]];
                        let qh = qhs[l / 4];
                        for g in 0..4 {
                            let low = if g < 2 {
                                _mm512_and_si512(ql[g % 2], nib)
                            } else {
                                _mm512_and_si512(_mm512_srli_epi32(ql[g % 2], 4), nib)
                            };
                            let top = _mm512_and_si512(
                                _mm512_srl_epi32(qh, _mm_cvtsi32_si128(2 * g as i32)),
                                mask2,
                            );
                            regs[word16(128 * h + 32 * g + l)] =
                                _mm512_or_si512(low, _mm512_slli_epi32(top, 4));
                        }
                    }
                }
                // The 16 signed scales, sign-extended from the transposed bytes.
                let q = transpose16x4(base, &row_bytes.map(|r| r + b * bs + q6k::SCALES));
                let sc: [__m512i; 16] = std::array::from_fn(|s| {
                    let up = _mm512_sll_epi32(q[s / 4], _mm_cvtsi32_si128(24 - 8 * (s % 4) as i32));
                    _mm512_srai_epi32(up, 24)
                });
                put_scales16(regs, &sc);
                regs[88] = halves(q6k::D);
            } else if ty == QuantType::Q3K {
                // `q + 4` = the 2 low bits, plus 4 where bit `e / 32` of `hmask[e % 32]` is set.
                let hm = words32(0);
                let (three, one) = (_mm512_set1_epi8(0x03), _mm512_set1_epi8(0x01));
                for h in 0..2 {
                    let qs = words32(q3k::QS + 32 * h);
                    for (w, (&q, &hb)) in qs.iter().zip(&hm).enumerate() {
                        for g in 0..4 {
                            let by = |v: __m512i, k: usize| {
                                _mm512_srl_epi32(v, _mm_cvtsi32_si128(k as i32))
                            };
                            let low = _mm512_and_si512(by(q, 2 * g), three);
                            let high = _mm512_and_si512(by(hb, 4 * h + g), one);
                            regs[word16(128 * h + 32 * g + 4 * w)] =
                                _mm512_or_si512(low, _mm512_slli_epi32(high, 2));
                        }
                    }
                }
                // `unpack_scales_q3k` lane-wise. The 12 scale bytes end 2 bytes before the
                // block does: loaded from 2 bytes earlier (so the load stays in the block),
                // then each word put together from two halves.
                let q = transpose16x4(base, &row_bytes.map(|r| r + b * bs + q3k::SCALES - 2));
                let join = |k: usize| {
                    _mm512_or_si512(_mm512_srli_epi32(q[k], 16), _mm512_slli_epi32(q[k + 1], 16))
                };
                let (a0, a1, t) = (join(0), join(1), join(2));
                let (low4, low2) = (_mm512_set1_epi8(0x0f), _mm512_set1_epi8(0x03));
                let top = |k: u32| {
                    let v = _mm512_srl_epi32(t, _mm_cvtsi32_si128(k as i32));
                    _mm512_slli_epi32(_mm512_and_si512(v, low2), 4)
                };
                let words = [
                    _mm512_or_si512(_mm512_and_si512(a0, low4), top(0)),
                    _mm512_or_si512(_mm512_and_si512(a1, low4), top(2)),
                    _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(a0, 4), low4), top(4)),
                    _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(a1, 4), low4), top(6)),
                ];
                let sc: [__m512i; 16] = std::array::from_fn(|s| {
                    let v = _mm512_srl_epi32(words[s / 4], _mm_cvtsi32_si128(8 * (s % 4) as i32));
                    let biased = _mm512_and_si512(v, _mm512_set1_epi32(0xFF));
                    _mm512_sub_epi32(biased, _mm512_set1_epi32(32))
                });
                put_scales16(regs, &sc);
                regs[88] = halves(q3k::D);
            } else {
                // Q2_K: 2-bit levels; scale bytes (at 0) hold the scale low, the min high.
                let three = _mm512_set1_epi8(0x03);
                for h in 0..2 {
                    let qs = words32(q2k::QS + 32 * h);
                    for (w, &q) in qs.iter().enumerate() {
                        for g in 0..4 {
                            let low = _mm512_srl_epi32(q, _mm_cvtsi32_si128(2 * g as i32));
                            regs[word16(128 * h + 32 * g + 4 * w)] = _mm512_and_si512(low, three);
                        }
                    }
                }
                let q = transpose16x4(base, &row_bytes.map(|r| r + b * bs));
                let f = _mm512_set1_epi32(0x0F);
                let byte =
                    |s: usize| _mm512_srl_epi32(q[s / 4], _mm_cvtsi32_si128(8 * (s % 4) as i32));
                let sc: [__m512i; 16] = std::array::from_fn(|s| _mm512_and_si512(byte(s), f));
                let m: [__m512i; 16] =
                    std::array::from_fn(|s| _mm512_and_si512(_mm512_srli_epi32(byte(s), 4), f));
                // Scales here, then the mins' pairs where the 16-bit scale pairs would be.
                put_scales16(regs, &m);
                regs[64..80].copy_from_slice(&sc);
                regs[88] = halves(q2k::D);
                regs[89] = halves(q2k::D + 2);
            }
        }
    }
}

/// `out[r · n + j] = ` the dot product of activation row `r` (`acts[r · blocks ..]`, the
/// panel's super-block count a row) with the panel's row `j` (plus `bias[j]`), for every
/// activation row and every `j <` the panel's rows.
///
/// # Safety
/// The CPU has the module's features; `panel` was filled with `ty` rows; `acts` holds whole
/// rows; `out` is writable at `r · n + j` for those `r` and `j`; `bias`, when given, holds
/// the panel's rows.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
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
        "k::panel::multiply: type"
    );
    // SAFETY: forwarded contract.
    unsafe {
        match kind(ty) {
            SIXTEEN_32 => tiles::<SIXTEEN_32>(panel, acts, bias, out, n),
            SIXTEEN_4 => tiles::<SIXTEEN_4>(panel, acts, bias, out, n),
            SIXTEEN_MINS => tiles::<SIXTEEN_MINS>(panel, acts, bias, out, n),
            _ => tiles::<EIGHT_MINS>(panel, acts, bias, out, n),
        }
    }
}

/// The 32-bit word of `a`'s quants at element `e` (a multiple of 4), broadcast.
///
/// # Safety
/// AVX-512F enabled; `e + 4 ≤ 256`.
#[inline(always)]
unsafe fn quad(a: &BlockQ8K, e: usize) -> __m512i {
    // SAFETY: 4 bytes inside `a.qs` (caller).
    unsafe { _mm512_set1_epi32(std::ptr::read_unaligned(a.qs.as_ptr().add(e).cast::<i32>())) }
}

/// `bsums[2t]` and `bsums[2t + 1]` of `a` as one 32-bit word, broadcast.
///
/// # Safety
/// AVX-512F enabled; `t < 8`.
#[inline(always)]
unsafe fn bsum_pair(a: &BlockQ8K, t: usize) -> __m512i {
    // SAFETY: 4 bytes inside `a.bsums` (caller).
    unsafe {
        _mm512_set1_epi32(std::ptr::read_unaligned(
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
    assert!(acts.len() == R * nb && panel.regs.len() == nb * panel.per_block);
    // SAFETY: every read stays inside the panel (`b < nb`) or `acts` (asserted); the writes
    // are the caller's; the features are the caller's.
    unsafe {
        let regs = panel.regs.as_ptr();
        let mut class = [[_mm512_setzero_ps(); 8]; R];
        for c in 0..8 {
            let mut acc = [_mm512_setzero_ps(); R];
            let mut b = c;
            while b < nb {
                let p = regs.add(b * panel.per_block);
                let a: [&BlockQ8K; R] = std::array::from_fn(|r| acts.get_unchecked(r * nb + b));
                let mut isum = [_mm512_setzero_si512(); R];
                let wide = K != EIGHT_MINS;
                let subs = if wide { 16 } else { 8 };
                let words = if wide { 4 } else { 8 };
                for s in 0..subs {
                    let mut t = [_mm512_setzero_si512(); R];
                    for e in 0..words {
                        let wv = *p.add(words * s + e);
                        for r in 0..R {
                            let at = (256 / subs) * s + 4 * e;
                            t[r] = _mm512_dpbusd_epi32(t[r], wv, quad(a[r], at));
                        }
                    }
                    let sc = *p.add(64 + s);
                    for r in 0..R {
                        isum[r] = _mm512_add_epi32(isum[r], _mm512_mullo_epi32(t[r], sc));
                    }
                }
                // With mins: Σ m_s · bsums of s; Q6_K, Q3_K: Σ sc_s · bsums_s (the `+ 32` or
                // `+ 4` to take out).
                let pairs = if wide { 80 } else { 72 };
                let mut extra = [_mm512_setzero_si512(); R];
                for t in 0..8 {
                    let wv = *p.add(pairs + t);
                    for r in 0..R {
                        extra[r] = _mm512_dpwssd_epi32(extra[r], wv, bsum_pair(a[r], t));
                    }
                }
                let at_d = if wide { 88 } else { 80 };
                let d = _mm512_castsi512_ps(*p.add(at_d));
                for r in 0..R {
                    let ad = _mm512_set1_ps(a[r].d);
                    let cb = if K == SIXTEEN_32 || K == SIXTEEN_4 {
                        let off = if K == SIXTEEN_32 {
                            _mm512_slli_epi32(extra[r], 5)
                        } else {
                            _mm512_slli_epi32(extra[r], 2)
                        };
                        let i = _mm512_sub_epi32(isum[r], off);
                        _mm512_mul_ps(_mm512_mul_ps(ad, d), _mm512_cvtepi32_ps(i))
                    } else {
                        let dmin = _mm512_castsi512_ps(*p.add(at_d + 1));
                        let v = _mm512_mul_ps(_mm512_mul_ps(ad, d), _mm512_cvtepi32_ps(isum[r]));
                        let m =
                            _mm512_mul_ps(_mm512_mul_ps(ad, dmin), _mm512_cvtepi32_ps(extra[r]));
                        _mm512_sub_ps(v, m)
                    };
                    acc[r] = _mm512_add_ps(acc[r], cb);
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

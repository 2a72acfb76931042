//! Prefill's kernel for the legacy types on AVX2 (and AVX-VNNI; also what AVX-512 without
//! VNNI runs): the AVX-512 VNNI panel scheme (`panel`) with [`PANEL`] = 8 weight rows, one
//! per 32-bit lane of a 256-bit register.
//!
//! Lane `j` of register `e` of block `b` holds elements `4e .. 4e + 4` of block `b` of weight
//! row `j`; each activation row's block is taken one broadcast 32-bit word at a time against
//! those registers, which leaves block `b`'s exact integer sum for the 8 rows in 8 lanes
//! with no reduction across lanes. The float formula, the lane classes and the final tree
//! are `panel`'s (the scalar reference's operations, lane-wise), so every output has the
//! reference's bits.
//!
//! # The integer sums without VNNI, and why `vpmaddubsw` cannot saturate
//!
//! `vpmaddubsw` multiplies unsigned weight bytes by signed activation bytes and adds each
//! pair of products into a signed 16-bit lane, saturating; `vpmaddwd` against ones then adds
//! the two 16-bit halves of each 32-bit lane exactly. Activation quants `a` lie in
//! `-128..=127` (see `act`), so `|a| ≤ 128`, and:
//!
//! - Q4_0, Q4_1 (levels `u ≤ 15`, kept unsigned as in the tile kernels): one `vpmaddubsw`
//!   gives at most `2·15·128 = 3840` in magnitude; the 8 of a block are added in 16 bits
//!   (`8·3840 = 30720 < 2^15`) before one `vpmaddwd`.
//! - Q5_0, Q5_1 (`u ≤ 31`): `2·31·128 = 7936`; 4 are added in 16 bits (`31744 < 2^15`),
//!   two `vpmaddwd` a block.
//! - Q8_0 (signed `w`): the sign trick, `|w|` (at most 128, unsigned) times `a·sign(w)`.
//!   `act` makes `|a| ≤ 127` in every block whose scale `d_a` is not zero (`q = round(x/d)`
//!   with `|x| ≤ 127·d`), so each pair is at most `2·128·127 = 32512 < 2^15`; each
//!   `vpmaddubsw` gets its own `vpmaddwd`. (`−128` appears only where `1/d` overflows, and
//!   such a `d` rounds to an `f16` zero, so the block's contribution is `±0` or NaN whatever
//!   its integer sum: a `±0` leaves an accumulator that starts at `+0.0` unchanged, as in the
//!   reference. The tile kernels rely on the same.)
//!
//! Q4_0's and Q5_0's offsets come back out through the activation block's `Σ q`, as in
//! `panel`. With AVX-VNNI, `vpdpbusd` adds the four products of each lane exactly into 32
//! bits, and Q8_0 is stored `w ^ 0x80` with `128·Σ q` taken out (as `panel`).
//!
//! # Safety
//! The entry points run only on a CPU with AVX2, FMA and F16C (and AVX-VNNI for a panel made
//! with `vnni`).

use std::arch::x86_64::*;

use super::act::{lane_at, qs_at, ActRow};
use super::avx2::{block_bytes, offset, offset_shift, qs_offset, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
use super::QuantType;

/// Weight rows a panel holds: one per 32-bit lane of a 256-bit register.
pub(crate) const PANEL: usize = 8;

/// Activation rows one pass over a panel serves (each panel register loaded once for them).
const ROWS: usize = 4;

/// Registers a block takes in the panel: 8 of levels, its rows' `d_w`, their `m_w`.
const PER_BLOCK: usize = 10;

/// The unpacked levels and scales of up to [`PANEL`] weight rows (see the module docs).
pub(crate) struct Panel {
    /// `PER_BLOCK` registers a block.
    regs: Vec<__m256i>,
    /// Blocks a row.
    blocks: usize,
    /// Weight rows held (`1..=PANEL`); lanes past them repeat the last row.
    rows: usize,
    /// Whether the panel is for the AVX-VNNI kernel (Q8_0's levels stored `w ^ 0x80`).
    vnni: bool,
}

impl Panel {
    /// An empty panel for rows of `blocks` blocks, for the AVX-VNNI kernel when `vnni`.
    pub(crate) fn new(blocks: usize, vnni: bool) -> Panel {
        // SAFETY: an all-zero `__m256i` is a valid value (no feature needed to write zeros).
        let zero = unsafe { std::mem::zeroed::<__m256i>() };
        Panel {
            regs: vec![zero; blocks * PER_BLOCK],
            blocks,
            rows: 0,
            vnni,
        }
    }
}

/// The `u32` at `p` (little-endian).
///
/// # Safety
/// `p` readable for 4 bytes.
#[inline(always)]
unsafe fn word_at(p: *const u8) -> u32 {
    // SAFETY: the caller's 4 readable bytes.
    u32::from_le(unsafe { std::ptr::read_unaligned(p.cast::<u32>()) })
}

/// 8 `u32` (one per lane) as a register.
///
/// # Safety
/// AVX enabled.
#[inline(always)]
unsafe fn lanes(v: &[u32; PANEL]) -> __m256i {
    // SAFETY: 8 readable `u32`; the feature is the caller's.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// The 8 `f16` in the low 16 bits of `v`'s lanes, widened (exact).
///
/// # Safety
/// AVX and F16C enabled.
#[inline(always)]
pub(crate) unsafe fn halves(v: &[u32; PANEL]) -> __m256 {
    let h: [u16; PANEL] = v.map(|w| w as u16);
    // SAFETY: 16 readable bytes; the features are the caller's.
    unsafe { _mm256_cvtph_ps(_mm_loadu_si128(h.as_ptr().cast())) }
}

/// Fills `panel` with `rows` (`1..=PANEL`) weight rows of the legacy type `ty`: row `i` is
/// `w[i · row_bytes ..][.. row_bytes]`, `row_bytes` = `panel`'s block count times the block
/// size.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; `w` holds `rows` rows.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn fill(ty: QuantType, w: &[u8], rows: usize, panel: &mut Panel) {
    // SAFETY: forwarded contract.
    unsafe {
        match ty {
            QuantType::Q4_0 => fill_t::<Q4_0>(w, rows, panel),
            QuantType::Q4_1 => fill_t::<Q4_1>(w, rows, panel),
            QuantType::Q5_0 => fill_t::<Q5_0>(w, rows, panel),
            QuantType::Q5_1 => fill_t::<Q5_1>(w, rows, panel),
            _ => fill_t::<Q8_0>(w, rows, panel),
        }
    }
}

/// [`fill`] for type code `T`.
///
/// # Safety
/// As [`fill`], with its features enabled.
#[inline(always)]
unsafe fn fill_t<const T: u8>(w: &[u8], rows: usize, panel: &mut Panel) {
    let bs = block_bytes(T);
    let rb = panel.blocks * bs;
    assert!(
        (1..=PANEL).contains(&rows) && w.len() >= rows * rb,
        "panel_avx2::fill: rows"
    );
    panel.rows = rows;
    // SAFETY: every read is of 4 bytes at `row · rb + b · bs + o` with `o + 4 ≤ bs`, or of 16
    // at `o + 16 ≤ bs`, `row < rows`, `b < blocks`: inside `w` (asserted); the features are
    // the caller's.
    unsafe {
        let row_bytes: [usize; PANEL] = std::array::from_fn(|j| j.min(rows - 1) * rb);
        let base = w.as_ptr();
        let nib = _mm256_set1_epi8(0x0F);
        for b in 0..panel.blocks {
            let at = |o: usize| row_bytes.map(|r| r + b * bs + o);
            let words = |o: usize| at(o).map(|p| word_at(base.add(p)));
            let regs = &mut panel.regs[b * PER_BLOCK..(b + 1) * PER_BLOCK];
            let head = words(0);
            regs[8] = _mm256_castps_si256(halves(&head));
            if offset(T) {
                regs[9] = _mm256_castps_si256(halves(&head.map(|h| h >> 16)));
            }
            let o = qs_offset(T);
            if T == Q8_0 {
                for h in 0..2 {
                    let words = transpose8x4(base, &at(o + 16 * h));
                    for (e, v) in words.into_iter().enumerate() {
                        regs[4 * h + e] = if panel.vnni {
                            _mm256_xor_si256(v, _mm256_set1_epi8(-128))
                        } else {
                            v
                        };
                    }
                }
                continue;
            }
            let qs = transpose8x4(base, &at(o));
            let qh = if T == Q5_0 || T == Q5_1 {
                lanes(&words(if T == Q5_0 { 2 } else { 4 }))
            } else {
                _mm256_setzero_si256()
            };
            for (e, &g) in qs.iter().enumerate() {
                let mut lo = _mm256_and_si256(g, nib);
                let mut hi = _mm256_and_si256(_mm256_srli_epi32(g, 4), nib);
                if T == Q5_0 || T == Q5_1 {
                    lo = _mm256_or_si256(lo, fifth(qh, 4 * e as i32));
                    hi = _mm256_or_si256(hi, fifth(qh, 16 + 4 * e as i32));
                }
                regs[e] = lo;
                regs[4 + e] = hi;
            }
        }
    }
}

/// The 16 bytes at `base + at[j]` for each row `j < 8`, as 4 registers: lane `j` of register
/// `e` holds bytes `4e .. 4e + 4` of row `j`'s 16 (8 loads and a 4 × 4 word transpose in
/// each 128-bit half).
///
/// # Safety
/// AVX2 enabled; every `base + at[j]` readable for 16 bytes.
#[inline(always)]
pub(crate) unsafe fn transpose8x4(base: *const u8, at: &[usize; PANEL]) -> [__m256i; 4] {
    // SAFETY: the 8 loads are the caller's readable bytes; the rest is register-only.
    unsafe {
        let row = |j: usize| _mm_loadu_si128(base.add(at[j]).cast());
        // y[k]: row `k` in the low half, row `4 + k` in the high half.
        let y: [__m256i; 4] = std::array::from_fn(|k| {
            _mm256_inserti128_si256(_mm256_castsi128_si256(row(k)), row(4 + k), 1)
        });
        let a = _mm256_unpacklo_epi32(y[0], y[1]);
        let b = _mm256_unpackhi_epi32(y[0], y[1]);
        let c = _mm256_unpacklo_epi32(y[2], y[3]);
        let d = _mm256_unpackhi_epi32(y[2], y[3]);
        [
            _mm256_unpacklo_epi64(a, c),
            _mm256_unpackhi_epi64(a, c),
            _mm256_unpacklo_epi64(b, d),
            _mm256_unpackhi_epi64(b, d),
        ]
    }
}

/// Bits `at .. at + 4` of each lane of `qh` as `0x10` in bytes 0..4 of the lane.
///
/// # Safety
/// AVX2 enabled.
#[inline(always)]
unsafe fn fifth(qh: __m256i, at: i32) -> __m256i {
    // SAFETY: register-only AVX2 intrinsics (caller enables them).
    unsafe {
        let x = _mm256_srl_epi32(qh, _mm_cvtsi32_si128(at));
        let bit = |mask: i32, shift: i32| {
            _mm256_sll_epi32(
                _mm256_and_si256(x, _mm256_set1_epi32(mask)),
                _mm_cvtsi32_si128(shift),
            )
        };
        _mm256_or_si256(
            _mm256_or_si256(bit(1, 4), bit(2, 11)),
            _mm256_or_si256(bit(4, 18), bit(8, 25)),
        )
    }
}

/// `out[r · n + j] = ` the dot product of activation row `r` with the panel's row `j` (plus
/// `bias[j]`), for every `r < rows.len()` and `j <` the panel's rows. `out` points at
/// column 0 of the panel's first row's output.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C, and AVX-VNNI if the panel was made with `vnni`; `panel`
/// was filled with `ty` rows; every activation row holds at least the panel's block count;
/// `out` is writable at `r · n + j` for those `r` and `j`; `bias`, when given, holds the
/// panel's rows.
pub(crate) unsafe fn multiply(
    ty: QuantType,
    panel: &Panel,
    rows: &[ActRow<'_>],
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    // SAFETY: forwarded contract (AVX-VNNI present when the panel is for it).
    unsafe {
        if panel.vnni {
            multiply_vnni(ty, panel, rows, bias, out, n)
        } else {
            multiply_avx2(ty, panel, rows, bias, out, n)
        }
    }
}

/// [`multiply`] with `vpmaddubsw` + `vpmaddwd`.
///
/// # Safety
/// As [`multiply`].
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn multiply_avx2(
    ty: QuantType,
    panel: &Panel,
    rows: &[ActRow<'_>],
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { by_type::<false>(ty, panel, rows, bias, out, n) }
}

/// [`multiply`] with AVX-VNNI `vpdpbusd`.
///
/// # Safety
/// As [`multiply`], AVX-VNNI present.
#[target_feature(enable = "avx2,fma,f16c,avxvnni")]
unsafe fn multiply_vnni(
    ty: QuantType,
    panel: &Panel,
    rows: &[ActRow<'_>],
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { by_type::<true>(ty, panel, rows, bias, out, n) }
}

/// Dispatches on the type, then every tile of activation rows.
///
/// # Safety
/// As [`multiply`], with the features `VNNI` needs enabled.
#[inline(always)]
unsafe fn by_type<const VNNI: bool>(
    ty: QuantType,
    panel: &Panel,
    rows: &[ActRow<'_>],
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    /// One type: every tile of activation rows.
    ///
    /// # Safety
    /// As `by_type`.
    #[inline(always)]
    unsafe fn tiles<const T: u8, const VNNI: bool>(
        panel: &Panel,
        rows: &[ActRow<'_>],
        bias: Option<&[f32]>,
        out: *mut f32,
        n: usize,
    ) {
        for (i, tile) in rows.chunks(ROWS).enumerate() {
            // SAFETY: forwarded contract; tile `i` starts at activation row `i · ROWS`.
            unsafe {
                let out = out.add(i * ROWS * n);
                match tile.len() {
                    1 => tile_t::<T, VNNI, 1>(panel, tile, bias, out, n),
                    2 => tile_t::<T, VNNI, 2>(panel, tile, bias, out, n),
                    3 => tile_t::<T, VNNI, 3>(panel, tile, bias, out, n),
                    _ => tile_t::<T, VNNI, ROWS>(panel, tile, bias, out, n),
                }
            }
        }
    }
    // SAFETY: forwarded contract.
    unsafe {
        match ty {
            QuantType::Q4_0 => tiles::<Q4_0, VNNI>(panel, rows, bias, out, n),
            QuantType::Q4_1 => tiles::<Q4_1, VNNI>(panel, rows, bias, out, n),
            QuantType::Q5_0 => tiles::<Q5_0, VNNI>(panel, rows, bias, out, n),
            QuantType::Q5_1 => tiles::<Q5_1, VNNI>(panel, rows, bias, out, n),
            _ => tiles::<Q8_0, VNNI>(panel, rows, bias, out, n),
        }
    }
}

/// `R` activation rows against the panel (type code `T`).
///
/// # Safety
/// As [`multiply`], with the features `VNNI` needs enabled; `rows.len() == R`.
// The lane classes index the rows' sums (`class[r][c]`) in the loops' order.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn tile_t<const T: u8, const VNNI: bool, const R: usize>(
    panel: &Panel,
    rows: &[ActRow<'_>],
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    let nb = panel.blocks;
    assert!(
        rows.len() == R
            && panel.rows >= 1
            && panel.vnni == VNNI
            && panel.regs.len() == nb * PER_BLOCK
    );
    // Lanes and quants are stored by whole groups of 8 blocks (`act`).
    let padded = nb.div_ceil(8) * 8;
    for a in rows {
        assert!(
            a.d.len() >= padded
                && a.s.len() >= padded
                && a.sum.len() >= padded
                && a.qs.len() >= padded * 32
        );
    }
    let shift = offset_shift(T, VNNI);
    // Weight registers whose `vpmaddubsw` results are added in 16 bits (see the module docs).
    let run = if T == Q4_0 || T == Q4_1 { 8 } else { 4 };
    // SAFETY: every read stays inside the panel (`b < nb`) or an activation row's first
    // `padded` blocks (asserted); the writes are the caller's; the features are the caller's.
    unsafe {
        let regs = panel.regs.as_ptr();
        let ones = _mm256_set1_epi16(1);
        let quad = |r: usize, b: usize, e: usize| {
            let q = rows[r].qs.as_ptr().add(qs_at(b, 4 * e));
            _mm256_set1_epi32(std::ptr::read_unaligned(q.cast::<i32>()))
        };
        let mut class = [[_mm256_setzero_ps(); 8]; R];
        for c in 0..8 {
            let mut acc = [_mm256_setzero_ps(); R];
            let mut b = c;
            while b < nb {
                let p = regs.add(b * PER_BLOCK);
                let mut isum = [_mm256_setzero_si256(); R];
                if shift > 0 {
                    for r in 0..R {
                        let s = *rows[r].sum.get_unchecked(lane_at(b));
                        isum[r] = _mm256_set1_epi32(-(s << shift));
                    }
                }
                if VNNI {
                    for e in 0..8 {
                        let wv = *p.add(e);
                        for r in 0..R {
                            isum[r] = _mm256_dpbusd_avx_epi32(isum[r], wv, quad(r, b, e));
                        }
                    }
                } else if T == Q8_0 {
                    for e in 0..8 {
                        let wv = *p.add(e);
                        let mag = _mm256_abs_epi8(wv);
                        for r in 0..R {
                            let x = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(quad(r, b, e), wv));
                            isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(x, ones));
                        }
                    }
                } else {
                    for e0 in (0..8).step_by(run) {
                        let mut s16 = [_mm256_setzero_si256(); R];
                        for e in e0..e0 + run {
                            let wv = *p.add(e);
                            for r in 0..R {
                                let x = _mm256_maddubs_epi16(wv, quad(r, b, e));
                                s16[r] = if e == e0 {
                                    x
                                } else {
                                    _mm256_add_epi16(s16[r], x)
                                };
                            }
                        }
                        for r in 0..R {
                            isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(s16[r], ones));
                        }
                    }
                }
                let dw = _mm256_castsi256_ps(*p.add(8));
                let l = lane_at(b);
                for r in 0..R {
                    let pr = _mm256_mul_ps(dw, _mm256_set1_ps(*rows[r].d.get_unchecked(l)));
                    let sf = _mm256_cvtepi32_ps(isum[r]);
                    let cb = if offset(T) {
                        let mw = _mm256_castsi256_ps(*p.add(9));
                        let ms = _mm256_mul_ps(mw, _mm256_set1_ps(*rows[r].s.get_unchecked(l)));
                        _mm256_fmadd_ps(pr, sf, ms)
                    } else {
                        _mm256_mul_ps(pr, sf)
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

/// Writes a panel's outputs for each of the `R` activation rows: the contract's tree over the
/// row's 8 class sums (`((c0+c1)+(c2+c3))+((c4+c5)+(c6+c7))`), then the bias, stored at
/// `out + r·n` for the panel's first `lanes` weight rows only. Shared by the legacy and the
/// K-quant AVX2 panels.
///
/// # Safety
/// AVX2; `out + r·n` is writable for `lanes` floats for every `r < R`; `bias`, when given,
/// holds at least `lanes` values.
#[inline(always)]
pub(crate) unsafe fn store_rows<const R: usize>(
    class: &[[__m256; 8]; R],
    lanes: usize,
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    let mask: [i32; PANEL] = std::array::from_fn(|j| if j < lanes { -1 } else { 0 });
    // SAFETY: the masked loads and stores touch the caller's `lanes` floats only; the rest is
    // register-only.
    unsafe {
        let mask = _mm256_loadu_si256(mask.as_ptr().cast());
        let bias = bias.map(|b| _mm256_maskload_ps(b.as_ptr(), mask));
        for (r, a) in class.iter().enumerate() {
            let t = _mm256_add_ps(
                _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])),
                _mm256_add_ps(_mm256_add_ps(a[4], a[5]), _mm256_add_ps(a[6], a[7])),
            );
            let v = match bias {
                Some(bv) => _mm256_add_ps(t, bv),
                None => t,
            };
            _mm256_maskstore_ps(out.add(r * n), mask, v);
        }
    }
}

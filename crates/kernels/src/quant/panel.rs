//! Prefill's kernel for the legacy types on AVX-512 VNNI: [`PANEL`] weight rows at a time,
//! unpacked once into a scratch panel laid out across the rows, then every activation row
//! against it.
//!
//! The tile kernels (`avx2`, `avx512`) vectorize a row's dot product across its blocks, which
//! costs a transposing reduction of the partial sums for every group of 8 blocks and every
//! activation row. Here the vector lanes are 16 weight rows instead: lane `j` of register
//! `e` of block `b` holds elements `4e .. 4e + 4` of block `b` of weight row `j`, so 8
//! `vpdpbusd`, each against one broadcast 32-bit word of the activation block, leave block
//! `b`'s exact integer sum for all 16 rows in 16 lanes, with no reduction at all. The
//! contract's float formula then runs lane-wise, per block, as the scalar reference does
//! (`c_b = (d_w·d_a)·sumi`, or `fma(d_w·d_a, sumi, m_w·s_a)`), and each lane accumulates
//! its row's `c_b` in [`super::sum_blocks`]' order: the blocks `≡ c (mod 8)` of lane class
//! `c` in increasing order, one class after the other (the classes are independent sums),
//! then the fixed tree over the 8 class sums, then the bias. So every output has the bits of
//! the scalar reference, whatever the panel, the tile of activation rows or the batch.
//!
//! Levels stay unsigned as in the tile kernels (`vpdpbusd` multiplies unsigned weights by
//! signed activations): Q4_0's, Q5_0's and Q8_0's (`w ^ 0x80`) offsets come back out through
//! the activation block's `Σ q`, with which each block's integer sum starts.
//!
//! The panel is filled by loading 16 bytes of each of the 16 rows and transposing them
//! ([`transpose16x4`]; the scales with a gather): its cost is paid once per 16 weight rows
//! and shared by every activation row of the product.
//!
//! # Safety
//! As the other kernels: the entry points run only on a CPU with AVX-512 F/BW/VL and VNNI,
//! AVX2, FMA and F16C.

use std::arch::x86_64::*;

use super::act::{lane_at, qs_at, ActRow};
use super::avx2::{block_bytes, offset, offset_shift, qs_offset, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
use super::QuantType;

/// Weight rows a panel holds: one per 32-bit lane of a 512-bit register.
pub(crate) const PANEL: usize = 16;

/// Activation rows one pass over a panel serves (each panel register loaded once for them).
const ROWS: usize = 4;

/// Registers a block takes in the panel: 8 of levels, its rows' `d_w`, their `m_w`.
pub(super) const PER_BLOCK: usize = 10;

/// The unpacked levels and scales of up to [`PANEL`] weight rows (see the module docs).
pub(crate) struct Panel {
    /// `PER_BLOCK` registers a block.
    pub(super) regs: Vec<__m512i>,
    /// Blocks a row.
    pub(super) blocks: usize,
    /// Weight rows held (`1..=PANEL`); lanes past them repeat the last row.
    pub(super) rows: usize,
}

impl Panel {
    /// An empty panel for rows of `blocks` blocks.
    pub(crate) fn new(blocks: usize) -> Panel {
        // SAFETY: an all-zero `__m512i` is a valid value (no feature needed to write zeros).
        let zero = unsafe { std::mem::zeroed::<__m512i>() };
        Panel {
            regs: vec![zero; blocks * PER_BLOCK],
            blocks,
            rows: 0,
        }
    }
}

/// Whether the panel kernel takes weights of `row_bytes` a row (its gathers address the 16
/// rows with 32-bit offsets).
pub(crate) fn fits(row_bytes: usize) -> bool {
    row_bytes
        .checked_mul(PANEL + 1)
        .is_some_and(|b| b <= i32::MAX as usize)
}

/// Fills `panel` with `rows` (`1..=PANEL`) weight rows of the legacy type `ty`: row `i` is
/// `w[i · row_bytes ..][.. row_bytes]`, `row_bytes` = `panel`'s block count times the block
/// size.
///
/// # Safety
/// The CPU has the module's features; `w` holds `rows` rows; [`fits`]`(row_bytes)`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
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
        (1..=PANEL).contains(&rows) && w.len() >= rows * rb && fits(rb),
        "panel::fill: rows"
    );
    panel.rows = rows;
    // SAFETY: every gather reads 4 bytes, every transpose 16, at `row · rb + b · bs + o`
    // with `row < rows`, `b < blocks` and `o + 4 ≤ bs` (`o + 16 ≤ bs`): inside `w`
    // (asserted); the features are the caller's.
    unsafe {
        let row_bytes: [usize; PANEL] = std::array::from_fn(|j| j.min(rows - 1) * rb);
        let row_at: [i32; PANEL] = row_bytes.map(|r| r as i32);
        let rows_v = _mm512_loadu_si512(row_at.as_ptr().cast());
        let base = w.as_ptr();
        let nib = _mm512_set1_epi8(0x0F);
        let low16 = _mm512_set1_epi32(0xFFFF);
        for b in 0..panel.blocks {
            let at = |o: usize| _mm512_add_epi32(rows_v, _mm512_set1_epi32((b * bs + o) as i32));
            let word = |o: usize| _mm512_i32gather_epi32::<1>(at(o), base.cast());
            let regs = &mut panel.regs[b * PER_BLOCK..(b + 1) * PER_BLOCK];
            let head = word(0);
            let d = _mm512_cvtepi32_epi16(_mm512_and_si512(head, low16));
            regs[8] = _mm512_castps_si512(_mm512_cvtph_ps(d));
            if offset(T) {
                let m = _mm512_cvtepi32_epi16(_mm512_srli_epi32(head, 16));
                regs[9] = _mm512_castps_si512(_mm512_cvtph_ps(m));
            }
            let o = qs_offset(T);
            let at = |o: usize| row_bytes.map(|r| r + b * bs + o);
            if T == Q8_0 {
                for h in 0..2 {
                    let words = transpose16x4(base, &at(o + 16 * h));
                    for (e, v) in words.into_iter().enumerate() {
                        regs[4 * h + e] = _mm512_xor_si512(v, _mm512_set1_epi8(-128));
                    }
                }
                continue;
            }
            let words = transpose16x4(base, &at(o));
            let qh = if T == Q5_0 || T == Q5_1 {
                word(if T == Q5_0 { 2 } else { 4 })
            } else {
                _mm512_setzero_si512()
            };
            for (e, &g) in words.iter().enumerate() {
                let mut lo = _mm512_and_si512(g, nib);
                let mut hi = _mm512_and_si512(_mm512_srli_epi32(g, 4), nib);
                if T == Q5_0 || T == Q5_1 {
                    lo = _mm512_or_si512(lo, fifth(qh, 4 * e as i32));
                    hi = _mm512_or_si512(hi, fifth(qh, 16 + 4 * e as i32));
                }
                regs[e] = lo;
                regs[4 + e] = hi;
            }
        }
    }
}

/// The 16 bytes at `base + at[j]` for each row `j < 16`, as 4 registers: lane `j` of
/// register `e` holds bytes `4e .. 4e + 4` of row `j`'s 16 (16 loads and a transpose, far
/// cheaper than 4 gathers).
///
/// # Safety
/// AVX-512F enabled; every `base + at[j]` readable for 16 bytes.
#[inline(always)]
pub(crate) unsafe fn transpose16x4(base: *const u8, at: &[usize; PANEL]) -> [__m512i; 4] {
    // SAFETY: the 16 loads are the caller's readable bytes; the rest is register-only.
    unsafe {
        let row = |j: usize| _mm_loadu_si128(base.add(at[j]).cast());
        // z[k]: rows 4k .. 4k + 4, one per 128-bit lane.
        let z: [__m512i; 4] = std::array::from_fn(|k| {
            let lo = _mm256_inserti128_si256(_mm256_castsi128_si256(row(4 * k)), row(4 * k + 1), 1);
            let hi =
                _mm256_inserti128_si256(_mm256_castsi128_si256(row(4 * k + 2)), row(4 * k + 3), 1);
            _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)
        });
        // A 4 × 4 transpose of words within each 128-bit lane `i`: t[e] then holds word `e`
        // of rows `i, 4 + i, 8 + i, 12 + i` in lane `i`.
        let a = _mm512_unpacklo_epi32(z[0], z[1]);
        let b = _mm512_unpackhi_epi32(z[0], z[1]);
        let c = _mm512_unpacklo_epi32(z[2], z[3]);
        let d = _mm512_unpackhi_epi32(z[2], z[3]);
        let t = [
            _mm512_unpacklo_epi64(a, c),
            _mm512_unpackhi_epi64(a, c),
            _mm512_unpacklo_epi64(b, d),
            _mm512_unpackhi_epi64(b, d),
        ];
        // Position `4i + k` holds row `4k + i`: put it at `4k + i`.
        let idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        t.map(|v| _mm512_permutexvar_epi32(idx, v))
    }
}

/// Bits `at .. at + 4` of each lane of `qh` as `0x10` in bytes 0..4 of the lane.
///
/// # Safety
/// AVX-512F enabled.
#[inline(always)]
unsafe fn fifth(qh: __m512i, at: i32) -> __m512i {
    // SAFETY: register-only AVX-512F intrinsics (caller enables them).
    unsafe {
        let x = _mm512_srl_epi32(qh, _mm_cvtsi32_si128(at));
        let bit = |mask: i32, shift: i32| {
            _mm512_sll_epi32(
                _mm512_and_si512(x, _mm512_set1_epi32(mask)),
                _mm_cvtsi32_si128(shift),
            )
        };
        _mm512_or_si512(
            _mm512_or_si512(bit(1, 4), bit(2, 11)),
            _mm512_or_si512(bit(4, 18), bit(8, 25)),
        )
    }
}

/// `out[r · n + j] = ` the dot product of activation row `r` with the panel's row `j` (plus
/// `bias[j]`), for every `r < rows.len()` and `j <` the panel's rows. `out` points at
/// column 0 of the panel's first row's output.
///
/// # Safety
/// The CPU has the module's features; `panel` was filled with `ty` rows; every activation
/// row holds at least the panel's block count; `out` is writable at `r · n + j` for those
/// `r` and `j`; `bias`, when given, holds the panel's rows.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(crate) unsafe fn multiply(
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
    /// As `multiply`.
    #[inline(always)]
    unsafe fn tiles<const T: u8>(
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
                    1 => tile_t::<T, 1>(panel, tile, bias, out, n),
                    2 => tile_t::<T, 2>(panel, tile, bias, out, n),
                    3 => tile_t::<T, 3>(panel, tile, bias, out, n),
                    _ => tile_t::<T, ROWS>(panel, tile, bias, out, n),
                }
            }
        }
    }
    // SAFETY: forwarded contract.
    unsafe {
        match ty {
            QuantType::Q4_0 => tiles::<Q4_0>(panel, rows, bias, out, n),
            QuantType::Q4_1 => tiles::<Q4_1>(panel, rows, bias, out, n),
            QuantType::Q5_0 => tiles::<Q5_0>(panel, rows, bias, out, n),
            QuantType::Q5_1 => tiles::<Q5_1>(panel, rows, bias, out, n),
            _ => tiles::<Q8_0>(panel, rows, bias, out, n),
        }
    }
}

/// `R` activation rows against the panel (type code `T`).
///
/// # Safety
/// As [`multiply`], with its features enabled; `rows.len() == R`.
// The lane classes index the rows' sums (`class[r][c]`) in the loops' order.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn tile_t<const T: u8, const R: usize>(
    panel: &Panel,
    rows: &[ActRow<'_>],
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    let nb = panel.blocks;
    assert!(rows.len() == R && panel.rows >= 1 && panel.regs.len() == nb * PER_BLOCK);
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
    let shift = offset_shift(T, true);
    // SAFETY: every read stays inside the panel (`b < nb`) or an activation row's first
    // `padded` blocks (asserted); the writes are the caller's; the features are the caller's.
    unsafe {
        let regs = panel.regs.as_ptr();
        // Lane class sums, `[R][8]`.
        let mut class = [[_mm512_setzero_ps(); 8]; R];
        for c in 0..8 {
            let mut acc = [_mm512_setzero_ps(); R];
            let mut b = c;
            while b < nb {
                let p = regs.add(b * PER_BLOCK);
                let mut isum: [__m512i; R] = std::array::from_fn(|r| start_sum(&rows[r], b, shift));
                for e in 0..8 {
                    let wv = *p.add(e);
                    for r in 0..R {
                        let q = rows[r].qs.as_ptr().add(qs_at(b, 4 * e));
                        let av = _mm512_set1_epi32(std::ptr::read_unaligned(q.cast::<i32>()));
                        isum[r] = _mm512_dpbusd_epi32(isum[r], wv, av);
                    }
                }
                for r in 0..R {
                    acc[r] = _mm512_add_ps(acc[r], contribution::<T>(p, &rows[r], b, isum[r]));
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

/// The integer sum block `b`'s products with one activation row start from: `−(Σ q << shift)`,
/// which takes the unsigned levels' offset back out (`shift` of `offset_shift`; 0 for none).
///
/// # Safety
/// AVX-512F enabled; the row holds block `b`.
#[inline(always)]
pub(super) unsafe fn start_sum(row: &ActRow<'_>, b: usize, shift: i32) -> __m512i {
    // SAFETY: `lane_at(b)` is inside the row's sums (the caller's promise); the rest is
    // register-only.
    unsafe {
        match shift {
            0 => _mm512_setzero_si512(),
            _ => _mm512_set1_epi32(-(*row.sum.get_unchecked(lane_at(b)) << shift)),
        }
    }
}

/// Block `b`'s contribution to one activation row's dot products with the panel's rows,
/// lane-wise, from its exact integer sums `isum`: `(d_w·d_a)·sumi`, or for the types with an
/// offset `fma(d_w·d_a, sumi, m_w·s_a)` — the scalar reference's operations (type code `T`).
///
/// # Safety
/// AVX-512F and FMA enabled; `p` points at block `b`'s [`PER_BLOCK`] panel registers; the row
/// holds block `b`.
#[inline(always)]
pub(super) unsafe fn contribution<const T: u8>(
    p: *const __m512i,
    row: &ActRow<'_>,
    b: usize,
    isum: __m512i,
) -> __m512 {
    // SAFETY: the panel registers and the row's block `b` are the caller's promise.
    unsafe {
        let l = lane_at(b);
        let dw = _mm512_castsi512_ps(*p.add(8));
        let pr = _mm512_mul_ps(dw, _mm512_set1_ps(*row.d.get_unchecked(l)));
        let sf = _mm512_cvtepi32_ps(isum);
        if offset(T) {
            let mw = _mm512_castsi512_ps(*p.add(9));
            let ms = _mm512_mul_ps(mw, _mm512_set1_ps(*row.s.get_unchecked(l)));
            _mm512_fmadd_ps(pr, sf, ms)
        } else {
            _mm512_mul_ps(pr, sf)
        }
    }
}

/// Writes a panel's outputs for each of the `R` activation rows: the contract's tree over the
/// row's 8 class sums (`((c0+c1)+(c2+c3))+((c4+c5)+(c6+c7))`), then the bias, stored at
/// `out + r·n` for the panel's first `lanes` weight rows only. Shared by the legacy and the
/// K-quant panels.
///
/// # Safety
/// AVX-512F; `out + r·n` is writable for `lanes` floats for every `r < R`; `bias`, when
/// given, holds at least `lanes` values.
#[inline(always)]
pub(crate) unsafe fn store_rows<const R: usize>(
    class: &[[__m512; 8]; R],
    lanes: usize,
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    let mask: __mmask16 = if lanes >= PANEL {
        0xFFFF
    } else {
        (1u16 << lanes) - 1
    };
    // SAFETY: the masked loads and stores touch the caller's `lanes` floats only; the rest is
    // register-only.
    unsafe {
        let bias = bias.map(|b| _mm512_maskz_loadu_ps(mask, b.as_ptr()));
        for (r, a) in class.iter().enumerate() {
            let t = _mm512_add_ps(
                _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])),
                _mm512_add_ps(_mm512_add_ps(a[4], a[5]), _mm512_add_ps(a[6], a[7])),
            );
            let v = match bias {
                Some(bv) => _mm512_add_ps(t, bv),
                None => t,
            };
            _mm512_mask_storeu_ps(out.add(r * n), mask, v);
        }
    }
}

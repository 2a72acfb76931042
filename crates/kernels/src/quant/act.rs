//! The activation rows of a quantized product, quantized once per call to 8-bit blocks of 32
//! (what llama.cpp's `quantize_row_q8_0_ref`/`quantize_row_q8_1_ref` compute), laid out for
//! the SIMD kernels.
//!
//! # Layout
//!
//! A row's blocks come in groups of 8 (`BLOCK_LANES`). The kernels take a group as 4 pairs of
//! adjacent blocks `(2p, 2p + 1)`; a pair's 64 quant bytes are stored as the first 16 elements
//! of block `2p`, the first 16 of block `2p + 1`, then the last 16 of each — the order in which
//! a weight pair's low and high nibbles come out of its bytes. Reducing a group's 4 pairs
//! leaves block `j` of the group in vector lane [`slot`]`(j)` (blocks `0, 2, 4, 6` in lanes
//! 0–3, `1, 3, 5, 7` in lanes 4–7), so each group's scales, `s_a` and `Σ q` are stored in
//! that lane order and load with one instruction each. The accessors of [`ActRow`] hide the
//! layout from the scalar reference.
//!
//! Per block of 32 values `x`: `amax = max |x|`, `d = amax / 127`, `q = round(x / d)` (half
//! away from zero; `0` when `d = 0`), `d_a = f16(d)` and `s_a = f16(d · Σ q)` — `s_a` is what
//! the Q8_1 blocks of Q4_1/Q5_1 carry; the symmetric types ignore it. Rows are padded with
//! all-zero blocks to a multiple of [`BLOCK_LANES`] blocks (`d_a = s_a = 0`, `q = 0`), so the
//! SIMD kernels read whole groups of 8 and a padded block contributes `+0.0`.

use half::f16;

use super::blocks::QK;
use super::BLOCK_LANES;
use crate::team::SendPtr;
use crate::Isa;

/// The vector lane block `j` (`< 8`) of a group lands in: lanes `0..4` hold the even blocks,
/// `4..8` the odd ones.
#[inline(always)]
pub(crate) const fn slot(j: usize) -> usize {
    (j % 2) * 4 + j / 2
}

/// The block of a group whose sums land in lane `l` (the inverse of [`slot`]).
pub(crate) const LANE_BLOCK: [usize; BLOCK_LANES] = [0, 2, 4, 6, 1, 3, 5, 7];

/// Where element `e` of block `b` of a row is stored in its quants (see the module docs).
#[inline(always)]
pub(crate) const fn qs_at(b: usize, e: usize) -> usize {
    let (g, j) = (b / BLOCK_LANES, b % BLOCK_LANES);
    g * BLOCK_LANES * QK + (j / 2) * 2 * QK + (e / 16) * QK + (j % 2) * 16 + e % 16
}

/// Where block `b`'s scale, `s_a` and `Σ q` are stored in a row's arrays.
#[inline(always)]
pub(crate) const fn lane_at(b: usize) -> usize {
    (b / BLOCK_LANES) * BLOCK_LANES + slot(b % BLOCK_LANES)
}

/// `m` activation rows as 8-bit blocks.
#[derive(Default)]
pub(crate) struct Act {
    /// Blocks per row, padded to a multiple of [`BLOCK_LANES`].
    pub(crate) stride: usize,
    /// Each block's scale `d_a` (an `f16` value), `[m, stride]` (group lane order).
    pub(crate) d: Vec<f32>,
    /// Each block's `s_a = f16(d · Σ q)`, `[m, stride]`.
    pub(crate) s: Vec<f32>,
    /// Each block's exact `Σ q`, `[m, stride]` (the SIMD paths take offsets out with it).
    pub(crate) sum: Vec<i32>,
    /// The quants, `[m, stride · 32]` (pair-interleaved).
    pub(crate) qs: Vec<i8>,
}

/// One row of an [`Act`].
#[derive(Clone, Copy)]
pub(crate) struct ActRow<'a> {
    /// Scales, `stride` of them.
    pub(crate) d: &'a [f32],
    /// `s_a`, `stride` of them.
    pub(crate) s: &'a [f32],
    /// `Σ q` per block.
    pub(crate) sum: &'a [i32],
    /// Quants, `32 · stride`.
    pub(crate) qs: &'a [i8],
}

impl Act {
    /// Quantizes the `m` rows of `k` values in `x` (`k` a multiple of 32) with `isa`'s
    /// quantizer (scalar where this CPU lacks it; every one writes the same bytes); rows are
    /// split between the kernels' team (each row's bytes are the same however they are
    /// split).
    pub(crate) fn new(isa: Isa, x: &[f32], m: usize, k: usize) -> Act {
        let blocks = k / QK;
        let stride = blocks.div_ceil(BLOCK_LANES) * BLOCK_LANES;
        let mut act = Act {
            stride,
            d: vec![0.0; m * stride],
            s: vec![0.0; m * stride],
            sum: vec![0; m * stride],
            qs: vec![0; m * stride * QK],
        };
        assert!(x.len() >= m * k, "Act::new: rows");
        let wide = Wide::of(isa);
        let (d, s) = (SendPtr(act.d.as_mut_ptr()), SendPtr(act.s.as_mut_ptr()));
        let (sum, qs) = (SendPtr(act.sum.as_mut_ptr()), SendPtr(act.qs.as_mut_ptr()));
        let rows_per_task = ROW_TASK_BLOCKS.div_ceil(blocks.max(1));
        crate::team::for_each(m.div_ceil(rows_per_task), &|t| {
            for r in t * rows_per_task..m.min((t + 1) * rows_per_task) {
                let at = r * stride;
                // SAFETY: row `r < m` of each array (`stride` lanes, `stride · 32` quants)
                // lies inside it and only this task, the one holding `r`, touches it.
                let row = unsafe {
                    RowMut {
                        d: std::slice::from_raw_parts_mut(d.get().add(at), stride),
                        s: std::slice::from_raw_parts_mut(s.get().add(at), stride),
                        sum: std::slice::from_raw_parts_mut(sum.get().add(at), stride),
                        qs: std::slice::from_raw_parts_mut(qs.get().add(at * QK), stride * QK),
                    }
                };
                quantize_row(&x[r * k..r * k + blocks * QK], row, wide);
            }
        });
        act
    }

    /// Row `r`.
    pub(crate) fn row(&self, r: usize) -> ActRow<'_> {
        let (lo, hi) = (r * self.stride, (r + 1) * self.stride);
        ActRow {
            d: &self.d[lo..hi],
            s: &self.s[lo..hi],
            sum: &self.sum[lo..hi],
            qs: &self.qs[lo * QK..hi * QK],
        }
    }
}

impl ActRow<'_> {
    /// Block `b`'s scale `d_a`.
    #[inline(always)]
    pub(crate) fn d_of(&self, b: usize) -> f32 {
        self.d[lane_at(b)]
    }

    /// Block `b`'s `s_a`.
    #[inline(always)]
    pub(crate) fn s_of(&self, b: usize) -> f32 {
        self.s[lane_at(b)]
    }

    /// Block `b`'s `Σ q`.
    #[cfg(test)]
    pub(crate) fn sum_of(&self, b: usize) -> i32 {
        self.sum[lane_at(b)]
    }

    /// Element `e` of block `b`.
    #[inline(always)]
    pub(crate) fn q(&self, b: usize, e: usize) -> i8 {
        self.qs[qs_at(b, e)]
    }
}

/// Blocks of activations a task of [`Act::new`] quantizes at least (a few microseconds).
const ROW_TASK_BLOCKS: usize = 2048;

/// One row of an [`Act`] being written.
struct RowMut<'a> {
    d: &'a mut [f32],
    s: &'a mut [f32],
    sum: &'a mut [i32],
    qs: &'a mut [i8],
}

/// Which block quantizer runs: all write [`quantize_block`]'s bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wide {
    /// [`quantize_block`].
    Scalar,
    /// [`quantize_block_avx2`].
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// [`quantize_block_avx512`].
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Wide {
    /// The quantizer of `isa`, scalar where this CPU lacks `isa`.
    fn of(isa: Isa) -> Wide {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if isa.is_available() => Wide::Avx2,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if isa.is_available() => Wide::Avx512,
            _ => Wide::Scalar,
        }
    }
}

/// Quantizes one row's blocks (`x`: whole blocks) into `row` with `wide`.
fn quantize_row(x: &[f32], row: RowMut<'_>, wide: Wide) {
    let mut q = [0i8; QK];
    for (b, xs) in x.chunks_exact(QK).enumerate() {
        let (d, s, sum) = quantize_one(xs, &mut q, wide);
        let at = lane_at(b);
        row.d[at] = through_f16(d);
        row.s[at] = through_f16(s);
        row.sum[at] = sum;
        row.qs[qs_at(b, 0)..qs_at(b, 0) + 16].copy_from_slice(&q[..16]);
        row.qs[qs_at(b, 16)..qs_at(b, 16) + 16].copy_from_slice(&q[16..]);
    }
}

/// One block ([`quantize_block`]'s bytes) with `wide`.
#[inline(always)]
fn quantize_one(x: &[f32], q: &mut [i8], wide: Wide) -> (f32, f32, i32) {
    match wide {
        // SAFETY: `Wide::of` gives `Avx512` only where the CPU has AVX-512; `x` and `q` are
        // 32 long.
        #[cfg(target_arch = "x86_64")]
        Wide::Avx512 => unsafe { quantize_block_avx512(x, q) },
        // SAFETY: as above, for AVX2.
        #[cfg(target_arch = "x86_64")]
        Wide::Avx2 => unsafe { quantize_block_avx2(x, q) },
        Wide::Scalar => quantize_block(x, q),
    }
}

/// One block: writes its quants to `q` and returns `(d, d · Σ q, Σ q)`, `d` and `d · Σ q`
/// not yet rounded to `f16`. (Written as independent lanes so the compiler vectorizes it;
/// the maximum is the same in any order.)
fn quantize_block(x: &[f32], q: &mut [i8]) -> (f32, f32, i32) {
    let mut top = [0f32; 8];
    for c in x.chunks_exact(8) {
        for (t, &v) in top.iter_mut().zip(c) {
            // NaN compares false and is skipped, as `f32::max` skips it.
            if v.abs() > *t {
                *t = v.abs();
            }
        }
    }
    let amax = top.iter().fold(0f32, |a, &t| if t > a { t } else { a });
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    for (q, &v) in q.iter_mut().zip(x) {
        *q = round_to_i8(v * id);
    }
    let sum: i32 = q.iter().map(|&v| i32::from(v)).sum();
    (d, sum as f32 * d, sum)
}

/// [`quantize_block`] with AVX-512, the same operations lane-wise: the same bytes.
///
/// # Safety
/// AVX-512 F/BW/VL/DQ present; `x` holds 32 values and `q` 32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
unsafe fn quantize_block_avx512(x: &[f32], q: &mut [i8]) -> (f32, f32, i32) {
    use std::arch::x86_64::*;
    assert!(x.len() >= QK && q.len() >= QK);
    // SAFETY: 32 readable floats and 32 writable bytes (asserted); the features are the
    // caller's.
    unsafe {
        let v = [
            _mm512_loadu_ps(x.as_ptr()),
            _mm512_loadu_ps(x.as_ptr().add(16)),
        ];
        // `vmaxps a, b` gives `b` when `a` is NaN: NaN is skipped, as the scalar loop does.
        let zero = _mm512_setzero_ps();
        let top = _mm512_max_ps(
            _mm512_abs_ps(v[1]),
            _mm512_max_ps(_mm512_abs_ps(v[0]), zero),
        );
        let amax = _mm512_reduce_max_ps(top);
        let d = amax / 127.0;
        let id = _mm512_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
        let mut total = _mm512_setzero_si512();
        for (h, &xv) in v.iter().enumerate() {
            let y = _mm512_mul_ps(xv, id);
            let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(y, y);
            let c = _mm512_min_ps(
                _mm512_max_ps(y, _mm512_set1_ps(-128.0)),
                _mm512_set1_ps(127.0),
            );
            let t = _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(c);
            let frac = _mm512_sub_ps(c, t);
            let one = _mm512_set1_ps(1.0);
            let up = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(frac, _mm512_set1_ps(0.5));
            let down = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(frac, _mm512_set1_ps(-0.5));
            let r = _mm512_mask_sub_ps(_mm512_mask_add_ps(t, up, t, one), down, t, one);
            // NaN rounds to 0, as `NaN as i32` does.
            let i = _mm512_maskz_mov_epi32(!nan, _mm512_cvttps_epi32(r));
            total = _mm512_add_epi32(total, i);
            _mm_storeu_si128(q.as_mut_ptr().add(16 * h).cast(), _mm512_cvtepi32_epi8(i));
        }
        let sum = _mm512_reduce_add_epi32(total);
        (d, sum as f32 * d, sum)
    }
}

/// [`quantize_block`] with AVX2, the same operations lane-wise: the same bytes.
///
/// # Safety
/// AVX2 present; `x` holds 32 values and `q` 32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_block_avx2(x: &[f32], q: &mut [i8]) -> (f32, f32, i32) {
    use std::arch::x86_64::*;
    assert!(x.len() >= QK && q.len() >= QK);
    // SAFETY: 32 readable floats and 32 writable bytes (asserted); the feature is the
    // caller's.
    unsafe {
        let v: [__m256; 4] = std::array::from_fn(|i| _mm256_loadu_ps(x.as_ptr().add(8 * i)));
        let abs = |a: __m256| _mm256_andnot_ps(_mm256_set1_ps(-0.0), a);
        // `vmaxps a, b` gives `b` when `a` is NaN: NaN is skipped, as the scalar loop does;
        // the maximum of the (non-NaN) lanes is the same in any order.
        let mut top = _mm256_setzero_ps();
        for &xv in &v {
            top = _mm256_max_ps(abs(xv), top);
        }
        let half = _mm_max_ps(_mm256_castps256_ps128(top), _mm256_extractf128_ps(top, 1));
        let half = _mm_max_ps(half, _mm_movehl_ps(half, half));
        let amax = _mm_cvtss_f32(_mm_max_ss(half, _mm_shuffle_ps(half, half, 1)));
        let d = amax / 127.0;
        let id = _mm256_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
        let one = _mm256_set1_ps(1.0);
        let ints: [__m256i; 4] = v.map(|xv| {
            let y = _mm256_mul_ps(xv, id);
            let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(y, y);
            let c = _mm256_min_ps(
                _mm256_max_ps(y, _mm256_set1_ps(-128.0)),
                _mm256_set1_ps(127.0),
            );
            let t = _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(c);
            let frac = _mm256_sub_ps(c, t);
            let up = _mm256_cmp_ps::<_CMP_GE_OQ>(frac, _mm256_set1_ps(0.5));
            let down = _mm256_cmp_ps::<_CMP_LE_OQ>(frac, _mm256_set1_ps(-0.5));
            // `t ± 1` or `t + 0` (a `−0.0` becoming `+0.0` converts to the same 0).
            let r = _mm256_sub_ps(
                _mm256_add_ps(t, _mm256_and_ps(up, one)),
                _mm256_and_ps(down, one),
            );
            // NaN rounds to 0, as `NaN as i32` does.
            _mm256_andnot_si256(_mm256_castps_si256(nan), _mm256_cvttps_epi32(r))
        });
        let total = _mm256_add_epi32(
            _mm256_add_epi32(ints[0], ints[1]),
            _mm256_add_epi32(ints[2], ints[3]),
        );
        // Values in `-128..=127` pack without saturating; the packs interleave 4-value
        // groups across the 128-bit halves, which the word permute undoes.
        let bytes = _mm256_packs_epi16(
            _mm256_packs_epi32(ints[0], ints[1]),
            _mm256_packs_epi32(ints[2], ints[3]),
        );
        let ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(q.as_mut_ptr().cast(), ordered);
        let mut lanes = [0i32; 8];
        _mm256_storeu_si256(lanes.as_mut_ptr().cast(), total);
        let sum: i32 = lanes.iter().sum();
        (d, sum as f32 * d, sum)
    }
}

/// `v` rounded to the nearest `f16` (ties to even, as GGML's `GGML_FP32_TO_FP16`) and back.
fn through_f16(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

/// `v` rounded to the nearest integer, halves away from zero (C's `roundf`), saturated to
/// `[-128, 127]`, NaN to 0 — `v.round() as i8`, without the `roundf` call that `f32::round`
/// becomes on x86-64's baseline (no SSE4.1).
#[inline(always)]
fn round_to_i8(v: f32) -> i8 {
    let c = v.clamp(-128.0, 127.0);
    // Truncation toward zero (NaN -> 0); `c - t` is exact below 2^23.
    let t = c as i32;
    let frac = c - t as f32;
    let r = if frac >= 0.5 {
        t + 1
    } else if frac <= -0.5 {
        t - 1
    } else {
        t
    };
    r as i8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_roundf_saturated() {
        let mut v = -130.0f32;
        while v < 130.0 {
            assert_eq!(round_to_i8(v), v.round() as i8, "{v}");
            v += 0.0625;
        }
        for v in [
            0.49999997f32,
            -0.49999997,
            0.5,
            -0.5,
            1.5,
            -2.5,
            126.5,
            127.49,
            -127.5,
            -128.7,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e30,
        ] {
            assert_eq!(round_to_i8(v), v.round() as i8, "{v}");
        }
    }

    /// Every block quantizer this CPU runs (one per [`Isa`]: AVX2 when AVX2 is asked for,
    /// never a wider one) writes the scalar one's bytes: random blocks, exact ties
    /// (`amax = 127` makes `x / d` the values themselves), zeros, subnormals (some so small
    /// that `1 / d` overflows), huge values, infinities and NaN; and a whole product's
    /// activations are the same bytes on every ISA and thread count.
    #[test]
    fn every_isas_blocks_equal_the_scalar_ones() {
        let isas = Isa::available();
        for &isa in &isas {
            let want = match isa {
                Isa::Scalar => "Scalar",
                Isa::Avx2 => "Avx2",
                Isa::Avx512 => "Avx512",
            };
            assert_eq!(format!("{:?}", Wide::of(isa)), want, "{isa:?}");
        }
        eprintln!("quantizers: {isas:?}");
        let mut seed = 0x9E37_79B9u64;
        let mut unit = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        };
        let mut blocks: Vec<[f32; QK]> = Vec::new();
        for scale in [1e-39f32, 1e-30, 1e-3, 1.0, 3.0e4, 3.0e38] {
            for _ in 0..50 {
                blocks.push(std::array::from_fn(|_| unit() * scale));
            }
        }
        let ties: [f32; QK] = std::array::from_fn(|i| match i {
            0 => 127.0,
            1 => -127.0,
            _ => (i as f32 - 16.0) + 0.5,
        });
        blocks.push(ties);
        blocks.push(ties.map(|v| -v));
        blocks.push([0.0; QK]);
        blocks.push([-0.0; QK]);
        blocks.push([1e-45; QK]);
        blocks.push(std::array::from_fn(
            |i| if i % 2 == 0 { 1e-39 } else { -1e-39 },
        ));
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, -0.0];
        for (i, &sp) in specials.iter().enumerate() {
            let mut b: [f32; QK] = std::array::from_fn(|_| unit());
            b[(7 * i) % QK] = sp;
            blocks.push(b);
            blocks.push([sp; QK]);
        }
        for &isa in &isas {
            for x in &blocks {
                let (mut q0, mut q1) = ([0i8; QK], [0i8; QK]);
                let a = quantize_block(x, &mut q0);
                let b = quantize_one(x, &mut q1, Wide::of(isa));
                assert_eq!(q0, q1, "{isa:?} {x:?}");
                assert_eq!(a.2, b.2, "{isa:?} {x:?}");
                for (u, v) in [(a.0, b.0), (a.1, b.1)] {
                    assert!(
                        u.to_bits() == v.to_bits() || (u.is_nan() && v.is_nan()),
                        "{isa:?} {x:?}"
                    );
                }
            }
        }
        // A whole product's activations, on every ISA, split between threads or not: the
        // same bytes.
        let x: Vec<f32> = (0..300 * 96).map(|_| unit() * 3.0).collect();
        let one = Act::new(Isa::Scalar, &x, 300, 96);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for &isa in &isas {
            let two = pool.install(|| Act::new(isa, &x, 300, 96));
            assert_eq!(one.qs, two.qs);
            assert_eq!(one.sum, two.sum);
            assert!(one
                .d
                .iter()
                .zip(&two.d)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            assert!(one
                .s
                .iter()
                .zip(&two.s)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }

    #[test]
    fn blocks_follow_the_reference_formula() {
        let x: Vec<f32> = (0..96).map(|i| (i as f32 - 40.0) * 0.37).collect();
        let act = Act::new(Isa::best(), &x, 1, 96);
        assert_eq!(act.stride, 8);
        let row = act.row(0);
        for b in 0..3 {
            let xs = &x[b * 32..(b + 1) * 32];
            let amax = xs.iter().fold(0f32, |a, v| a.max(v.abs()));
            assert_eq!(row.d_of(b), f16::from_f32(amax / 127.0).to_f32());
            let qs: Vec<i8> = (0..32).map(|e| row.q(b, e)).collect();
            assert!(qs.iter().any(|&q| q.abs() == 127));
            let sum: i32 = qs.iter().map(|&q| i32::from(q)).sum();
            assert_eq!(row.sum_of(b), sum);
            for (&q, &v) in qs.iter().zip(xs) {
                assert!((f32::from(q) * amax / 127.0 - v).abs() <= amax / 254.0 * 1.001);
            }
        }
        // Padding blocks are zero, and the layout is a permutation of the row's bytes.
        assert!((3..8).all(|b| row.d_of(b) == 0.0 && (0..32).all(|e| row.q(b, e) == 0)));
        let mut lanes: Vec<usize> = (0..8).map(lane_at).collect();
        lanes.sort_unstable();
        assert_eq!(lanes, (0..8).collect::<Vec<_>>());
        let mut all: Vec<usize> = (0..8)
            .flat_map(|b| (0..32).map(move |e| qs_at(b, e)))
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..256).collect::<Vec<_>>());
        assert_eq!(
            (0..8).map(slot).collect::<Vec<_>>(),
            [0, 4, 1, 5, 2, 6, 3, 7]
        );
        assert!((0..8).all(|l| slot(LANE_BLOCK[l]) == l));
    }
}

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
    /// Quantizes the `m` rows of `k` values in `x` (`k` a multiple of 32).
    pub(crate) fn new(x: &[f32], m: usize, k: usize) -> Act {
        let blocks = k / QK;
        let stride = blocks.div_ceil(BLOCK_LANES) * BLOCK_LANES;
        let mut act = Act {
            stride,
            d: vec![0.0; m * stride],
            s: vec![0.0; m * stride],
            sum: vec![0; m * stride],
            qs: vec![0; m * stride * QK],
        };
        let mut q = [0i8; QK];
        for r in 0..m {
            for b in 0..blocks {
                let xs = &x[r * k + b * QK..r * k + (b + 1) * QK];
                let (d, s, sum) = quantize_block(xs, &mut q);
                let at = r * stride + lane_at(b);
                // Rounded to `f16` below, all at once.
                act.d[at] = d;
                act.s[at] = s;
                act.sum[at] = sum;
                let qs = &mut act.qs[r * stride * QK..];
                qs[qs_at(b, 0)..qs_at(b, 0) + 16].copy_from_slice(&q[..16]);
                qs[qs_at(b, 16)..qs_at(b, 16) + 16].copy_from_slice(&q[16..]);
            }
        }
        through_f16(&mut act.d);
        through_f16(&mut act.s);
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

/// One block: writes its quants to `q` and returns `(d_a, s_a, Σ q)`. (Written as independent
/// lanes so the compiler vectorizes it; the maximum is the same in any order.)
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
    // `d` and `d · Σ q`, not yet rounded to `f16` (`through_f16` does it).
    (d, sum as f32 * d, sum)
}

/// Rounds every value to the nearest `f16` (ties to even, as GGML's `GGML_FP32_TO_FP16`)
/// and back.
fn through_f16(v: &mut [f32]) {
    for x in v {
        *x = f16::from_f32(*x).to_f32();
    }
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

    #[test]
    fn blocks_follow_the_reference_formula() {
        let x: Vec<f32> = (0..96).map(|i| (i as f32 - 40.0) * 0.37).collect();
        let act = Act::new(&x, 1, 96);
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

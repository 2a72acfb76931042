//! The activation rows of a quantized product, quantized once per call to 8-bit blocks of 32
//! (what llama.cpp's `quantize_row_q8_0_ref`/`quantize_row_q8_1_ref` compute), kept as
//! separate arrays so the SIMD kernels load 8 blocks' scales with one instruction.
//!
//! Per block of 32 values `x`: `amax = max |x|`, `d = amax / 127`, `q = round(x / d)` (half
//! away from zero; `0` when `d = 0`), `d_a = f16(d)` and `s_a = f16(d · Σ q)` — `s_a` is what
//! the Q8_1 blocks of Q4_1/Q5_1 carry; the symmetric types ignore it. Rows are padded with
//! all-zero blocks to a multiple of [`BLOCK_LANES`] blocks (`d_a = s_a = 0`, `q = 0`), so the
//! SIMD kernels read whole groups of 8 and a padded block contributes `+0.0`.

use half::f16;

use super::blocks::QK;
use super::BLOCK_LANES;

/// `m` activation rows as 8-bit blocks.
#[derive(Default)]
pub(crate) struct Act {
    /// Blocks per row, padded to a multiple of [`BLOCK_LANES`].
    pub(crate) stride: usize,
    /// Each block's scale `d_a` (an `f16` value), `[m, stride]`.
    pub(crate) d: Vec<f32>,
    /// Each block's `s_a = f16(d · Σ q)`, `[m, stride]`.
    pub(crate) s: Vec<f32>,
    /// Each block's exact `Σ q`, `[m, stride]` (the SIMD paths take offsets out with it).
    pub(crate) sum: Vec<i32>,
    /// The quants, `[m, stride · 32]`.
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
        for r in 0..m {
            for b in 0..blocks {
                let at = r * stride + b;
                let xs = &x[r * k + b * QK..r * k + (b + 1) * QK];
                let q = &mut act.qs[at * QK..(at + 1) * QK];
                let (d, s, sum) = quantize_block(xs, q);
                act.d[at] = d;
                act.s[at] = s;
                act.sum[at] = sum;
            }
        }
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

/// One block: writes its quants to `q` and returns `(d_a, s_a, Σ q)`.
fn quantize_block(x: &[f32], q: &mut [i8]) -> (f32, f32, i32) {
    let amax = x.iter().fold(0f32, |a, v| a.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut sum = 0i32;
    for (q, &v) in q.iter_mut().zip(x) {
        // `as i8` saturates (and maps NaN to 0), so a non-finite input cannot overflow.
        *q = (v * id).round() as i8;
        sum += i32::from(*q);
    }
    let dh = f16::from_f32(d).to_f32();
    let s = f16::from_f32(sum as f32 * d).to_f32();
    (dh, s, sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_follow_the_reference_formula() {
        let x: Vec<f32> = (0..96).map(|i| (i as f32 - 40.0) * 0.37).collect();
        let act = Act::new(&x, 1, 96);
        assert_eq!(act.stride, 8);
        let row = act.row(0);
        for b in 0..3 {
            let xs = &x[b * 32..(b + 1) * 32];
            let amax = xs.iter().fold(0f32, |a, v| a.max(v.abs()));
            assert_eq!(row.d[b], f16::from_f32(amax / 127.0).to_f32());
            let qs = &row.qs[b * 32..(b + 1) * 32];
            assert!(qs.iter().any(|&q| q.abs() == 127));
            let sum: i32 = qs.iter().map(|&q| i32::from(q)).sum();
            assert_eq!(row.sum[b], sum);
            for (&q, &v) in qs.iter().zip(xs) {
                assert!((f32::from(q) * amax / 127.0 - v).abs() <= amax / 254.0 * 1.001);
            }
        }
        // Padding blocks are zero.
        assert!(row.d[3..].iter().all(|&d| d == 0.0));
        assert!(row.qs[96..].iter().all(|&q| q == 0));
    }
}

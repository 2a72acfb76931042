//! Q8_K: the activation blocks every K-quant weight is multiplied with. 256 values as `i8`
//! with one `f32` scale, plus the sums of each group of 16 (`bsums`), which fold the weights'
//! mins and zero points into integer arithmetic.
//!
//! Quantized as llama.cpp's `quantize_row_q8_K_ref` does, so products track llama.cpp's:
//! with `max` the value of largest magnitude (the first one on ties), `iscale = −127 / max`,
//! `q = min(127, nearest_int(iscale · x))`, `d = 1 / iscale`; an all-zero block has `d = 0`
//! (and, here, zero `bsums` too).

use super::common::{nearest_int, QK_K};

/// One Q8_K block: `x ≈ d · q` for the 256 values of a super-block.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub(crate) struct BlockQ8K {
    /// The scale.
    pub d: f32,
    /// The quantized values, in `−127..=127` when made by [`super::quantize_act`].
    pub qs: [i8; QK_K],
    /// `bsums[g]` = the sum of `qs[16·g..16·g + 16]`.
    pub bsums: [i16; QK_K / 16],
}

impl BlockQ8K {
    /// A block of zeros (`d = 0`).
    pub const ZERO: BlockQ8K = BlockQ8K {
        d: 0.0,
        qs: [0; QK_K],
        bsums: [0; QK_K / 16],
    };

    /// Quantizes 256 values (`quantize_row_q8_K_ref` for one block).
    pub fn quantize(x: &[f32; QK_K]) -> BlockQ8K {
        let mut max = 0f32;
        let mut amax = 0f32;
        for &v in x {
            let ax = v.abs();
            if ax > amax {
                amax = ax;
                max = v;
            }
        }
        if amax == 0.0 {
            return BlockQ8K::ZERO;
        }
        let iscale = -127.0 / max;
        let mut block = BlockQ8K::ZERO;
        for (q, &v) in block.qs.iter_mut().zip(x) {
            *q = nearest_int(iscale * v).min(127) as i8;
        }
        for (g, sum) in block.bsums.iter_mut().enumerate() {
            *sum = block.qs[16 * g..16 * g + 16]
                .iter()
                .map(|&q| q as i16)
                .sum();
        }
        block.d = 1.0 / iscale;
        block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantizes_like_llama_cpp() {
        let mut x = [0f32; QK_K];
        for (i, v) in x.iter_mut().enumerate() {
            *v = (i as f32 - 100.0) * 0.25;
        }
        // Largest magnitude: x[255] = 38.75, so iscale = -127/38.75 and the values flip sign.
        let b = BlockQ8K::quantize(&x);
        assert_eq!(b.d, 1.0 / (-127.0 / 38.75));
        assert_eq!(b.qs[255], -127);
        assert_eq!(b.qs[100], 0);
        // x[0] = -25: -127/38.75 * -25 = 81.935.. -> 82.
        assert_eq!(b.qs[0], 82);
        for g in 0..16 {
            let s: i32 = b.qs[16 * g..16 * g + 16].iter().map(|&q| q as i32).sum();
            assert_eq!(b.bsums[g] as i32, s);
        }
        assert_eq!(BlockQ8K::quantize(&[0.0; QK_K]), BlockQ8K::ZERO);
        // A tie in magnitude keeps the first: max = -2, iscale = 63.5, so 2 -> 127.
        let mut y = [0f32; QK_K];
        y[3] = -2.0;
        y[7] = 2.0;
        let b = BlockQ8K::quantize(&y);
        assert_eq!((b.qs[3], b.qs[7]), (-127, 127));
        let ones = BlockQ8K::quantize(&[1.0; QK_K]);
        assert!(ones.qs.iter().all(|&q| q == -127));
        assert!(ones.bsums.iter().all(|&s| s == -16 * 127));
    }
}

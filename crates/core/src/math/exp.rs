//! `e^x` for `f32`: the one accurate `exp` of the sampler math (the fast weights of
//! `weights.rs` build `2^t` from the same exponent trick with a shorter polynomial, for
//! estimates whose error is bounded and never decides alone).
//!
//! The model has its own (`sieve_kernels::math::exp`, the same Cephes polynomial): it must
//! carry NaN through and cover the whole `f32` range, where this one reads sanitized logits,
//! maps NaN to 0 and clamps at 88.3; see that module for why the two are not shared.

/// `1.5 · 2^23`: adding it to a float of magnitude below `2^22` rounds that to an integer `n`,
/// which then sits in the low bits of the sum; the low 9 bits of the sum's own bits are zero,
/// so `sum.to_bits() << 23` is `n << 23`, `n` moved into the exponent field.
pub(super) const ROUND: f32 = 12_582_912.0;

/// `log₂ e`.
pub(super) const LOG2E: f32 = core::f32::consts::LOG2_E;

/// Above this, [`exp`] overflows.
const EXP_HIGH: f32 = 88.3;

/// `e^x` for `f32`, accurate to about 2 ulp on the range where the result is a normal number,
/// exactly `0` below −87.3 (so `-inf` gives `0`), `inf` above 88.3. Cephes-style: split
/// `x = n·ln2 + r` with `|r| ≤ ln2/2`, a degree-6 polynomial for `e^r`, and `2^n` built from
/// the exponent bits. Branch-free and free of float→int casts (the integer `n` is read from
/// the bits of the rounding sum), so loops over it vectorize.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    if x > EXP_HIGH {
        f32::INFINITY
    } else {
        exp_up_to_high(x)
    }
}

/// [`exp`] without its overflow test: the same value for every `x ≤ 88.3` (and NaN), `e^88.3`
/// for larger `x`. Softmax exponents `(l − max)·scale` are never positive, so the weights
/// kernel skips the test.
#[inline(always)]
pub(super) fn exp_up_to_high(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const LOW: f32 = -87.3;
    let clamped = if x > LOW { x } else { LOW };
    let clamped = if clamped < EXP_HIGH {
        clamped
    } else {
        EXP_HIGH
    };
    let shifted = clamped * LOG2E + ROUND;
    let n = shifted - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let r2 = r * r;
    let p = 1.987_569_1e-4_f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let e_r = p * r2 + r + 1.0;
    // n ∈ [−126, 127]: the exponent field n + 127 of 2^n is in range.
    let pow2n = f32::from_bits((shifted.to_bits() << 23).wrapping_add(1.0f32.to_bits()));
    let y = e_r * pow2n;
    if x >= LOW {
        y
    } else {
        0.0 // NaN too
    }
}

/// `2^f` for `|f| ≤ 1/2`: the degree-4 polynomial `1 + c₁f + … + c₄f⁴` closest to `2^f` in
/// relative error (at most 2.82e-6; 2.913e-6 evaluated in `f32` by Horner's rule, as here,
/// over every `f32` in the range), exactly 1 at `f = 0`. Coefficients: a Lawson (iteratively
/// reweighted least squares) fit of the relative error on 20 001 points of `[−1/2, 1/2]`.
/// Only for [`fast_weight`], whose error is bounded and never decides alone.
#[inline(always)]
pub(super) fn pow2_fraction(f: f32) -> f32 {
    const C: [f32; 4] = [0.693_124_2, 0.240_240_99, 0.055_906_434, 0.009_582_855];
    let p = C[3];
    let p = p * f + C[2];
    let p = p * f + C[1];
    let p = p * f + C[0];
    p * f + 1.0
}

//! Softmax weights and their sums: exact (the weights every probability is computed from) and
//! fast (a cheaper estimate of a sum, with a proven bound on its distance).

use alloc::vec::Vec;
use core::mem::MaybeUninit;

use super::exp::{exp_up_to_high, pow2_fraction, LOG2E, ROUND};
use super::LANES;

/// Writes the softmax weights `out[i] = e^((xs[i] − shift)·scale)` ([`exp`](super::exp())(super::exp())) and returns their
/// sum: `shift` is the largest of `xs` and `scale > 0`, so every exponent is `≤ 0` (an
/// exponent above 88.3 would give `e^88.3`, not `inf`).
///
/// Per block of 1024 values: the weights in one vectorized loop that also adds them into
/// 8 `f32` lanes (lane `j` takes the values at `j mod 8`, in order); the lanes, then any
/// values past the last multiple of 8, are added in order; the block sums are added in
/// `f64`. The operations and the order of additions are fixed, so the result is the same on
/// every machine.
///
/// # Panics
/// If `out` is shorter than `xs`.
pub fn exp_shifted_into(xs: &[f32], shift: f32, scale: f32, out: &mut [f32]) -> f64 {
    weights_kernel(xs, &mut out[..xs.len()], |x| {
        exp_up_to_high((x - shift) * scale)
    })
}

/// [`exp_shifted_into`] into a vector, whose contents it replaces (without first zeroing
/// them, as resizing would).
pub fn exp_shifted_to_vec(xs: &[f32], shift: f32, scale: f32, out: &mut Vec<f32>) -> f64 {
    weights_to_vec(xs, out, |x| exp_up_to_high((x - shift) * scale))
}

/// The fast weight of `x ≤ shift`: `2^t` with `t = (x − shift)·per_unit`, `per_unit =
/// scale·log₂e` (both rounded to `f32`), `t ≤ 0` raised to `−126` if below (`-inf` and NaN
/// too): `t = n + f` (`n` an integer, `|f| ≤ 1/2`, `f` exact), `2^f` by [`pow2_fraction`], `n`
/// added to its exponent bits. About 16 operations instead of [`exp`](super::exp())'s 30 (`t` is not split
/// against `ln 2`). See [`fast_weight_sum_below`] for how far it may be from the weight
/// [`exp_shifted_into`] writes.
#[inline(always)]
pub(super) fn fast_weight(x: f32, shift: f32, per_unit: f32) -> f32 {
    let t = (x - shift) * per_unit;
    // NaN (`0 · -inf`) becomes −126 too.
    let t = if t > -126.0 { t } else { -126.0 };
    let shifted = t + ROUND;
    let f = t - (shifted - ROUND);
    f32::from_bits(
        pow2_fraction(f)
            .to_bits()
            .wrapping_add(shifted.to_bits() << 23),
    )
}

/// Values per `f32` lane that [`fast_weight_sum_below`] adds before moving the lane's sum into
/// `f64`.
const FAST_SUM_RUN: usize = 8;

/// Bound on the relative error of a fast weight, the part that does not grow with the
/// exponent: the worst relative error of [`exp`](super::exp()) over every `f32` in `[−87.3, 0]`
/// (8.14e-8) plus that of the fast `2^t` over every `f32` `t` in `[−124.5, 0]` (2.913e-6),
/// both measured exhaustively against `f64` (`math::tests::exhaustive_error_bounds`, run
/// with `--ignored` in release), rounded up.
pub const FAST_WEIGHT_REL_BASE: f64 = 3.0e-6;

/// Bound on the relative error of a fast weight per unit of `|e|`, `e = (x − shift)·scale`:
/// the exponents of the two weights are rounded differently (`(x − shift)·scale` once, against
/// `scale·log₂e` and `(x − shift)·per_unit` for the fast one), three roundings of at most
/// `2^-24` relative, plus the relative error of `log₂e` as an `f32` (1.335e-8):
/// `(1.335e-8 + 3·2^-24)·(1 + 2^-23) = 1.9217e-7`, rounded up.
pub const FAST_WEIGHT_REL_PER_UNIT: f64 = 1.93e-7;

/// The deepest `|e|` for which [`FAST_WEIGHT_REL_BASE`] and [`FAST_WEIGHT_REL_PER_UNIT`]
/// bound a fast weight (below it the weights approach the smallest normal `f32`, and the fast
/// one is clamped at `2^-126`); deeper than any `C ≤` this, both weights are below
/// `1.01·e^-C`.
pub const FAST_WEIGHT_MAX_DEPTH: f64 = 80.0;

/// The sum of the fast weights of the values of `xs` below `floor` (`shift` the largest of
/// `xs`, `scale > 0` with `scale·log₂e` finite): a cheaper stand-in for the sum of the weights
/// [`exp_shifted_into`] writes for them, for bounding the mass of a tail (where `top_p`
/// cuts), never for a probability.
///
/// # How far from the exact weights
/// Let `w_i` be the weight [`exp_shifted_into`] writes for `x_i` (exponent `e_i = (x_i −
/// shift)·scale` in `f32`) and `v_i` the fast one. For `|e_i| ≤ 86` both are normal numbers
/// and, from the exponents' roundings and the two kernels' own errors,
/// `|ln(v_i / w_i)| ≤ FAST_WEIGHT_REL_BASE + FAST_WEIGHT_REL_PER_UNIT·|e_i|`; for `|e_i| > C`
/// (`C ≤ FAST_WEIGHT_MAX_DEPTH`) both are below `1.01·e^-C`. No result depends on the
/// target: the operations per value are fixed, without fused multiply-adds, and so is the
/// order of additions.
///
/// # Order of additions
/// In runs of 64 values, each of 8 `f32` lanes adds 8 terms (lane `j` the values at `j mod
/// 8`; a value at or above `floor` adds 0), starting from 0; the run's lane sums are then
/// added into 8 `f64` lanes; the `f64` lanes are added in order, then the values past the
/// last whole run, in `f64`. So the result is within [`fast_weight_sum_rounding`] of the
/// exact sum of those `v_i`: the rounding is relative to the tail's own mass, whatever lies
/// above `floor`.
pub fn fast_weight_sum_below(xs: &[f32], shift: f32, scale: f32, floor: f32) -> f64 {
    let per_unit = scale * LOG2E;
    let weight = |x: f32| {
        let v = fast_weight(x, shift, per_unit);
        if x < floor {
            v
        } else {
            0.0
        }
    };
    let mut acc = [0.0f64; LANES];
    let mut runs = xs.chunks_exact(LANES * FAST_SUM_RUN);
    for run in &mut runs {
        let mut part = [0.0f32; LANES];
        for x8 in run.chunks_exact(LANES) {
            for i in 0..LANES {
                part[i] += weight(x8[i]);
            }
        }
        for i in 0..LANES {
            acc[i] += part[i] as f64;
        }
    }
    let mut total = 0.0f64;
    for a in acc {
        total += a;
    }
    for &x in runs.remainder() {
        total += weight(x) as f64;
    }
    total
}

/// A bound on how far [`fast_weight_sum_below`] over `n` values, having returned `total`, is
/// from the exact sum of the `f32` weights it adds, with room for `f64` sums of up to `n` of
/// those weights beside it: each `f32` lane sum of 8 positive values is within `7u/(1 − 7u)` of theirs
/// (`u = 2^-24`, seven roundings of partial sums no larger than the whole), and a sum of at
/// most `n + 64` positive terms in `f64` within `(n + 64)·2^-53` of theirs.
pub fn fast_weight_sum_rounding(total: f64, n: usize) -> f64 {
    const U: f64 = 1.0 / (1u64 << 24) as f64;
    let lanes = 7.0 * U / (1.0 - 7.0 * U);
    let f64_sums = 2.0 * (n as f64 + 64.0) * (f64::EPSILON / 2.0);
    (lanes + f64_sums) * 1.000_001 * total.max(0.0)
}

/// Writes `out[i]` = the fast weight of `xs[i]`: the value [`fast_weight_sum_below`] adds for
/// it, bit for bit.
///
/// # Panics
/// If `out` is shorter than `xs`.
pub fn fast_weights_into(xs: &[f32], shift: f32, scale: f32, out: &mut [f32]) {
    let per_unit = scale * LOG2E;
    for (o, &x) in out[..xs.len()].iter_mut().zip(xs) {
        *o = fast_weight(x, shift, per_unit);
    }
}

/// The sum of `xs` in `f64`: 8 `f64` lanes (lane `j` the values at `j mod 8`, in order),
/// added in order, then the values past the last multiple of 8. Fixed order, vectorizes.
pub fn sum_f64(xs: &[f32]) -> f64 {
    let mut acc = [0.0f64; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for i in 0..LANES {
            acc[i] += chunk[i] as f64;
        }
    }
    let mut total = 0.0f64;
    for &a in &acc {
        total += a;
    }
    for &x in tail {
        total += x as f64;
    }
    total
}

/// The sum in `f64` of the `ws[i]` whose `xs[i]` is below `floor`, in the order of
/// [`sum_f64`].
///
/// # Panics
/// If `ws` is shorter than `xs`.
pub fn sum_f64_below(xs: &[f32], ws: &[f32], floor: f32) -> f64 {
    let ws = &ws[..xs.len()];
    let mut acc = [0.0f64; LANES];
    let chunks = xs.chunks_exact(LANES).zip(ws.chunks_exact(LANES));
    for (x8, w8) in chunks {
        for i in 0..LANES {
            acc[i] += if x8[i] < floor { w8[i] as f64 } else { 0.0 };
        }
    }
    let mut total = 0.0f64;
    for &a in &acc {
        total += a;
    }
    let whole = xs.len() / LANES * LANES;
    for (&x, &w) in xs[whole..].iter().zip(&ws[whole..]) {
        if x < floor {
            total += w as f64;
        }
    }
    total
}

/// [`weights_kernel`] into a vector, whose contents it replaces without first zeroing them.
#[allow(unsafe_code)] // `set_len` over the slots the kernel has just written
#[inline(always)]
fn weights_to_vec(xs: &[f32], out: &mut Vec<f32>, weight: impl Fn(f32) -> f32) -> f64 {
    out.clear();
    out.reserve(xs.len());
    let total = weights_kernel(xs, &mut out.spare_capacity_mut()[..xs.len()], weight);
    // SAFETY: the capacity is at least `xs.len()` and the kernel wrote each of the first
    // `xs.len()` slots.
    unsafe { out.set_len(xs.len()) };
    total
}

/// A slot the weights kernel writes into: an `f32`, or a not yet initialized one.
trait Slot {
    fn put(&mut self, value: f32);
}
impl Slot for f32 {
    #[inline(always)]
    fn put(&mut self, value: f32) {
        *self = value;
    }
}
impl Slot for MaybeUninit<f32> {
    #[inline(always)]
    fn put(&mut self, value: f32) {
        self.write(value);
    }
}

/// Writes `out[i] = weight(xs[i])` (`out` as long as `xs`) and returns the sum, in the order
/// [`exp_shifted_into`] documents.
#[inline(always)]
fn weights_kernel<S: Slot>(xs: &[f32], out: &mut [S], weight: impl Fn(f32) -> f32) -> f64 {
    let mut total = 0.0f64;
    for (xb, ob) in xs.chunks(1024).zip(out.chunks_mut(1024)) {
        let mut acc = [0.0f32; LANES];
        // 16 at a time: two independent 8-wide chains, so the polynomial's latency overlaps.
        let mut xc = xb.chunks_exact(2 * LANES);
        let mut oc = ob.chunks_exact_mut(2 * LANES);
        for (x16, o16) in (&mut xc).zip(&mut oc) {
            let e: [f32; 2 * LANES] = core::array::from_fn(|i| weight(x16[i]));
            for i in 0..2 * LANES {
                o16[i].put(e[i]);
            }
            for i in 0..LANES {
                acc[i] += e[i];
            }
            for i in 0..LANES {
                acc[i] += e[LANES + i];
            }
        }
        let (xr, or) = (xc.remainder(), oc.into_remainder());
        let whole = xr.len() / LANES * LANES;
        for (x8, o8) in xr[..whole]
            .chunks_exact(LANES)
            .zip(or.chunks_exact_mut(LANES))
        {
            for i in 0..LANES {
                let e = weight(x8[i]);
                o8[i].put(e);
                acc[i] += e;
            }
        }
        let mut block = 0.0f32;
        for &a in &acc {
            block += a;
        }
        for (o, &x) in or[whole..].iter_mut().zip(&xr[whole..]) {
            let e = weight(x);
            o.put(e);
            block += e;
        }
        total += block as f64;
    }
    total
}

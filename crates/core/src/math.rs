//! Vectorizable kernels over logit slices: the maximum, a fast `exp`, and the sum of
//! exponentials (the softmax weights, exactly as every probability is computed; and a cheaper
//! estimate of their sum, [`fast_weight_sum_below`], with a proven bound on its distance, for
//! bounding mass where a decision does not need every weight). Written as fixed-width lane loops that LLVM turns into SIMD on the baseline
//! target (SSE2 on x86-64, NEON on aarch64), so they need no `std`. The only `unsafe` is the
//! AVX2 kernels of [`scan_at_least`] and [`positions_at_least`] and the `set_len` of the
//! weights kernels, allowed there alone (the crate denies `unsafe_code`).
//!
//! No result depends on the target: every kernel does the same `f32` operations per value in
//! the same order (there is no fused multiply-add unless written, and none is), and every sum
//! adds in a fixed order, whatever width the compiler vectorizes to.

use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// Number of independent lanes the kernels accumulate in.
const LANES: usize = 8;

/// Lanes of [`max`]: four independent 8-wide chains, so the loop is bound by loads rather than
/// by the latency of one chain of comparisons.
const MAX_LANES: usize = 32;

/// How a logit is read into [`Candidates`](crate::Candidates) (on load, on `set_logit`, and
/// when a plugin hands candidates back): NaN as `-inf` (a masked token), `+inf` as
/// `f32::MAX` (so probabilities stay finite).
#[inline(always)]
pub fn sanitize(x: f32) -> f32 {
    if x.is_nan() {
        f32::NEG_INFINITY
    } else {
        x.min(f32::MAX)
    }
}

/// The largest value, ignoring NaN; `-inf` for an empty slice.
///
/// This is also the *floor* that `sieve bench` compares pipelines against: one pass that reads
/// every logit, as fast as this machine reads them.
#[inline]
pub fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; MAX_LANES];
    let chunks = xs.chunks_exact(MAX_LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a = if x > *a { x } else { *a };
        }
    }
    fold_max(acc, tail)
}

/// If no value of `xs` is NaN or `+inf` (`-inf` is fine): its largest value (`-inf` for an
/// empty slice), and a value that at least 32 of them reach (the smallest of the 32 lanes'
/// maxima, each another value; `-inf` below 32 values), a starting threshold for a top-k
/// scan. `None` otherwise. [`max`] and the check of [`none_nan_or_pos_inf`] in one read.
///
/// The check rides on a sum: a NaN makes the lane sums NaN and a `+inf` makes them `+inf` or
/// NaN, while finite values and `-inf` leave them below `+inf` or at `-inf`. Only finite values
/// whose sum overflows raise a false alarm, which a second, exact pass then clears.
pub fn max_if_clean(xs: &[f32]) -> Option<(f32, f32)> {
    let mut acc = [f32::NEG_INFINITY; MAX_LANES];
    let mut sum = [0.0f32; MAX_LANES];
    let chunks = xs.chunks_exact(MAX_LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for i in 0..MAX_LANES {
            let x = chunk[i];
            sum[i] += x;
            acc[i] = if x > acc[i] { x } else { acc[i] };
        }
    }
    let total = sum.iter().chain(tail).fold(0.0f32, |s, &x| s + x);
    let clean = total < f32::INFINITY || total == f32::NEG_INFINITY;
    let reached_by_32 = acc.iter().fold(f32::INFINITY, |m, &a| m.min(a));
    (clean || xs.iter().all(|&x| x < f32::INFINITY)).then(|| (fold_max(acc, tail), reached_by_32))
}

/// The largest of the lanes and the tail: the lanes folded pairwise (each step vectorizes).
#[inline(always)]
fn fold_max(mut acc: [f32; MAX_LANES], tail: &[f32]) -> f32 {
    let mut width = MAX_LANES / 2;
    while width > 0 {
        for i in 0..width {
            let other = acc[i + width];
            acc[i] = if other > acc[i] { other } else { acc[i] };
        }
        width /= 2;
    }
    let mut m = acc[0];
    for &x in tail {
        if x > m {
            m = x;
        }
    }
    m
}

/// Whether no value of `xs` is NaN or `+inf` (`-inf` is fine): one vectorized read
/// ([`max_if_clean`]).
pub fn none_nan_or_pos_inf(xs: &[f32]) -> bool {
    max_if_clean(xs).is_some()
}

/// `1.5 · 2^23`: adding it to a float of magnitude below `2^22` rounds that to an integer `n`,
/// which then sits in the low bits of the sum; the low 9 bits of the sum's own bits are zero,
/// so `sum.to_bits() << 23` is `n << 23`, `n` moved into the exponent field.
const ROUND: f32 = 12_582_912.0;

/// `log₂ e`.
const LOG2E: f32 = core::f32::consts::LOG2_E;

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
fn exp_up_to_high(x: f32) -> f32 {
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
fn pow2_fraction(f: f32) -> f32 {
    const C: [f32; 4] = [0.693_124_2, 0.240_240_99, 0.055_906_434, 0.009_582_855];
    let p = C[3];
    let p = p * f + C[2];
    let p = p * f + C[1];
    let p = p * f + C[0];
    p * f + 1.0
}

/// Writes the softmax weights `out[i] = e^((xs[i] − shift)·scale)` ([`exp`]) and returns their
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
/// added to its exponent bits. About 16 operations instead of [`exp`]'s 30 (`t` is not split
/// against `ln 2`). See [`fast_weight_sum_below`] for how far it may be from the weight
/// [`exp_shifted_into`] writes.
#[inline(always)]
fn fast_weight(x: f32, shift: f32, per_unit: f32) -> f32 {
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
/// exponent: the worst relative error of [`exp`] over every `f32` in `[−87.3, 0]`
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

/// The sum of `xs` in 8 `f32` lanes (a fixed order of additions that vectorizes).
pub fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a += x;
        }
    }
    let mut total = 0.0f32;
    for &x in acc.iter().chain(tail) {
        total += x;
    }
    total
}

/// Values per block of [`scan_at_least`] and [`positions_at_least`].
pub const SCAN_BLOCK: usize = 64;

/// Appends `base + i` to `out` for every `i` with `xs[i] >= t`, in order (`xs` at most
/// `u32::MAX` long).
///
/// With AVX2 (x86-64-v3 builds) a block of 32 values without a hit costs one fold of their
/// maximum and one compare; in a block with hits, each group of 8 is packed without a branch
/// (the positions of its hits moved to the front of a vector by a shuffle from a table,
/// stored, the end advanced by their count), so many hits cost no mispredicted branches
/// either. Elsewhere a portable loop gives the same positions.
#[allow(unsafe_code)] // the AVX2 kernel below; the portable loop is safe code
pub fn positions_at_least(xs: &[f32], t: f32, base: u32, out: &mut Vec<u32>) {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    {
        // SAFETY: compiled only when the whole build targets AVX2, as for `scan_at_least`.
        unsafe { avx2::positions_at_least(xs, t, base, out) }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
    scan_at_least(xs, t, |positions| {
        out.extend(positions.iter().map(|&i| base.wrapping_add(i)));
        t
    });
}

/// Scans `xs` (at most `u32::MAX` long) for values at or above a threshold, a block of
/// [`SCAN_BLOCK`] at a time: for each block holding one, calls `on_hits(positions)` with the
/// positions in `xs` of the block's values at or above the current threshold, increasing;
/// `on_hits` returns the threshold for the rest of the scan (a running top-k raises it).
///
/// With AVX2 (x86-64-v3 builds) a block without a hit costs one fold of its maximum and one
/// compare, and a block with hits has them packed without a branch (as in
/// [`positions_at_least`]), so a scan runs at about the speed of reading plus one call per
/// block with hits; elsewhere a portable loop makes the same calls.
#[allow(unsafe_code)] // the AVX2 kernel below; the portable loop is safe code
pub fn scan_at_least(xs: &[f32], threshold: f32, mut on_hits: impl FnMut(&[u32]) -> f32) {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    {
        // SAFETY: this branch is compiled only when the whole build targets AVX2
        // (`target_feature = "avx2"`), so the CPU running it has the instructions.
        unsafe { avx2::scan_at_least(xs, threshold, &mut on_hits) }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
    {
        let mut t = threshold;
        let mut hits = [0u32; SCAN_BLOCK];
        for (b, block) in xs.chunks(SCAN_BLOCK).enumerate() {
            let mut n = 0;
            for (j, &x) in block.iter().enumerate() {
                hits[n] = (b * SCAN_BLOCK + j) as u32;
                n += usize::from(x >= t);
            }
            if n > 0 {
                t = on_hits(&hits[..n]);
            }
        }
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
#[allow(unsafe_code)] // the documented vectorized kernels: unaligned loads and stores in bounds
mod avx2 {
    use super::SCAN_BLOCK;
    use alloc::vec::Vec;
    use core::arch::x86_64::{
        __m128i, __m256, __m256i, _mm256_add_epi32, _mm256_cmp_ps, _mm256_cvtepu8_epi32,
        _mm256_loadu_ps, _mm256_max_ps, _mm256_movemask_ps, _mm256_permutevar8x32_epi32,
        _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_epi32, _mm256_storeu_si256, _mm_loadl_epi64,
        _CMP_GE_OQ, _CMP_NLT_UQ,
    };

    /// For each 8-bit mask, the indices of its set bits in increasing order, then zeros: the
    /// shuffle that packs a group's hits to the front.
    static PACK: [[u8; 8]; 256] = {
        let mut table = [[0u8; 8]; 256];
        let mut mask = 0;
        while mask < 256 {
            let (mut bit, mut k) = (0, 0);
            while bit < 8 {
                if mask & (1 << bit) != 0 {
                    table[mask][k] = bit as u8;
                    k += 1;
                }
                bit += 1;
            }
            mask += 1;
        }
        table
    };

    /// The 8 values at `p` compared with `tv`: all ones where `≥`.
    ///
    /// # Safety
    /// The CPU must support AVX2, and `p` must point to 8 readable `f32`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn ge8(p: *const f32, tv: __m256) -> __m256 {
        // SAFETY: the caller's promise.
        _mm256_cmp_ps::<_CMP_GE_OQ>(unsafe { _mm256_loadu_ps(p) }, tv)
    }

    /// Values per block of [`positions_at_least`]: fewer than [`SCAN_BLOCK`], as with many hits
    /// every block is packed and a smaller one packs fewer groups without hits.
    const PACK_BLOCK: usize = 32;

    /// Whether any of the `B` values at `p` may be `≥ tv`: their maximum, folded from
    /// the last group to the first, compared once. `_mm256_max_ps(a, b)` returns `b` when
    /// either is NaN, so a NaN in the last group reaches the maximum (and counts as a
    /// possible hit, which the exact per-group compares then reject) while any other NaN is
    /// passed over: a block with a value `≥ tv` is never missed.
    ///
    /// # Safety
    /// The CPU must support AVX2, and `p` must point to `B` readable `f32` (`B` a multiple of
    /// 8).
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn any_ge<const B: usize>(p: *const f32, tv: __m256) -> bool {
        // SAFETY: the caller's promise; every `p + 8g` (g < B / 8) starts 8 readable `f32`.
        let load = |g: usize| unsafe { _mm256_loadu_ps(p.add(8 * g)) };
        let groups = B / 8;
        let mut max = load(groups - 1);
        for g in (0..groups - 1).rev() {
            max = _mm256_max_ps(load(g), max);
        }
        _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_NLT_UQ>(max, tv)) != 0
    }

    /// Writes `first + j` for each `j` with `p[j] ≥ tv` (`j < B`), in order, from `dst` on,
    /// and returns how many: per group of 8, one compare, a shuffle from [`PACK`], one store
    /// of 8, no branch. Up to `B` slots from `dst` are written, garbage past the count.
    ///
    /// # Safety
    /// The CPU must support AVX2, `p` must point to `B` readable `f32` (`B` a multiple of 8),
    /// and `dst` to `B` writable `u32`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn pack<const B: usize>(p: *const f32, first: u32, tv: __m256, dst: *mut u32) -> usize {
        let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut n = 0;
        for g in (0..B).step_by(8) {
            // SAFETY: the caller's promise: `p + g` starts 8 readable `f32`; `n + 8 ≤ g + 8 ≤
            // B`, so the 8 `u32` stored at `dst + n` are writable; `PACK[mask]` is 8 bytes.
            unsafe {
                let mask = _mm256_movemask_ps(ge8(p.add(g), tv)) as usize;
                let at =
                    _mm256_add_epi32(_mm256_set1_epi32(first.wrapping_add(g as u32) as i32), iota);
                let order = _mm_loadl_epi64(PACK[mask].as_ptr().cast::<__m128i>());
                let packed = _mm256_permutevar8x32_epi32(at, _mm256_cvtepu8_epi32(order));
                _mm256_storeu_si256(dst.add(n).cast::<__m256i>(), packed);
                n += mask.count_ones() as usize;
            }
        }
        n
    }

    /// See [`super::positions_at_least`].
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn positions_at_least(xs: &[f32], t: f32, base: u32, out: &mut Vec<u32>) {
        let tv = _mm256_set1_ps(t);
        let p = xs.as_ptr();
        let whole = xs.len() / PACK_BLOCK * PACK_BLOCK;
        for i in (0..whole).step_by(PACK_BLOCK) {
            // SAFETY: `i + PACK_BLOCK <= whole <= xs.len()`: the block lies within `xs`; the
            // reserve makes room for `pack`'s writes past the end; `set_len` keeps the old
            // elements and the hits just written.
            unsafe {
                if any_ge::<PACK_BLOCK>(p.add(i), tv) {
                    out.reserve(PACK_BLOCK);
                    let len = out.len();
                    let n = pack::<PACK_BLOCK>(
                        p.add(i),
                        base.wrapping_add(i as u32),
                        tv,
                        out.as_mut_ptr().add(len),
                    );
                    out.set_len(len + n);
                }
            }
        }
        for (j, &x) in xs.iter().enumerate().skip(whole) {
            if x >= t {
                out.push(base.wrapping_add(j as u32));
            }
        }
    }

    /// See [`super::scan_at_least`].
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn scan_at_least(
        xs: &[f32],
        threshold: f32,
        on_hits: &mut impl FnMut(&[u32]) -> f32,
    ) {
        let mut t = threshold;
        let mut tv = _mm256_set1_ps(t);
        let mut hits = [0u32; SCAN_BLOCK];
        let p = xs.as_ptr();
        let whole = xs.len() / SCAN_BLOCK * SCAN_BLOCK;
        for i in (0..whole).step_by(SCAN_BLOCK) {
            // SAFETY: `i + SCAN_BLOCK <= whole <= xs.len()`: the block lies within `xs`, and
            // `hits` holds SCAN_BLOCK slots.
            unsafe {
                if any_ge::<SCAN_BLOCK>(p.add(i), tv) {
                    // None after all if the block's possible hit was a NaN.
                    let n = pack::<SCAN_BLOCK>(p.add(i), i as u32, tv, hits.as_mut_ptr());
                    if n > 0 {
                        t = on_hits(&hits[..n]);
                        tv = _mm256_set1_ps(t);
                    }
                }
            }
        }
        let mut n = 0;
        for (j, &x) in xs.iter().enumerate().skip(whole) {
            hits[n] = j as u32;
            n += usize::from(x >= t);
        }
        if n > 0 {
            on_hits(&hits[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_libm_closely() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = (x as f64).exp();
            let got = exp(x) as f64;
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-100.0), 0.0);
        assert_eq!(exp(100.0), f32::INFINITY);
    }

    #[test]
    fn the_finite_check_accepts_neg_inf_and_refuses_nan_and_pos_inf() {
        let mut xs = alloc::vec![0.5f32; 100];
        xs[3] = f32::NEG_INFINITY;
        assert!(none_nan_or_pos_inf(&xs));
        for (at, bad) in [
            (40, f32::NAN),
            (99, f32::NAN),
            (7, f32::INFINITY),
            (98, f32::INFINITY),
        ] {
            let mut ys = xs.clone();
            ys[at] = bad;
            assert!(!none_nan_or_pos_inf(&ys), "{bad} at {at}");
        }
        assert!(none_nan_or_pos_inf(&[]));
        // Finite values whose sum overflows (a false alarm of the fast check) are clean.
        let big = alloc::vec![f32::MAX; 100];
        assert_eq!(max_if_clean(&big), Some((f32::MAX, f32::MAX)));
        let mut ys = big.clone();
        ys[50] = f32::NEG_INFINITY;
        assert_eq!(max_if_clean(&ys).map(|m| m.0), Some(f32::MAX));
        assert_eq!(max_if_clean(&xs).map(|m| m.0), Some(0.5));
        assert_eq!(
            max_if_clean(&[f32::NEG_INFINITY; 40]),
            Some((f32::NEG_INFINITY, f32::NEG_INFINITY))
        );
        // At least 32 values reach the second value: 32 lanes, each with a maximum of its own.
        let ws: Vec<f32> = (0..1000).map(|i| ((i * 7919) % 1000) as f32).collect();
        let (max, floor) = max_if_clean(&ws).unwrap();
        assert_eq!(max, 999.0);
        assert!(ws.iter().filter(|&&w| w >= floor).count() >= 32);
        assert_eq!(max_if_clean(&[1.0; 31]), Some((1.0, f32::NEG_INFINITY)));
    }

    #[test]
    fn positions_at_least_finds_every_hit_in_order() {
        let xs: alloc::vec::Vec<f32> = (0..1003).map(|i| ((i * 37) % 101) as f32).collect();
        let mut got = alloc::vec::Vec::new();
        positions_at_least(&xs, 97.0, 5, &mut got);
        let want: alloc::vec::Vec<u32> = (0..xs.len())
            .filter(|&i| xs[i] >= 97.0)
            .map(|i| i as u32 + 5)
            .collect();
        assert_eq!(got, want);
        got.clear();
        positions_at_least(&[f32::NEG_INFINITY, 0.0], f32::NEG_INFINITY, 0, &mut got);
        assert_eq!(got, [0, 1]);
    }

    #[test]
    fn max_ignores_nan_and_handles_tails() {
        assert_eq!(max(&[]), f32::NEG_INFINITY);
        assert_eq!(max(&[1.0, f32::NAN, 3.0]), 3.0);
        let xs: alloc::vec::Vec<f32> = (0..37).map(|i| (i * 7 % 37) as f32).collect();
        assert_eq!(max(&xs), 36.0);
    }

    #[test]
    fn exp_sum_is_the_sum_of_outputs() {
        let xs: alloc::vec::Vec<f32> = (0..2500).map(|i| (i % 17) as f32 * 0.1).collect();
        let mut out = alloc::vec![0.0; xs.len()];
        let total = exp_shifted_into(&xs, 1.6, 1.0, &mut out);
        let direct: f64 = out.iter().map(|&e| e as f64).sum();
        assert!((total - direct).abs() / direct < 1e-6);
        assert!((out[0] as f64 - (-1.6f64).exp()).abs() < 1e-7);
    }

    /// Values from a fixed xorshift stream in `[-8, 8)`, with some NaN, `±inf` and repeats.
    fn assorted(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed | 1;
        (0..n)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                match state % 97 {
                    0 => f32::NAN,
                    1 => f32::NEG_INFINITY,
                    2 => f32::INFINITY,
                    3 => 2.0, // repeats, for ties with a threshold
                    _ => ((state >> 40) as f32 / (1u64 << 24) as f32) * 16.0 - 8.0 + i as f32 * 0.0,
                }
            })
            .collect()
    }

    #[test]
    fn positions_at_least_agrees_with_a_plain_filter_at_every_density_and_length() {
        for n in [0, 1, 7, 31, 32, 33, 64, 65, 100, 1000, 4099] {
            let xs = assorted(n, n as u64 + 3);
            for t in [
                -9.0,
                -4.0,
                0.0,
                2.0,
                6.0,
                7.9,
                f32::NEG_INFINITY,
                f32::INFINITY,
            ] {
                let mut got = alloc::vec![7u32]; // appended to, not replaced
                positions_at_least(&xs, t, 10, &mut got);
                let want: Vec<u32> = core::iter::once(7)
                    .chain((0..n).filter(|&i| xs[i] >= t).map(|i| i as u32 + 10))
                    .collect();
                assert_eq!(got, want, "n = {n}, t = {t}");
            }
        }
    }

    #[test]
    fn scan_at_least_calls_back_per_block_with_the_running_threshold() {
        // The documented calls: per block of SCAN_BLOCK, the positions at or above the
        // threshold as it stands; here each call raises it to the largest value seen.
        let reference = |xs: &[f32]| {
            let mut t = f32::MIN;
            let mut calls = Vec::new();
            for (b, block) in xs.chunks(SCAN_BLOCK).enumerate() {
                let hits: Vec<u32> = (0..block.len())
                    .filter(|&j| block[j] >= t)
                    .map(|j| (b * SCAN_BLOCK + j) as u32)
                    .collect();
                if !hits.is_empty() {
                    t = hits.iter().map(|&i| xs[i as usize]).fold(t, f32::max);
                    calls.push(hits);
                }
            }
            calls
        };
        for n in [5, 32, 33, 1000, 4099] {
            let xs = assorted(n, 11 * n as u64);
            let mut calls = Vec::new();
            scan_at_least(&xs, f32::MIN, |hits| {
                calls.push(hits.to_vec());
                let t = calls.iter().flatten().map(|&i| xs[i as usize]);
                t.fold(f32::MIN, f32::max)
            });
            assert_eq!(calls, reference(&xs), "n = {n}");
        }
    }

    #[test]
    fn a_nan_hides_no_hit() {
        // A NaN in each group of a block, the only hit in another group of it.
        for nan_at in 0..SCAN_BLOCK {
            for hit_at in (0..SCAN_BLOCK).filter(|&h| h != nan_at) {
                let mut xs = alloc::vec![0.0f32; 2 * SCAN_BLOCK];
                xs[nan_at] = f32::NAN;
                xs[hit_at] = 1.0;
                let mut got = Vec::new();
                positions_at_least(&xs, 0.5, 0, &mut got);
                assert_eq!(got, [hit_at as u32], "NaN at {nan_at}");
            }
        }
    }

    /// `(shift, scale, values)`: values from the maximum down to far below it (`-inf` too),
    /// at several scales.
    fn depths() -> Vec<(f32, f32, Vec<f32>)> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        [1.0f32, 1.0 / 0.7, 0.3, 3.0, 1e-3, 50.0, 1e-30]
            .into_iter()
            .map(|scale| {
                let shift = 3.0 + 20.0 * next();
                let xs = (0..20_000)
                    .map(|i| match i % 1000 {
                        0 => f32::NEG_INFINITY,
                        1 => shift,
                        _ => shift - next() * next() * 100.0 / scale.clamp(0.05, 1.0),
                    })
                    .collect();
                (shift, scale, xs)
            })
            .collect()
    }

    #[test]
    fn fast_weights_are_within_their_documented_bound() {
        // |ln(v/w)| ≤ BASE + PER_UNIT·|e| for |e| ≤ 86, both below 1.01·e^-C deeper than any
        // C ≤ 80; exactly 1 at the maximum; 2^-126 (the clamp) for -inf, whose weight is 0.
        let mut worst = 0.0f64;
        for (shift, scale, xs) in depths() {
            let mut exact = alloc::vec![0.0; xs.len()];
            exp_shifted_into(&xs, shift, scale, &mut exact);
            let mut fast = alloc::vec![0.0; xs.len()];
            fast_weights_into(&xs, shift, scale, &mut fast);
            for ((&x, &w), &v) in xs.iter().zip(&exact).zip(&fast) {
                let e = ((x - shift) * scale) as f64;
                if x == shift {
                    assert_eq!((v, w), (1.0, 1.0));
                } else if x == f32::NEG_INFINITY {
                    assert_eq!((v, w), (f32::from_bits(1 << 23), 0.0));
                } else if e.abs() <= 86.0 {
                    let bound = FAST_WEIGHT_REL_BASE + FAST_WEIGHT_REL_PER_UNIT * e.abs();
                    let off = (v as f64 / w as f64).ln().abs();
                    assert!(off <= bound, "x {x}, scale {scale}: {v} vs {w}");
                    worst = worst.max(off / bound);
                } else {
                    let below = 1.01 * (-e.abs().min(FAST_WEIGHT_MAX_DEPTH)).exp();
                    assert!((v as f64) < below && (w as f64) < below, "x {x}: {v}, {w}");
                }
            }
        }
        assert!(
            worst > 0.05,
            "the bound is far too loose to be tested: {worst}"
        );
    }

    #[test]
    fn the_fast_sum_adds_the_fast_weights_below_the_floor_in_its_documented_order() {
        for (shift, scale, xs) in depths() {
            for floor in [
                f32::INFINITY,
                shift,
                shift - 5.0 / scale,
                shift - 40.0 / scale,
            ] {
                for len in [0, 1, 63, 64, 65, 1000, xs.len()] {
                    let xs = &xs[..len];
                    let mut v = alloc::vec![0.0f32; len];
                    fast_weights_into(xs, shift, scale, &mut v);
                    for (w, &x) in v.iter_mut().zip(xs) {
                        if x >= floor {
                            *w = 0.0;
                        }
                    }
                    let mut lanes = [0.0f64; LANES];
                    let runs = len / 64 * 64;
                    for run in v[..runs].chunks_exact(64) {
                        let mut part = [0.0f32; LANES];
                        for (k, &w) in run.iter().enumerate() {
                            part[k % LANES] += w;
                        }
                        for i in 0..LANES {
                            lanes[i] += part[i] as f64;
                        }
                    }
                    let mut want = 0.0f64;
                    for l in lanes {
                        want += l;
                    }
                    for &w in &v[runs..] {
                        want += w as f64;
                    }
                    let got = fast_weight_sum_below(xs, shift, scale, floor);
                    assert_eq!(got.to_bits(), want.to_bits(), "len {len}, floor {floor}");
                    let exact: f64 = v.iter().map(|&w| w as f64).sum();
                    assert!((got - exact).abs() <= fast_weight_sum_rounding(got, len));
                }
            }
        }
    }

    #[test]
    fn f64_sums_add_in_their_documented_order() {
        let xs = assorted(1003, 9);
        let ws: Vec<f32> = xs.iter().map(|&x| exp(sanitize(x) - 8.0)).collect();
        let mut lanes = [0.0f64; LANES];
        for (k, &w) in ws[..1000].iter().enumerate() {
            lanes[k % LANES] += w as f64;
        }
        let want = lanes.iter().sum::<f64>() + ws[1000..].iter().map(|&w| w as f64).sum::<f64>();
        assert_eq!(sum_f64(&ws).to_bits(), want.to_bits());
        for floor in [f32::NEG_INFINITY, -3.0, 0.0, 2.0, 9.0] {
            let direct: f64 = (0..xs.len())
                .filter(|&i| xs[i] < floor)
                .map(|i| ws[i] as f64)
                .sum();
            let got = sum_f64_below(&xs, &ws, floor);
            assert!((got - direct).abs() <= 1e-15 * direct, "floor {floor}");
        }
    }

    /// The worst relative error of `f`'s value at every `f32` in `[lo, 0]` against `want`.
    fn worst_over(lo: f32, f: impl Fn(f32) -> f32, want: impl Fn(f64) -> f64) -> f64 {
        let mut worst = 0.0f64;
        let mut check = |x: f32| {
            let (got, want) = (f(x) as f64, want(x as f64));
            worst = worst.max(((got - want) / want).abs());
        };
        let mut bits = 0x8000_0000u32; // -0.0, then down
        while f32::from_bits(bits) >= lo {
            check(f32::from_bits(bits));
            bits += 1;
        }
        worst
    }

    /// The two measured constants in [`FAST_WEIGHT_REL_BASE`], over every `f32` input (about
    /// 2·10^9 values; a few minutes in release:
    /// `cargo test --release -p sieve-core exhaustive -- --ignored`).
    #[test]
    #[ignore]
    fn exhaustive_error_bounds() {
        let exp_worst = worst_over(-87.3, exp_up_to_high, f64::exp);
        let fast_worst = worst_over(
            -124.5,
            |t| fast_weight(t, 0.0, 1.0),
            |t| (t as f32 as f64).exp2(),
        );
        assert!(exp_worst <= 8.14e-8, "exp: {exp_worst}");
        assert!(fast_worst <= 2.913e-6, "fast 2^t: {fast_worst}");
        assert!((exp_worst + fast_worst) * (1.0 + 1e-6) <= FAST_WEIGHT_REL_BASE);
    }

    #[test]
    fn the_vector_form_of_the_weights_equals_the_slice_form() {
        let xs = assorted(3000, 5);
        let clean: Vec<f32> = xs.iter().map(|&x| sanitize(x)).collect();
        let m = max(&clean);
        let mut into = alloc::vec![0.0; clean.len()];
        let a = exp_shifted_into(&clean, m, 0.7, &mut into);
        let mut to_vec = alloc::vec![9.0; 5]; // replaced, whatever it held
        let b = exp_shifted_to_vec(&clean, m, 0.7, &mut to_vec);
        assert_eq!(a.to_bits(), b.to_bits());
        assert_eq!(into, to_vec);
    }
}

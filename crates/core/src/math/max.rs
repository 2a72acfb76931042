//! Reading logits: sanitizing one, the maximum of a slice (and whether it is clean), and a
//! plain lane sum.

use super::LANES;

/// Lanes of [`max`]: four independent 8-wide chains, so the loop is bound by loads rather than
/// by the latency of one chain of comparisons.
pub(crate) const MAX_LANES: usize = 32;

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

/// The largest of the lanes and the tail: the lanes folded pairwise (each step vectorizes),
/// then the tail in order. Shared with the one-pass load (`Candidates::load_checked_from`),
/// so the two find the same maximum, down to the sign of a zero.
#[inline(always)]
pub(crate) fn fold_max(mut acc: [f32; MAX_LANES], tail: &[f32]) -> f32 {
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

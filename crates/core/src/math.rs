//! Vectorizable kernels over logit slices: the maximum, a fast `exp`, and the sum of
//! exponentials. Written as fixed-width lane loops that LLVM turns into SIMD on the baseline
//! target (SSE2 on x86-64, NEON on aarch64), so they need no `std`; the only `unsafe` is the
//! AVX2 kernel of [`scan_at_least`], allowed there alone (the crate denies `unsafe_code`).

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
    // Fold the lanes pairwise (each step vectorizes), then the tail.
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

/// Whether no value of `xs` is NaN or `+inf` (`-inf` is fine): one read in lane loops that
/// vectorize (a running maximum of a 0/1 flag per lane).
pub fn none_nan_or_pos_inf(xs: &[f32]) -> bool {
    let mut flag = [0.0f32; MAX_LANES];
    let chunks = xs.chunks_exact(MAX_LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for i in 0..MAX_LANES {
            let bad = if chunk[i] < f32::INFINITY { 0.0 } else { 1.0 };
            flag[i] = if bad > flag[i] { bad } else { flag[i] };
        }
    }
    flag.iter().all(|&f| f == 0.0) && tail.iter().all(|&x| x < f32::INFINITY)
}

/// `e^x` for `f32`, accurate to about 2 ulp on the range where the result is a normal number,
/// exactly `0` below −87.3 (so `-inf` gives `0`), `inf` above 88.3. Cephes-style: split
/// `x = n·ln2 + r` with `|r| ≤ ln2/2`, a degree-6 polynomial for `e^r`, and `2^n` built from
/// the exponent bits. Branch-free and free of float→int casts (the integer `n` is read from
/// the bits of the rounding sum), so loops over it vectorize.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = core::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2^23: adding it rounds to an integer
    const ROUND_BITS: u32 = 0x4B40_0000; // the bits of ROUND; the integer sits in the low bits
    const LOW: f32 = -87.3;
    const HIGH: f32 = 88.3;
    let clamped = x.clamp(LOW, HIGH);
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
    let n_int = shifted.to_bits().wrapping_sub(ROUND_BITS);
    let pow2n = f32::from_bits(n_int.wrapping_add(127) << 23);
    let y = e_r * pow2n;
    let y = if x >= LOW { y } else { 0.0 }; // NaN too

    if x > HIGH {
        f32::INFINITY
    } else {
        y
    }
}

/// Writes `out[i] = e^((xs[i] − shift)·scale)` and returns the sum of the outputs (per block
/// of 1024: the exponentials in one vectorized loop, then their sum in 8 `f32` lanes; the block
/// sums are added in `f64`). The order of additions is fixed, so the result is the same on
/// every machine.
///
/// # Panics
/// If `out` is shorter than `xs`.
pub fn exp_shifted_into(xs: &[f32], shift: f32, scale: f32, out: &mut [f32]) -> f64 {
    let out = &mut out[..xs.len()];
    let mut total = 0.0f64;
    for (xb, ob) in xs.chunks(1024).zip(out.chunks_mut(1024)) {
        // 32 at a time: four independent 8-wide chains, so the polynomial's latency overlaps.
        let mut xc = xb.chunks_exact(32);
        let mut oc = ob.chunks_exact_mut(32);
        for (x32, o32) in (&mut xc).zip(&mut oc) {
            for i in 0..32 {
                o32[i] = exp((x32[i] - shift) * scale);
            }
        }
        for (o, &x) in oc.into_remainder().iter_mut().zip(xc.remainder()) {
            *o = exp((x - shift) * scale);
        }
        total += sum(ob) as f64;
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

/// Appends `base + i` to `out` for every `i` with `xs[i] >= t`, in order (see
/// [`scan_at_least`]).
pub fn positions_at_least(xs: &[f32], t: f32, base: u32, out: &mut alloc::vec::Vec<u32>) {
    scan_at_least(xs, t, &mut |start, mut mask| {
        while mask != 0 {
            out.push(base + (start + mask.trailing_zeros() as usize) as u32);
            mask &= mask - 1;
        }
        t
    });
}

/// Scans `xs` in groups of 8 for values at or above a threshold: for each group holding one,
/// calls `on_hits(start, mask)` (bit `j` of `mask` set where `xs[start + j] >= threshold`),
/// which returns the threshold for the rest of the scan (a running top-k raises it).
///
/// With AVX2 (x86-64-v3 builds) a group is one compare and one mask extraction, and
/// `on_hits` is called out of line, so a scan with few hits runs at the speed of reading;
/// elsewhere a portable loop does the same.
#[allow(unsafe_code)] // the AVX2 kernel below; the portable loop is safe code
pub fn scan_at_least(xs: &[f32], threshold: f32, on_hits: &mut dyn FnMut(usize, u32) -> f32) {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    {
        // SAFETY: this branch is compiled only when the whole build targets AVX2
        // (`target_feature = "avx2"`), so the CPU running it has the instructions.
        unsafe { avx2::scan_at_least(xs, threshold, on_hits) }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
    {
        let mut t = threshold;
        for (g, group) in xs.chunks(8).enumerate() {
            let mut mask = 0u32;
            for (j, &x) in group.iter().enumerate() {
                mask |= ((x >= t) as u32) << j;
            }
            if mask != 0 {
                t = on_hits(g * 8, mask);
            }
        }
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
#[allow(unsafe_code)] // the documented vectorized kernel: unaligned loads within bounds
mod avx2 {
    use core::arch::x86_64::{
        _mm256_cmp_ps, _mm256_loadu_ps, _mm256_movemask_ps, _mm256_set1_ps, _CMP_GE_OQ,
    };

    /// See [`super::scan_at_least`].
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn scan_at_least(
        xs: &[f32],
        threshold: f32,
        on_hits: &mut dyn FnMut(usize, u32) -> f32,
    ) {
        let mut t = threshold;
        let mut tv = _mm256_set1_ps(t);
        let whole = xs.len() / 8 * 8;
        let mut i = 0;
        while i < whole {
            // SAFETY: `i + 8 <= whole <= xs.len()`, so the unaligned load reads 8 `f32` of `xs`.
            let v = unsafe { _mm256_loadu_ps(xs.as_ptr().add(i)) };
            let mask = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(v, tv)) as u32;
            if mask != 0 {
                t = on_hits(i, mask);
                tv = _mm256_set1_ps(t);
            }
            i += 8;
        }
        let mut mask = 0u32;
        for (j, &x) in xs[whole..].iter().enumerate() {
            mask |= ((x >= t) as u32) << j;
        }
        if mask != 0 {
            on_hits(whole, mask);
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
}

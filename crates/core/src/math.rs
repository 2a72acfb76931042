//! Vectorizable kernels over logit slices: the maximum, a fast `exp`, and the sum of
//! exponentials. Written as fixed-width lane loops that LLVM turns into SIMD on the baseline
//! target (SSE2 on x86-64, NEON on aarch64), so the crate needs no `std` or `unsafe`.

/// Number of independent lanes the kernels accumulate in.
const LANES: usize = 8;

/// The largest value, ignoring NaN; `-inf` for an empty slice.
///
/// This is also the *floor* that `sieve bench` compares pipelines against: one pass that reads
/// every logit.
pub fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a = if x > *a { x } else { *a };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for &x in acc.iter().chain(tail) {
        if x > m {
            m = x;
        }
    }
    m
}

/// `e^x` for `f32`, accurate to about 2 ulp on the range where the result is a normal number,
/// exactly `0` below −87.3 (so `-inf` gives `0`), `inf` above 88.7. Cephes-style: split
/// `x = n·ln2 + r` with `|r| ≤ ln2/2`, a degree-6 polynomial for `e^r`, and `2^n` built from
/// the exponent bits. Branch-free, so loops over it vectorize.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = core::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2^23: adding it rounds to an integer
    let clamped = x.clamp(-87.3, 88.7);
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
    let pow2n = f32::from_bits(((n as i32 + 127) as u32) << 23);
    let y = e_r * pow2n;
    if x < -87.3 {
        0.0
    } else if x > 88.7 {
        f32::INFINITY
    } else {
        y
    }
}

/// Writes `out[i] = e^((xs[i] − shift)·scale)` and returns the sum of the outputs (accumulated
/// per lane in `f32` over blocks of 1024, blocks summed in `f64`).
///
/// # Panics
/// If `out` is shorter than `xs`.
pub fn exp_shifted_into(xs: &[f32], shift: f32, scale: f32, out: &mut [f32]) -> f64 {
    let out = &mut out[..xs.len()];
    let mut total = 0.0f64;
    for (xb, ob) in xs.chunks(1024).zip(out.chunks_mut(1024)) {
        let mut acc = [0.0f32; LANES];
        let xc = xb.chunks_exact(LANES);
        let tail_x = xc.remainder();
        let mut oc = ob.chunks_exact_mut(LANES);
        for (xs8, os8) in xc.zip(&mut oc) {
            for i in 0..LANES {
                let e = exp((xs8[i] - shift) * scale);
                os8[i] = e;
                acc[i] += e;
            }
        }
        let tail_o = oc.into_remainder();
        let mut block: f32 = acc.iter().sum();
        for (x, o) in tail_x.iter().zip(tail_o) {
            let e = exp((x - shift) * scale);
            *o = e;
            block += e;
        }
        total += block as f64;
    }
    total
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

//! Elementwise functions written as one fixed sequence of `f32` operations, so that they give
//! the same bits for a value wherever it sits in a buffer, and loops over them vectorize.
//!
//! `libm`'s `expf` is a function call per element (no loop over it vectorizes) and may pick a
//! different code path per CPU; [`exp`] is Cephes' `expf` (range reduction by `ln 2` in two
//! parts, a degree-5 polynomial, the exponent put in by bits) in plain `f32` arithmetic that
//! Rust never fuses or reorders, so the compiler may run it 8 or 16 lanes wide with the same
//! result per element. Its error is within 2 ulp of the exact value on its whole range.
//!
//! This is the model's `exp`; the sampler's is `sieve_core::math::exp`, with the same Cephes
//! polynomial but another purpose, so neither replaces the other: the model's carries NaN
//! through (a broken checkpoint must come out as NaN logits, which the engine reports as the
//! model's fault, rather than as silently dropped attention keys) and covers the whole `f32`
//! range (SiLU takes `e^-x` of any activation); the sampler's reads sanitized logits only,
//! maps NaN to 0, and clamps at 88.3 because its exponents are never positive. They also
//! round the exponent `n` differently at ties (`floor(x·log₂e + ½)` here, round-to-even
//! there), so sharing one would change bits on one side.

/// Largest argument whose exponential is finite (`ln(f32::MAX)`, rounded down).
const MAX_ARG: f32 = 88.722_83;
/// Below this the result is `0.0` (about `ln(2^-126)`, the smallest normal).
const MIN_ARG: f32 = -87.336_55;

/// `eˣ` in a fixed sequence of `f32` operations (see the module docs): `+∞` above
/// `ln(f32::MAX)`, `0.0` below `ln(2^-126)` (including `-∞`), NaN for NaN.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // x = n·ln 2 + r, |r| ≤ ln 2 / 2, with ln 2 split so that n·C1 is exact.
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    let c = x.clamp(MIN_ARG, MAX_ARG);
    let n = (c * LOG2E + 0.5).floor();
    let r = c - n * C1;
    let r = r - n * C2;
    let mut p = 1.987_569_1e-4;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * (r * r) + r + 1.0;
    // 2ⁿ by its bits: n is an integer in -126..=128 after the clamp (read off the mantissa
    // of n + 1.5·2²³, exact for |n| < 2²²); 128 (only near MAX_ARG) is done as 2¹²⁷ · 2.
    const MAGIC: f32 = 12_582_912.0;
    let n = (n + MAGIC).to_bits() as i32 - MAGIC.to_bits() as i32;
    let hi = i32::from(n > 127);
    let scale = f32::from_bits(((n - hi + 127) as u32) << 23);
    let y = y * scale * f32::from_bits(((hi + 127) as u32) << 23);
    if x.is_nan() {
        x
    } else if x > MAX_ARG {
        f32::INFINITY
    } else if x < MIN_ARG {
        0.0
    } else {
        y
    }
}

/// `x · σ(x) = x / (1 + e⁻ˣ)` (SiLU, the gate of SwiGLU), with [`exp`].
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + exp(-x))
}

/// Below this many elements [`silu_mul`] stays on the calling thread.
const PARALLEL_MIN: usize = 1 << 13;

/// `gate[i] = silu(gate[i]) · up[i]` (SwiGLU's gating), split over the kernels'
/// threads for long buffers; each element is computed alone, so the split changes nothing.
///
/// # Panics
/// If the lengths differ.
pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
    assert_eq!(gate.len(), up.len(), "silu_mul: lengths differ");
    let isa = crate::Isa::best();
    let run = |(g, u): (&mut [f32], &[f32])| match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::best` found AVX-512 on this CPU.
        crate::Isa::Avx512 => unsafe { silu_mul_avx512(g, u) },
        _ => silu_mul_plain(g, u),
    };
    if gate.len() < PARALLEL_MIN {
        run((gate, up));
    } else {
        let chunk = PARALLEL_MIN / 4;
        crate::team::for_each_chunk(gate, chunk, &|i, g| {
            let u = &up[i * chunk..][..g.len()];
            run((g, u))
        });
    }
}

/// The loop of [`silu_mul`]: plain `f32` operations, the same bits at any vector width.
#[inline(always)]
fn silu_mul_plain(gate: &mut [f32], up: &[f32]) {
    for (g, &u) in gate.iter_mut().zip(up) {
        *g = silu(*g) * u;
    }
}

/// [`silu_mul_plain`] compiled 16 lanes wide.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/DQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
unsafe fn silu_mul_avx512(gate: &mut [f32], up: &[f32]) {
    silu_mul_plain(gate, up)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between `a` and the `f64` value `b`.
    fn ulps(a: f32, b: f64) -> f64 {
        let b32 = b as f32;
        let ulp = f64::from(f32::from_bits(b32.abs().to_bits() + 1) - b32.abs());
        (f64::from(a) - b).abs() / ulp
    }

    #[test]
    fn exp_is_within_two_ulp_on_its_range() {
        let mut worst = 0f64;
        let mut x = MIN_ARG;
        while x < MAX_ARG {
            let got = exp(x);
            let want = f64::from(x).exp();
            worst = worst.max(ulps(got, want));
            x += 0.000_97;
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
    }

    #[test]
    fn exp_edges() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-100.0), 0.0);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(89.0), f32::INFINITY);
        assert!(exp(f32::NAN).is_nan());
        assert!(exp(MAX_ARG).is_finite());
        assert!(exp(MAX_ARG) > 3.4e38);
    }

    #[test]
    fn silu_mul_is_the_product_elementwise() {
        let gate: Vec<f32> = (0..100_000)
            .map(|i| (i % 997) as f32 * 0.02 - 10.0)
            .collect();
        let up: Vec<f32> = (0..100_000).map(|i| (i % 13) as f32 - 6.0).collect();
        let mut got = gate.clone();
        silu_mul(&mut got, &up);
        for ((&g, &u), &o) in gate.iter().zip(&up).zip(&got) {
            assert_eq!(o.to_bits(), (silu(g) * u).to_bits());
        }
    }

    #[test]
    fn silu_matches_its_definition() {
        for i in -400..400 {
            let x = i as f32 * 0.05;
            let want = f64::from(x) / (1.0 + (-f64::from(x)).exp());
            assert!(
                (f64::from(silu(x)) - want).abs() <= 4e-7 * want.abs().max(1e-3),
                "{x}"
            );
        }
    }
}

//! Shared by the selectors: the seeded inverse-CDF draw, the Mirostat feedback loop and its
//! parameters, and the entropy of a distribution.

use sieve_core::{math, Candidates, Params, Range, SieveRng};

/// Block size of the draw's first, vectorized level.
const DRAW_BLOCK: usize = 1024;

/// Draws one candidate index with probability `p_i` (the softmax of the current candidates),
/// from one uniform `u ∈ [0, 1)`: with `w` the unnormalized softmax weights, the first `i` (in
/// current order) whose cumulative weight exceeds `u · Σw`.
///
/// The cumulative weight is taken in two levels, so a full vocabulary is not one long serial
/// sum: block sums of 1024 weights ([`sieve_core::math::sum`], added in `f64`) find the block,
/// then a serial `f64` sum inside it finds the token. The order of additions is fixed, so the
/// same seed picks the same token on every machine.
///
/// Unlike llama.cpp (`cum >= target`), the comparison is strict, so a masked candidate
/// (`p = 0`) is never chosen, even for `u = 0`; if rounding leaves the target unreached, the
/// last candidate with `p > 0` is chosen. Exactly one draw is consumed per call with at least
/// one finite candidate, also for a single candidate (as llama.cpp does, to keep streams
/// aligned); `None`, without a draw, when every candidate is masked.
pub(crate) fn draw(candidates: &mut Candidates, rng: &mut SieveRng) -> Option<usize> {
    if !candidates.has_finite() {
        return None;
    }
    let u = rng.next_f64();
    let (weights, total) = candidates.weights();
    let target = u * total;
    let mut cum = 0.0f64;
    let mut start = 0;
    for block in weights.chunks(DRAW_BLOCK) {
        let block_sum = math::sum(block) as f64;
        if cum + block_sum > target {
            break;
        }
        cum += block_sum;
        start += block.len();
    }
    for (i, &w) in weights.iter().enumerate().skip(start) {
        if w > 0.0 {
            cum += w as f64;
            if cum > target {
                return Some(i);
            }
        }
    }
    weights.iter().rposition(|&w| w > 0.0)
}

/// The parameters both Mirostat stages take first: `tau` and `eta` (flattened into theirs).
#[derive(Debug, Clone, Params)]
pub struct SteeringParams {
    /// target surprise τ in bits; μ starts at 2τ
    #[param(default = 5.0, range = Range::at_least(0.0))]
    pub tau: f64,
    /// learning rate η of μ
    #[param(default = 0.1, range = Range::at_least(0.0))]
    pub eta: f64,
}

/// The feedback loop both Mirostat selectors share (arXiv:2007.14966): the target surprise `τ`
/// (bits), the learning rate `η`, the current maximum surprise `μ` (starting at `2τ`), and the
/// random stream of the draw.
#[derive(Debug, Clone)]
pub(crate) struct Steering {
    tau: f64,
    eta: f64,
    mu: f64,
    rng: SieveRng,
}

impl Steering {
    /// `μ = 2τ`, a stream for `stage` seeded with `seed`.
    pub(crate) fn new(tau: f64, eta: f64, seed: u64, stage: &str) -> Self {
        Steering {
            tau,
            eta,
            mu: 2.0 * tau,
            rng: SieveRng::new(seed, stage),
        }
    }

    /// The current maximum surprise `μ` (bits).
    pub(crate) fn mu(&self) -> f64 {
        self.mu
    }

    /// Draws among the (already truncated) candidates, selects the token, and steers:
    /// `μ ← μ − η (S − τ)` with `S = −log2 p` of the selected token, `p` renormalized over the
    /// candidates (as llama.cpp). With nothing finite, selects nothing and leaves `μ` and the
    /// stream as they were.
    pub(crate) fn select_and_steer(&mut self, candidates: &mut Candidates) {
        let Some(i) = draw(candidates, &mut self.rng) else {
            return;
        };
        candidates.select(i);
        let surprise = -libm::log2(candidates.softmax()[i] as f64);
        self.mu -= self.eta * (surprise - self.tau);
    }

    /// Back to `μ = 2τ` and the start of the stream.
    pub(crate) fn reset(&mut self) {
        self.mu = 2.0 * self.tau;
        self.rng.reset();
    }
}

/// Shannon entropy in nats of the distribution proportional to `weights`.
///
/// With `w_max` the largest weight, `r_i = w_i / w_max` and `T = Σ_{i ≠ max} r_i` (the tail),
/// `H = ln(1 + T) − Σ_{i ≠ max} r_i ln r_i / (1 + T)`: the same as `−Σ p_i ln p_i` for
/// normalized `p`, but independent of how the weights were normalized (a softmax normalized
/// with an `f32` total that depends on the candidates' order shifts every `p_i` by one common
/// factor), and accurate when one token holds nearly all the mass (no `ln(p ≈ 1)` and no
/// difference of two nearly equal logarithms). `temp`'s dynamic exponent amplifies the relative
/// error of a small entropy, so both matter: the result does not depend on the order of the
/// candidates beyond `f64` rounding. Sums run in `f64`; no weight above 0 gives 0.
pub(crate) fn entropy(weights: &[f32]) -> f64 {
    let Some((top, &w_max)) = weights
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
    else {
        return 0.0;
    };
    if w_max.is_nan() || w_max <= 0.0 {
        return 0.0;
    }
    let w_max = w_max as f64;
    let (tail, tail_log) = weights
        .iter()
        .enumerate()
        .filter(|&(i, &w)| i != top && w > 0.0)
        .fold((0.0f64, 0.0f64), |(t, l), (_, &w)| {
            let r = w as f64 / w_max;
            (t + r, l + r * libm::log(r))
        });
    (libm::log1p(tail) - tail_log / (1.0 + tail)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draw_never_picks_a_masked_candidate() {
        let mut c = Candidates::from_logits(&[f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY]);
        let mut rng = SieveRng::new(1, "dist");
        for _ in 0..50 {
            assert_eq!(draw(&mut c, &mut rng), Some(1));
        }
    }

    #[test]
    fn draw_on_all_masked_is_none() {
        let mut c = Candidates::from_logits(&[f32::NEG_INFINITY; 3]);
        assert_eq!(draw(&mut c, &mut SieveRng::new(1, "dist")), None);
    }

    #[test]
    fn entropy_of_uniform_is_ln_n() {
        let h = entropy(&[0.25; 4]);
        assert!((h - 4f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn entropy_ignores_the_normalization() {
        let p = [0.999_9f32, 0.000_06, 0.000_04];
        let total: f64 = p.iter().map(|&x| x as f64).sum();
        let direct: f64 = p
            .iter()
            .map(|&x| x as f64 / total)
            .map(|q| -q * q.ln())
            .sum();
        assert!((entropy(&p) - direct).abs() < 1e-7 * direct);
        let scaled: Vec<f32> = p.iter().map(|&x| x * 4.0).collect(); // exact in binary
        let (a, b) = (entropy(&p), entropy(&scaled));
        assert!((a - b).abs() <= 1e-12 * a, "{a} vs {b}");
        assert_eq!(entropy(&[0.0, 0.0]), 0.0);
        assert_eq!(entropy(&[]), 0.0);
        // One dominant token: e^-30 beside 1 has H = e^-30 (30 + 1) to first order.
        let tiny = (-30.0f64).exp();
        let h = entropy(&[1.0, tiny as f32]);
        assert!((h - tiny * 31.0).abs() < 1e-6 * h, "{h}");
    }
}

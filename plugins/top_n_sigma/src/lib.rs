//! `top_n_sigma(n)`: keep the tokens whose logit is at least `max − n·σ`, a sieve plugin.
//!
//! # Formula
//! Over the candidates with a finite logit (`-inf` ones are left out of every statistic):
//! `M` = the largest logit, `μ` = their mean, `σ = sqrt(Σ (l − μ)² / N)` the *population*
//! standard deviation. Every candidate with `l < M − n·σ` is removed; `l = M − n·σ` is kept.
//!
//! # Reference
//! Tang et al., *Top-nσ: Not All Logits Are You Need* (arXiv:2411.07641); the semantics are
//! llama.cpp's `llama_sampler_top_n_sigma` (finite logits only since PR #13344, population
//! σ, `>=` kept, no-op for `n <= 0` since PR #13345). Because `max(l/T) − n·σ(l/T) =
//! (M − n·σ)/T`, the kept set does not depend on a temperature applied before.
//!
//! # Deliberate differences from llama.cpp
//! - Removed, not masked: llama.cpp sets the dropped logits to `-inf` and keeps them in the
//!   array; here they leave the candidates. Nothing downstream can tell (a `-inf` candidate is
//!   never kept nor reported, and sieve's stages count only finite candidates), and later
//!   stages then see only the survivors.
//! - `μ` and `σ` are computed in `f64` with the threshold compared in `f64`; llama.cpp sums in
//!   `f32` one logit after another. The kept set can differ only for a logit within `f32`
//!   rounding of the threshold.
//! - The authors' reference code uses the unbiased σ (N − 1) and keeps `l > M − n·σ`; HF-style
//!   ports count masked entries as 0. This stage follows llama.cpp, as `sieve` does wherever
//!   llama.cpp defines a stage.
//!
//! # Edge cases
//! - `n <= 0`, or at most one candidate: identity (llama.cpp's no-op).
//! - No finite candidate: identity (llama.cpp: `M = -inf`, nothing is below it).
//! - `σ = 0` (every finite logit equal): everything finite is kept.
//! - The order of the survivors is kept; the host marks them unsorted.
//!
//! # Cost
//! One vectorized pass over the logits for the statistics, and one to find the survivors
//! ([`Candidates::keep_ranked_through`] with the threshold rounded up to an `f32`).

use sieve_plugin::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};

/// The `top_n_sigma` stage.
#[derive(Debug, Clone)]
pub struct TopNSigma {
    n: f64,
}

/// The parameters of `top_n_sigma`.
#[derive(Debug, Params)]
pub struct TopNSigmaParams {
    /// standard deviations below the maximum to keep; <= 0 keeps all
    #[param(default = 1.0, range = Range::open(f64::NEG_INFINITY, f64::INFINITY))]
    pub n: f64,
}

/// Largest finite logit, mean and population standard deviation of the finite logits, or
/// `None` when there is none.
///
/// One pass: sums of `d = l − s` and `d²` in `f64`, shifted by the first finite logit `s`
/// (so the variance `Σd²/N − (Σd/N)²` does not cancel catastrophically), in 16 independent
/// lanes so the additions vectorize and do not wait on each other.
pub fn finite_moments(logits: &[f32]) -> Option<(f32, f64, f64)> {
    const LANES: usize = 16;
    let shift = f64::from(*logits.iter().find(|&&x| x > f32::NEG_INFINITY)?);
    let mut sum = [0f64; LANES];
    let mut sq = [0f64; LANES];
    let mut count = [0u32; LANES];
    let mut max = [f32::NEG_INFINITY; LANES];
    let mut add = |k: usize, x: f32| {
        let finite = x > f32::NEG_INFINITY;
        let d = if finite { f64::from(x) - shift } else { 0.0 };
        sum[k] += d;
        sq[k] += d * d;
        count[k] += u32::from(finite);
        max[k] = max[k].max(x);
    };
    let chunks = logits.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (k, &x) in chunk.iter().enumerate() {
            add(k, x);
        }
    }
    for (k, &x) in tail.iter().enumerate() {
        add(k, x);
    }
    let n = count.iter().map(|&c| f64::from(c)).sum::<f64>();
    let mean_d = sum.iter().sum::<f64>() / n;
    let var = (sq.iter().sum::<f64>() / n - mean_d * mean_d).max(0.0);
    let max = max.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    Some((max, shift + mean_d, var.sqrt()))
}

/// The smallest `f32` at least `x` (`-inf` for `x = -inf`), so that for every `f32` `l`,
/// `f64::from(l) >= x` exactly when `l >= ceil_f32(x)`.
pub fn ceil_f32(x: f64) -> f32 {
    let nearest = x as f32;
    if f64::from(nearest) >= x {
        return nearest;
    }
    // `nearest < x`, so `nearest` is finite or -inf: step one f32 up.
    if nearest == 0.0 {
        return f32::from_bits(1);
    }
    let bits = nearest.to_bits();
    f32::from_bits(if nearest > 0.0 { bits + 1 } else { bits - 1 })
}

impl Sampler for TopNSigma {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.n <= 0.0 || candidates.len() <= 1 {
            return Ok(());
        }
        let Some((max, _mean, sigma)) = finite_moments(candidates.logits()) else {
            return Ok(());
        };
        // `l >= threshold` (in f64) exactly when `l >= ceil_f32(threshold)`; the floor of
        // -f32::MAX drops -inf candidates whatever the threshold, as llama.cpp masks them.
        let threshold = f64::from(max) - self.n * sigma;
        let cut = ceil_f32(threshold).max(-f32::MAX);
        // The logits were just materialized, so raw logits are the logits; `u32::MAX` keeps
        // every tie at the cut.
        candidates.keep_ranked_through(cut, u32::MAX);
        Ok(())
    }
}

impl Stage for TopNSigma {
    type Params = TopNSigmaParams;
    const NAME: &'static str = "top_n_sigma";
    const DOC: &'static str =
        "keep logits >= max - n·σ over the finite logits (llama.cpp top-n-sigma)";

    fn new(params: TopNSigmaParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(TopNSigma { n: params.n })
    }
}

sieve_plugin::export_plugin!(
    name = "top_n_sigma",
    version = env!("CARGO_PKG_VERSION"),
    stages = [TopNSigma]
);

#[cfg(test)]
mod tests;

//! `min_p(p=0.05, min_keep=1)`: keep the tokens at least `p` times as likely as the most
//! likely one.
//!
//! # Formula
//! Keep candidate `i` when `p_i ≥ p · p_max`, computed in log space as
//! `l_i ≥ l_max + ln p` (no softmax needed). If fewer than `min_keep` candidates pass, keep the
//! `min_keep` most likely instead.
//!
//! # How the cut is decided
//! By one `f32` comparison per candidate, `l_i ≥ t` with `t = l_max + logf(p)` (one rounding),
//! where `l_i` and `l_max` are the logits with any pending temperature applied as
//! [`Candidates::logit`] applies it (`(raw·scale).min(f32::MAX)`): the comparison llama.cpp
//! makes. The vectorized scan that finds the survivors only narrows which candidates are
//! compared (raw logits at or above a raw floor checked to lie below every candidate that
//! passes, see [`Candidates::positions_with_logit_at_least`]); the comparison itself is made
//! on each of them as written. So every build (AVX2 or portable, with or without FMA) keeps
//! the same candidates, and no exponential, exact or approximate, takes part. In probability
//! space this is `p_i ≥ p·p_max` up to the roundings of `ln p` and of the sum (an ulp of `t`);
//! HF compares softmax probabilities in `f32`, so a candidate within that of the threshold
//! can fall the other way there.
//!
//! # Reference
//! Nguyen et al., *Turning Up the Heat: Min-p Sampling for Creative and Coherent LLM Outputs*
//! (arXiv:2407.01082); llama.cpp `llama_sampler_min_p` (the log-space threshold, in `f32`);
//! HF `MinPLogitsWarper`.
//!
//! # Edge cases
//! - `p = 0` is the neutral value: the stage is an identity.
//! - Ties at the threshold are kept (`≥`), as in llama.cpp and HF; `p = 1` keeps exactly the
//!   candidates tied with the maximum.
//! - The survivors keep their current order (no sort). On a full vocabulary the cost is one
//!   vectorized read: the maximum is known from loading ([`Candidates::max_logit`]), the
//!   survivors are found by one threshold scan
//!   ([`Candidates::positions_with_logit_at_least`]) and kept by one compaction over them
//!   ([`Candidates::keep_positions`]); no exponential is computed. `min_keep > 1` counts the
//!   survivors of the same scan.
//! - Fallback (fewer than `min_keep` pass): the `min_keep` best, sorted by descending logit,
//!   ties to the lower id (llama.cpp also sorts there).
//! - Masked (`-inf`) candidates are always dropped (the threshold is finite: `ln p ≥ −103.3`
//!   for the smallest positive `f32`), also by the fallback, so fewer than `min_keep` may
//!   remain. A `p` below the smallest positive `f32` (`1.4e-45`) rounds to 0 and is neutral.
//! - `p > 1` (only reachable from Rust; the DSL rejects it) counts as `p = 1`, where
//!   llama.cpp lets it empty the filter and falls back to one token.
//! - The threshold uses the logits with any pending temperature applied, so `temp` before
//!   `min_p` widens or narrows the kept set (HF and vLLM order) and after it does not
//!   (llama.cpp's default order).

use sieve_core::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};

/// The `min_p` stage.
#[derive(Debug, Clone)]
pub struct MinP {
    p: f32,
    min_keep: usize,
}

impl MinP {
    /// Keeps candidates with `p_i ≥ p · p_max`, at least `min_keep` of them (if they exist).
    /// `p ≤ 0` keeps all; `p > 1` counts as 1.
    pub fn new(p: f32, min_keep: usize) -> Self {
        MinP {
            p: p.min(1.0),
            min_keep,
        }
    }
}

impl Sampler for MinP {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.p.is_nan() || self.p <= 0.0 || candidates.is_empty() {
            return Ok(());
        }
        let max = candidates.max_logit();
        if max == f32::NEG_INFINITY {
            return Ok(());
        }
        let threshold = max + libm::logf(self.p);
        // `threshold` is finite (see the module doc), so `-inf` never passes.
        let kept = candidates.positions_with_logit_at_least(threshold);
        if kept.len() < self.min_keep {
            keep_best(candidates, self.min_keep);
        } else {
            candidates.keep_positions(&kept);
        }
        Ok(())
    }
}

/// The `k` best finite candidates, sorted.
fn keep_best(candidates: &mut Candidates, k: usize) {
    if k < candidates.len() {
        candidates.keep_top(k);
    } else {
        // `keep_top` does nothing here; every finite candidate is among the best `k`.
        candidates.retain(|_, logit| logit > f32::NEG_INFINITY);
        candidates.sort_desc();
    }
}

/// The parameters of `min_p`.
#[derive(Debug, Clone, Params)]
pub struct MinPParams {
    /// minimum probability relative to the top token
    #[param(default = 0.05, range = Range::closed(0.0, 1.0))]
    pub p: f32,
    /// keep at least this many tokens (the most likely ones)
    #[param(default = 1, range = Range::closed(1.0, u32::MAX as f64))]
    pub min_keep: usize,
}

impl Stage for MinP {
    const NAME: &'static str = "min_p";
    const DOC: &'static str =
        "keep tokens at least p times as likely as the most likely one (0 = off)";
    type Params = MinPParams;
    fn new(p: MinPParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(MinP::new(p.p, p.min_keep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use sieve_core::{Args, BuildContext, Value};

    const NEG_INF: f32 = f32::NEG_INFINITY;

    fn run(p: f32, min_keep: usize, c: &mut Candidates) -> Vec<(u32, f32)> {
        MinP::new(p, min_keep)
            .apply(c, &Context::default())
            .unwrap();
        c.iter().collect()
    }

    fn run_dense(p: f32, min_keep: usize, logits: &[f32]) -> Vec<(u32, f32)> {
        run(p, min_keep, &mut Candidates::from_logits(logits))
    }

    fn ln(ps: &[f32]) -> Vec<f32> {
        ps.iter().map(|p| p.ln()).collect()
    }

    fn ids(pairs: &[(u32, f32)]) -> Vec<u32> {
        pairs.iter().map(|&(id, _)| id).collect()
    }

    #[test]
    fn zero_is_an_identity() {
        let logits = [0.5, NEG_INF, -1.0];
        let mut c = Candidates::from_logits(&logits);
        let got = run(0.0, 1, &mut c);
        assert_eq!(got, vec![(0, 0.5), (1, NEG_INF), (2, -1.0)]);
        assert!(c.is_dense() && !c.is_sorted());
    }

    #[test]
    fn keeps_tokens_above_the_relative_threshold_in_current_order() {
        // p = [0.4, 0.1, 0.3, 0.2], p_max = 0.4.
        // min_p 0.6 → threshold 0.24: keeps 0.4 (id 0) and 0.3 (id 2), order unchanged.
        // min_p 0.3 → threshold 0.12: keeps ids 0, 2, 3.
        let logits = ln(&[0.4, 0.1, 0.3, 0.2]);
        assert_eq!(ids(&run_dense(0.6, 1, &logits)), vec![0, 2]);
        assert_eq!(ids(&run_dense(0.3, 1, &logits)), vec![0, 2, 3]);
        // min_p 0.2 → threshold 0.08: all four.
        assert_eq!(ids(&run_dense(0.2, 1, &logits)), vec![0, 1, 2, 3]);
        // The kept logits are untouched.
        assert_eq!(
            run_dense(0.6, 1, &logits),
            vec![(0, logits[0]), (2, logits[2])]
        );
    }

    #[test]
    fn ties_at_the_threshold_are_kept() {
        // p = 1: threshold = l_max + ln 1 = l_max, so exactly the maxima survive.
        assert_eq!(
            run_dense(1.0, 1, &[1.0, 3.0, 3.0, 2.0]),
            vec![(1, 3.0), (2, 3.0)]
        );
        // p > 1 (Rust callers only) counts as 1 rather than emptying the set.
        assert_eq!(
            run_dense(1.5, 1, &[1.0, 3.0, 3.0, 2.0]),
            vec![(1, 3.0), (2, 3.0)]
        );
        // l_max = 0, p = 0.25: threshold = ln 0.25; a logit equal to it is kept.
        let at = libm::logf(0.25);
        assert_eq!(ids(&run_dense(0.25, 1, &[0.0, at, at - 1e-3])), vec![0, 1]);
    }

    #[test]
    fn masked_candidates_are_dropped() {
        // threshold = 0 + ln 0.1 = −2.30: keeps −1 (id 3), drops −3 (id 4) and the masked.
        assert_eq!(
            run_dense(0.1, 1, &[NEG_INF, 0.0, NEG_INF, -1.0, -3.0]),
            vec![(1, 0.0), (3, -1.0)]
        );
        // The smallest positive p (1.4e-45, ln p = −103.3): −50 passes, the masked one
        // still does not.
        let tiny = f32::from_bits(1);
        assert_eq!(
            run_dense(tiny, 1, &[NEG_INF, -50.0, 0.0]),
            vec![(1, -50.0), (2, 0.0)]
        );
        // p = 1e-60 rounds to 0 in f32: neutral.
        assert_eq!(
            run_dense(1e-60f64 as f32, 1, &[NEG_INF, 0.0]),
            vec![(0, NEG_INF), (1, 0.0)]
        );
        // Nothing finite, or nothing at all: unchanged, no panic.
        assert_eq!(run_dense(0.5, 1, &[NEG_INF, NEG_INF]).len(), 2);
        assert_eq!(run_dense(0.5, 3, &[]), vec![]);
    }

    #[test]
    fn min_keep_falls_back_to_the_best_sorted() {
        // p = [0.1, 0.2, 0.3, 0.4], min_p 0.9 → threshold 0.36: only id 3 passes.
        let logits = ln(&[0.1, 0.2, 0.3, 0.4]);
        assert_eq!(ids(&run_dense(0.9, 1, &logits)), vec![3]);
        // min_keep 3: the three most likely instead, sorted.
        let mut c = Candidates::from_logits(&logits);
        assert_eq!(ids(&run(0.9, 3, &mut c)), vec![3, 2, 1]);
        assert!(c.is_sorted());
        // min_keep 2 with a tie for second place: the lower id wins.
        assert_eq!(ids(&run_dense(0.9, 2, &[0.0, 5.0, 0.0])), vec![1, 0]);
        // min_keep larger than the finite candidates: all finite ones, sorted, masked dropped.
        assert_eq!(
            run_dense(0.9, 10, &[0.0, NEG_INF, -1.0, 3.0]),
            vec![(3, 3.0), (0, 0.0), (2, -1.0)]
        );
        assert_eq!(
            run_dense(0.9, 3, &[0.0, NEG_INF, NEG_INF, -1.0, NEG_INF]),
            vec![(0, 0.0), (3, -1.0)]
        );
    }

    #[test]
    fn min_keep_met_keeps_the_current_order() {
        // p = [0.3, 0.1, 0.4, 0.2], min_p 0.3 → threshold 0.12: ids 0, 2, 3 ≥ min_keep 3.
        let mut c = Candidates::from_logits(&ln(&[0.3, 0.1, 0.4, 0.2]));
        assert_eq!(ids(&run(0.3, 3, &mut c)), vec![0, 2, 3]);
        assert!(!c.is_sorted());
    }

    #[test]
    fn uses_the_pending_temperature() {
        // Logits [0, −1, −2] after temp 0.5 are [0, −2, −4]; min_p e^−3 → threshold −3
        // keeps ids 0 and 1 (without the temperature it would keep all three).
        let p = (-3.0f32).exp();
        let mut c = Candidates::from_logits(&[0.0, -1.0, -2.0]);
        c.scale_logits(2.0);
        assert_eq!(run(p, 1, &mut c), vec![(0, 0.0), (1, -2.0)]);
        let mut c = Candidates::from_logits(&[0.0, -1.0, -2.0]);
        c.scale_logits(2.0);
        assert_eq!(ids(&run(p, 2, &mut c)), vec![0, 1]);
        assert_eq!(ids(&run_dense(p, 1, &[0.0, -1.0, -2.0])), vec![0, 1, 2]);
    }

    #[test]
    fn decides_exactly_as_the_plain_comparison() {
        // Against `logit(i) >= max_logit + logf(p)` over every candidate, with pending
        // temperatures, on logits placed at, just above and just below thresholds.
        let mut next = crate::shared::uniform_stream();
        let base: Vec<f32> = (0..5000).map(|_| (next() - 0.5) * 20.0).collect();
        for scale in [1.0f32, 1.0 / 0.7, 1.5, 0.1, 3.0e-3] {
            for p in [0.05f32, 0.1, 0.5, 0.9, 1.0, 1e-9] {
                let mut logits = base.clone();
                let top = logits.iter().copied().fold(NEG_INF, f32::max);
                // Raw logits whose scaled value sits at the threshold and its neighbours.
                let t = (top * scale).min(f32::MAX) + libm::logf(p);
                for (k, at) in [t.next_down(), t, t.next_up()].into_iter().enumerate() {
                    for j in 0..3 {
                        logits[100 * (3 * k + j) + 7] =
                            at / scale * (1.0 + (j as f32 - 1.0) * 1e-7);
                    }
                }
                logits[4242] = NEG_INF;
                let mut c = Candidates::from_logits(&logits);
                c.scale_logits(scale);
                let threshold = c.max_logit() + libm::logf(p);
                let want: Vec<u32> = c
                    .iter()
                    .filter(|&(_, l)| l >= threshold)
                    .map(|(id, _)| id)
                    .collect();
                assert_eq!(ids(&run(p, 1, &mut c)), want, "scale {scale}, p {p}");
            }
        }
    }

    #[test]
    fn entry_declares_ranges_and_builds() {
        let e = sieve_core::StageEntry::of::<MinP>();
        let p = e.info.param("p").unwrap();
        assert_eq!(p.default, Some(Value::Float(0.05)));
        assert!(p
            .check(&Value::Float(1.5))
            .unwrap_err()
            .to_string()
            .contains("valid range is [0, 1]"));
        assert!(e
            .info
            .param("min_keep")
            .unwrap()
            .check(&Value::Int(0))
            .is_err());
        let args = Args::new(
            "min_p",
            vec![
                ("p".into(), Value::Float(0.6)),
                ("min_keep".into(), Value::Int(1)),
            ],
        );
        let mut stage = (e.build)(&args, &BuildContext::default()).unwrap();
        let mut c = Candidates::from_logits(&ln(&[0.4, 0.1, 0.3, 0.2]));
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(ids(&c.iter().collect::<Vec<_>>()), vec![0, 2]);
    }
}

//! `dist(seed=-1)`: draw the token from the softmax of the current candidates.
//!
//! # Formula
//! `p_i = e^(l_i − max) / Σ_j e^(l_j − max)`; draw `u ~ U[0, 1)` and select the first
//! candidate (in current order) whose cumulative probability exceeds `u · Σp` (inverse CDF).
//!
//! # Reference
//! llama.cpp `llama_sampler_dist` (single-pass inverse CDF over the unsorted candidates, one
//! `double` draw per step); HF `torch.multinomial(softmax(l), 1)`.
//!
//! # Edge cases
//! - Exactly one draw per step with at least one finite candidate, also for a single
//!   candidate (as llama.cpp), so streams stay aligned whatever earlier stages kept.
//! - Masked (`-inf`) candidates are never drawn (the cumulative comparison is strict, unlike
//!   llama.cpp's `>=`, which can pick a `p = 0` candidate when `u = 0`).
//! - With no finite candidate (or none at all) nothing is drawn and nothing selected; the
//!   pipeline reports it.
//! - The candidates are not reordered (llama.cpp also stopped sorting in `dist`).
//! - Randomness: ChaCha8 ([`SieveRng`]) on the stream `"dist"`, not llama.cpp's `mt19937`, so
//!   seeded token sequences are reproducible across machines but differ from llama.cpp's.
//!   `seed = -1` uses the run's seed; [`Sampler::reset`] replays the sequence from the seed.

use sieve_core::{
    BuildContext, Candidates, Context, Error, Params, Sampler, Seed, SieveRng, Stage,
};

use crate::select;

/// The `dist` stage.
#[derive(Debug, Clone)]
pub struct Dist {
    rng: SieveRng,
}

impl Dist {
    /// A seeded draw from the softmax.
    pub fn new(seed: u64) -> Self {
        Dist {
            rng: SieveRng::new(seed, "dist"),
        }
    }
}

impl Sampler for Dist {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if let Some(i) = select::draw(candidates, &mut self.rng) {
            candidates.select(i);
        }
        Ok(())
    }
    fn reset(&mut self) {
        self.rng.reset();
    }
}

/// The parameters of `dist`.
#[derive(Debug, Clone, Params)]
pub struct DistParams {
    /// random seed; -1 uses the run's --seed
    pub seed: Seed,
}

impl Stage for Dist {
    const NAME: &'static str = "dist";
    const DOC: &'static str = "draw the token from the softmax of the candidates";
    const SELECTOR: bool = true;
    const ALIASES: &'static [&'static str] = &["sample", "random", "multinomial", "softmax"];
    type Params = DistParams;
    fn new(p: DistParams, cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Dist::new(p.seed.resolve(cx.seed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use sieve_core::{Args, BuildContext, Value};

    const NEG_INF: f32 = f32::NEG_INFINITY;

    /// `ln` of `[0.1, 0.2, 0.3, 0.4]`: the softmax gives back these probabilities (up to rounding).
    fn tenths() -> [f32; 4] {
        [0.1f32.ln(), 0.2f32.ln(), 0.3f32.ln(), 0.4f32.ln()]
    }

    fn draws(stage: &mut dyn Sampler, logits: &[f32], n: usize) -> Vec<Option<u32>> {
        (0..n)
            .map(|_| {
                let mut c = Candidates::from_logits(logits);
                stage.apply(&mut c, &Context::default()).unwrap();
                c.selected_id()
            })
            .collect()
    }

    #[test]
    fn frequencies_match_the_softmax() {
        // 100 000 draws over p = [0.1, 0.2, 0.3, 0.4]: the standard error of each frequency
        // is at most √(0.24 / 100 000) ≈ 0.0015, so ±0.01 is more than six of them (with
        // 20 000 draws, ±0.01 is only 2.9 standard errors: too tight for a sound test).
        let n = 100_000;
        let mut counts = [0usize; 4];
        for id in draws(&mut Dist::new(7), &tenths(), n) {
            counts[id.unwrap() as usize] += 1;
        }
        for (i, &count) in counts.iter().enumerate() {
            let want = 0.1 * (i + 1) as f64;
            let got = count as f64 / n as f64;
            assert!((got - want).abs() < 0.01, "token {i}: {got} vs {want}");
        }
    }

    #[test]
    fn same_seed_same_sequence_and_reset_replays() {
        let logits = tenths();
        let mut a = Dist::new(42);
        let first = draws(&mut a, &logits, 64);
        assert_eq!(draws(&mut Dist::new(42), &logits, 64), first);
        a.reset();
        assert_eq!(draws(&mut a, &logits, 64), first);
        assert_ne!(draws(&mut Dist::new(43), &logits, 64), first);
    }

    #[test]
    fn masked_candidates_are_never_drawn() {
        // p = [0, 1/2, 0, 1/2]
        let logits = [NEG_INF, 0.0, NEG_INF, 0.0];
        let picked = draws(&mut Dist::new(3), &logits, 500);
        assert!(picked.iter().all(|&id| id == Some(1) || id == Some(3)));
        assert!(picked.contains(&Some(1)) && picked.contains(&Some(3)));
    }

    #[test]
    fn nothing_finite_selects_nothing_and_draws_nothing() {
        let mut a = Dist::new(5);
        assert_eq!(draws(&mut a, &[NEG_INF, NEG_INF], 3), vec![None; 3]);
        assert_eq!(draws(&mut a, &[], 3), vec![None; 3]);
        // No draw was consumed: `a` continues exactly like a fresh generator.
        assert_eq!(
            draws(&mut a, &tenths(), 32),
            draws(&mut Dist::new(5), &tenths(), 32)
        );
    }

    #[test]
    fn a_single_candidate_still_consumes_one_draw() {
        let mut a = Dist::new(9);
        assert_eq!(draws(&mut a, &[1.5], 1), vec![Some(0)]);
        let mut b = Dist::new(9);
        let _ = b.rng.next_f64();
        assert_eq!(draws(&mut a, &tenths(), 32), draws(&mut b, &tenths(), 32));
    }

    #[test]
    fn does_not_reorder_or_truncate() {
        let logits = [0.3, -1.0, 2.0];
        let mut c = Candidates::from_logits(&logits);
        Dist::new(1).apply(&mut c, &Context::default()).unwrap();
        assert!(c.is_dense() && !c.is_sorted() && c.selected().is_some());
        assert_eq!(c.raw_logits(), &logits);
    }

    #[test]
    fn seed_minus_one_uses_the_run_seed() {
        let e = sieve_core::StageEntry::of::<Dist>();
        assert!(e.info.selector);
        let build = |seed: i64, run_seed: u64| {
            let args = Args::new("dist", vec![("seed".into(), Value::Int(seed))]);
            (e.build)(
                &args,
                &BuildContext {
                    seed: run_seed,
                    vocab: None,
                },
            )
            .unwrap()
        };
        let from_run = draws(build(-1, 11).as_mut(), &tenths(), 32);
        assert_eq!(draws(build(11, 0).as_mut(), &tenths(), 32), from_run);
        assert_eq!(draws(&mut Dist::new(11), &tenths(), 32), from_run);
    }
}

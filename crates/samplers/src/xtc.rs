//! `xtc(threshold=0.1, probability=0.5, min_keep=1, seed=-1)`: Exclude Top Choices — with
//! some probability, remove every token at least `threshold` likely except the least likely
//! of them.
//!
//! # Formula
//! With probability `probability` (one uniform draw `u ∈ [0, 1)`, acting when
//! `u ≤ probability`): sort the candidates by descending probability, let `m` be the number
//! of leading candidates with `p_i ≥ threshold`, and if `m ≥ 2` remove the first `m − 1` —
//! unless fewer than `min_keep` finite candidates would remain.
//!
//! # Reference
//! p-e-w, text-generation-webui PR #6335 (the original XTC); llama.cpp `llama_sampler_xtc`,
//! whose semantics (the `>` coin test, `threshold > 0.5` as off, the `min_keep` guard, no
//! newline/EOS protection) this stage follows.
//!
//! # Edge cases
//! - `probability = 0` is the neutral value, and `threshold > 0.5` is off too (at most one
//!   token can exceed one half): the stage is an identity and draws no random number. With
//!   fewer than two candidates it draws nothing either. Otherwise exactly one draw per step.
//! - When the coin says "no", the candidates are left untouched (not sorted); when it says
//!   "yes" they come out sorted by descending logit, ties to the lower id, also if nothing
//!   is removed.
//! - **Deviation (masked tokens):** a candidate with probability 0 (a masked `-inf` one in
//!   particular) is never a "top choice", and only finite candidates count towards
//!   `min_keep`. In llama.cpp `threshold = 0` counts masked tokens as top choices and can
//!   leave nothing but masked ones.
//! - Probabilities are those of the current candidates (after earlier stages, including a
//!   pending temperature) and are not renormalized (the next softmax does that).
//! - Randomness: ChaCha8 ([`SieveRng`]) on the stream `"xtc"` (`f32` draw, as llama.cpp's
//!   `uniform_real_distribution<float>`); `seed = -1` uses the run's seed;
//!   [`Sampler::reset`] replays the sequence.

use sieve_core::{
    BuildContext, Candidates, Context, Error, Params, Range, Sampler, Seed, SieveRng, Stage,
};

/// The `xtc` stage.
#[derive(Debug, Clone)]
pub struct Xtc {
    threshold: f32,
    probability: f32,
    min_keep: usize,
    rng: SieveRng,
}

impl Xtc {
    /// Removes the top choices (`p ≥ threshold`, all but the last) with probability
    /// `probability`, keeping at least `min_keep` finite candidates; draws from `seed`.
    pub fn new(threshold: f32, probability: f32, min_keep: usize, seed: u64) -> Self {
        Xtc {
            threshold,
            probability,
            min_keep,
            rng: SieveRng::new(seed, "xtc"),
        }
    }
}

impl Sampler for Xtc {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if !(self.probability > 0.0 && self.threshold <= 0.5) || candidates.len() < 2 {
            return Ok(());
        }
        if self.rng.next_f32() > self.probability {
            return Ok(());
        }
        candidates.sort_desc();
        let threshold = self.threshold;
        let top = candidates
            .softmax()
            .iter()
            .take_while(|&&p| p > 0.0 && p >= threshold)
            .count();
        let finite = candidates
            .raw_logits()
            .iter()
            .take_while(|&&x| x > f32::NEG_INFINITY)
            .count();
        let cut = top.saturating_sub(1);
        if cut > 0 && finite - cut >= self.min_keep {
            candidates.remove_first(cut);
        }
        Ok(())
    }
    fn reset(&mut self) {
        self.rng.reset();
    }
}

/// The parameters of `xtc`.
#[derive(Debug, Clone, Params)]
pub struct XtcParams {
    /// tokens at least this likely are top choices; above 0.5 = off
    #[param(default = 0.1, range = Range::closed(0.0, 1.0))]
    pub threshold: f32,
    /// chance to act on a step; 0 = off
    #[param(default = 0.5, range = Range::closed(0.0, 1.0))]
    pub probability: f32,
    /// act only if at least this many tokens remain
    #[param(default = 1, range = Range::closed(1.0, u32::MAX as f64))]
    pub min_keep: usize,
    /// random seed; -1 uses the run's --seed
    pub seed: Seed,
}

impl Stage for Xtc {
    const NAME: &'static str = "xtc";
    const DOC: &'static str =
        "exclude top choices: sometimes remove all tokens above a threshold but the least likely";
    type Params = XtcParams;
    fn new(p: XtcParams, cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Xtc::new(
            p.threshold,
            p.probability,
            p.min_keep,
            p.seed.resolve(cx.seed),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use sieve_core::{Args, BuildContext, Value};

    const NEG_INF: f32 = f32::NEG_INFINITY;

    fn run(stage: &mut Xtc, logits: &[f32]) -> Vec<u32> {
        let mut c = Candidates::from_logits(logits);
        stage.apply(&mut c, &Context::default()).unwrap();
        c.iter().map(|(id, _)| id).collect()
    }

    /// Acts on every step (`u < 1 = probability`).
    fn always(threshold: f32, min_keep: usize) -> Xtc {
        Xtc::new(threshold, 1.0, min_keep, 0)
    }

    /// `ln` of `[0.1, 0.4, 0.2, 0.3]`: sorted, p = 0.4 (id 1), 0.3 (id 3), 0.2 (id 2), 0.1 (id 0).
    fn tenths() -> [f32; 4] {
        [0.1f32.ln(), 0.4f32.ln(), 0.2f32.ln(), 0.3f32.ln()]
    }

    #[test]
    fn removes_all_top_choices_but_the_least_likely() {
        // threshold 0.15: top choices 0.4, 0.3, 0.2 → remove ids 1 and 3, keep 2 then 0.
        assert_eq!(run(&mut always(0.15, 1), &tenths()), vec![2, 0]);
        // threshold 0.25: top choices 0.4, 0.3 → remove id 1.
        assert_eq!(run(&mut always(0.25, 1), &tenths()), vec![3, 2, 0]);
        // threshold 0.35: one top choice → nothing removed, but the candidates are sorted.
        let mut c = Candidates::from_logits(&tenths());
        always(0.35, 1).apply(&mut c, &Context::default()).unwrap();
        assert_eq!(
            c.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            vec![1, 3, 2, 0]
        );
        assert!(c.is_sorted());
    }

    #[test]
    fn min_keep_blocks_the_removal() {
        // threshold 0.15 would leave 2 candidates.
        assert_eq!(run(&mut always(0.15, 2), &tenths()), vec![2, 0]);
        assert_eq!(run(&mut always(0.15, 3), &tenths()), vec![1, 3, 2, 0]);
    }

    #[test]
    fn neutral_values_are_identities_without_draws() {
        let logits = tenths();
        let untouched = vec![0, 1, 2, 3];
        let mut off = Xtc::new(0.1, 0.0, 1, 4);
        assert_eq!(run(&mut off, &logits), untouched);
        let mut high = Xtc::new(0.51, 1.0, 1, 4);
        assert_eq!(run(&mut high, &logits), untouched);
        let mut single = Xtc::new(0.1, 0.5, 1, 4);
        assert_eq!(run(&mut single, &[2.0]), vec![0]);
        // None of them consumed a draw: their generators still match a fresh one.
        let fresh = SieveRng::new(4, "xtc").next_f32();
        for mut stage in [off, high, single] {
            assert_eq!(stage.rng.next_f32(), fresh);
        }
    }

    #[test]
    fn threshold_one_half_is_inclusive() {
        // Equal logits: p = [0.5, 0.5] exactly. threshold 0.5: both are top choices → id 0 goes.
        assert_eq!(run(&mut always(0.5, 1), &[1.0, 1.0]), vec![1]);
        assert_eq!(run(&mut always(0.500_001, 1), &[1.0, 1.0]), vec![0, 1]);
    }

    #[test]
    fn masked_candidates_are_never_top_choices() {
        // p = [0.5, 0.5, 0]; threshold 0: only the two finite candidates count → id 0 goes,
        // id 1 (finite) stays. llama.cpp would also remove id 1 and keep only the masked id 2.
        let got = run(&mut always(0.0, 1), &[0.0, 0.0, NEG_INF]);
        assert_eq!(got, vec![1, 2]);
        // min_keep counts finite candidates only: 1 finite would remain, not 2.
        assert_eq!(
            run(&mut always(0.0, 2), &[0.0, 0.0, NEG_INF]),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn probability_is_the_acting_frequency() {
        // probability 0.5: over 4 000 steps the stage acts on 50 % ± 2.5 % of them (standard
        // error 0.8 %).
        let mut stage = Xtc::new(0.15, 0.5, 1, 21);
        let steps = 4_000;
        let acted = (0..steps)
            .filter(|_| run(&mut stage, &tenths()).len() == 2)
            .count();
        let rate = acted as f64 / steps as f64;
        assert!((rate - 0.5).abs() < 0.025, "acted on {rate}");
    }

    #[test]
    fn seeded_and_reset_replays() {
        let pattern = |stage: &mut Xtc| {
            (0..64)
                .map(|_| run(stage, &tenths()).len())
                .collect::<Vec<_>>()
        };
        let mut a = Xtc::new(0.15, 0.5, 1, 8);
        let first = pattern(&mut a);
        assert_eq!(pattern(&mut Xtc::new(0.15, 0.5, 1, 8)), first);
        a.reset();
        assert_eq!(pattern(&mut a), first);
        assert_ne!(pattern(&mut Xtc::new(0.15, 0.5, 1, 9)), first);
    }

    #[test]
    fn entry_uses_the_run_seed_for_minus_one() {
        let e = sieve_core::StageEntry::of::<Xtc>();
        assert!(!e.info.selector);
        assert_eq!(
            e.info.param("probability").unwrap().default,
            Some(Value::Float(0.5))
        );
        let build = |seed: i64, run_seed: u64| {
            let args = Args::new(
                "xtc",
                vec![
                    ("threshold".into(), Value::Float(0.15)),
                    ("probability".into(), Value::Float(0.5)),
                    ("min_keep".into(), Value::Int(1)),
                    ("seed".into(), Value::Int(seed)),
                ],
            );
            (e.build)(
                &args,
                &BuildContext {
                    seed: run_seed,
                    vocab: None,
                },
            )
            .unwrap()
        };
        let pattern = |stage: &mut dyn Sampler| {
            (0..64)
                .map(|_| {
                    let mut c = Candidates::from_logits(&tenths());
                    stage.apply(&mut c, &Context::default()).unwrap();
                    c.len()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            pattern(build(-1, 5).as_mut()),
            pattern(build(5, 0).as_mut())
        );
    }
}

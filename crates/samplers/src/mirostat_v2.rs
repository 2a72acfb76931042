//! `mirostat_v2(tau, eta, seed)`: Mirostat v2, a selector that keeps the tokens whose surprise is
//! at most `μ` and steers `μ` toward a target surprise `τ` bits.
//!
//! # Formula
//! State: `μ`, initially `2τ`. On each step, with `p` the probabilities of the current candidates:
//! ```text
//! keep the candidates with −log2 p_i ≤ μ   (if none, keep the most likely one)
//! draw X from their renormalized probabilities p̃
//! S = −log2 p̃(X);   μ ← μ − η (S − τ)
//! ```
//!
//! # Reference
//! llama.cpp `llama_sampler_mirostat_v2` (the simplified variant, not the paper's Algorithm 1);
//! Basu et al., *Mirostat* (arXiv:2007.14966) for the control loop.
//!
//! # Edge cases and deviations
//! - μ is updated inside `apply`, right after the draw (as llama.cpp does); `reset` restores
//!   `μ = 2τ` and restarts the random stream.
//! - The cut is `p_i ≥ 2^(−μ)`, the same set as `−log2 p_i ≤ μ` up to the rounding of `2^(−μ)`
//!   (one `exp2` instead of a `log2` per candidate). Since `−log2` is monotone this is a prefix of
//!   the sorted list, as in llama.cpp; sieve keeps the survivors in their current order instead of
//!   sorting them (the draw is over the current order). Ties with the cut are all kept.
//! - When no token passes, the most likely one is kept (the lowest id among ties). Masked and
//!   underflowed (`p = 0`) candidates are never kept, even when `2^(−μ)` underflows to 0.
//! - μ and the surprise are computed in `f64` (llama.cpp: `f32`).
//! - If every candidate is masked the stage selects nothing and leaves μ and the random stream
//!   alone (the pipeline reports the error).

use alloc::vec::Vec;

use sieve_core::{BuildContext, Candidates, Context, Error, Params, Sampler, Seed, Stage};

use crate::select::Steering;
pub use crate::select::SteeringParams;

/// The `mirostat_v2` stage.
#[derive(Debug, Clone)]
pub struct MirostatV2 {
    steering: Steering,
    /// Scratch: which candidates pass the cut.
    keep: Vec<bool>,
}

impl MirostatV2 {
    /// Targets a surprise of `tau` bits with learning rate `eta`, drawing from a stream seeded
    /// with `seed`.
    pub fn new(tau: f64, eta: f64, seed: u64) -> Self {
        MirostatV2 {
            steering: Steering::new(tau, eta, seed, "mirostat_v2"),
            keep: Vec::new(),
        }
    }

    /// The current maximum surprise `μ` (bits).
    pub fn mu(&self) -> f64 {
        self.steering.mu()
    }
}

impl Sampler for MirostatV2 {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if !candidates.has_finite() {
            return Ok(());
        }
        // −log2 p ≤ μ  ⟺  p ≥ 2^(−μ).
        let threshold = libm::exp2(-self.steering.mu());
        self.keep.clear();
        self.keep.extend(
            candidates
                .softmax()
                .iter()
                .map(|&p| p > 0.0 && p as f64 >= threshold),
        );
        let kept = self.keep.iter().filter(|&&k| k).count();
        if kept == 0 {
            candidates.keep_top(1);
        } else if kept < candidates.len() {
            let keep = &self.keep;
            // `retain` visits the candidates once, in order.
            let mut i = 0;
            candidates.retain(|_, _| {
                let k = keep[i];
                i += 1;
                k
            });
        }
        self.steering.select_and_steer(candidates);
        Ok(())
    }

    fn reset(&mut self) {
        self.steering.reset();
    }
}

/// The parameters of `mirostat_v2`.
#[derive(Debug, Clone, Params)]
pub struct MirostatV2Params {
    /// `tau` and `eta`, shared with the other Mirostat stage
    #[param(flatten)]
    pub steering: SteeringParams,
    /// random seed; -1 uses the run's --seed
    pub seed: Seed,
}

impl Stage for MirostatV2 {
    const NAME: &'static str = "mirostat_v2";
    const DOC: &'static str =
        "Mirostat v2: select among tokens with surprise at most mu, steering it toward tau bits";
    const SELECTOR: bool = true;
    type Params = MirostatV2Params;
    fn new(p: MirostatV2Params, cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(MirostatV2::new(
            p.steering.tau,
            p.steering.eta,
            p.seed.resolve(cx.seed),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_core::{Args, BuildContext, Value};

    // p = [0.5, 0.25, 0.125, 0.125] has surprises [1, 2, 3, 3] bits.
    const P: [f32; 4] = [0.5, 0.25, 0.125, 0.125];

    fn step(stage: &mut MirostatV2, ps: &[f32]) -> (u32, Candidates) {
        let logits: Vec<f32> = ps.iter().map(|p| p.ln()).collect();
        let mut c = Candidates::from_logits(&logits);
        stage.apply(&mut c, &Context::default()).unwrap();
        (c.selected_id().unwrap(), c)
    }

    #[test]
    fn one_step_truncates_and_updates_mu_by_hand() {
        // τ = 1.1 → μ = 2.2: surprises 1 and 2 pass, 3 does not → keep ids 0, 1;
        // renormalized [2/3, 1/3]; μ' = 2.2 − 0.1·(S − 1.1).
        let mut stage = MirostatV2::new(1.1, 0.1, 5);
        let (token, c) = step(&mut stage, &P);
        assert_eq!(c.iter().map(|(id, _)| id).collect::<Vec<_>>(), vec![0, 1]);
        let want = match token {
            0 => 2.2 - 0.1 * (0.584963 - 1.1), // S = log2(3/2)
            1 => 2.2 - 0.1 * (1.584963 - 1.1), // S = log2 3
            t => panic!("token {t} was cut"),
        };
        assert!(
            (stage.mu() - want).abs() < 1e-5,
            "token {token}: μ = {}",
            stage.mu()
        );
    }

    #[test]
    fn tied_tokens_pass_together() {
        // τ = 1.6 → μ = 3.2: every surprise (up to 3) passes, both tied 0.125s included (with
        // μ = 2.2 above, both were cut).
        let (_, c) = step(&mut MirostatV2::new(1.6, 0.1, 5), &P);
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn nothing_passes_keeps_the_top_token() {
        // τ = 0.25 → μ = 0.5 < 1 bit: nothing passes, keep id 0; S = 0, μ' = 0.5 + 0.1·0.25.
        let mut stage = MirostatV2::new(0.25, 0.1, 5);
        let (token, c) = step(&mut stage, &P);
        assert_eq!((token, c.len()), (0, 1));
        assert!((stage.mu() - 0.525).abs() < 1e-9);
        // On a flat distribution the fallback keeps the lowest id.
        let (token, _) = step(&mut MirostatV2::new(0.25, 0.1, 5), &[0.25; 4]);
        assert_eq!(token, 0);
    }

    #[test]
    fn masked_candidates_are_never_kept() {
        // μ = 2000: 2^(−μ) underflows to 0, yet the masked id 1 is dropped.
        let mut stage = MirostatV2::new(1000.0, 0.0, 9);
        for _ in 0..100 {
            let (token, c) = step(&mut stage, &[0.5, 0.0, 0.5]);
            assert_ne!(token, 1);
            assert_eq!(c.iter().map(|(id, _)| id).collect::<Vec<_>>(), vec![0, 2]);
        }
        let mut c = Candidates::from_logits(&[f32::NEG_INFINITY; 3]);
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.selected(), None);
        assert_eq!(stage.mu(), 2000.0);
    }

    fn run_tokens(stage: &mut MirostatV2, steps: usize) -> Vec<u32> {
        let ps = [0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02];
        (0..steps).map(|_| step(stage, &ps).0).collect()
    }

    #[test]
    fn seeded_determinism_and_reset() {
        let mut a = MirostatV2::new(3.0, 0.1, 42);
        let first = run_tokens(&mut a, 40);
        assert_eq!(first, run_tokens(&mut MirostatV2::new(3.0, 0.1, 42), 40));
        assert!(
            first.iter().any(|&t| t != first[0]),
            "the draw should vary: {first:?}"
        );
        a.reset();
        assert_eq!(a.mu(), 6.0);
        assert_eq!(run_tokens(&mut a, 40), first);
        assert_ne!(run_tokens(&mut MirostatV2::new(3.0, 0.1, 43), 40), first);
    }

    #[test]
    fn registry_entry_is_a_seeded_selector() {
        let e = sieve_core::StageEntry::of::<MirostatV2>();
        assert!(e.info.selector);
        let names: Vec<&str> = e.info.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["tau", "eta", "seed"]);
        let args = Args::new(
            "mirostat_v2",
            vec![
                ("tau".into(), Value::Float(3.0)),
                ("eta".into(), Value::Float(0.1)),
                ("seed".into(), Value::Int(8)),
            ],
        );
        // An explicit seed wins over the run's seed.
        let mut built = (e.build)(
            &args,
            &BuildContext {
                seed: 42,
                vocab: None,
            },
        )
        .unwrap();
        let mut direct = MirostatV2::new(3.0, 0.1, 8);
        let ps: [f32; 8] = [0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02];
        for _ in 0..20 {
            let logits: Vec<f32> = ps.iter().map(|p| p.ln()).collect();
            let mut c = Candidates::from_logits(&logits);
            built.apply(&mut c, &Context::default()).unwrap();
            assert_eq!(c.selected_id(), Some(step(&mut direct, &ps).0));
        }
    }
}

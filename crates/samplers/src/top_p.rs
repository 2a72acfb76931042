//! `top_p(p, min_keep=1)`: nucleus sampling, keep the smallest set of most likely tokens whose
//! probability mass reaches `p`.
//!
//! # Formula
//! With candidates in rank order (descending logit, ties by ascending id) and `w_i` their
//! softmax weights, `Z = Σ_i w_i`, keep the first `m` where `m` is the smallest count with
//! `Σ_{i<m} w_i ≥ p·Z` and `m ≥ min_keep`. The token that crosses `p` is kept.
//!
//! How the cut is found without sorting a long list, and why it is exactly this one:
//! [`sieve_core::nucleus`]; this stage is a shell around [`Nucleus::keep`].
//!
//! # Reference
//! Holtzman et al., *The Curious Case of Neural Text Degeneration* (arXiv:1904.09751);
//! llama.cpp `llama_sampler_top_p` (same `≥` rule); HF `TopPLogitsWarper` (the same set,
//! computed from the ascending side).
//!
//! # Edge cases
//! - `p = 1` is the neutral value: identity, nothing is sorted.
//! - `p = 0` keeps `max(1, min_keep)` tokens.
//! - Ties at the boundary keep the lower ids (llama.cpp and HF leave them to an unstable sort).
//! - The cumulative sum is taken in `f64` over `f32` weights, against `p` times their `f64`
//!   sum: a boundary that llama.cpp decides by `f32` rounding may fall one token differently.
//! - Masked (`-inf`) candidates weigh 0 and are never needed to reach `p`. When every
//!   candidate is masked, a short list is left as it is and a long one is emptied.

use sieve_core::{
    BuildContext, Candidates, Context, Error, Nucleus, Params, Range, Sampler, Stage,
};

/// The `top_p` stage.
#[derive(Debug, Clone)]
pub struct TopP {
    p: f64,
    min_keep: usize,
    /// Scratch of the nucleus algorithm (reused between steps).
    nucleus: Nucleus,
}

impl TopP {
    /// Keeps the smallest prefix with mass `≥ p` and at least `min_keep` tokens.
    pub fn new(p: f64, min_keep: usize) -> Self {
        TopP {
            p,
            min_keep: min_keep.max(1),
            nucleus: Nucleus::default(),
        }
    }
}

impl Sampler for TopP {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        self.nucleus.keep(candidates, self.p, self.min_keep);
        Ok(())
    }
}

/// The parameters of `top_p`.
#[derive(Debug, Clone, Params)]
pub struct TopPParams {
    /// probability mass to keep
    #[param(default = 0.9, range = Range::closed(0.0, 1.0))]
    pub p: f64,
    /// keep at least this many tokens
    #[param(default = 1, range = Range::closed(1.0, u32::MAX as f64))]
    pub min_keep: usize,
}

impl Stage for TopP {
    const NAME: &'static str = "top_p";
    const DOC: &'static str =
        "nucleus: keep the most likely tokens until their mass reaches p (1 = off)";
    const ALIASES: &'static [&'static str] = &["nucleus"];
    type Params = TopPParams;
    fn new(p: TopPParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(TopP::new(p.p, p.min_keep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn run(p: f64, min_keep: usize, logits: &[f32]) -> Vec<u32> {
        let mut c = Candidates::from_logits(logits);
        TopP::new(p, min_keep)
            .apply(&mut c, &Context::default())
            .unwrap();
        let mut ids: Vec<u32> = c.iter().map(|(id, _)| id).collect();
        ids.sort_unstable();
        ids
    }

    fn ln(xs: &[f32]) -> Vec<f32> {
        xs.iter().map(|&x| libm::logf(x)).collect()
    }

    #[test]
    fn keeps_the_token_that_crosses_p() {
        // p = [0.1, 0.2, 0.3, 0.4]; sorted 0.4, 0.3 (cum 0.7), 0.2 (cum 0.9).
        let logits = ln(&[0.1, 0.2, 0.3, 0.4]);
        assert_eq!(run(0.5, 1, &logits), vec![2, 3]); // 0.4 < 0.5 ≤ 0.7
        assert_eq!(run(0.75, 1, &logits), vec![1, 2, 3]); // 0.7 < 0.75 ≤ 0.9
        assert_eq!(run(0.3, 1, &logits), vec![3]); // 0.4 ≥ 0.3
    }

    #[test]
    fn zero_keeps_one_and_min_keep_wins() {
        let logits = ln(&[0.1, 0.2, 0.3, 0.4]);
        assert_eq!(run(0.0, 1, &logits), vec![3]);
        assert_eq!(run(0.0, 3, &logits), vec![1, 2, 3]);
    }

    #[test]
    fn one_is_an_identity() {
        let logits = [0.3, f32::NEG_INFINITY, 0.1];
        let mut c = Candidates::from_logits(&logits);
        TopP::new(1.0, 1)
            .apply(&mut c, &Context::default())
            .unwrap();
        assert!(c.is_dense() && !c.is_sorted());
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            vec![(0, 0.3), (1, f32::NEG_INFINITY), (2, 0.1)]
        );
    }

    #[test]
    fn ties_keep_the_lower_id() {
        // Four equal tokens, p = 0.5 → two of them, the lower ids.
        assert_eq!(run(0.5, 1, &[1.0; 4]), vec![0, 1]);
    }

    #[test]
    fn a_long_list_keeps_what_the_core_nucleus_keeps() {
        // The long path (no sort) is sieve_core's; the stage only passes p and min_keep.
        let mut next = crate::shared::uniform_stream();
        let logits: Vec<f32> = (0..20_000).map(|_| (next() - 0.5) * 12.0).collect();
        for (p, min_keep) in [(0.9, 1), (0.5, 3), (0.99, 50)] {
            let mut want = Candidates::from_logits(&logits);
            Nucleus::default().keep(&mut want, p, min_keep);
            let mut got = Candidates::from_logits(&logits);
            TopP::new(p, min_keep)
                .apply(&mut got, &Context::default())
                .unwrap();
            assert_eq!(
                got.iter().collect::<Vec<_>>(),
                want.iter().collect::<Vec<_>>()
            );
            assert!(got.len() >= min_keep && got.len() < logits.len());
        }
    }
}

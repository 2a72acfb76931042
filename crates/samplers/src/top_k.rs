//! `top_k(k)`: keep the `k` most likely tokens.
//!
//! # Formula
//! Keep the `k` candidates with the largest logits; with `k >= n` nothing is removed.
//!
//! # Reference
//! llama.cpp `llama_sampler_top_k`; Fan et al., *Hierarchical Neural Story Generation*
//! (arXiv:1805.04833).
//!
//! # Edge cases
//! - `k = 0` is the neutral value, and `k ≥ n` removes nothing: in both cases the stage is
//!   an identity (nothing is sorted, masked candidates stay; llama.cpp sorts the whole array
//!   when `k ≥ n`).
//! - Ties at the boundary keep the lower ids (llama.cpp leaves them arbitrary; HF keeps every
//!   tie, so may return more than `k`).
//! - When it truncates, masked (`-inf`) candidates are never kept, so fewer than `k` may
//!   remain, and the output is sorted by descending logit. On a full vocabulary finding the
//!   `k` is one vectorized threshold pass over the blocks that can hold them (see
//!   [`Candidates::keep_top`]), not a sort.

use alloc::vec::Vec;

use sieve_core::{
    BuildContext, Candidates, Context, Error, Footprint, Params, Range, Sampler, Stage,
};

/// The `top_k` stage.
#[derive(Debug, Clone)]
pub struct TopK {
    k: usize,
}

impl TopK {
    /// Keeps the `k` most likely candidates; `k = 0` keeps all.
    pub fn new(k: usize) -> Self {
        TopK { k }
    }
}

impl Sampler for TopK {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.k > 0 {
            candidates.keep_top(self.k);
        }
        Ok(())
    }

    fn footprint(&mut self, _cx: &Context<'_>, _touched: &mut Vec<u32>) -> Footprint {
        match self.k {
            0 => Footprint::Nothing,
            k => Footprint::KeepTop(k),
        }
    }
}

/// The parameters of `top_k`.
#[derive(Debug, Clone, Params)]
pub struct TopKParams {
    /// number of tokens to keep; 0 keeps all
    #[param(default = 40, range = Range::closed(0.0, u32::MAX as f64))]
    pub k: usize,
}

impl Stage for TopK {
    const NAME: &'static str = "top_k";
    const DOC: &'static str = "keep the k most likely tokens (0 = off)";
    type Params = TopKParams;
    fn new(p: TopKParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(TopK::new(p.k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn run(k: usize, logits: &[f32]) -> Vec<(u32, f32)> {
        let mut c = Candidates::from_logits(logits);
        TopK::new(k).apply(&mut c, &Context::default()).unwrap();
        c.iter().collect()
    }

    #[test]
    fn keeps_the_k_largest_sorted() {
        assert_eq!(run(2, &[0.1, 0.4, 0.3, 0.2]), vec![(1, 0.4), (2, 0.3)]);
    }

    #[test]
    fn zero_and_large_k_are_identities() {
        let logits = [0.1, 0.4, 0.3];
        let all = vec![(0, 0.1), (1, 0.4), (2, 0.3)];
        assert_eq!(run(0, &logits), all);
        assert_eq!(run(3, &logits), all);
        assert_eq!(run(10, &logits), all);
    }

    #[test]
    fn ties_keep_the_lower_id() {
        assert_eq!(run(2, &[1.0, 2.0, 1.0, 1.0]), vec![(1, 2.0), (0, 1.0)]);
    }
}

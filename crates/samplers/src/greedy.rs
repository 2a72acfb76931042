//! `greedy`: select the most likely token.
//!
//! # Formula
//! Select `argmax_i l_i`; among equal maxima, the lowest token id. Consumes no randomness.
//!
//! # Reference
//! llama.cpp `llama_sampler_greedy` (strict `>` scan, so the first maximum in array order);
//! HF / vLLM `argmax` (first index).
//!
//! # Edge cases
//! - Ties go to the lowest token *id*, not the first position: the two agree on a dense
//!   vocabulary, but after a stage that reorders candidates (`typical`, a sparse input) the
//!   lowest id still wins, so the choice does not depend on the order earlier stages left.
//! - Logits are compared without the pending temperature scale (a positive factor keeps the
//!   order), so a tie that only appears by rounding the scaled values is broken by the
//!   unscaled ones.
//! - Masked (`-inf`) candidates are never selected; with no finite candidate (or none at all)
//!   nothing is selected and the pipeline reports it.
//! - Sorted input is answered in O(1) (the first candidate); otherwise one vectorized pass
//!   finds the maximum and a second, early-exiting one its position.

use crate::shared;
use sieve_core::{BuildContext, Candidates, Context, Error, Params, Sampler, Stage};

/// The `greedy` stage.
#[derive(Debug, Clone, Default)]
pub struct Greedy;

impl Greedy {
    /// The greedy selector.
    pub fn new() -> Self {
        Greedy
    }
}

impl Sampler for Greedy {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if let Some(i) = shared::argmax(candidates) {
            candidates.select(i);
        }
        Ok(())
    }
}

/// `greedy` has no parameters.
#[derive(Debug, Clone, Params)]
pub struct GreedyParams {}

impl Stage for Greedy {
    const NAME: &'static str = "greedy";
    const DOC: &'static str = "select the most likely token (ties: lowest id)";
    const SELECTOR: bool = true;
    const ALIASES: &'static [&'static str] = &["argmax"];
    type Params = GreedyParams;
    fn new(_: GreedyParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Greedy::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_core::{Args, BuildContext};

    const NEG_INF: f32 = f32::NEG_INFINITY;

    fn pick(c: &mut Candidates) -> Option<u32> {
        Greedy::new().apply(c, &Context::default()).unwrap();
        c.selected_id()
    }

    fn pick_dense(logits: &[f32]) -> Option<u32> {
        pick(&mut Candidates::from_logits(logits))
    }

    #[test]
    fn selects_the_maximum_and_leaves_candidates_alone() {
        let logits = [0.1, 0.4, 0.3, 0.2];
        let mut c = Candidates::from_logits(&logits);
        assert_eq!(pick(&mut c), Some(1));
        // A selector marks a candidate; it neither sorts nor truncates.
        assert!(c.is_dense() && !c.is_sorted());
        assert_eq!(c.raw_logits(), &logits);
    }

    #[test]
    fn ties_go_to_the_lowest_id() {
        assert_eq!(pick_dense(&[1.0, 3.0, 2.0, 3.0]), Some(1));
        // Sparse, ids out of order: ids 5 and 2 share the maximum 3; id 2 wins though it
        // comes second.
        let mut c = Candidates::from_sparse(vec![5, 2, 9], vec![3.0, 3.0, 1.0], 10).unwrap();
        assert_eq!(pick(&mut c), Some(2));
        assert_eq!(c.selected(), Some(1));
    }

    #[test]
    fn sorted_input_takes_the_first_candidate() {
        let mut c = Candidates::from_sparse(vec![5, 2, 9], vec![3.0, 3.0, 4.0], 10).unwrap();
        c.sort_desc(); // [(9, 4), (2, 3), (5, 3)]
        assert_eq!(pick(&mut c), Some(9));
        assert_eq!(c.selected(), Some(0));
    }

    #[test]
    fn masked_candidates_are_never_selected() {
        assert_eq!(pick_dense(&[NEG_INF, -5.0, NEG_INF, -7.0]), Some(1));
        assert_eq!(pick_dense(&[NEG_INF, NEG_INF]), None);
        assert_eq!(pick_dense(&[]), None);
        let mut sorted = Candidates::from_logits(&[NEG_INF, NEG_INF]);
        sorted.sort_desc();
        assert_eq!(pick(&mut sorted), None);
    }

    #[test]
    fn pending_scale_does_not_change_the_choice() {
        let mut c = Candidates::from_logits(&[1.0, 2.0, -3.0]);
        c.scale_logits(0.25);
        assert_eq!(pick(&mut c), Some(1));
    }

    #[test]
    fn long_dense_vocabulary_ties() {
        // Two equal maxima far apart in a 100 000-token vocabulary: the lower id wins.
        let mut logits = alloc::vec![0.0f32; 100_000];
        logits[70_001] = 5.0;
        logits[40_000] = 5.0;
        assert_eq!(pick_dense(&logits), Some(40_000));
    }

    #[test]
    fn entry_builds_a_selector_without_parameters() {
        let e = sieve_core::StageEntry::of::<Greedy>();
        assert!(e.info.selector);
        assert!(e.info.params.is_empty());
        let mut stage = (e.build)(&Args::new("greedy", vec![]), &BuildContext::default()).unwrap();
        let mut c = Candidates::from_logits(&[0.0, 1.0]);
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.selected_id(), Some(1));
    }
}

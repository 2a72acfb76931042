//! `typical(p=1.0, min_keep=1)`: locally typical sampling — keep the tokens whose surprise is
//! closest to the expected surprise.
//!
//! # Formula
//! With `p_i` the softmax of the current candidates and `H = −Σ_{p_i > 0} p_i ln p_i` its
//! entropy, score each candidate `s_i = |−ln p_i − H|`, order the candidates by ascending
//! score, and keep the shortest prefix whose cumulative probability exceeds `p` (strictly),
//! but at least `min_keep` candidates. The survivors stay in score order.
//!
//! # Reference
//! Meister et al., *Locally Typical Sampling* (arXiv:2202.00666); llama.cpp
//! `llama_sampler_typical` (whose cut rule this follows); HF `TypicalLogitsWarper`.
//!
//! # Edge cases
//! - `p = 1` is the neutral value: the stage is an identity (nothing sorted or computed).
//! - `p = 0` keeps `min_keep` candidates: the most typical ones.
//! - The output is in score order, not logit order, so the stage leaves the candidates
//!   unsorted (as llama.cpp); the most likely token may be dropped (by design).
//! - Ties in score go to the lower token id (llama.cpp's sort is not stable, so its tie order
//!   is arbitrary). HF keeps every candidate tied with the boundary score; this stage does
//!   not.
//! - **Deviation (masked tokens):** the entropy sums only `p_i > 0` (llama.cpp sums every
//!   term, so a single `-inf` logit from an earlier mask makes its `H` NaN and the cut
//!   meaningless), and masked (`-inf`) candidates are dropped, even when the cumulative
//!   probability never exceeds `p` or `min_keep` asks for more. A finite logit whose
//!   probability underflows to 0 scores `+inf` and comes last.
//! - The cumulative probability is summed in `f64` (llama.cpp: `f32`); probabilities are not
//!   renormalized here (the next stage's softmax does that).
//! - Cost: one softmax and one sort of the current candidates (`O(n log n)`), as llama.cpp.

use alloc::vec::Vec;

use sieve_core::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};

use crate::select;

/// The `typical` stage.
#[derive(Debug, Clone)]
pub struct Typical {
    p: f64,
    min_keep: usize,
}

impl Typical {
    /// Keeps the most typical candidates up to probability mass `p`, at least `min_keep` of
    /// them (if they exist). `p ≥ 1` keeps all.
    pub fn new(p: f64, min_keep: usize) -> Self {
        Typical { p, min_keep }
    }
}

/// One finite candidate's score, with what is needed to order and cut: `(score, id,
/// position)`.
type Scored = (f64, u32, usize);

/// The finite candidates ordered by ascending score, ties by ascending id, and their
/// probabilities; `None` if no candidate is finite.
fn by_typicality(candidates: &mut Candidates) -> Option<(Vec<Scored>, Vec<f64>)> {
    candidates.softmax();
    let probs = candidates.cached_probs()?;
    let h = select::entropy(probs);
    let mut order: Vec<Scored> = Vec::new();
    let mut mass = Vec::new();
    for (pos, (&raw, &p)) in candidates.raw_logits().iter().zip(probs).enumerate() {
        if raw > f32::NEG_INFINITY {
            let surprise = if p > 0.0 {
                -libm::log(p as f64)
            } else {
                f64::INFINITY
            };
            order.push((libm::fabs(surprise - h), candidates.id(pos), pos));
        }
    }
    if order.is_empty() {
        return None;
    }
    order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    mass.extend(order.iter().map(|&(_, _, pos)| probs[pos] as f64));
    Some((order, mass))
}

impl Sampler for Typical {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.p.is_nan() || self.p >= 1.0 || candidates.is_empty() {
            return Ok(());
        }
        let Some((order, mass)) = by_typicality(candidates) else {
            return Ok(());
        };
        let mut keep = order.len();
        let mut cum = 0.0f64;
        for (i, &m) in mass.iter().enumerate() {
            cum += m;
            if cum > self.p && i + 1 >= self.min_keep {
                keep = i + 1;
                break;
            }
        }
        let kept: Vec<(u32, f32)> = order[..keep]
            .iter()
            .map(|&(_, id, pos)| (id, candidates.logit(pos)))
            .collect();
        let (ids, logits) = candidates.parts_mut();
        for (j, &(id, logit)) in kept.iter().enumerate() {
            ids[j] = id;
            logits[j] = logit;
        }
        candidates.truncate(kept.len());
        candidates.set_sorted(false);
        Ok(())
    }
}

/// The parameters of `typical`.
#[derive(Debug, Clone, Params)]
pub struct TypicalParams {
    /// probability mass of the most typical tokens to keep
    #[param(default = 1.0, range = Range::closed(0.0, 1.0))]
    pub p: f64,
    /// keep at least this many tokens (the most typical ones)
    #[param(default = 1, range = Range::closed(1.0, u32::MAX as f64))]
    pub min_keep: usize,
}

impl Stage for Typical {
    const NAME: &'static str = "typical";
    const DOC: &'static str =
        "locally typical sampling: keep tokens whose surprise is closest to the entropy (1 = off)";
    const ALIASES: &'static [&'static str] = &["typical_p", "locally_typical"];
    type Params = TypicalParams;
    fn new(p: TypicalParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Typical::new(p.p, p.min_keep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_core::{Args, BuildContext, Value};

    const NEG_INF: f32 = f32::NEG_INFINITY;

    fn run(p: f64, min_keep: usize, c: &mut Candidates) -> Vec<u32> {
        Typical::new(p, min_keep)
            .apply(c, &Context::default())
            .unwrap();
        c.iter().map(|(id, _)| id).collect()
    }

    fn run_dense(p: f64, min_keep: usize, logits: &[f32]) -> Vec<u32> {
        run(p, min_keep, &mut Candidates::from_logits(logits))
    }

    /// `ln` of `[0.4, 0.3, 0.2, 0.1]`, ids 0..4.
    ///
    /// `H = −Σ p ln p = 0.366516 + 0.361192 + 0.321888 + 0.230259 = 1.279854`;
    /// `−ln p = [0.916291, 1.203973, 1.609438, 2.302585]`;
    /// scores `|−ln p − H| = [0.363563, 0.075881, 0.329584, 1.022731]`;
    /// ascending: id 1 (p 0.3), id 2 (0.2), id 0 (0.4), id 3 (0.1);
    /// cumulative: 0.3, 0.5, 0.9, 1.0.
    fn tenths() -> [f32; 4] {
        [0.4f32.ln(), 0.3f32.ln(), 0.2f32.ln(), 0.1f32.ln()]
    }

    #[test]
    fn one_is_an_identity() {
        let logits = [0.5, NEG_INF, -1.0];
        let mut c = Candidates::from_logits(&logits);
        assert_eq!(run(1.0, 1, &mut c), vec![0, 1, 2]);
        assert!(c.is_dense() && c.cached_probs().is_none());
        assert_eq!(c.raw_logits(), &logits);
    }

    #[test]
    fn keeps_the_most_typical_prefix_in_score_order() {
        // Cumulative 0.3, 0.5, 0.9, 1.0 (see `tenths`).
        assert_eq!(run_dense(0.45, 1, &tenths()), vec![1, 2]); // 0.5 > 0.45
        assert_eq!(run_dense(0.6, 1, &tenths()), vec![1, 2, 0]); // 0.9 > 0.6
        assert_eq!(run_dense(0.95, 1, &tenths()), vec![1, 2, 0, 3]); // 1.0 > 0.95
        assert_eq!(run_dense(0.2, 1, &tenths()), vec![1]); // 0.3 > 0.2
        assert_eq!(run_dense(0.0, 1, &tenths()), vec![1]);
        let mut c = Candidates::from_logits(&tenths());
        run(0.6, 1, &mut c);
        assert!(!c.is_sorted());
        // The logits travel with their ids.
        let pairs: Vec<(u32, f32)> = c.iter().collect();
        assert_eq!(
            pairs,
            vec![(1, tenths()[1]), (2, tenths()[2]), (0, tenths()[0])]
        );
    }

    #[test]
    fn min_keep_extends_the_prefix() {
        // p = 0.1 alone keeps id 1 (0.3 > 0.1); min_keep 3 keeps ids 1, 2, 0.
        assert_eq!(run_dense(0.1, 3, &tenths()), vec![1, 2, 0]);
        // More than there are: every candidate, in score order.
        assert_eq!(run_dense(0.1, 9, &tenths()), vec![1, 2, 0, 3]);
    }

    #[test]
    fn ties_go_to_the_lower_id_and_the_cut_is_strict() {
        // Sparse ids 7 and 3 with equal logits: p = [0.5, 0.5], H = ln 2, both scores 0, so
        // id 3 comes first. p = 0.5: cumulative 0.5 is not > 0.5, so both are kept.
        let c = || Candidates::from_sparse(vec![7, 3], vec![1.0, 1.0], 10).unwrap();
        assert_eq!(run(0.5, 1, &mut c()), vec![3, 7]);
        assert_eq!(run(0.4, 1, &mut c()), vec![3]);
    }

    #[test]
    fn masked_candidates_are_dropped_and_do_not_poison_the_entropy() {
        // Finite p = [0.4, 0.6] (id 0, id 2), id 1 masked. H = 0.673012 (llama.cpp: NaN);
        // scores: 0.243279 for 0.4, 0.162186 for 0.6, so id 2 comes first.
        let logits = [0.4f32.ln(), NEG_INF, 0.6f32.ln()];
        assert_eq!(run_dense(0.5, 1, &logits), vec![2]); // 0.6 > 0.5
                                                         // A mass the prefix may never exceed: all finite candidates, never the masked one.
        assert_eq!(run_dense(1.0 - 1e-12, 1, &logits), vec![2, 0]);
        assert_eq!(run_dense(0.5, 5, &logits), vec![2, 0]);
        // Nothing finite, or nothing at all: unchanged, no panic.
        assert_eq!(run_dense(0.5, 1, &[NEG_INF, NEG_INF]), vec![0, 1]);
        assert_eq!(run_dense(0.5, 1, &[]), Vec::<u32>::new());
    }

    #[test]
    fn zero_probability_finite_candidates_come_last() {
        // Logits [0, −200, 0]: p = [0.5, 0 (underflow), 0.5]; H = ln 2; scores 0, +inf, 0.
        assert_eq!(run_dense(0.9, 3, &[0.0, -200.0, 0.0]), vec![0, 2, 1]);
        assert_eq!(run_dense(0.9, 1, &[0.0, -200.0, 0.0]), vec![0, 2]);
    }

    #[test]
    fn entry_declares_ranges_and_builds() {
        let e = sieve_core::StageEntry::of::<Typical>();
        assert_eq!(e.info.param("p").unwrap().default, Some(Value::Float(1.0)));
        assert!(e
            .info
            .param("p")
            .unwrap()
            .check(&Value::Float(-0.1))
            .is_err());
        let args = Args::new(
            "typical",
            vec![
                ("p".into(), Value::Float(0.45)),
                ("min_keep".into(), Value::Int(1)),
            ],
        );
        let mut stage = (e.build)(&args, &BuildContext::default()).unwrap();
        let mut c = Candidates::from_logits(&tenths());
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.iter().map(|(id, _)| id).collect::<Vec<_>>(), vec![1, 2]);
    }
}

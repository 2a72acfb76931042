//! Loading only the candidates a pipeline's `top_k` can keep.
//!
//! A pipeline such as `penalty(1.1) | temp(0.7) | top_k(40) | …` drops all but 40 of a
//! vocabulary of 151 936 tokens in its third stage. Until then its stages edit a few known
//! tokens (the penalty: the tokens of the history window) or scale every logit, which keeps
//! their order. So the tokens that can survive the `top_k` are known before the row is loaded:
//!
//! - Let `T` be the tokens the stages before `top_k(k)` may change (their
//!   [`Footprint::Tokens`]) and `U` the others, whose logits reach `top_k` unchanged, or
//!   scaled by one positive factor that keeps their order.
//! - A token of `U` that `top_k` keeps has fewer than `k` tokens ranked above it after the
//!   stages; the tokens of `U` ranked above it in the row still are, so it is among the `k`
//!   best of `U` in the row, and those are among the `k + |T|` best of the whole row.
//! - So `top_k` keeps only tokens of `T` and of the `k + |T|` best of the row: loading those
//!   (and no other) gives every stage the same candidates from `top_k` on, in the same order,
//!   and the pipeline the same token, bit for bit (`tests/tests/prefilter.rs` checks it on
//!   random rows and pipelines).
//!
//! Two things would break the argument, so they end the plan: a scale that is not simply
//! recorded ([`Candidates::scale_logits`](crate::Candidates::scale_logits) applies a factor at once when the product of scales
//! leaves the normal range, and its rounding can tie distinct logits, which then rank by id),
//! and an edit after a recorded scale (the edit applies the scale to every logit first, with
//! the same rounding).

use alloc::vec::Vec;

use crate::{Context, Footprint, Sampler};

/// Loading stays selective only when it keeps at most one candidate in this many: beyond,
/// the full load is about as fast and the plan not worth its work.
const MIN_VOCAB_PER_CANDIDATE: usize = 16;

/// The candidates to load for a pipeline: the `best` best-ranked finite logits of the row,
/// and the tokens of `also` (sorted, distinct, inside the row) whatever their logits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefilter {
    /// How many of the row's best-ranked finite logits to load.
    pub best: usize,
    /// Tokens loaded whatever their logits: those the stages before `top_k` may change.
    pub also: Vec<u32>,
}

/// The prefilter for `stages` (a pipeline without its selector) on a row of `n` logits at the
/// step `cx`, if every stage up to the first `top_k` tells what it does (see the module's
/// doc) and the `top_k` keeps few enough.
pub(crate) fn plan<'a>(
    stages: impl Iterator<Item = &'a mut (dyn Sampler + 'static)>,
    cx: &Context<'_>,
    n: usize,
) -> Option<Prefilter> {
    let mut also = Vec::new();
    let mut scale = 1.0f32;
    for stage in stages {
        let pushed_before = also.len();
        let footprint = stage.footprint(cx, &mut also);
        if footprint != Footprint::Tokens {
            also.truncate(pushed_before); // only `Tokens` names tokens
        }
        match footprint {
            Footprint::Nothing => {}
            Footprint::Tokens if scale == 1.0 => {}
            Footprint::Scale(factor) => {
                let product = scale * factor;
                let recorded = factor.is_finite() && factor > 0.0 && product.is_normal();
                if !recorded {
                    return None;
                }
                scale = product;
            }
            Footprint::KeepTop(k) if k > 0 => {
                also.retain(|&t| (t as usize) < n);
                also.sort_unstable();
                also.dedup();
                let best = k.checked_add(also.len())?;
                let few = best.checked_mul(MIN_VOCAB_PER_CANDIDATE)? <= n;
                return few.then_some(Prefilter { best, also });
            }
            _ => return None,
        }
    }
    None
}

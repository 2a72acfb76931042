//! `top_p(p, min_keep=1)`: nucleus sampling, keep the smallest set of most likely tokens whose
//! probability mass reaches `p`.
//!
//! # Formula
//! With candidates in rank order (descending logit, ties by ascending id) and `p_i` their
//! softmax probabilities, keep the first `m` where `m` is the smallest count with
//! `Σ_{i<m} p_i ≥ p` and `m ≥ min_keep`. The token that crosses `p` is kept.
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
//! - The cumulative sum is taken in `f64` over `f32` probabilities, so a boundary that
//!   llama.cpp decides by `f32` rounding may fall one token differently.
//! - Masked (`-inf`) candidates have `p = 0` and are never needed to reach `p`.
//!
//! # Speed
//! On a short or already sorted list: sort, then one prefix walk. On a long unsorted list
//! (a full vocabulary) nothing long is sorted: the `K` best candidates are found with the
//! threshold scan of [`Candidates::top_positions_unordered`] (about one read of the logits),
//! starting at `K = 256` and growing while their mass stays below `p`; inside them a weighted
//! quickselect finds the cut, and the kept set is one pass
//! ([`Candidates::keep_ranked_through`]). The output keeps the input order on that path (and
//! is sorted on the short one).

use alloc::vec::Vec;
use core::cmp::Ordering;

use sieve_core::{rank, BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};

/// Lists up to this long are sorted outright.
const SORT_MAX: usize = 1024;
/// The number of best candidates examined first on a long list.
const FIRST_K: usize = 256;
/// Strided sample size for guessing how many more candidates the cut needs.
const SAMPLE: usize = 1024;
/// Quickselect sorts ranges this short.
const QUICKSELECT_SORT_MAX: usize = 24;

/// The `top_p` stage.
#[derive(Debug, Clone)]
pub struct TopP {
    p: f64,
    min_keep: usize,
}

impl TopP {
    /// Keeps the smallest prefix with mass `≥ p` and at least `min_keep` tokens.
    pub fn new(p: f64, min_keep: usize) -> Self {
        TopP {
            p,
            min_keep: min_keep.max(1),
        }
    }
}

impl Sampler for TopP {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.p >= 1.0 || candidates.is_empty() {
            return Ok(());
        }
        if candidates.is_sorted() || candidates.len() <= SORT_MAX {
            candidates.sort_desc();
            let count = prefix_count(candidates.softmax(), self.p, self.min_keep);
            candidates.truncate(count);
            return Ok(());
        }
        let cut = find_cut(candidates, self.p);
        if cut.count >= self.min_keep {
            candidates.keep_ranked_through(cut.raw_logit, cut.id);
        } else {
            candidates.keep_top(self.min_keep);
        }
        Ok(())
    }
}

/// The smallest `m ≥ min_keep` with `Σ_{i<m} probs[i] ≥ p`, for probabilities in rank order.
fn prefix_count(probs: &[f32], p: f64, min_keep: usize) -> usize {
    let mut cum = 0.0f64;
    for (i, &pi) in probs.iter().enumerate() {
        cum += pi as f64;
        if cum >= p && i + 1 >= min_keep {
            return i + 1;
        }
    }
    probs.len()
}

/// The last kept candidate in rank order, and how many are kept.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cut {
    raw_logit: f32,
    id: u32,
    count: usize,
}

/// A candidate in question: weight, raw logit, id.
type Item = (f32, f32, u32);

/// Finds the top-p cut of long unsorted candidates (see the module doc, *Speed*).
fn find_cut(candidates: &mut Candidates, p: f64) -> Cut {
    let total = candidates.weights().1;
    let candidates = &*candidates;
    let weights = candidates.cached_probs().unwrap_or(&[]);
    let raw = candidates.raw_logits();
    let target = p * total;
    let mut k = FIRST_K.min(raw.len());
    loop {
        let top = candidates.top_positions_unordered(k);
        let mut items: Vec<Item> = top
            .iter()
            .map(|&pos| {
                (
                    weights[pos as usize],
                    raw[pos as usize],
                    candidates.id(pos as usize),
                )
            })
            .collect();
        let mass: f64 = items.iter().map(|item| item.0 as f64).sum();
        if mass >= target || k >= raw.len() {
            return weighted_select(&mut items, target);
        }
        // Every candidate outside the top k weighs at most the lightest inside (the one with
        // the lowest logit), so at least `(target − mass) / lightest` more are needed; a
        // strided sample guesses how many more, and the guess is doubled for safety.
        let (lowest, lightest) = items
            .iter()
            .fold((f32::INFINITY, f32::INFINITY), |acc, item| {
                if item.1 < acc.0 {
                    (item.1, item.0)
                } else {
                    acc
                }
            });
        let at_least = if lightest > 0.0 {
            (target - mass) / lightest as f64
        } else {
            f64::INFINITY
        };
        // When the sample below the k-th holds too little mass to say, grow fourfold.
        let guess =
            guess_more(raw, weights, lowest, target - mass).map_or(3.0 * k as f64, |g| g as f64);
        let grown = (k as f64 + 2.0 * guess.max(at_least)).max(2.0 * k as f64);
        k = if grown >= raw.len() as f64 {
            raw.len()
        } else {
            grown as usize
        };
    }
}

/// A guess of how many candidates with a raw logit below `below` hold the mass `need`, from a
/// strided sample: each sampled candidate below it stands for `n / m` candidates of its weight.
/// `None` when the sampled mass never reaches `need`.
fn guess_more(raw: &[f32], weights: &[f32], below: f32, need: f64) -> Option<usize> {
    let n = raw.len();
    let m = SAMPLE.min(n);
    let mut sample: Vec<(f32, f32)> = (0..m)
        .map(|j| (raw[j * n / m], weights[j * n / m]))
        .filter(|s| s.0 < below)
        .collect();
    sample.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let stands_for = n as f64 / m as f64;
    let mut cum = 0.0f64;
    let reached = sample.iter().position(|s| {
        cum += s.1 as f64 * stands_for;
        cum >= need
    });
    reached.map(|j| ((j + 1) as f64 * stands_for) as usize)
}

/// The cut among `items` (the best candidates, in any order): the item at which the mass, in
/// rank order, first reaches `target`. Weighted quickselect: partition around a pivot, keep the
/// side holding the cut; expected linear time. If the mass never reaches `target` (rounding),
/// the last item in rank order.
fn weighted_select(items: &mut [Item], target: f64) -> Cut {
    let before = |a: &Item, b: &Item| rank((a.1, a.2), (b.1, b.2)) == Ordering::Less;
    let (mut lo, mut hi) = (0usize, items.len());
    let mut need = target;
    let mut kept_before = 0usize;
    while hi - lo > QUICKSELECT_SORT_MAX {
        let part = &mut items[lo..hi];
        let pivot = median_of_three(part, &before);
        let mut split = 0;
        for i in 0..part.len() {
            if before(&part[i], &pivot) {
                part.swap(i, split);
                split += 1;
            }
        }
        let mass: f64 = part[..split].iter().map(|item| item.0 as f64).sum();
        if mass >= need {
            hi = lo + split;
        } else {
            need -= mass;
            kept_before += split;
            lo += split;
        }
        if split == 0 {
            // The pivot is the best of the range: take it, or go past it.
            let at = part
                .iter()
                .position(|item| item.1 == pivot.1 && item.2 == pivot.2)
                .unwrap_or(0);
            part.swap(0, at);
            if (part[0].0 as f64) >= need || hi - lo == 1 {
                return Cut {
                    raw_logit: part[0].1,
                    id: part[0].2,
                    count: kept_before + 1,
                };
            }
            need -= part[0].0 as f64;
            kept_before += 1;
            lo += 1;
        }
    }
    let rest = &mut items[lo..hi];
    rest.sort_unstable_by(|a, b| rank((a.1, a.2), (b.1, b.2)));
    let mut cum = 0.0f64;
    for (i, item) in rest.iter().enumerate() {
        cum += item.0 as f64;
        if cum >= need {
            return Cut {
                raw_logit: item.1,
                id: item.2,
                count: kept_before + i + 1,
            };
        }
    }
    match rest.last() {
        Some(last) => Cut {
            raw_logit: last.1,
            id: last.2,
            count: kept_before + rest.len(),
        },
        None => Cut {
            raw_logit: f32::INFINITY,
            id: 0,
            count: kept_before,
        },
    }
}

/// The median (in rank order) of the first, middle and last items.
fn median_of_three(part: &[Item], before: &impl Fn(&Item, &Item) -> bool) -> Item {
    let (a, b, c) = (part[0], part[part.len() / 2], part[part.len() - 1]);
    if before(&a, &b) == before(&b, &c) {
        b
    } else if before(&b, &a) == before(&a, &c) {
        a
    } else {
        c
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

    /// The long path must agree with sorting everything and walking the prefix.
    fn check_long_path(logits: &[f32], p: f64) {
        let mut fast = Candidates::from_logits(logits);
        fast.scale_logits(1.0 / 0.7);
        TopP::new(p, 1)
            .apply(&mut fast, &Context::default())
            .unwrap();
        let mut slow = Candidates::from_logits(logits);
        slow.scale_logits(1.0 / 0.7);
        slow.sort_desc();
        let sorted_probs = slow.softmax().to_vec();
        let count = prefix_count(&sorted_probs, p, 1);
        slow.truncate(count);
        let mut a: Vec<u32> = fast.iter().map(|(id, _)| id).collect();
        let mut b: Vec<u32> = slow.iter().map(|(id, _)| id).collect();
        a.sort_unstable();
        b.sort_unstable();
        if a != b {
            // The two paths normalize with sums taken in different orders, so every
            // probability may differ in its last bit; the boundary may then move by one token,
            // but only where the mass before it is within rounding of p.
            let shorter = a.len().min(b.len());
            let mass: f64 = sorted_probs[..shorter].iter().map(|&x| x as f64).sum();
            assert!(
                a.len().abs_diff(b.len()) == 1 && (mass - p).abs() < 1e-6,
                "p={p}: {} vs {}, mass {mass}",
                a.len(),
                b.len()
            );
        }
    }

    #[test]
    fn long_path_matches_full_sort() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        // Roughly normal logits (sum of uniforms), a long flat tail, many ties.
        let normal: Vec<f32> = (0..50_000)
            .map(|_| (next() + next() + next() + next() - 2.0) * 4.0)
            .collect();
        let ties: Vec<f32> = (0..20_000).map(|i| (i % 7) as f32).collect();
        let peaked: Vec<f32> = (0..30_000)
            .map(|i| if i == 12_345 { 30.0 } else { next() })
            .collect();
        for logits in [&normal, &ties, &peaked] {
            for p in [0.0, 0.1, 0.5, 0.9, 0.95, 0.999] {
                check_long_path(logits, p);
            }
        }
    }
}

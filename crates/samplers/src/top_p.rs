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
//! (a full vocabulary) nothing long is sorted; the cost is about one vectorized pass of
//! exponentials and two reads of the logits:
//! 1. the softmax weights `w_i` and their sum `Z`, in one vectorized pass into the stage's
//!    own buffer ([`sieve_core::math::fast_exp_shifted_to_vec`]: a cheaper `2^t` than the
//!    probabilities' `exp`, accurate to about `2e-7` where the mass is; the selector that
//!    follows computes the probabilities of the few survivors itself);
//! 2. a raw-logit floor `F` whose candidates hold mass `≥ p·Z`: guessed from a strided sample
//!    (the sampled weight below `F` stands for the tail, which must stay under a share of
//!    `(1 − p)·Z`, a margin for the sample's error), then checked exactly: the candidates
//!    at or above `F` are found by one threshold scan
//!    ([`sieve_core::math::positions_at_least`]) and their weights added; a failed check
//!    lowers `F` (one unit of scaled logit, then to a depth that surely suffices) and scans
//!    again;
//! 3. the cut among those found: their mass in equal-width logit bins from the maximum down
//!    (bins follow rank order, since a lower logit weighs less), a walk over the bins in rank
//!    order to the one where the mass reaches `p·Z`, and only that bin sorted;
//! 4. the survivors, those found that rank at or before the cut, in their current order
//!    ([`Candidates::keep_positions`], one compaction); if they are fewer than `min_keep`,
//!    the `min_keep` best instead, sorted ([`Candidates::keep_top`]).
//!
//! Every operation and every order of additions is fixed, so the result is the same on every
//! machine. It can differ from a walk over all the probabilities sorted only by rounding
//! (weights a few `1e-7` apart, added in another grouping), when the mass before the cut is
//! within about `1e-6` of `p`.

use alloc::vec::Vec;

use sieve_core::{
    math, rank, BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage,
};

/// Lists up to this long are sorted outright.
const SORT_MAX: usize = 1024;
/// Strided sample size for guessing the floor.
const SAMPLE: usize = 1024;
/// Bins of the sample, each `1 / SAMPLE_BINS_PER_UNIT` wide in scaled logits (`e^-1` in weight
/// per unit), the last one also holding everything farther down.
const SAMPLE_BINS: usize = 128;
/// See [`SAMPLE_BINS`].
const SAMPLE_BINS_PER_UNIT: f32 = 4.0;
/// Found candidates per bin, on average, when looking for the cut.
const PER_BIN: usize = 4;
/// The share of the tail the nucleus may leave out, `(1 − p)·Z`, that the sampled tail below
/// the guessed floor may hold: a margin for the sample's error (on normal logits the floor
/// then finds about 1.8 times the survivors, and 2 guesses in 120 fall short).
const TAIL_MARGIN: f64 = 0.65;

/// The `top_p` stage.
#[derive(Debug, Clone)]
pub struct TopP {
    p: f64,
    min_keep: usize,
    /// Scratch: the weights of a long list (reused between steps).
    weights: Vec<f32>,
    /// Scratch: the candidates found above the floor (reused between steps).
    found: Found,
}

impl TopP {
    /// Keeps the smallest prefix with mass `≥ p` and at least `min_keep` tokens.
    pub fn new(p: f64, min_keep: usize) -> Self {
        TopP {
            p,
            min_keep: min_keep.max(1),
            weights: Vec::new(),
            found: Found::default(),
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
        match nucleus(candidates, self.p, &mut self.weights, &mut self.found) {
            Some(kept) if kept.len() >= self.min_keep => candidates.keep_positions(&kept),
            _ => candidates.keep_top(self.min_keep),
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

/// The positions (increasing) of the nucleus of long unsorted candidates (see the module
/// doc, *Speed*), with `weights` and `found` as scratch; `None` when every candidate is masked.
fn nucleus(c: &Candidates, p: f64, weights: &mut Vec<f32>, found: &mut Found) -> Option<Vec<u32>> {
    let raw = c.raw_logits();
    let (max, scale) = (c.raw_max(), c.pending_scale());
    if max == f32::NEG_INFINITY {
        return None;
    }
    let total = math::fast_exp_shifted_to_vec(raw, max, scale, weights);
    let weights = &weights[..];
    let target = p * total;
    // Depths (scaled distance below the maximum, weight `e^-d`) to try: the sample's guess
    // and one unit deeper, then a sure one: the maximum weighs 1, so every candidate deeper
    // than `d` weighs less than `e^-d`, and the `n` of them less than `n·e^-d`, which is
    // `Z − target` at `d = ln(n / (Z − target))`; then every finite candidate (only rounding
    // can get there).
    let sure = libm::logf((raw.len() as f64 / (total - target)) as f32) + 0.01;
    let guess = guess_depth(raw, weights, max, scale, (total - target) * TAIL_MARGIN);
    let depths = guess
        .into_iter()
        .flat_map(|d| [d, d + 1.0])
        .filter(|&d| d < sure)
        .chain([sure]);
    for depth in depths.chain([f32::INFINITY]) {
        let floor = (max - depth / scale).max(f32::MIN); // -inf and NaN give f32::MIN
        found.collect(raw, weights, max, floor);
        if found.mass.iter().sum::<f64>() >= target || floor == f32::MIN {
            break;
        }
    }
    let (cut_logit, cut_id) = found.cut(c, weights, target);
    let kept = found
        .positions
        .iter()
        .zip(&found.logits)
        .filter(|&(&pos, &l)| l > cut_logit || (l == cut_logit && c.id(pos as usize) <= cut_id))
        .map(|(&pos, _)| pos)
        .collect();
    Some(kept)
}

/// The candidates at or above a raw-logit floor, binned by logit for finding the cut.
#[derive(Debug, Clone, Default)]
struct Found {
    /// Their positions, increasing.
    positions: Vec<u32>,
    /// Their raw logits.
    logits: Vec<f32>,
    /// Their bins: `⌊(max − logit) · nbins / (max − floor)⌋`, at most `nbins − 1`. The
    /// subtraction and the product round monotonically, so a better-ranked candidate never
    /// has a later bin; a span of 0 or past `f32::MAX` puts everything in bin 0.
    bins: Vec<u32>,
    /// The weight in each bin.
    mass: Vec<f64>,
}

impl Found {
    /// The candidates with raw logit `≥ floor` (one threshold scan), binned.
    fn collect(&mut self, raw: &[f32], weights: &[f32], max: f32, floor: f32) {
        self.positions.clear();
        math::positions_at_least(raw, floor, 0, &mut self.positions);
        let nbins = (self.positions.len() / PER_BIN).clamp(1, 1 << 16);
        let per_unit = nbins as f32 / (max - floor);
        self.logits.clear();
        self.logits
            .extend(self.positions.iter().map(|&pos| raw[pos as usize]));
        self.bins.clear();
        self.bins.extend(self.logits.iter().map(|&l| {
            // Saturating; NaN (0·inf) gives 0.
            (((max - l) * per_unit) as u32).min(nbins as u32 - 1)
        }));
        self.mass.clear();
        self.mass.resize(nbins, 0.0);
        for (&b, &pos) in self.bins.iter().zip(&self.positions) {
            self.mass[b as usize] += weights[pos as usize] as f64;
        }
    }

    /// The cut: the `(raw logit, id)` of the candidate at which the mass, in rank order,
    /// first reaches `target`; the last one in rank order if rounding leaves it short. Whole
    /// bins are added until one would reach `target`; only that bin is sorted (and the next,
    /// if rounding leaves the walk through it short).
    fn cut(&self, c: &Candidates, weights: &[f32], target: f64) -> (f32, u32) {
        let mut cum = 0.0f64;
        for (b, &bin_mass) in self.mass.iter().enumerate() {
            if cum + bin_mass < target {
                cum += bin_mass;
                continue;
            }
            // (raw logit, id, weight) of the bin's candidates, in rank order.
            let mut bin: Vec<(f32, u32, f32)> = (0..self.positions.len())
                .filter(|&i| self.bins[i] as usize == b)
                .map(|i| {
                    let pos = self.positions[i] as usize;
                    (self.logits[i], c.id(pos), weights[pos])
                })
                .collect();
            bin.sort_unstable_by(|x, y| rank((x.0, x.1), (y.0, y.1)));
            for &(l, id, w) in &bin {
                cum += w as f64;
                if cum >= target {
                    return (l, id);
                }
            }
        }
        let ids = self.positions.iter().map(|&pos| c.id(pos as usize));
        self.logits
            .iter()
            .copied()
            .zip(ids)
            .reduce(|x, y| if rank(x, y).is_gt() { x } else { y })
            .unwrap_or((f32::INFINITY, 0))
    }
}

/// A scaled distance `d` below the maximum such that the candidates farther down (weight
/// `< e^-d`) hold, by a strided sample, at most `budget` of the weight: the tail the nucleus
/// may leave out, with a margin. Each sampled candidate stands for `n / m` candidates. `None`
/// when the sampled weight never exceeds `budget`: then the mass sits in a few heavy
/// candidates the sample may well have missed, and the guess says nothing.
fn guess_depth(raw: &[f32], weights: &[f32], max: f32, scale: f32, budget: f64) -> Option<f32> {
    let n = raw.len();
    let m = SAMPLE.min(n);
    let mut bins = [0.0f64; SAMPLE_BINS];
    for j in 0..m {
        let i = j * n / m;
        let d = (max - raw[i]) * scale * SAMPLE_BINS_PER_UNIT;
        bins[(d as usize).min(SAMPLE_BINS - 1)] += weights[i] as f64;
    }
    let stands_for = n as f64 / m as f64;
    let mut tail = 0.0f64;
    (0..SAMPLE_BINS).rev().find_map(|b| {
        tail += bins[b] * stands_for;
        (tail > budget).then(|| (b + 1) as f32 / SAMPLE_BINS_PER_UNIT)
    })
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

    #[test]
    fn long_path_matches_full_sort_on_heavy_heads_and_tails() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 + 0.5) / (1u64 << 24) as f32
        };
        // Laplace logits (a few heavy tokens, a long thin tail), a Zipf-like decline with
        // noise (mass spread over thousands), and a wide normal one (the sure depth).
        let laplace: Vec<f32> = (0..100_000)
            .map(|_| {
                let u = next();
                3.0 * if u < 0.5 {
                    (2.0 * u).ln()
                } else {
                    -(2.0 - 2.0 * u).ln()
                }
            })
            .collect();
        let zipf: Vec<f32> = (0..60_000)
            .map(|i| -2.0 * ((i % 7919) as f32 + 1.0).ln() + next())
            .collect();
        let wide: Vec<f32> = (0..40_000)
            .map(|_| (next() + next() + next() - 1.5) * 20.0)
            .collect();
        for logits in [&laplace, &zipf, &wide] {
            for p in [0.05, 0.5, 0.8, 0.9, 0.99, 0.9999] {
                check_long_path(logits, p);
            }
        }
    }

    #[test]
    fn long_path_handles_min_keep_masks_and_sparse_ids() {
        let logits: Vec<f32> = (0..5000)
            .map(|i| match i % 10 {
                0 => f32::NEG_INFINITY,
                _ => ((i * 7919 % 1000) as f32).sin() * 3.0,
            })
            .collect();
        let nucleus = run(0.5, 1, &logits);
        assert!(
            nucleus.iter().all(|&id| id % 10 != 0),
            "a masked token kept"
        );
        // min_keep beyond the nucleus: the min_keep best instead, sorted.
        let mut c = Candidates::from_logits(&logits);
        TopP::new(0.5, nucleus.len() + 10)
            .apply(&mut c, &Context::default())
            .unwrap();
        assert_eq!(c.len(), nucleus.len() + 10);
        assert!(c.is_sorted());
        // The same candidates as sparse ids in another order keep the same tokens.
        let order: Vec<u32> = (0..logits.len() as u32).rev().collect();
        let shuffled: Vec<f32> = order.iter().map(|&i| logits[i as usize]).collect();
        let mut c = Candidates::from_sparse(order, shuffled, logits.len()).unwrap();
        TopP::new(0.5, 1)
            .apply(&mut c, &Context::default())
            .unwrap();
        let mut ids: Vec<u32> = c.iter().map(|(id, _)| id).collect();
        ids.sort_unstable();
        assert_eq!(ids, nucleus);
        // Everything masked: nothing is left.
        let mut c = Candidates::from_logits(&[f32::NEG_INFINITY; 3000]);
        TopP::new(0.9, 1)
            .apply(&mut c, &Context::default())
            .unwrap();
        assert!(c.is_empty());
    }
}

//! `top_p(p, min_keep=1)`: nucleus sampling, keep the smallest set of most likely tokens whose
//! probability mass reaches `p`.
//!
//! # Formula
//! With candidates in rank order (descending logit, ties by ascending id) and `w_i` their
//! softmax weights, `Z = Σ_i w_i`, keep the first `m` where `m` is the smallest count with
//! `Σ_{i<m} w_i ≥ p·Z` and `m ≥ min_keep`. The token that crosses `p` is kept.
//!
//! # How the cut is decided
//! The `w_i` are the weights the core's softmax uses ([`Candidates::weights`]: the `f32`
//! values of [`sieve_core::math::exp_shifted_into`], or the candidates' cached probabilities
//! when a stage before computed them), and every sum that decides is taken in `f64`. Both
//! paths below decide with exactly these weights, so they keep the same tokens up to the order
//! of the `f64` additions (at most about `n·1e-16·Z` apart, which only a mass that close to
//! `p·Z` could tell). On the long path a cheaper exponential estimates the mass of the tail,
//! away from the cut, with a proven bound on its error; it never decides a token: a cut is
//! taken only when every total within that bound gives the same one, and otherwise the exact
//! weights of every candidate are computed.
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
//!
//! # Speed
//! On a short or already sorted list: sort, the weights, then one prefix walk. On a long
//! unsorted list (a full vocabulary) nothing long is sorted and the exact weights are computed
//! only for the candidates near the top (the *head*); the cost is about one vectorized pass of
//! a cheaper exponential and two reads of the logits:
//! 1. a raw-logit floor `F` whose head (the candidates at or above it) should hold mass
//!    `≥ p·Z`: guessed from a strided sample (the sampled weight below `F` stands for the
//!    tail, which must stay under a share of `(1 − p)·Z`, `Z` estimated from the sample too);
//! 2. the tail's mass estimated from *fast weights*
//!    ([`sieve_core::math::fast_weight_sum_below`]: `2^t` with a shorter polynomial, about 16
//!    operations a value instead of 30, not stored), summed over the candidates below `F`
//!    only, so that its rounding is relative to the tail;
//! 3. the head, found by one threshold scan ([`sieve_core::math::positions_at_least`]), and
//!    its exact weights (the kernel of [`Candidates::weights`] over their logits, bit for bit
//!    the values a full softmax gives them), summed to `H`. The tail's exact mass lies within
//!    a bound `ε` of its fast estimate `T` (`tail_error`: the fast weights' proven error,
//!    plus every rounding of the sums), so `Z ∈ [H + T − ε, H + T + ε]`. If `H < p·(H + T +
//!    ε)`, `F` is lowered (the sample's guess again with `Z` now bounded, one unit of scaled
//!    logit, a depth that surely suffices, then every finite candidate, where `Z = H`
//!    exactly), the head found again, and the fast weights of the band between the floors
//!    taken off `T`;
//! 4. the cut among the head, for both ends of `Z`: their exact mass in equal-width logit
//!    bins from the maximum down (bins follow rank order, since a lower logit weighs less), a
//!    walk over the bins in rank order to the one where the mass reaches the target, and only
//!    that bin sorted. If both ends give the same cut, every `Z` in the interval does, the
//!    exact one included: that is the cut. If not (the mass before the cut is within about
//!    `2ε` of `p·Z`: on normal logits about 1 cut in 25 at `p = 0.9`, 1 in 10 at `p = 0.99`,
//!    more as `p` nears 1 and the token at the cut gets lighter),
//!    the exact weights of every candidate are computed ([`Candidates::weights`], then kept
//!    for the selector that follows) and the cut taken with their `f64` sum, among the same
//!    head (it holds at least `p·(H + T + ε) ≥ p·Z`);
//! 5. the survivors, the head candidates that rank at or before the cut, in their current
//!    order ([`Candidates::keep_positions`], one compaction); if they are fewer than
//!    `min_keep`, the `min_keep` best instead, sorted ([`Candidates::keep_top`]).
//!
//! When the candidates already hold their weights (a stage before computed them), those
//! decide directly, with `Z` their `f64` sum. Every operation and every order of additions is
//! fixed, so the result is the same on every machine.

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
/// the guessed floor may hold when `Z` is known (exactly, or within the fast weights' bound):
/// a margin for the sample's error.
const TAIL_MARGIN: f64 = 0.65;
/// The same share when `Z` is the sample's own estimate, before any pass over the
/// candidates: that estimate is usually low (the few heavy candidates are rarely sampled; on
/// normal logits its median is 0.7 of `Z`), which the whole tail budget about makes up for.
/// On normal logits (128 256 of them, N(0, 2.5²), `temp(0.7)`, `p = 0.9`, 100 seeds) the head
/// then holds about 2.1 times the survivors, and 1 first guess in 4 falls short (the next,
/// with `Z` bounded, costs one more scan, not another pass).
const SAMPLED_MARGIN: f64 = 1.0;

/// The `top_p` stage.
#[derive(Debug, Clone)]
pub struct TopP {
    p: f64,
    min_keep: usize,
    /// Scratch: the candidates found above the floor (reused between steps).
    found: Found,
}

impl TopP {
    /// Keeps the smallest prefix with mass `≥ p` and at least `min_keep` tokens.
    pub fn new(p: f64, min_keep: usize) -> Self {
        TopP {
            p,
            min_keep: min_keep.max(1),
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
            let (weights, _) = candidates.weights();
            let total = math::sum_f64(weights);
            if total > 0.0 {
                let count = prefix_count(weights, self.p * total, self.min_keep);
                candidates.truncate(count);
            }
            return Ok(());
        }
        if long_nucleus(candidates, self.p, &mut self.found)
            && self.found.kept.len() >= self.min_keep
        {
            candidates.keep_positions(&self.found.kept);
        } else {
            candidates.keep_top(self.min_keep);
        }
        Ok(())
    }
}

/// The smallest `m ≥ min_keep` with `Σ_{i<m} weights[i] ≥ target` (summed in `f64`), for
/// weights in rank order; all of them if none is.
fn prefix_count(weights: &[f32], target: f64, min_keep: usize) -> usize {
    let mut cum = 0.0f64;
    for (i, &w) in weights.iter().enumerate() {
        cum += w as f64;
        if cum >= target && i + 1 >= min_keep {
            return i + 1;
        }
    }
    weights.len()
}

/// Finds the nucleus of long unsorted candidates (see the module doc, *Speed*): its
/// positions (increasing) in `found.kept`; `false` when every candidate is masked.
fn long_nucleus(c: &mut Candidates, p: f64, found: &mut Found) -> bool {
    let per_unit = c.pending_scale() * core::f32::consts::LOG2_E;
    if c.cached_probs().is_some() || !per_unit.is_finite() {
        c.weights();
        let c = &*c;
        return nucleus(c, p, found, c.cached_probs()) == Nucleus::Kept;
    }
    match nucleus(c, p, found, None) {
        Nucleus::Kept => true,
        Nucleus::Masked => false,
        Nucleus::InDoubt => {
            // The head found holds at least `p·hi ≥ p·Z` of the exact mass, so the exact cut
            // is among it: only the exact total is missing. The head's weights are the ones
            // the candidates' kernel computes, bit for bit.
            let total = math::sum_f64(c.weights().0);
            let [cut, _] = found.cuts(c, [p * total; 2]);
            found.keep_through(c, cut);
            true
        }
    }
}

/// What [`nucleus`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Nucleus {
    /// The nucleus, its positions (increasing) in [`Found::kept`].
    Kept,
    /// The bound on the fast weights leaves the cut in doubt: decide with the exact weights.
    InDoubt,
    /// Every candidate is masked.
    Masked,
}

/// Steps 1–4 of the long path (see the module doc) with the candidates' exact weights
/// `exact` (the whole vector), or with `None` exact weights for the head and the fast estimate
/// of the tail.
fn nucleus(c: &Candidates, p: f64, found: &mut Found, exact: Option<&[f32]>) -> Nucleus {
    let raw = c.raw_logits();
    let (max, scale, n) = (c.raw_max(), c.pending_scale(), raw.len());
    if max == f32::NEG_INFINITY {
        return Nucleus::Masked;
    }
    // The whole mass: exact, or estimated from the sample (plus the maximum, which weighs 1),
    // only to place the floor.
    found.sample(raw, exact, max, scale);
    let estimate = match exact {
        Some(w) => math::sum_f64(w),
        None => 1.0 + found.sample_mass(n),
    };
    // Depths (scaled distance below the maximum, weight `e^-d`) to try: the sample's guess
    // and one unit deeper; then a sure one: the maximum weighs 1, so every candidate deeper
    // than `d` weighs less than `e^-d`, and the `n` of them less than `n·e^-d`, which is half
    // of `(1 − p)·Z` at `d = ln(2n / ((1 − p)·Z))`, `Z` as the first try bounds it; then every
    // finite candidate.
    let sure = |z: f64| libm::logf((2.0 * n as f64 / ((1.0 - p) * z)) as f32) + 0.01;
    let margin = if exact.is_some() {
        TAIL_MARGIN
    } else {
        SAMPLED_MARGIN
    };
    let guess = found.guess_depth(n, max, scale, (1.0 - p) * estimate * margin);
    let floor_at = |depth: f32| (max - depth / scale).max(f32::MIN); // -inf, NaN: f32::MIN
    let mut depth = guess.unwrap_or_else(|| sure(estimate));
    // The fast tail below the first floor, within `rounding` of its fast weights' sum.
    let first_floor = floor_at(depth);
    let (tail_below_first, rounding) = match exact {
        None if first_floor > f32::MIN => {
            let tail = math::fast_weight_sum_below(raw, max, scale, first_floor);
            (tail, math::fast_weight_sum_rounding(tail, n))
        }
        _ => (0.0, 0.0),
    };
    for attempt in 0.. {
        let floor = floor_at(depth);
        found.collect(raw, exact, max, scale, floor, first_floor);
        let head: f64 = found.mass.iter().sum();
        // The whole exact mass lies in [lo, hi].
        let (lo, hi) = if exact.is_some() {
            (estimate, estimate)
        } else if floor == f32::MIN {
            (head, head) // the tail is masked: its exact weights are 0
        } else {
            let tail = (tail_below_first - found.band_fast_mass).max(0.0);
            let err = tail_error(tail, rounding, n);
            (head + (tail - err).max(0.0), head + tail + err)
        };
        if head >= p * hi || floor == f32::MIN {
            let [first, last] = found.cuts(c, [p * lo, p * hi]);
            if first != last {
                return Nucleus::InDoubt;
            }
            found.keep_through(c, first);
            return Nucleus::Kept;
        }
        // Deeper: the sample's guess again, now with the mass `hi` bounds (when the first
        // guess rested on the sample's own estimate), one unit deeper, a sure depth, then
        // everything.
        let deeper = match attempt {
            0 if exact.is_none() => found
                .guess_depth(n, max, scale, (1.0 - p) * hi * TAIL_MARGIN)
                .unwrap_or(depth)
                .max(depth + 0.25),
            0 | 1 => depth + 1.0,
            2 => sure(hi),
            _ => f32::INFINITY,
        };
        depth = if deeper > depth {
            deeper
        } else {
            f32::INFINITY
        };
    }
    unreachable!("the depths end with every finite candidate")
}

/// A bound on how far the exact mass of the tail (the candidates below the floor) is from
/// `tail`, the fast estimate, itself within `rounding` of the exact sum of the tail's fast
/// weights (see [`math::fast_weight_sum_rounding`]), among `n` candidates.
///
/// Each fast weight `v_i` whose exponent `|e_i| ≤ C` is within `ρ(C)·v_i` of its exact
/// weight `w_i`, `ρ(C) = e^(BASE + PER_UNIT·C) − 1` (from `|ln(v_i/w_i)| ≤ BASE +
/// PER_UNIT·|e_i|`, the constants of `sieve_core::math`); each deeper one is, with its `w_i`,
/// below `1.01·e^-C`. So for any `0 ≤ C ≤ 80`:
/// `|Σ w_i − tail| ≤ ρ(C)·(tail + rounding) + 1.01·n·e^-C + rounding`. `C` is taken where the
/// two middle terms trade off, `C = ln(n / (PER_UNIT·(tail + rounding)))`.
fn tail_error(tail: f64, rounding: f64, n: usize) -> f64 {
    let upper = tail.max(0.0) + rounding;
    let n = n as f64;
    let c = if upper > 0.0 {
        libm::log(n / (math::FAST_WEIGHT_REL_PER_UNIT * upper))
    } else {
        math::FAST_WEIGHT_MAX_DEPTH
    };
    let c = c.clamp(0.0, math::FAST_WEIGHT_MAX_DEPTH);
    let rho = libm::expm1(math::FAST_WEIGHT_REL_BASE + math::FAST_WEIGHT_REL_PER_UNIT * c);
    rho * upper + 1.01 * n * libm::exp(-c) + rounding
}

/// The candidates at or above a raw-logit floor (the head), with their exact weights, binned
/// by logit for finding the cut.
#[derive(Debug, Clone, Default)]
struct Found {
    /// Their positions, increasing.
    positions: Vec<u32>,
    /// Their raw logits.
    logits: Vec<f32>,
    /// Their exact weights.
    weights: Vec<f32>,
    /// Scratch: the logits of those below the first floor tried (the band between it and
    /// this floor), then their fast weights.
    band: Vec<f32>,
    /// The sum of the band's fast weights, in the order of [`math::sum_f64`] (0 when the
    /// exact weights were given).
    band_fast_mass: f64,
    /// Their bins: `⌊(max − logit) · nbins / (max − floor)⌋`, at most `nbins − 1`. The
    /// subtraction and the product round monotonically, so a better-ranked candidate never
    /// has a later bin; a span of 0 or past `f32::MAX` puts everything in bin 0.
    bins: Vec<u32>,
    /// The exact weight in each bin.
    mass: Vec<f64>,
    /// Scratch: `(raw logit, id, exact weight)` of a bin being sorted.
    bin: Vec<(f32, u32, f32)>,
    /// Scratch: the logits of the strided sample.
    sample_logits: Vec<f32>,
    /// Scratch: the weights of the strided sample.
    sample_weights: Vec<f32>,
    /// The positions (increasing) of the nucleus, when found.
    kept: Vec<u32>,
}

impl Found {
    /// The candidates with raw logit `≥ floor` (one threshold scan), their exact weights
    /// (gathered from `exact`, or computed by the kernel of [`Candidates::weights`] with its
    /// shift `max` and `scale`, bit for bit the same values; then also the fast weights of
    /// those below `first_floor`), binned.
    fn collect(
        &mut self,
        raw: &[f32],
        exact: Option<&[f32]>,
        max: f32,
        scale: f32,
        floor: f32,
        first_floor: f32,
    ) {
        self.positions.clear();
        math::positions_at_least(raw, floor, 0, &mut self.positions);
        let len = self.positions.len();
        self.logits.clear();
        self.logits
            .extend(self.positions.iter().map(|&pos| raw[pos as usize]));
        self.weights.clear();
        self.band_fast_mass = 0.0;
        if let Some(w) = exact {
            self.weights
                .extend(self.positions.iter().map(|&pos| w[pos as usize]));
        } else {
            self.weights.resize(len, 0.0);
            math::exp_shifted_into(&self.logits, max, scale, &mut self.weights);
            if floor < first_floor {
                self.band.clear();
                self.band
                    .extend(self.logits.iter().filter(|&&l| l < first_floor));
                let band = core::mem::take(&mut self.band);
                self.band.resize(band.len(), 0.0);
                math::fast_weights_into(&band, max, scale, &mut self.band);
                self.band_fast_mass = math::sum_f64(&self.band);
            }
        }
        let nbins = (len / PER_BIN).clamp(1, 1 << 16);
        let per_unit = nbins as f32 / (max - floor);
        self.bins.clear();
        self.bins.extend(self.logits.iter().map(|&l| {
            // Saturating; NaN (0·inf) gives 0.
            (((max - l) * per_unit) as u32).min(nbins as u32 - 1)
        }));
        self.mass.clear();
        self.mass.resize(nbins, 0.0);
        for (&b, &w) in self.bins.iter().zip(&self.weights) {
            self.mass[b as usize] += w as f64;
        }
    }

    /// Sets [`Found::kept`] to the head candidates ranked at or before `cut` (raw logit, id),
    /// in their current order.
    fn keep_through(&mut self, c: &Candidates, (cut_logit, cut_id): (f32, u32)) {
        self.kept.clear();
        self.kept.extend(
            self.positions
                .iter()
                .zip(&self.logits)
                .filter(|&(&pos, &l)| {
                    l > cut_logit || (l == cut_logit && c.id(pos as usize) <= cut_id)
                })
                .map(|(&pos, _)| pos),
        );
    }

    /// For each of two increasing targets, the cut: the `(raw logit, id)` of the candidate
    /// at which the exact mass, in rank order, first reaches it; the last one in rank order
    /// if rounding leaves it short. Whole bins are added while they stay below the target;
    /// only the bins holding a cut are sorted. One walk for both, so a cut for a larger target
    /// is never earlier.
    fn cuts(&mut self, c: &Candidates, targets: [f64; 2]) -> [(f32, u32); 2] {
        let mut cuts = [None; 2];
        let mut next = 0;
        let mut cum = 0.0f64;
        let mut bin = core::mem::take(&mut self.bin);
        for (b, &bin_mass) in self.mass.iter().enumerate() {
            if cum + bin_mass < targets[next] {
                cum += bin_mass;
                continue;
            }
            bin.clear();
            bin.extend(
                (0..self.positions.len())
                    .filter(|&i| self.bins[i] as usize == b)
                    .map(|i| {
                        (
                            self.logits[i],
                            c.id(self.positions[i] as usize),
                            self.weights[i],
                        )
                    }),
            );
            bin.sort_unstable_by(|x, y| rank((x.0, x.1), (y.0, y.1)));
            for &(l, id, w) in &bin {
                cum += w as f64;
                while next < 2 && cum >= targets[next] {
                    cuts[next] = Some((l, id));
                    next += 1;
                }
                if next == 2 {
                    self.bin = bin;
                    return [cuts[0].unwrap_or((l, id)), (l, id)];
                }
            }
        }
        self.bin = bin;
        let ids = self.positions.iter().map(|&pos| c.id(pos as usize));
        let last = self
            .logits
            .iter()
            .copied()
            .zip(ids)
            .reduce(|x, y| if rank(x, y).is_gt() { x } else { y })
            .unwrap_or((f32::INFINITY, 0));
        [cuts[0].unwrap_or(last), cuts[1].unwrap_or(last)]
    }

    /// Takes the strided sample of the candidates: `m = min(SAMPLE, n)` of them, with their
    /// weights (exact when given, else fast).
    fn sample(&mut self, raw: &[f32], exact: Option<&[f32]>, max: f32, scale: f32) {
        let n = raw.len();
        let m = SAMPLE.min(n);
        let at = |j: usize| j * n / m;
        self.sample_logits.clear();
        self.sample_logits.extend((0..m).map(|j| raw[at(j)]));
        self.sample_weights.clear();
        match exact {
            Some(w) => self.sample_weights.extend((0..m).map(|j| w[at(j)])),
            None => {
                self.sample_weights.resize(m, 0.0);
                math::fast_weights_into(&self.sample_logits, max, scale, &mut self.sample_weights);
            }
        }
    }

    /// The sample's estimate of the mass of all `n` candidates (each sampled one stands for
    /// `n / m`).
    fn sample_mass(&self, n: usize) -> f64 {
        math::sum_f64(&self.sample_weights) * n as f64 / self.sample_weights.len() as f64
    }

    /// A scaled distance `d` below the maximum such that the candidates farther down (weight
    /// `< e^-d`) hold, by the sample, at most `budget` of the weight: the tail the nucleus may
    /// leave out, with a margin. `None` when the sampled weight never exceeds `budget`: then
    /// the mass sits in a few heavy candidates the sample may well have missed, and the guess
    /// says nothing.
    fn guess_depth(&self, n: usize, max: f32, scale: f32, budget: f64) -> Option<f32> {
        let mut bins = [0.0f64; SAMPLE_BINS];
        for (&l, &w) in self.sample_logits.iter().zip(&self.sample_weights) {
            let d = (max - l) * scale * SAMPLE_BINS_PER_UNIT;
            bins[(d as usize).min(SAMPLE_BINS - 1)] += w as f64;
        }
        let stands_for = n as f64 / self.sample_weights.len() as f64;
        let mut tail = 0.0f64;
        (0..SAMPLE_BINS).rev().find_map(|b| {
            tail += bins[b] * stands_for;
            (tail > budget).then(|| (b + 1) as f32 / SAMPLE_BINS_PER_UNIT)
        })
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

    /// The sorted walk over the candidates' own weights (the short path, on any length): the
    /// kept ids, and the exact margin `|Σ_{i<m'} w_i − p·Z| / Z` of the nearest boundary
    /// `m'` (the cut or the one before it).
    fn by_sorting(logits: &[f32], scale: f32, p: f64) -> (Vec<u32>, f64) {
        let mut c = Candidates::from_logits(logits);
        c.scale_logits(scale);
        c.sort_desc();
        let (w, _) = c.weights();
        let w = w.to_vec();
        let total = math::sum_f64(&w);
        let count = prefix_count(&w, p * total, 1);
        let before: f64 = w[..count - 1].iter().map(|&x| x as f64).sum();
        let at = before + w[count - 1] as f64;
        let margin = (before - p * total).abs().min((at - p * total).abs()) / total;
        c.truncate(count);
        let mut ids: Vec<u32> = c.iter().map(|(id, _)| id).collect();
        ids.sort_unstable();
        (ids, margin)
    }

    /// The long path must keep exactly what sorting everything and walking the prefix keeps,
    /// unless the mass at the boundary is within `f64` rounding (`1e-12·Z`) of `p·Z`.
    fn check_long_path(logits: &[f32], p: f64) {
        let scale = 1.0 / 0.7;
        let mut fast = Candidates::from_logits(logits);
        fast.scale_logits(scale);
        TopP::new(p, 1)
            .apply(&mut fast, &Context::default())
            .unwrap();
        let mut got: Vec<u32> = fast.iter().map(|(id, _)| id).collect();
        got.sort_unstable();
        let (want, margin) = by_sorting(logits, scale, p);
        assert!(
            got == want || margin < 1e-12,
            "p={p}: {} vs {} kept, margin {margin}",
            got.len(),
            want.len()
        );
    }

    #[test]
    fn long_path_matches_full_sort() {
        let mut next = crate::shared::uniform_stream();
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

    /// Normal logits (sum of four uniforms), `n` of them from `seed`.
    fn normal(n: usize, seed: u64, spread: f32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..n)
            .map(|_| (next() + next() + next() + next() - 2.0) * spread)
            .collect()
    }

    #[test]
    fn a_cut_the_fast_bound_leaves_in_doubt_is_decided_by_the_exact_weights() {
        // p placed 1e-9 of the mass past a boundary of the exact sorted walk: far beyond f64
        // rounding, far inside the fast weights' bound. The fast attempt must give up, and the
        // stage must keep exactly the sorted walk's tokens (the boundary token too).
        let scale = 1.0 / 0.7;
        let logits = normal(50_000, 7, 5.0);
        let mut sorted = Candidates::from_logits(&logits);
        sorted.scale_logits(scale);
        sorted.sort_desc();
        let w = sorted.weights().0.to_vec();
        let total = math::sum_f64(&w);
        let mut doubts = 0;
        for m in [3usize, 40, 200, 900] {
            let before: f64 = w[..m].iter().map(|&x| x as f64).sum();
            for nudge in [-1e-9, 1e-9] {
                let p = (before + nudge * total) / total;
                let mut c = Candidates::from_logits(&logits);
                c.scale_logits(scale);
                let mut found = Found::default();
                if nucleus(&c, p, &mut found, None) == Nucleus::InDoubt {
                    doubts += 1;
                }
                TopP::new(p, 1).apply(&mut c, &Context::default()).unwrap();
                let mut got: Vec<u32> = c.iter().map(|(id, _)| id).collect();
                got.sort_unstable();
                let (want, margin) = by_sorting(&logits, scale, p);
                assert!(margin > 1e-10, "m = {m}: margin {margin}");
                assert_eq!(got.len(), if nudge < 0.0 { m } else { m + 1 }, "m = {m}");
                assert_eq!(got, want, "m = {m}, nudge {nudge}");
            }
        }
        assert_eq!(
            doubts, 8,
            "the fast bound should not settle a cut 1e-9 from p"
        );
    }

    #[test]
    fn the_fast_bound_settles_most_cuts_and_always_as_the_exact_walk() {
        // Normal logits at several spreads and masses: every cut equals the sorted walk's
        // (strictly, unless within 1e-12 of p). The exact fallback is rare up to p = 0.95;
        // nearer 1 the token at the cut is light next to the bound, and it is common.
        let (mut cases, mut doubts) = (0, 0);
        for seed in 0..6u64 {
            for spread in [1.0f32, 2.5, 6.0] {
                let logits = normal(20_000, 2 * seed + 1, spread);
                for p in [0.3, 0.7, 0.9, 0.95, 0.99, 0.999] {
                    let mut c = Candidates::from_logits(&logits);
                    c.scale_logits(1.0 / 0.7);
                    let mut found = Found::default();
                    if p <= 0.95 {
                        cases += 1;
                        if nucleus(&c, p, &mut found, None) == Nucleus::InDoubt {
                            doubts += 1;
                        }
                    }
                    check_long_path(&logits, p);
                }
            }
        }
        assert!(
            doubts * 10 <= cases,
            "{doubts} of {cases} cuts left in doubt"
        );
    }

    #[test]
    fn cached_weights_decide_directly() {
        // A stage before computed the softmax: the long path uses those probabilities.
        let logits = normal(30_000, 3, 2.5);
        for p in [0.5, 0.9, 0.99] {
            let mut c = Candidates::from_logits(&logits);
            c.scale_logits(1.0 / 0.7);
            c.softmax();
            TopP::new(p, 1).apply(&mut c, &Context::default()).unwrap();
            assert!(c.cached_probs().is_some());
            let mut got: Vec<u32> = c.iter().map(|(id, _)| id).collect();
            got.sort_unstable();
            let (want, margin) = by_sorting(&logits, 1.0 / 0.7, p);
            assert!(got == want || margin < 1e-6, "p = {p}: margin {margin}");
        }
    }

    #[test]
    fn the_tail_bound_covers_the_fast_weights() {
        // The bound against the exact tail mass, on tails of every depth: summed below the
        // floor, or below a shallower first floor less the band between the two.
        let logits = normal(40_000, 11, 6.0);
        for scale in [1.0f32, 1.0 / 0.7, 0.2, 5.0] {
            let mut c = Candidates::from_logits(&logits);
            c.scale_logits(scale);
            let (raw, max, n) = (c.raw_logits(), c.raw_max(), logits.len());
            let mut exact = vec![0.0f32; n];
            math::exp_shifted_into(raw, max, scale, &mut exact);
            let mut fast = vec![0.0f32; n];
            math::fast_weights_into(raw, max, scale, &mut fast);
            let below = |floor: f32, w: &[f32]| -> f64 {
                (0..n)
                    .filter(|&i| raw[i] < floor)
                    .map(|i| w[i] as f64)
                    .sum()
            };
            for first in [0.5f32, 2.0, 5.0, 10.0, 20.0, 40.0] {
                let first_floor = max - first / scale;
                let tail0 = math::fast_weight_sum_below(raw, max, scale, first_floor);
                let rounding = math::fast_weight_sum_rounding(tail0, n);
                for deeper in [0.0f32, 1.0, 6.0] {
                    let floor = max - (first + deeper) / scale;
                    let band: f64 = (0..n)
                        .filter(|&i| raw[i] >= floor && raw[i] < first_floor)
                        .map(|i| fast[i] as f64)
                        .sum();
                    let tail = tail0 - band;
                    let want = below(floor, &exact);
                    let err = tail_error(tail, rounding, n);
                    assert!(
                        (want - tail).abs() <= err,
                        "scale {scale}, depth {first}+{deeper}: {want} vs {tail} ± {err}"
                    );
                    assert!(err <= 2e-5 * tail0 + 1e-9, "{err} on {tail0}");
                }
            }
        }
    }
}

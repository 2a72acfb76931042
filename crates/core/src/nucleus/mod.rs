//! Nucleus (top-p) truncation: keep the smallest set of most likely candidates whose
//! probability mass reaches `p`, without sorting a long list.
//!
//! [`Nucleus`] holds the algorithm's scratch (reused between steps) and [`Nucleus::keep`]
//! applies it; the `top_p` stage of `sieve-samplers` is a thin shell around it.
//!
//! # Formula
//! With candidates in rank order (descending logit, ties by ascending id) and `w_i` their
//! softmax weights, `Z = Σ_i w_i`, keep the first `m` where `m` is the smallest count with
//! `Σ_{i<m} w_i ≥ p·Z` and `m ≥ min_keep`. The token that crosses `p` is kept.
//!
//! # How the cut is decided
//! The `w_i` are the weights the core's softmax uses ([`Candidates::weights`]: the `f32`
//! values of [`math::exp_shifted_into`], or the candidates' cached probabilities
//! when a stage before computed them), and every sum that decides is taken in `f64`. Both
//! paths below decide with exactly these weights, so they keep the same tokens up to the order
//! of the `f64` additions (at most about `n·1e-16·Z` apart, which only a mass that close to
//! `p·Z` could tell). On the long path a cheaper exponential estimates the mass of the tail,
//! away from the cut, with a proven bound on its error; it never decides a token: a cut is
//! taken only when every total within that bound gives the same one, and otherwise the exact
//! weights of every candidate are computed.
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
//!    ([`math::fast_weight_sum_below`]: `2^t` with a shorter polynomial, about 16
//!    operations a value instead of 30, not stored), summed over the candidates below `F`
//!    only, so that its rounding is relative to the tail;
//! 3. the head, found by one threshold scan ([`math::positions_at_least`]), and
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

use crate::{math, rank, Candidates};

#[cfg(test)]
mod tests;

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

/// The nucleus (top-p) truncation, with its scratch: the candidates found above a floor, their
/// weights and bins, reused between steps (see the [module doc](self)).
#[derive(Debug, Clone, Default)]
pub struct Nucleus {
    found: Found,
}

impl Nucleus {
    /// Keeps the nucleus of `candidates`: with them in rank order (descending logit, ties by
    /// ascending id) and `w_i` their softmax weights ([`Candidates::weights`]), `Z = Σ_i w_i`,
    /// the first `m`, `m` the smallest count with `Σ_{i<m} w_i ≥ p·Z` (summed in `f64`) and
    /// `m ≥ min_keep` (a `min_keep` of 0 reads as 1).
    ///
    /// # Guarantees
    /// - The token that crosses `p` is kept; ties at the boundary keep the lower ids.
    /// - `p ≥ 1` (or no candidates) leaves the candidates untouched, nothing sorted.
    /// - A short (at most 1024) or already sorted list ends sorted and truncated. A long
    ///   unsorted one keeps the survivors in their current order, except when fewer than
    ///   `min_keep` survive: then the `min_keep` best, sorted.
    /// - Masked (`-inf`) candidates weigh 0 and are never needed to reach `p`. When every
    ///   candidate is masked, a short list is left as it is and a long one is emptied.
    /// - Both paths decide with the same `f32` weights, so they keep the same tokens up to the
    ///   order of the `f64` additions; the result is the same on every machine.
    pub fn keep(&mut self, candidates: &mut Candidates, p: f64, min_keep: usize) {
        let min_keep = min_keep.max(1);
        if p >= 1.0 || candidates.is_empty() {
            return;
        }
        if candidates.is_sorted() || candidates.len() <= SORT_MAX {
            candidates.sort_desc();
            let (weights, _) = candidates.weights();
            let total = math::sum_f64(weights);
            if total > 0.0 {
                let count = prefix_count(weights, p * total, min_keep);
                candidates.truncate(count);
            }
            return;
        }
        if long_nucleus(candidates, p, &mut self.found) && self.found.kept.len() >= min_keep {
            candidates.keep_positions(&self.found.kept);
        } else {
            candidates.keep_top(min_keep);
        }
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
        return nucleus(c, p, found, c.cached_probs()) == Outcome::Kept;
    }
    match nucleus(c, p, found, None) {
        Outcome::Kept => true,
        Outcome::Masked => false,
        Outcome::InDoubt => {
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
enum Outcome {
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
fn nucleus(c: &Candidates, p: f64, found: &mut Found, exact: Option<&[f32]>) -> Outcome {
    let raw = c.raw_logits();
    let (max, scale, n) = (c.raw_max(), c.pending_scale(), raw.len());
    if max == f32::NEG_INFINITY {
        return Outcome::Masked;
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
                return Outcome::InDoubt;
            }
            found.keep_through(c, first);
            return Outcome::Kept;
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
/// PER_UNIT·|e_i|`, the constants of `crate::math`); each deeper one is, with its `w_i`,
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

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
//! (a full vocabulary) nothing is sorted: the boundary is found by narrowing a band of logits
//! around it, each round estimating the cut from a small strided sample and then measuring
//! the exact mass above the band in one pass, until the band is small enough to sort; the
//! kept set is then one pass ([`Candidates::keep_ranked_through`]). The output keeps the
//! input order on that path (and is sorted on the short one).

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Ordering;

use sieve_core::{Candidates, Context, Error, ParamSpec, Range, Sampler, StageEntry, StageInfo};

/// Lists up to this long are sorted outright.
const SORT_MAX: usize = 1024;
/// A band this small is sorted to find the exact cut.
const BAND_SORT_MAX: usize = 512;
/// Strided sample size for estimating the cut.
const SAMPLE: usize = 256;
/// Sample ranks on each side of the estimated cut that bound the band.
const MARGIN: usize = 12;
/// Narrowing rounds before sorting whatever band is left.
const MAX_ROUNDS: usize = 8;

/// The `top_p` stage.
#[derive(Debug, Clone)]
pub struct TopP {
    p: f64,
    min_keep: usize,
}

impl TopP {
    /// Keeps the smallest prefix with mass `≥ p` and at least `min_keep` tokens.
    pub fn new(p: f64, min_keep: usize) -> Self {
        TopP { p, min_keep: min_keep.max(1) }
    }
}

impl Sampler for TopP {
    fn name(&self) -> &str {
        "top_p"
    }

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
        candidates.softmax();
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

/// Rank order on `(raw logit, id)`: descending logit, ties by ascending id.
fn rank(a: (f32, u32), b: (f32, u32)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// Finds the top-p cut of unsorted candidates whose probabilities are cached.
fn find_cut(candidates: &Candidates, p: f64) -> Cut {
    let raw = candidates.raw_logits();
    let probs = candidates.cached_probs().unwrap_or(&[]);
    // `band` holds the positions still in question (None: all); everything ranked above the
    // band is kept, with mass `above` and count `above_count`.
    let mut band: Option<Vec<u32>> = None;
    let mut band_mass = probs.iter().map(|&x| x as f64).sum::<f64>();
    let mut above = 0.0f64;
    let mut above_count = 0usize;
    for _ in 0..MAX_ROUNDS {
        let len = band.as_ref().map_or(raw.len(), Vec::len);
        if len <= BAND_SORT_MAX {
            break;
        }
        let at = |j: usize| band.as_ref().map_or(j, |b| b[j] as usize);
        let need = p - above;
        let Some((hi, lo)) = estimate_bounds(raw, probs, len, &at, need / band_mass) else {
            break;
        };
        // One pass: mass and count strictly above `hi`, and the band (lo, hi].
        let mut mass_hi = 0.0f64;
        let mut count_hi = 0usize;
        let mut mass_mid = 0.0f64;
        let mut mid = Vec::new();
        for j in 0..len {
            let pos = at(j);
            let x = raw[pos];
            if x > hi {
                mass_hi += probs[pos] as f64;
                count_hi += 1;
            } else if x > lo {
                mass_mid += probs[pos] as f64;
                mid.push(pos as u32);
            }
        }
        if mass_hi >= need {
            // The cut lies above `hi`: narrow to that part.
            band = Some((0..len).map(&at).filter(|&pos| raw[pos] > hi).map(|pos| pos as u32).collect());
            band_mass = mass_hi;
        } else if mass_hi + mass_mid < need {
            // The cut lies at or below `lo`: everything above it is kept.
            above += mass_hi + mass_mid;
            above_count += count_hi + mid.len();
            band = Some((0..len).map(&at).filter(|&pos| raw[pos] <= lo).map(|pos| pos as u32).collect());
            band_mass -= mass_hi + mass_mid;
        } else {
            above += mass_hi;
            above_count += count_hi;
            if mid.len() == len {
                band = Some(mid);
                break;
            }
            band = Some(mid);
            band_mass = mass_mid;
        }
    }
    exact_cut(candidates, band, above, above_count, p)
}

/// From a strided sample of the band, the logits bounding the estimated cut: `(hi, lo)` with
/// about `MARGIN` sampled candidates between each bound and the cut. `None` when the sample
/// cannot separate anything (all equal, or no mass).
fn estimate_bounds(
    raw: &[f32],
    probs: &[f32],
    len: usize,
    at: &impl Fn(usize) -> usize,
    need_fraction: f64,
) -> Option<(f32, f32)> {
    let m = SAMPLE.min(len);
    let mut sample: Vec<(f32, f32)> = (0..m)
        .map(|j| {
            let pos = at(j * len / m);
            (raw[pos], probs[pos])
        })
        .collect();
    sample.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let total: f64 = sample.iter().map(|s| s.1 as f64).sum();
    if total <= 0.0 || sample[0].0 == sample[m - 1].0 {
        return None;
    }
    let mut cum = 0.0f64;
    let mut star = m - 1;
    for (j, s) in sample.iter().enumerate() {
        cum += s.1 as f64;
        if cum >= need_fraction * total {
            star = j;
            break;
        }
    }
    let hi = if star >= MARGIN { sample[star - MARGIN].0 } else { f32::INFINITY };
    let lo = if star + MARGIN < m { sample[star + MARGIN].0 } else { f32::NEG_INFINITY };
    Some((hi, lo))
}

/// Sorts the band and walks it from the mass above it to the cut.
fn exact_cut(candidates: &Candidates, band: Option<Vec<u32>>, above: f64, above_count: usize, p: f64) -> Cut {
    let raw = candidates.raw_logits();
    let probs = candidates.cached_probs().unwrap_or(&[]);
    let mut items: Vec<(f32, u32, f32)> = match band {
        Some(b) => b.into_iter().map(|pos| pos as usize).map(|pos| (raw[pos], candidates.id(pos), probs[pos])).collect(),
        None => (0..raw.len()).map(|pos| (raw[pos], candidates.id(pos), probs[pos])).collect(),
    };
    items.sort_unstable_by(|a, b| rank((a.0, a.1), (b.0, b.1)));
    let mut cum = above;
    for (i, item) in items.iter().enumerate() {
        cum += item.2 as f64;
        if cum >= p {
            return Cut { raw_logit: item.0, id: item.1, count: above_count + i + 1 };
        }
    }
    // Rounding left `p` unreached: keep everything in the band.
    match items.last() {
        Some(last) => Cut { raw_logit: last.0, id: last.1, count: above_count + items.len() },
        None => Cut { raw_logit: f32::INFINITY, id: 0, count: above_count },
    }
}

/// Registry entry for `top_p`.
pub fn entry() -> StageEntry {
    let info = StageInfo::builtin(
        "top_p",
        "nucleus: keep the most likely tokens until their mass reaches p (1 = off)",
        vec![
            ParamSpec::float("p", 0.9, Range::closed(0.0, 1.0), "probability mass to keep"),
            ParamSpec::int("min_keep", 1, Range::closed(1.0, u32::MAX as f64), "keep at least this many tokens"),
        ],
    );
    StageEntry::new(info, |args, _| Ok(Box::new(TopP::new(args.f64("p")?, args.usize("min_keep")?))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(p: f64, min_keep: usize, logits: &[f32]) -> Vec<u32> {
        let mut c = Candidates::from_logits(logits).unwrap();
        TopP::new(p, min_keep).apply(&mut c, &Context::default()).unwrap();
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
        let mut c = Candidates::from_logits(&logits).unwrap();
        TopP::new(1.0, 1).apply(&mut c, &Context::default()).unwrap();
        assert!(c.is_dense() && !c.is_sorted());
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![(0, 0.3), (1, f32::NEG_INFINITY), (2, 0.1)]);
    }

    #[test]
    fn ties_keep_the_lower_id() {
        // Four equal tokens, p = 0.5 → two of them, the lower ids.
        assert_eq!(run(0.5, 1, &[1.0; 4]), vec![0, 1]);
    }

    /// The long path must agree with sorting everything and walking the prefix.
    fn check_long_path(logits: &[f32], p: f64) {
        let mut fast = Candidates::from_logits(logits).unwrap();
        fast.scale_logits(1.0 / 0.7);
        TopP::new(p, 1).apply(&mut fast, &Context::default()).unwrap();
        let mut slow = Candidates::from_logits(logits).unwrap();
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
            assert!(a.len().abs_diff(b.len()) == 1 && (mass - p).abs() < 1e-6, "p={p}: {} vs {}, mass {mass}", a.len(), b.len());
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
        let normal: Vec<f32> = (0..50_000).map(|_| (next() + next() + next() + next() - 2.0) * 4.0).collect();
        let ties: Vec<f32> = (0..20_000).map(|i| (i % 7) as f32).collect();
        let peaked: Vec<f32> = (0..30_000).map(|i| if i == 12_345 { 30.0 } else { next() }).collect();
        for logits in [&normal, &ties, &peaked] {
            for p in [0.0, 0.1, 0.5, 0.9, 0.95, 0.999] {
                check_long_path(logits, p);
            }
        }
    }
}

//! The best `k` candidates without sorting the rest: `keep_top` and `top_positions_unordered`.

use alloc::vec::Vec;

use super::{rank, rank_key, Candidates};

/// Below this many candidates, selection is `select_nth_unstable`; above, a threshold scan.
const SCAN_MIN_LEN: usize = 2048;
/// Strided sample size for estimating a starting threshold.
pub(super) const SAMPLE: usize = 1024;

impl Candidates {
    /// Keeps the `k` candidates with the largest logits (ties: lower id first), sorted in that
    /// order; masked (`-inf`) candidates are dropped. Does nothing if `k >= len()`.
    ///
    /// On a full vocabulary this is one vectorized pass collecting the logits at or above an
    /// estimate of the k-th best, a selection among those, and a sort of the `k`.
    pub fn keep_top(&mut self, k: usize) {
        if k >= self.len() {
            return;
        }
        let order = if self.len() < SCAN_MIN_LEN {
            self.top_sorted_by_keys(k)
        } else {
            let mut order = self.top_positions_unordered(k);
            order.sort_unstable_by(|&a, &b| rank(self.key(a as usize), self.key(b as usize)));
            order
        };
        self.permute(&order);
        self.sorted = true;
    }

    /// The positions of the `k` best-ranked finite candidates (`0 < k < len`), in rank order,
    /// by one selection and one sort of integer keys ([`rank_key`] of logit and id, then the
    /// position): what [`Candidates::keep_top`] does on short lists, such as a pipeline's
    /// prefiltered candidates.
    fn top_sorted_by_keys(&self, k: usize) -> Vec<u32> {
        let mut keys: Vec<u128> = (0..self.len())
            .map(|p| (u128::from(rank_key(self.logits[p], self.id(p))) << 32) | p as u128)
            .collect();
        keys.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
        keys.truncate(k);
        keys.sort_unstable_by(|a, b| b.cmp(a));
        keys.into_iter()
            .map(|key| key as u32)
            .filter(|&p| self.logits[p as usize] > f32::NEG_INFINITY)
            .collect()
    }

    /// Positions of the `k` best-ranked candidates (largest logits, ties by lower id), in no
    /// particular order; fewer when fewer than `k` are finite (masked ones are never
    /// returned). The candidates are not changed.
    pub fn top_positions_unordered(&self, k: usize) -> Vec<u32> {
        let n = self.len();
        let mut order = if k == 0 {
            Vec::new()
        } else if k >= n {
            (0..n as u32).collect()
        } else if n < SCAN_MIN_LEN || k.saturating_mul(8) > n {
            self.top_by_select(k)
        } else {
            self.top_by_scan(k)
        };
        order.retain(|&pos| self.logits[pos as usize] > f32::NEG_INFINITY);
        order
    }

    /// Positions of the top `k` (`0 < k < len`), by selection over all positions.
    fn top_by_select(&self, k: usize) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.select_nth_unstable_by(k - 1, |&a, &b| {
            rank(self.key(a as usize), self.key(b as usize))
        });
        order.truncate(k);
        order
    }

    /// Positions of the top `k` (`0 < k < len`), by a threshold scan. The threshold is a
    /// lower estimate of the k-th best logit (`sample_estimates`); the contenders at or above
    /// it are collected in one vectorized pass ([`crate::math::positions_at_least`]) and the
    /// best `k` of them selected. If an estimate leaves fewer than `k` contenders, the next,
    /// lower one is tried, and finally every finite candidate.
    fn top_by_scan(&self, k: usize) -> Vec<u32> {
        if 2 * k * SAMPLE < self.len() {
            return self.top_by_running_threshold(k);
        }
        let try_estimate = |estimate: f32| -> Option<Vec<u32>> {
            let found = self.positions_at_least(estimate);
            (found.len() >= k).then(|| self.best_of(found, k))
        };
        if let Some(found) = self.sample_estimates(k).into_iter().find_map(try_estimate) {
            return found;
        }
        let finite = self.positions_at_least(f32::MIN);
        self.best_of(finite, k)
    }

    /// Positions of the top `k` for a `k` small next to the length (`2·k·SAMPLE < len`): one
    /// scan ([`crate::math::scan_at_least`]) with a running threshold, the k-th best so far,
    /// raised each time the buffer of contenders fills; few logits ever reach it, so the scan
    /// runs at the speed of reading.
    ///
    /// The threshold starts at the logit about 32 candidates reached when loaded (the
    /// smallest of 32 lane maxima; usually some 130 reach it, and at least 32 unless logits
    /// were edited since), else at the third best of a strided sample of `SAMPLE` logits,
    /// which about `3·len / SAMPLE` reach. If fewer than `k` reach the start, the scan runs
    /// again from the lowest finite logit: for the sample that takes three of it among the
    /// best `k`, with probability below `(k·SAMPLE/len)³/6 < 2%`.
    fn top_by_running_threshold(&self, k: usize) -> Vec<u32> {
        let start = self.top_hint().unwrap_or_else(|| self.sample_third_best());
        let start = start.max(f32::MIN); // -inf (too few finite) scans from the lowest
        let found = self.running_top(k, start);
        if found.len() < k && start > f32::MIN {
            return self.running_top(k, f32::MIN);
        }
        found
    }

    /// The third best of a strided sample of `SAMPLE` logits (`-inf` if fewer are finite).
    fn sample_third_best(&self) -> f32 {
        sample_third_best(&self.logits)
    }

    /// The scan of [`Candidates::top_by_running_threshold`] from threshold `start`: the
    /// positions of the best `k` of the logits `≥ start` (all of them if fewer).
    fn running_top(&self, k: usize, start: f32) -> Vec<u32> {
        running_top(&self.logits, |p| self.id(p), k, start)
    }

    /// The best `k` of `positions` (all of them if fewer), in no particular order. Selects on
    /// `(logit, id, position)` triples gathered once, not through the candidate arrays.
    fn best_of(&self, positions: Vec<u32>, k: usize) -> Vec<u32> {
        if positions.len() <= k {
            return positions;
        }
        let mut keyed: Vec<(f32, u32, u32)> = positions
            .iter()
            .map(|&p| (self.logits[p as usize], self.id(p as usize), p))
            .collect();
        keyed.select_nth_unstable_by(k - 1, |a, b| rank((a.0, a.1), (b.0, b.1)));
        keyed.truncate(k);
        keyed.into_iter().map(|e| e.2).collect()
    }

    /// Decreasing guesses of a logit with at least `k` logits at or above it, from ranks of a
    /// strided sample aiming at about `2k`, `8k` and `32k` contenders.
    fn sample_estimates(&self, k: usize) -> Vec<f32> {
        let n = self.len();
        let m = SAMPLE.min(n);
        let mut sample: Vec<f32> = (0..m).map(|j| self.logits[j * n / m]).collect();
        let mut estimates = Vec::new();
        for factor in [2, 8, 32] {
            let rank_in_sample = (factor * k * m) / n;
            if rank_in_sample >= m {
                break;
            }
            let (_, &mut estimate, _) =
                sample.select_nth_unstable_by(rank_in_sample, |a, b| b.total_cmp(a));
            if estimate > f32::NEG_INFINITY {
                estimates.push(estimate);
            }
        }
        estimates
    }
}

/// The third best of a strided sample of `SAMPLE` of `logits` (`-inf` if fewer are finite;
/// `logits` at least `SAMPLE` long).
pub(super) fn sample_third_best(logits: &[f32]) -> f32 {
    sample_rank::<3>(logits)
}

/// The `R`-th best of a strided sample of `SAMPLE` of `logits` (`-inf` if fewer are finite):
/// about `R·len / SAMPLE` logits reach it.
pub(super) fn sample_rank<const R: usize>(logits: &[f32]) -> f32 {
    let n = logits.len();
    let mut best = [f32::NEG_INFINITY; R];
    for j in 0..SAMPLE {
        let x = logits[j * n / SAMPLE];
        if x > best[R - 1] {
            best[R - 1] = x;
            best.sort_unstable_by(|a, b| b.total_cmp(a));
        }
    }
    best[R - 1]
}

/// The positions of the best `k` (`k > 0`) of the `logits` at or above `start` (all of them
/// if fewer), in no particular order, position `p` having id `id(p)` for the ties: one scan
/// ([`crate::math::scan_at_least`]) with a running threshold, the k-th best so far, raised
/// each time the buffer of contenders fills.
fn running_top(logits: &[f32], id: impl Fn(usize) -> u32, k: usize, start: f32) -> Vec<u32> {
    let cap = 4 * k.max(16);
    // (logit, id, position); room for one more block of hits past `cap`.
    let mut buf: Vec<(f32, u32, u32)> = Vec::with_capacity(cap + crate::math::SCAN_BLOCK);
    let cmp = |a: &(f32, u32, u32), b: &(f32, u32, u32)| rank((a.0, a.1), (b.0, b.1));
    let mut threshold = start;
    crate::math::scan_at_least(logits, threshold, |positions| {
        for &pos in positions {
            let p = pos as usize;
            buf.push((logits[p], id(p), pos));
        }
        if buf.len() >= cap {
            buf.select_nth_unstable_by(k - 1, cmp);
            buf.truncate(k);
            threshold = buf.iter().map(|e| e.0).fold(f32::INFINITY, f32::min);
        }
        threshold
    });
    if buf.len() > k {
        buf.select_nth_unstable_by(k - 1, cmp);
        buf.truncate(k);
    }
    buf.into_iter().map(|e| e.2).collect()
}

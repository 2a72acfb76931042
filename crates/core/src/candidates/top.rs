//! The best `k` candidates without sorting the rest: `keep_top` and `top_positions_unordered`.

use alloc::vec::Vec;

use super::{rank, Candidates};

/// Below this many candidates, selection is `select_nth_unstable`; above, a threshold scan.
const SCAN_MIN_LEN: usize = 2048;
/// Strided sample size for estimating a starting threshold.
const SAMPLE: usize = 256;

impl Candidates {
    /// Keeps the `k` candidates with the largest logits (ties: lower id first), sorted in that
    /// order; masked (`-inf`) candidates are dropped. Does nothing if `k >= len()`.
    ///
    /// On a full vocabulary this reads only the blocks whose bound can hold one of the best
    /// `k` (see [`Candidates`], *Block bounds*), then sorts those `k`.
    pub fn keep_top(&mut self, k: usize) {
        if k >= self.len() {
            return;
        }
        let mut order = self.top_positions_unordered(k);
        order.sort_unstable_by(|&a, &b| rank(self.key(a as usize), self.key(b as usize)));
        self.permute(&order);
        self.sorted = true;
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
    /// lower estimate of the k-th best logit: with exact block bounds, the k-th largest bound
    /// (each bound is some logit, in a different block, so at least `k` logits reach it);
    /// otherwise a strided sample's rank aiming at about `2k` contenders. The contenders are
    /// collected in one pass ([`crate::math::positions_at_least`], skipping blocks whose bound is below
    /// the threshold) and the best `k` of them selected. If the estimate leaves fewer than `k`
    /// contenders (bounds raised by edits, an unlucky sample), every finite candidate competes.
    fn top_by_scan(&self, k: usize) -> Vec<u32> {
        if let Some(estimate) = self.threshold_estimate(k) {
            let found = self.positions_at_least(estimate);
            if found.len() >= k {
                return self.best_of(found, k);
            }
        }
        let finite = self.positions_at_least(f32::MIN);
        self.best_of(finite, k)
    }

    /// The best `k` of `positions` (all of them if fewer), in no particular order.
    fn best_of(&self, mut positions: Vec<u32>, k: usize) -> Vec<u32> {
        if positions.len() > k {
            positions.select_nth_unstable_by(k - 1, |&a, &b| rank(self.key(a as usize), self.key(b as usize)));
            positions.truncate(k);
        }
        positions
    }

    /// A guess of a logit with at least `k` logits at or above it (see `top_by_scan`).
    fn threshold_estimate(&self, k: usize) -> Option<f32> {
        let from_bounds = self.bounds_valid && k <= self.bounds.len();
        let (mut sample, rank_in_sample) = if from_bounds {
            (self.bounds.clone(), k - 1)
        } else {
            let n = self.len();
            let m = SAMPLE.min(n);
            let sample: Vec<f32> = (0..m).map(|j| self.logits[j * n / m]).collect();
            (sample, (2 * k * m) / n)
        };
        if rank_in_sample >= sample.len() {
            return None;
        }
        let (_, &mut estimate, _) = sample.select_nth_unstable_by(rank_in_sample, |a, b| b.total_cmp(a));
        (estimate > f32::NEG_INFINITY).then_some(estimate)
    }
}

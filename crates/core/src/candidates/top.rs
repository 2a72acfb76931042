//! The best `k` candidates without sorting the rest: `keep_top` and `top_positions_unordered`.

use alloc::vec::Vec;
use core::cell::Cell;

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

    /// Positions of the top `k` (`0 < k < len`), by a threshold scan. The threshold starts at
    /// a lower estimate of the k-th best logit: with exact block bounds, the k-th largest bound
    /// (each bound is some logit, in a different block, so at least `k` logits reach it);
    /// otherwise a strided sample's rank aiming at about `2k` contenders. If the estimate
    /// leaves fewer than `k` contenders (bounds raised by edits, an unlucky sample), the scan
    /// is repeated from `-inf`.
    fn top_by_scan(&self, k: usize) -> Vec<u32> {
        if let Some(estimate) = self.threshold_estimate(k) {
            let found = self.scan_above(k, estimate);
            if found.len() >= k {
                return found;
            }
        }
        self.scan_above(k, f32::NEG_INFINITY)
    }

    /// A guess of a logit with at least `k` logits at or above it (see `top_by_scan`).
    fn threshold_estimate(&self, k: usize) -> Option<f32> {
        let mut sample: Vec<f32> = if self.bounds_valid && k <= self.bounds.len() {
            self.bounds.clone()
        } else {
            let n = self.len();
            let m = SAMPLE.min(n);
            (0..m).map(|j| self.logits[j * n / m]).collect()
        };
        let rank_in_sample = if self.bounds_valid && k <= self.bounds.len() {
            k - 1
        } else {
            (2 * k * sample.len()) / self.len()
        };
        if rank_in_sample >= sample.len() {
            return None;
        }
        let (_, &mut estimate, _) =
            sample.select_nth_unstable_by(rank_in_sample, |a, b| b.total_cmp(a));
        (estimate > f32::NEG_INFINITY).then_some(estimate)
    }

    /// The best `k` positions among those with logit `≥ start` (all of them if fewer).
    fn scan_above(&self, k: usize, start: f32) -> Vec<u32> {
        let cap = 4 * k.max(16);
        let mut buf: Vec<(f32, u32, u32)> = Vec::with_capacity(cap); // (logit, id, pos)
        let cmp = |a: &(f32, u32, u32), b: &(f32, u32, u32)| rank((a.0, a.1), (b.0, b.1));
        // Until the buffer first fills, keep everything at or above `start`; afterwards the
        // threshold is the k-th best so far. Dense ids grow with the position, so a later logit
        // equal to that threshold loses the tie to every buffered one and can be skipped;
        // sparse ids may not, so keep it.
        let threshold = Cell::new(start);
        let strict = Cell::new(false);
        self.visit_at_least(
            || threshold.get(),
            |pos, x| {
                if x == f32::NEG_INFINITY || (strict.get() && x == threshold.get()) {
                    return;
                }
                buf.push((x, self.id(pos), pos as u32));
                if buf.len() >= cap {
                    buf.select_nth_unstable_by(k - 1, cmp);
                    buf.truncate(k);
                    threshold.set(buf.iter().map(|e| e.0).fold(f32::INFINITY, f32::min));
                    strict.set(self.dense);
                }
            },
        );
        if buf.len() > k {
            buf.select_nth_unstable_by(k - 1, cmp);
            buf.truncate(k);
        }
        buf.into_iter().map(|e| e.2).collect()
    }
}

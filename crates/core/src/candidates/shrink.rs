//! Truncations and reorderings: `truncate`, `remove_first`, `retain`, `keep_ranked_through`,
//! `keep_positions`, `sort_desc`.

use alloc::vec::Vec;

use super::{rank, Candidates};

impl Candidates {
    /// Keeps the first `n` candidates.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len() {
            return;
        }
        if !self.dense {
            self.ids.truncate(n);
        }
        self.logits.truncate(n);
        if self.probs_valid {
            self.probs.truncate(n);
            self.keep_probs_if_precise(self.probs.iter().map(|&p| p as f64).sum());
        }
        self.forget_peaks();
        self.selected = None;
    }

    /// Removes the first `n` candidates (XTC's cut of the top choices).
    pub fn remove_first(&mut self, n: usize) {
        let n = n.min(self.len());
        self.make_sparse();
        self.ids.drain(..n);
        self.logits.drain(..n);
        if self.probs_valid {
            self.probs.drain(..n);
            self.keep_probs_if_precise(self.probs.iter().map(|&p| p as f64).sum());
        }
        self.forget_peaks();
        self.selected = None;
    }

    /// Keeps the candidates for which `keep(id, logit)` is true, in their current order
    /// (`logit` with the scale applied), calling `keep` once per candidate in order. One pass;
    /// cached probabilities are kept.
    pub fn retain(&mut self, mut keep: impl FnMut(u32, f32) -> bool) {
        let scale = self.scale;
        self.retain_raw(
            |id, raw| keep(id, (raw * scale).min(f32::MAX)),
            f32::NEG_INFINITY,
        );
    }

    /// Keeps the candidates ranked at or before `(raw_logit, id)` in rank order (descending
    /// logit, ties by ascending id): a prefix of the sorted order, found without sorting,
    /// current order kept. `raw_logit` is compared with [`Candidates::raw_logits`] (without the
    /// pending scale), so no rounding can reorder candidates. The candidates at or above the
    /// cut's logit are found in one vectorized pass.
    pub fn keep_ranked_through(&mut self, raw_logit: f32, id: u32) {
        self.retain_raw(
            |i, l| l > raw_logit || (l == raw_logit && i <= id),
            raw_logit,
        );
    }

    /// [`Candidates::retain`] on the raw logits (without the pending scale). The caller
    /// promises that `keep` rejects every raw logit below `floor`, so only candidates at or
    /// above it are offered to `keep` (found in one vectorized pass when `floor > -inf`).
    fn retain_raw(&mut self, mut keep: impl FnMut(u32, f32) -> bool, floor: f32) {
        let mut kept: Vec<u32> = if floor > f32::NEG_INFINITY {
            self.positions_at_least(floor)
        } else {
            (0..self.len() as u32).collect()
        };
        kept.retain(|&pos| {
            let p = pos as usize;
            keep(if self.dense { pos } else { self.ids[p] }, self.logits[p])
        });
        self.keep_positions(&kept);
    }

    /// Keeps the candidates at `positions` (strictly increasing), in their current order, in
    /// one compacting pass over them; cached probabilities are kept (renormalized lazily).
    ///
    /// # Panics
    /// If `positions` is not strictly increasing or holds a position `>= len()`.
    pub fn keep_positions(&mut self, positions: &[u32]) {
        // Compaction writes at `w <= pos`, so nothing not yet moved is overwritten.
        let mut kept_total = 0.0f64;
        let mut next = 0usize;
        for (w, &pos) in positions.iter().enumerate() {
            let pos = pos as usize;
            assert!(
                pos >= next && pos < self.len(),
                "positions must be increasing and below {}",
                self.len()
            );
            next = pos + 1;
            if !self.dense {
                self.ids[w] = self.ids[pos];
            }
            self.logits[w] = self.logits[pos];
            if self.probs_valid {
                let p = self.probs[pos];
                self.probs[w] = p;
                kept_total += p as f64;
            }
        }
        let n = positions.len();
        if self.dense {
            self.ids.clear();
            self.ids.extend_from_slice(positions);
            self.dense = false;
        } else {
            self.ids.truncate(n);
        }
        self.logits.truncate(n);
        if self.probs_valid {
            self.probs.truncate(n);
            self.keep_probs_if_precise(kept_total);
        }
        self.forget_peaks();
        self.selected = None;
    }

    /// Sorts by descending logit, ties by ascending id.
    pub fn sort_desc(&mut self) {
        if self.sorted {
            return;
        }
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| rank(self.key(a as usize), self.key(b as usize)));
        self.permute(&order);
        self.sorted = true;
    }

    /// `(raw logit, id)` of the candidate at `pos`: the sort key.
    pub(super) fn key(&self, pos: usize) -> (f32, u32) {
        (self.logits[pos], self.id(pos))
    }

    /// Reorders (and possibly shortens) the candidates to `order` (positions). The buffers keep
    /// their capacity (a full vocabulary's, for the next step's logits).
    pub(super) fn permute(&mut self, order: &[u32]) {
        let ids: Vec<u32> = order.iter().map(|&p| self.id(p as usize)).collect();
        let logits: Vec<f32> = order.iter().map(|&p| self.logits[p as usize]).collect();
        if self.probs_valid {
            let probs: Vec<f32> = order.iter().map(|&p| self.probs[p as usize]).collect();
            self.probs.clear();
            self.probs.extend_from_slice(&probs);
            self.keep_probs_if_precise(self.probs.iter().map(|&p| p as f64).sum());
        }
        self.ids.clear();
        self.ids.extend_from_slice(&ids);
        self.logits.clear();
        self.logits.extend_from_slice(&logits);
        self.dense = false;
        self.forget_peaks();
        self.selected = None;
    }
}

//! `Candidates`: the token candidates of one decoding step.

use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::{math, Error};

/// Below this many candidates, [`Candidates::keep_top`] selects with `select_nth_unstable`;
/// above, it scans with a running threshold.
const SCAN_MIN_LEN: usize = 2048;
/// Strided sample size for estimating a starting threshold.
const SAMPLE: usize = 256;

/// The candidates of one decoding step: token ids, logits and (once computed) probabilities,
/// as a struct of arrays.
///
/// # Representation
/// - **Dense** until the first truncation: ids are implicit (`id == index`), so loading a
///   128K-vocabulary step is one copy and stages that touch few tokens (penalties, biases)
///   index directly. Truncating stages switch to explicit ids.
/// - **Pending scale**: [`Candidates::scale_logits`] (temperature) only multiplies a factor;
///   the logits are rewritten when a stage asks for them, so `temp | top_k` reads the full
///   vocabulary once. A positive scale never changes the order, so rank-based stages read
///   [`Candidates::raw_logits`] directly.
/// - **`sorted`**: true when candidates are in descending logit order, ties by ascending id
///   (the order [`Candidates::sort_desc`] and [`Candidates::keep_top`] produce).
/// - **Probabilities** are cached by [`Candidates::softmax`] and kept (renormalized lazily)
///   through [`Candidates::retain`] and [`Candidates::truncate`]; anything that changes logits
///   drops them.
///
/// Logits are never NaN (loading turns NaN into `-inf`) and never `+inf` (loading rejects it).
/// A `-inf` logit is a masked candidate: it has probability 0 and is not reported as a survivor.
#[derive(Debug, Clone)]
pub struct Candidates {
    ids: Vec<u32>,
    logits: Vec<f32>,
    probs: Vec<f32>,
    dense: bool,
    sorted: bool,
    probs_valid: bool,
    probs_total: f64,
    scale: f32,
    selected: Option<usize>,
    vocab_size: usize,
}

impl Default for Candidates {
    fn default() -> Self {
        Candidates::new()
    }
}

/// Descending logit, then ascending id: the order of every sort in sieve.
#[inline]
fn rank(a: (f32, u32), b: (f32, u32)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

impl Candidates {
    /// No candidates; buffers grow on the first [`Candidates::load`].
    pub fn new() -> Self {
        Candidates {
            ids: Vec::new(),
            logits: Vec::new(),
            probs: Vec::new(),
            dense: true,
            sorted: false,
            probs_valid: false,
            probs_total: 0.0,
            scale: 1.0,
            selected: None,
            vocab_size: 0,
        }
    }

    /// Dense candidates for a full logits vector (token `i` has logit `logits[i]`); see
    /// [`Candidates::load`] for how NaN and `+inf` are read.
    pub fn from_logits(logits: &[f32]) -> Self {
        let mut c = Candidates::new();
        c.load(logits);
        c
    }

    /// Sparse candidates: `ids[i]` has logit `logits[i]`, out of a vocabulary of `vocab_size`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if the lengths differ.
    pub fn from_sparse(ids: Vec<u32>, logits: Vec<f32>, vocab_size: usize) -> Result<Self, Error> {
        if ids.len() != logits.len() {
            return Err(Error::LengthMismatch { ids: ids.len(), logits: logits.len() });
        }
        let mut c = Candidates::new();
        c.load(&logits);
        c.ids = ids;
        c.dense = false;
        c.vocab_size = vocab_size;
        Ok(c)
    }

    /// Replaces the candidates with a full logits vector, reusing the buffers, in one
    /// vectorized copy that reads NaN as `-inf` (a masked token) and `+inf` as `f32::MAX` (so a
    /// softmax stays defined: such tokens share all the probability). Callers that must
    /// reject `+inf` check with [`Candidates::first_non_finite`] before loading; the command
    /// line does.
    pub fn load(&mut self, logits: &[f32]) {
        self.logits.clear();
        self.logits.extend(logits.iter().map(|&x| if x.is_nan() { f32::NEG_INFINITY } else { x.min(f32::MAX) }));
        self.ids.clear();
        self.dense = true;
        self.sorted = false;
        self.probs_valid = false;
        self.scale = 1.0;
        self.selected = None;
        self.vocab_size = logits.len();
    }

    /// The first position holding NaN or `+inf`, with its value: input checks for callers that
    /// want to report such logits instead of reading them as [`Candidates::load`] does.
    pub fn first_non_finite(logits: &[f32]) -> Option<(usize, f32)> {
        logits.iter().position(|x| x.is_nan() || *x == f32::INFINITY).map(|i| (i, logits[i]))
    }

    /// Number of candidates (masked ones included).
    pub fn len(&self) -> usize {
        self.logits.len()
    }
    /// Whether there is no candidate.
    pub fn is_empty(&self) -> bool {
        self.logits.is_empty()
    }
    /// Size of the vocabulary the ids come from.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    /// Whether ids are still implicit (`id == index`).
    pub fn is_dense(&self) -> bool {
        self.dense
    }
    /// Whether candidates are in descending logit order, ties by ascending id.
    pub fn is_sorted(&self) -> bool {
        self.sorted
    }
    /// Declares the order. Only a stage that has just put the candidates in descending logit
    /// order (ties by ascending id) may pass `true`.
    pub fn set_sorted(&mut self, sorted: bool) {
        self.sorted = sorted;
    }

    /// The id of candidate `i`.
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline]
    pub fn id(&self, i: usize) -> u32 {
        if self.dense {
            assert!(i < self.logits.len(), "candidate index {i} out of range");
            i as u32
        } else {
            self.ids[i]
        }
    }
    /// The logit of candidate `i` (pending scale applied).
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline]
    pub fn logit(&self, i: usize) -> f32 {
        self.logits[i] * self.scale
    }
    /// `(id, logit)` of every candidate in current order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, f32)> + '_ {
        (0..self.len()).map(move |i| (self.id(i), self.logit(i)))
    }
    /// The position of token `id`, if it is a candidate (O(1) when dense, a scan otherwise).
    pub fn position(&self, id: u32) -> Option<usize> {
        if self.dense {
            ((id as usize) < self.len()).then_some(id as usize)
        } else {
            self.ids.iter().position(|&x| x == id)
        }
    }

    /// Multiplies every logit by `factor`. A finite positive factor whose product with the
    /// pending scale stays a normal number is only recorded (it keeps the order); any other
    /// factor is applied at once, and a resulting NaN (`0 · -inf`) becomes `-inf`.
    pub fn scale_logits(&mut self, factor: f32) {
        self.probs_valid = false;
        let product = self.scale * factor;
        if factor.is_finite() && factor > 0.0 && product.is_normal() {
            self.scale = product;
        } else {
            self.materialize();
            for x in &mut self.logits {
                let y = *x * factor;
                *x = if y.is_nan() { f32::NEG_INFINITY } else { y };
            }
            self.sorted = false;
        }
    }
    /// The factor not yet applied to [`Candidates::raw_logits`].
    pub fn pending_scale(&self) -> f32 {
        self.scale
    }
    /// The stored logits, *without* the pending scale: fine for anything that only compares
    /// logits with each other (the scale is positive, so it keeps their order).
    pub fn raw_logits(&self) -> &[f32] {
        &self.logits
    }
    /// The logits with the pending scale applied.
    pub fn logits(&mut self) -> &[f32] {
        self.materialize();
        &self.logits
    }
    /// The logits for editing. Clears `sorted` and the cached probabilities.
    pub fn logits_mut(&mut self) -> &mut [f32] {
        self.materialize();
        self.sorted = false;
        self.probs_valid = false;
        &mut self.logits
    }
    /// The ids (switching to explicit ids if dense).
    pub fn ids(&mut self) -> &[u32] {
        self.make_sparse();
        &self.ids
    }
    /// Ids and logits for editing (explicit ids, scale applied). Clears `sorted`, the cached
    /// probabilities and the selection; shrink afterwards with [`Candidates::truncate`].
    pub fn parts_mut(&mut self) -> (&mut [u32], &mut [f32]) {
        self.make_sparse();
        self.materialize();
        self.sorted = false;
        self.probs_valid = false;
        self.selected = None;
        (&mut self.ids, &mut self.logits)
    }

    fn materialize(&mut self) {
        if self.scale != 1.0 {
            let s = self.scale;
            for x in &mut self.logits {
                *x *= s;
            }
            self.scale = 1.0;
        }
    }

    /// Switches to explicit ids.
    pub fn make_sparse(&mut self) {
        if self.dense {
            self.ids.clear();
            self.ids.extend(0..self.logits.len() as u32);
            self.dense = false;
        }
    }

    /// The largest logit (scale applied); `-inf` if there is none.
    pub fn max_logit(&self) -> f32 {
        let raw = if self.sorted && !self.is_empty() { self.logits[0] } else { math::max(&self.logits) };
        raw * self.scale
    }

    /// Whether some candidate has a finite logit.
    pub fn has_finite(&self) -> bool {
        self.logits.iter().any(|&x| x > f32::NEG_INFINITY)
    }

    /// Softmax probabilities of the current candidates (computed once, then cached): `p_i =
    /// e^(l_i − max) / Σ_j e^(l_j − max)`; masked candidates get 0. All zeros if every
    /// candidate is masked.
    pub fn softmax(&mut self) -> &[f32] {
        self.ensure_weights();
        if self.probs_total > 0.0 && self.probs_total != 1.0 {
            let inv = (1.0 / self.probs_total) as f32;
            for p in &mut self.probs {
                *p *= inv;
            }
            self.probs_total = 1.0;
        }
        &self.probs
    }

    /// Unnormalized softmax weights `w_i ∝ e^(l_i − max)` and their sum (`0` if every
    /// candidate is masked): what a selector needs to draw, without the normalizing pass.
    pub fn weights(&mut self) -> (&[f32], f64) {
        self.ensure_weights();
        (&self.probs, self.probs_total)
    }

    fn ensure_weights(&mut self) {
        if !self.probs_valid {
            self.probs.clear();
            self.probs.resize(self.logits.len(), 0.0);
            let max = if self.sorted && !self.is_empty() { self.logits[0] } else { math::max(&self.logits) };
            self.probs_total = if max == f32::NEG_INFINITY {
                0.0
            } else {
                math::exp_shifted_into(&self.logits, max, self.scale, &mut self.probs)
            };
            self.probs_valid = true;
        }
    }

    /// The cached probabilities, if [`Candidates::softmax`] ran since the logits last changed
    /// (they may need renormalizing after a truncation; `softmax()` does that).
    pub fn cached_probs(&self) -> Option<&[f32]> {
        self.probs_valid.then_some(&self.probs[..])
    }

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
            self.probs_total = self.probs.iter().map(|&p| p as f64).sum();
        }
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
            self.probs_total = self.probs.iter().map(|&p| p as f64).sum();
        }
        self.selected = None;
    }

    /// Keeps the candidates for which `keep(id, logit)` is true, in their current order
    /// (`logit` with the scale applied). One pass; cached probabilities are kept.
    pub fn retain(&mut self, mut keep: impl FnMut(u32, f32) -> bool) {
        let scale = self.scale;
        self.retain_raw(|id, raw| keep(id, raw * scale), f32::NEG_INFINITY);
    }

    /// Keeps the candidates ranked at or before `(raw_logit, id)` in rank order (descending
    /// logit, ties by ascending id): a prefix of the sorted order, found in one pass without
    /// sorting, current order kept. `raw_logit` is compared with [`Candidates::raw_logits`]
    /// (without the pending scale), so no rounding can reorder candidates.
    pub fn keep_ranked_through(&mut self, raw_logit: f32, id: u32) {
        self.retain_raw(|i, l| l > raw_logit || (l == raw_logit && i <= id), raw_logit);
    }

    /// [`Candidates::retain`] on the raw logits (without the pending scale). The caller
    /// promises that `keep` rejects every raw logit below `floor`, so blocks whose maximum is
    /// below it are skipped ([`math::scan_at_least`]).
    fn retain_raw(&mut self, mut keep: impl FnMut(u32, f32) -> bool, floor: f32) {
        let dense = self.dense;
        let mut ids = core::mem::take(&mut self.ids);
        if dense {
            ids.clear();
        }
        let mut kept_total = 0.0f64;
        let mut w = 0;
        let probs_valid = self.probs_valid;
        let (logits, probs) = (&mut self.logits, &mut self.probs);
        // Positions kept in a chunk are found first, then moved down: compaction writes at
        // `w <= pos`, so nothing not yet read is overwritten.
        let n = logits.len();
        let mut kept: Vec<usize> = Vec::new();
        let mut r = 0;
        while r < n {
            let end = (r + 4096).min(n);
            kept.clear();
            math::scan_at_least(&logits[r..end], || floor, |j, x| {
                let pos = r + j;
                let id = if dense { pos as u32 } else { ids[pos] };
                if keep(id, x) {
                    kept.push(pos);
                }
            });
            for &pos in &kept {
                if dense {
                    ids.push(pos as u32);
                } else {
                    ids[w] = ids[pos];
                }
                logits[w] = logits[pos];
                if probs_valid {
                    let p = probs[pos];
                    probs[w] = p;
                    kept_total += p as f64;
                }
                w += 1;
            }
            r = end;
        }
        ids.truncate(w);
        self.ids = ids;
        self.logits.truncate(w);
        if self.probs_valid {
            self.probs.truncate(w);
            self.probs_total = kept_total;
        }
        self.dense = false;
        self.selected = None;
    }

    /// Sorts by descending logit, ties by ascending id.
    pub fn sort_desc(&mut self) {
        if self.sorted {
            return;
        }
        let n = self.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        {
            let (logits, ids, dense) = (&self.logits, &self.ids, self.dense);
            let key = |i: u32| (logits[i as usize], if dense { i } else { ids[i as usize] });
            order.sort_unstable_by(|&a, &b| rank(key(a), key(b)));
        }
        self.permute(&order);
        self.sorted = true;
    }

    /// Keeps the `k` candidates with the largest logits (ties: lower id first), sorted in that
    /// order; masked (`-inf`) candidates are dropped. Does nothing if `k >= len()`.
    ///
    /// On long inputs this is one pass that compares each logit with a running threshold (a
    /// counted compare that vectorizes) and only looks closer at blocks holding a contender,
    /// so it costs about one read of the logits.
    pub fn keep_top(&mut self, k: usize) {
        let n = self.len();
        if k >= n {
            return;
        }
        let mut order = self.top_positions_unordered(k);
        order.sort_unstable_by(|&a, &b| rank(self.key(a as usize), self.key(b as usize)));
        self.permute(&order);
        let finite = self.logits.iter().take_while(|&&x| x > f32::NEG_INFINITY).count();
        self.truncate(finite);
        self.sorted = true;
    }

    fn key(&self, pos: usize) -> (f32, u32) {
        (self.logits[pos], self.id(pos))
    }

    /// Positions of the `k` best-ranked candidates (largest logits, ties by lower id), in no
    /// particular order; fewer when fewer than `k` are finite (masked ones are never
    /// returned). The candidates are not changed. About one read of the logits on long inputs
    /// (see [`Candidates::keep_top`]).
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
        order.select_nth_unstable_by(k - 1, |&a, &b| rank(self.key(a as usize), self.key(b as usize)));
        order.truncate(k);
        order
    }

    /// Positions of the top `k` (`0 < k < len`), by a threshold scan. The threshold starts
    /// at an estimate from a strided sample (aiming at about `2k` contenders) and rises as the
    /// buffer fills; if the estimate was too high (fewer than `k` contenders), the scan is
    /// repeated from `-inf`.
    fn top_by_scan(&self, k: usize) -> Vec<u32> {
        let n = self.len();
        let m = SAMPLE.min(n);
        let mut sample: Vec<f32> = (0..m).map(|j| self.logits[j * n / m]).collect();
        let rank_in_sample = (2 * k * m) / n;
        if rank_in_sample < m {
            let (_, &mut estimate, _) = sample.select_nth_unstable_by(rank_in_sample, |a, b| b.total_cmp(a));
            if estimate > f32::NEG_INFINITY {
                let found = self.scan_above(k, estimate);
                if found.len() >= k {
                    return found;
                }
            }
        }
        self.scan_above(k, f32::NEG_INFINITY)
    }

    /// The best `k` positions among those with logit `≥ start` (all of them if fewer), by a
    /// scan over blocks of 64 that skips, with one vectorized count, blocks holding no
    /// contender.
    fn scan_above(&self, k: usize, start: f32) -> Vec<u32> {
        let cap = 4 * k.max(16);
        let mut buf: Vec<(f32, u32, u32)> = Vec::with_capacity(cap); // (logit, id, pos)
        // Until the buffer first fills, keep everything at or above `start`; afterwards the
        // threshold is the k-th best so far. Dense ids grow with the position, so a later logit
        // equal to that threshold loses the tie to every buffered one and can be skipped;
        // sparse ids may not, so keep it.
        let cmp = |a: &(f32, u32, u32), b: &(f32, u32, u32)| rank((a.0, a.1), (b.0, b.1));
        let threshold = core::cell::Cell::new(start);
        let strict = core::cell::Cell::new(false);
        math::scan_at_least(
            &self.logits,
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

    /// Reorders (and possibly shortens) the candidates to `order` (positions).
    fn permute(&mut self, order: &[u32]) {
        let ids: Vec<u32> = order.iter().map(|&p| self.id(p as usize)).collect();
        let logits: Vec<f32> = order.iter().map(|&p| self.logits[p as usize]).collect();
        if self.probs_valid {
            let probs: Vec<f32> = order.iter().map(|&p| self.probs[p as usize]).collect();
            self.probs_total = probs.iter().map(|&p| p as f64).sum();
            self.probs = probs;
        }
        self.ids = ids;
        self.logits = logits;
        self.dense = false;
        self.selected = None;
    }

    /// Marks candidate `i` as the chosen token.
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn select(&mut self, i: usize) {
        assert!(i < self.len(), "selected index {i} out of range ({} candidates)", self.len());
        self.selected = Some(i);
    }
    /// The index of the chosen candidate, if a selector ran.
    pub fn selected(&self) -> Option<usize> {
        self.selected
    }
    /// The id of the chosen candidate, if a selector ran.
    pub fn selected_id(&self) -> Option<u32> {
        self.selected.map(|i| self.id(i))
    }
    /// Forgets the selection.
    pub fn clear_selection(&mut self) {
        self.selected = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn pairs(c: &Candidates) -> Vec<(u32, f32)> {
        c.iter().collect()
    }

    #[test]
    fn load_reads_nan_as_neg_inf_and_pos_inf_as_max() {
        let mut c = Candidates::from_logits(&[1.0, f32::NAN, -2.0, f32::INFINITY]);
        assert_eq!(pairs(&c), vec![(0, 1.0), (1, f32::NEG_INFINITY), (2, -2.0), (3, f32::MAX)]);
        assert!(c.is_dense());
        assert_eq!(c.softmax(), &[0.0, 0.0, 0.0, 1.0]);
        let input = [0.0, 1.0, f32::INFINITY, f32::NAN];
        assert_eq!(Candidates::first_non_finite(&input), Some((2, f32::INFINITY)));
        assert_eq!(Candidates::first_non_finite(&[0.0, f32::NEG_INFINITY]), None);
    }

    #[test]
    fn softmax_by_hand() {
        // p = e^l / Σ e^l with l = [0, ln 3, -inf] → [1/4, 3/4, 0]
        let mut c = Candidates::from_logits(&[0.0, 3f32.ln(), f32::NEG_INFINITY]);
        let p = c.softmax().to_vec();
        assert!((p[0] - 0.25).abs() < 1e-6 && (p[1] - 0.75).abs() < 1e-6 && p[2] == 0.0);
    }

    #[test]
    fn pending_scale_applies_to_reads_and_softmax() {
        let mut c = Candidates::from_logits(&[2.0, 0.0]);
        c.scale_logits(0.5);
        assert_eq!(c.raw_logits(), &[2.0, 0.0]);
        assert_eq!(c.logit(0), 1.0);
        let p = c.softmax().to_vec();
        let want = 1.0 / (1.0 + (-1.0f32).exp());
        assert!((p[0] - want).abs() < 1e-6);
        assert_eq!(c.logits(), &[1.0, 0.0]);
        assert_eq!(c.pending_scale(), 1.0);
    }

    #[test]
    fn keep_top_breaks_ties_toward_lower_id_on_both_paths() {
        for n in [10usize, 5000] {
            let logits: Vec<f32> = (0..n).map(|i| if i % 3 == 0 { 1.0 } else { 0.0 }).collect();
            let mut c = Candidates::from_logits(&logits);
            c.keep_top(4);
            assert_eq!(pairs(&c), vec![(0, 1.0), (3, 1.0), (6, 1.0), (9, 1.0)], "n = {n}");
            assert!(c.is_sorted());
        }
    }

    #[test]
    fn keep_top_scan_agrees_with_select() {
        let n = 20_000;
        let logits: Vec<f32> = (0..n).map(|i| ((i * 7919 % 1000) as f32).sin() * 3.0).collect();
        let mut a = Candidates::from_logits(&logits);
        a.keep_top(40);
        let mut b = Candidates::from_logits(&logits);
        let mut order = b.top_by_select(40);
        order.sort_unstable_by(|&x, &y| rank(b.key(x as usize), b.key(y as usize)));
        b.permute(&order);
        assert_eq!(pairs(&a), pairs(&b));
    }

    #[test]
    fn keep_top_on_sparse_unsorted_ids() {
        let ids: Vec<u32> = (0..4000).rev().collect();
        let logits = vec![0.5; 4000];
        let mut c = Candidates::from_sparse(ids, logits, 4000).unwrap();
        c.keep_top(3);
        assert_eq!(pairs(&c), vec![(0, 0.5), (1, 0.5), (2, 0.5)]);
    }

    #[test]
    fn keep_top_drops_masked() {
        let mut c = Candidates::from_logits(&[f32::NEG_INFINITY, 1.0, f32::NEG_INFINITY]);
        c.keep_top(2);
        assert_eq!(pairs(&c), vec![(1, 1.0)]);
    }

    #[test]
    fn retain_keeps_order_and_probabilities() {
        let mut c = Candidates::from_logits(&[0.0, 1.0, 2.0, 3.0]);
        c.softmax();
        c.retain(|id, _| id % 2 == 1);
        assert_eq!(pairs(&c), vec![(1, 1.0), (3, 3.0)]);
        let p = c.softmax().to_vec();
        let want = 1.0 / (1.0 + 2f32.exp());
        assert!((p[0] - want).abs() < 1e-6, "{p:?}");
    }

    #[test]
    fn keep_ranked_through_is_a_rank_prefix() {
        let mut c = Candidates::from_logits(&[1.0, 3.0, 2.0, 3.0, 2.0]);
        c.scale_logits(0.5);
        // rank order: (3,id1) (3,id3) (2,id2) (2,id4) (1,id0); through (2, id 2)
        c.keep_ranked_through(2.0, 2);
        assert_eq!(pairs(&c), vec![(1, 1.5), (2, 1.0), (3, 1.5)]);
    }

    #[test]
    fn sort_desc_orders_ties_by_id() {
        let mut c = Candidates::from_sparse(vec![5, 2, 9], vec![1.0, 1.0, 2.0], 10).unwrap();
        c.sort_desc();
        assert_eq!(pairs(&c), vec![(9, 2.0), (2, 1.0), (5, 1.0)]);
    }
}

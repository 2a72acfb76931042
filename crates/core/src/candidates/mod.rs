//! `Candidates`: the token candidates of one decoding step.
//!
//! This file holds the representation and its accessors; `load.rs` the one-pass load of a
//! borrowed row, `best.rs` the load of only its best candidates, `probs.rs` the softmax,
//! `shrink.rs` the truncations and reorderings, `top.rs` the selection of the best
//! candidates.

use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::{math, Error};

mod best;
mod load;
mod probs;
mod shrink;
#[cfg(test)]
mod tests;
mod top;

/// The candidates of one decoding step: token ids, logits and (once computed) probabilities,
/// as a struct of arrays.
///
/// # Representation
/// - **Dense** until the first truncation: ids are implicit (`id == index`), so a 128K
///   vocabulary is handed over without a copy ([`Candidates::load_owned`]) and stages that
///   touch few tokens (penalties, biases) write in place with [`Candidates::set_logit`].
/// - **Pending scale**: [`Candidates::scale_logits`] (temperature) only multiplies a factor;
///   the logits are rewritten when a stage asks for them. A positive scale never changes the
///   order, so rank-based stages read [`Candidates::raw_logits`] directly.
/// - **`sorted`**: true when candidates are in descending logit order, ties by ascending id
///   (the order [`Candidates::sort_desc`] and [`Candidates::keep_top`] produce).
/// - **Probabilities** are cached by [`Candidates::softmax`] and kept (renormalized lazily)
///   through [`Candidates::retain`] and [`Candidates::truncate`]; anything that changes logits
///   drops them.
/// - **The largest raw logit** is cached: [`Candidates::load_owned`] finds it in the same read
///   that checks the vector, [`Candidates::set_logit`] keeps it up to date, and the first
///   stage that needs it after any other change computes it once. The same read leaves a raw
///   logit that at least 32 candidates reach, where [`Candidates::keep_top`] starts its scan
///   (a hint only: edits of single logits keep it).
///
/// Logits are never NaN (loading reads NaN as `-inf`) and never `+inf` (loading reads it as
/// `f32::MAX`). A `-inf` logit is a masked candidate: it has probability 0 and is not reported
/// as a survivor.
#[derive(Debug, Clone)]
pub struct Candidates {
    ids: Vec<u32>,
    logits: Vec<f32>,
    probs: Vec<f32>,
    dense: bool,
    sorted: bool,
    probs_valid: bool,
    probs_total: f64,
    /// The largest raw logit, when known.
    max: Option<f32>,
    /// A raw logit that about 32 candidates reach, when known (see the type's doc).
    reached_by_32: Option<f32>,
    scale: f32,
    selected: Option<usize>,
    vocab_size: usize,
}

impl Default for Candidates {
    fn default() -> Self {
        Candidates::new()
    }
}

/// The rank order of `(logit, id)` pairs, used by every sort and selection in sieve:
/// descending logit, ties (including `-0.0` against `0.0`) by ascending id. Logits are never
/// NaN, so this is a total order.
#[inline]
pub fn rank(a: (f32, u32), b: (f32, u32)) -> Ordering {
    b.0.partial_cmp(&a.0)
        .unwrap_or(Ordering::Equal)
        .then(a.1.cmp(&b.1))
}

/// Candidate `id` with logit `x` (not NaN) as one integer whose descending order is
/// [`rank`]'s: the logit's bits made monotone in the high half (`-0.0` read as `0.0`, which
/// `rank` ties with it), the complement of the id in the low half (so the lower id comes first
/// among equal logits). Integer keys make selections and sorts branch-light.
#[inline]
fn rank_key(x: f32, id: u32) -> u64 {
    let bits = (x + 0.0).to_bits();
    let monotone = if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    };
    (u64::from(monotone) << 32) | u64::from(!id)
}

/// The id a [`rank_key`] was made from.
#[inline]
fn key_position(key: u64) -> u32 {
    !(key as u32)
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
            max: None,
            reached_by_32: None,
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
            return Err(Error::LengthMismatch {
                ids: ids.len(),
                logits: logits.len(),
            });
        }
        let mut c = Candidates::new();
        c.load_sparse(&ids, &logits, vocab_size)?;
        Ok(c)
    }

    /// Replaces the candidates with a full logits vector, copied into the candidates' own
    /// buffer (reused between steps) in one vectorized pass that reads NaN as `-inf` (a masked
    /// token) and `+inf` as `f32::MAX` (so a softmax stays defined: such tokens share all the
    /// probability). Callers that must reject NaN or `+inf` check with
    /// [`Candidates::first_non_finite`] first; the command line does.
    pub fn load(&mut self, logits: &[f32]) {
        self.logits.clear();
        self.logits
            .extend(logits.iter().map(|&x| math::sanitize(x)));
        self.reset_dense();
    }

    /// Replaces the candidates with a full logits vector handed over without a copy (the
    /// vector a model just produced): one read that checks no value is NaN or `+inf` and finds
    /// the largest ([`math::max_if_clean`]); only if one is does a second pass read NaN as
    /// `-inf` and `+inf` as `f32::MAX`, as [`Candidates::load`] does. Get the buffer back for
    /// the next step with [`Candidates::take_logits`].
    ///
    /// Returns how many logits were NaN (counted in the second pass only, so a clean vector
    /// costs one read), for callers that must blame their source for them.
    pub fn load_owned(&mut self, logits: Vec<f32>) -> usize {
        self.logits = logits;
        let mut nan = 0;
        let peaks = math::max_if_clean(&self.logits);
        if peaks.is_none() {
            for x in &mut self.logits {
                nan += usize::from(x.is_nan());
                *x = math::sanitize(*x);
            }
        }
        self.reset_dense();
        (self.max, self.reached_by_32) = (peaks.map(|p| p.0), peaks.map(|p| p.1));
        nan
    }

    /// Replaces the candidates with sparse ones (`ids[i]` has logit `logits[i]`, out of a
    /// vocabulary of `vocab_size`), copied into the candidates' own buffers, NaN and `+inf`
    /// read as [`Candidates::load`] reads them. What a plugin does on each call.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if the lengths differ (the candidates are then empty).
    pub fn load_sparse(
        &mut self,
        ids: &[u32],
        logits: &[f32],
        vocab_size: usize,
    ) -> Result<(), Error> {
        if ids.len() != logits.len() {
            self.load(&[]);
            return Err(Error::LengthMismatch {
                ids: ids.len(),
                logits: logits.len(),
            });
        }
        self.load(logits);
        self.ids.extend_from_slice(ids);
        self.dense = false;
        self.vocab_size = vocab_size;
        Ok(())
    }

    /// Sets the size of the vocabulary the ids come from (loading sets it to the number of
    /// logits; a dense prefix of a larger vocabulary says so here).
    pub fn set_vocab_size(&mut self, vocab_size: usize) {
        self.vocab_size = vocab_size;
    }

    /// Takes the logits buffer out (leaving no candidates), to refill it with the next step's
    /// logits and hand it back with [`Candidates::load_owned`] without allocating.
    pub fn take_logits(&mut self) -> Vec<f32> {
        let logits = core::mem::take(&mut self.logits);
        self.reset_dense();
        logits
    }

    /// The state of freshly loaded dense candidates.
    fn reset_dense(&mut self) {
        self.ids.clear();
        self.dense = true;
        self.sorted = false;
        self.probs_valid = false;
        self.forget_peaks();
        self.scale = 1.0;
        self.selected = None;
        self.vocab_size = self.logits.len();
    }

    /// The first position holding NaN or `+inf`, with its value: an input check for callers
    /// that want to report such logits instead of reading them as [`Candidates::load`] does.
    pub fn first_non_finite(logits: &[f32]) -> Option<(usize, f32)> {
        logits
            .iter()
            .position(|x| x.is_nan() || *x == f32::INFINITY)
            .map(|i| (i, logits[i]))
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
        (self.logits[i] * self.scale).min(f32::MAX)
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
    /// factor is applied at once, and a resulting NaN (`0 · -inf`) becomes `-inf`. A product
    /// past `f32::MAX` saturates to `f32::MAX`, now or when the pending scale is applied.
    pub fn scale_logits(&mut self, factor: f32) {
        self.probs_valid = false;
        let product = self.scale * factor;
        if factor.is_finite() && factor > 0.0 && product.is_normal() {
            self.scale = product;
        } else {
            self.materialize();
            for x in &mut self.logits {
                *x = math::sanitize(*x * factor);
            }
            self.sorted = false;
            self.forget_peaks();
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
        self.forget_peaks();
        &mut self.logits
    }
    /// Sets the logit (scale applied) of candidate `i`. NaN is stored as `-inf` and `+inf` as
    /// `f32::MAX`, as [`Candidates::load`] reads them. Clears
    /// `sorted`, the cached probabilities and the selection. A pending scale is applied first
    /// (one pass), so stages that edit a few logits belong before `temp`, as they usually are.
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn set_logit(&mut self, i: usize, logit: f32) {
        self.materialize();
        let (old, new) = (self.logits[i], math::sanitize(logit));
        self.max = match self.max {
            Some(max) if new >= max => Some(new),
            Some(max) if old < max => Some(max),
            _ => None,
        };
        self.logits[i] = new;
        self.sorted = false;
        self.probs_valid = false;
        self.selected = None;
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
        self.forget_peaks();
        self.selected = None;
        (&mut self.ids, &mut self.logits)
    }

    /// Applies the pending scale to the logits.
    fn materialize(&mut self) {
        if self.scale != 1.0 {
            let s = self.scale;
            // A product past `f32::MAX` saturates (an overflow never becomes `+inf`).
            for x in &mut self.logits {
                *x = (*x * s).min(f32::MAX);
            }
            // The scale is positive and rounding is monotone: the largest stays the largest.
            self.max = self.max.map(|m| (m * s).min(f32::MAX));
            self.reached_by_32 = self.reached_by_32.map(|m| (m * s).min(f32::MAX));
            self.scale = 1.0;
        }
    }

    /// Drops the cached largest logit and the top-k hint (after a change to many logits).
    fn forget_peaks(&mut self) {
        self.max = None;
        self.reached_by_32 = None;
    }

    /// A raw logit about 32 candidates reach, from loading (see the type's doc): where a
    /// top-k scan may start. `None` when not known.
    pub(super) fn top_hint(&self) -> Option<f32> {
        self.reached_by_32
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
        (self.raw_max() * self.scale).min(f32::MAX)
    }

    /// The largest of [`Candidates::raw_logits`] (without the pending scale); `-inf` if there
    /// is none. Free when cached or sorted, one vectorized read ([`math::max`]) otherwise.
    pub fn raw_max(&self) -> f32 {
        match self.max {
            Some(max) => max,
            None if self.sorted && !self.is_empty() => self.logits[0],
            None => math::max(&self.logits),
        }
    }

    /// Whether some candidate has a finite logit. Free when the largest logit is known (after
    /// loading) or the candidates are sorted; otherwise a read in blocks, so that a row
    /// masked but for its last tokens (a grammar's mask) costs one vectorized pass, not one
    /// comparison per logit.
    pub fn has_finite(&self) -> bool {
        if let Some(max) = self.max {
            return max > f32::NEG_INFINITY;
        }
        if self.sorted {
            return self.logits.first().is_some_and(|&x| x > f32::NEG_INFINITY);
        }
        self.logits.chunks(256).any(|block| {
            block
                .iter()
                .fold(false, |seen, &x| seen | (x > f32::NEG_INFINITY))
        })
    }

    /// Marks candidate `i` as the chosen token.
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn select(&mut self, i: usize) {
        assert!(
            i < self.len(),
            "selected index {i} out of range ({} candidates)",
            self.len()
        );
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

    /// Positions (in order) of the candidates whose raw logit is at least `t`: one vectorized
    /// pass ([`math::positions_at_least`]).
    fn positions_at_least(&self, t: f32) -> Vec<u32> {
        let mut out = Vec::new();
        math::positions_at_least(&self.logits, t, 0, &mut out);
        out
    }

    /// Positions (in order) of the candidates whose logit, pending scale applied exactly as
    /// [`Candidates::logit`] applies it, is at least `t`. One vectorized pass over the raw
    /// logits against a raw threshold just below `t / scale`, then the exact test on the few
    /// found (the product is monotone in the raw logit, so nothing passing is skipped).
    pub fn positions_with_logit_at_least(&self, t: f32) -> Vec<u32> {
        let s = self.scale;
        let mut found = self.positions_at_least(raw_floor(t, s));
        found.retain(|&p| (self.logits[p as usize] * s).min(f32::MAX) >= t);
        found
    }
}

/// A raw logit `f` such that every raw `x` whose logit `(x · scale).min(f32::MAX)` is at least
/// `t` has `x ≥ f` (`scale` positive). The logit is monotone in `x`, so this holds as soon as it
/// holds for the float just below `f`, which is checked: the guess, `t / scale` lowered by a
/// relative `2^-20` (far more than roundings move it), almost always passes; `-inf` otherwise.
fn raw_floor(t: f32, scale: f32) -> f32 {
    let logit = |x: f32| (x * scale).min(f32::MAX);
    let q = t as f64 / scale as f64;
    let guess = (q - q.abs() / f64::from(1u32 << 20)) as f32;
    if logit(guess.next_down()) < t {
        guess
    } else {
        f32::NEG_INFINITY
    }
}

//! Softmax probabilities and unnormalized weights, computed once per change of the logits.

use super::Candidates;
use crate::math;

/// The smallest mass (of a cache normalized to 1, or of weights whose largest is 1) that
/// survivors of a shrink may hold and keep their cached probabilities.
const MIN_KEPT_MASS: f64 = 1e-6;

impl Candidates {
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

    /// The cached probabilities, if [`Candidates::softmax`] or [`Candidates::weights`] ran since
    /// the logits last changed; they may be unnormalized (after `weights`, or after a
    /// truncation): `softmax()` normalizes them.
    pub fn cached_probs(&self) -> Option<&[f32]> {
        self.probs_valid.then_some(&self.probs[..])
    }

    /// After a shrink, keeps the cached probabilities with the survivors' `total`, unless the
    /// survivors held less than [`MIN_KEPT_MASS`] of the mass they were computed against: then
    /// their cached weights may have underflowed (to zero, or to subnormals without precision,
    /// whose normalizing factor overflows), and the next request recomputes them from the
    /// logits against the survivors' own maximum.
    pub(super) fn keep_probs_if_precise(&mut self, total: f64) {
        self.probs_total = total;
        if total < MIN_KEPT_MASS {
            self.probs_valid = false;
        }
    }

    fn ensure_weights(&mut self) {
        if !self.probs_valid {
            let max = self.raw_max();
            self.max = Some(max);
            self.probs_total = if max == f32::NEG_INFINITY {
                self.probs.clear();
                self.probs.resize(self.logits.len(), 0.0);
                0.0
            } else {
                math::exp_shifted_to_vec(&self.logits, max, self.scale, &mut self.probs)
            };
            self.probs_valid = true;
        }
    }
}

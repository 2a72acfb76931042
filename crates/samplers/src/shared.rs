//! Helpers more than one built-in stage uses, so that no stage reaches into a peer's file.

use alloc::vec::Vec;

use sieve_core::{math, Candidates, Range};

/// `[0, 1)`: the valid range of `epsilon`'s and `eta`'s `e`.
pub(crate) const UNIT_INTERVAL_OPEN_ABOVE: Range = Range {
    min: 0.0,
    max: 1.0,
    min_inclusive: true,
    max_inclusive: false,
};

/// Drops every candidate whose probability is below `threshold`, except the candidates whose
/// logit equals the largest (HF's `min_tokens_to_keep = 1`, ties kept). Leaves the candidates
/// untouched when nothing would be dropped or nothing is finite. `keep` is scratch space.
pub(crate) fn drop_improbable(candidates: &mut Candidates, threshold: f32, keep: &mut Vec<bool>) {
    if !candidates.has_finite() {
        return;
    }
    candidates.softmax();
    let (Some(probs), logits) = (candidates.cached_probs(), candidates.raw_logits()) else {
        return;
    };
    // The pending scale is positive, so the raw logits tie with the top exactly when the scaled
    // ones do.
    let top = math::max(logits);
    keep.clear();
    keep.extend(
        probs
            .iter()
            .zip(logits)
            .map(|(&p, &l)| p >= threshold || l >= top),
    );
    if keep.iter().all(|&k| k) {
        return;
    }
    // `retain` visits the candidates once, in order.
    let mut i = 0;
    candidates.retain(|_, _| {
        let k = keep[i];
        i += 1;
        k
    });
}

/// Position of the candidate with the largest logit, ties to the lowest id; `None` when no
/// candidate is finite. Shared with `temp`'s `t <= 0` masking.
pub(crate) fn argmax(candidates: &Candidates) -> Option<usize> {
    let raw = candidates.raw_logits();
    if candidates.is_sorted() {
        return raw
            .first()
            .is_some_and(|&x| x > f32::NEG_INFINITY)
            .then_some(0);
    }
    let max = math::max(raw);
    if max == f32::NEG_INFINITY {
        return None;
    }
    if candidates.is_dense() {
        // Dense ids grow with the position: the first maximum has the lowest id.
        return raw.iter().position(|&x| x == max);
    }
    let mut best: Option<(usize, u32)> = None;
    for (i, &x) in raw.iter().enumerate() {
        if x == max {
            let id = candidates.id(i);
            if best.is_none_or(|(_, best_id)| id < best_id) {
                best = Some((i, id));
            }
        }
    }
    best.map(|(i, _)| i)
}

/// A deterministic stream of uniform values in `[0, 1)` (xorshift64, 24 bits each), for tests
/// that need many reproducible logits without a dependency.
#[cfg(test)]
pub(crate) fn uniform_stream() -> impl FnMut() -> f32 {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    }
}

//! Loading only the best candidates of a borrowed row: what a pipeline whose `top_k` comes
//! before any stage that reads the whole vocabulary needs ([`crate::prefilter`]).

use alloc::vec::Vec;

use super::top::{self, SAMPLE};
use super::{rank, Candidates};
use crate::math;

impl Candidates {
    /// Replaces the candidates with the `best` best-ranked finite logits of `logits` (largest
    /// first, ties by lower id) followed by the tokens of `also` not among them, in increasing
    /// id order, whatever their logits (ids past the row are ignored): sparse candidates out
    /// of a vocabulary of `logits.len()`, sorted when nothing follows the best.
    ///
    /// One read of the row checks it and finds the best
    /// ([`math::scan_at_least_checked`]); only they are
    /// copied. The row must be clean: if any value is NaN or `+inf`, or fewer than `best`
    /// are finite, or `best` is 0 or not less than the row, the whole row is loaded instead,
    /// as [`Candidates::load_checked_from`] loads it, and its report returned (the first
    /// position holding NaN or `+inf`, with its value).
    pub fn load_best_checked_from(
        &mut self,
        logits: &[f32],
        best: usize,
        also: &[u32],
    ) -> Option<(usize, f32)> {
        if best == 0 || best >= logits.len() {
            return self.load_checked_from(logits);
        }
        let Some(found) = best_positions(logits, best) else {
            return self.load_checked_from(logits);
        };
        let key = |p: u32| (logits[p as usize], p);
        let last = key(found[best - 1]);
        let mut extra: Vec<u32> = also
            .iter()
            .copied()
            .filter(|&t| (t as usize) < logits.len() && rank(key(t), last).is_gt())
            .collect();
        extra.sort_unstable();
        extra.dedup();
        self.ids.clear();
        self.logits.clear();
        for &p in found.iter().chain(&extra) {
            self.ids.push(p);
            self.logits.push(logits[p as usize]);
        }
        self.dense = false;
        self.sorted = extra.is_empty();
        self.probs_valid = false;
        self.max = Some(self.logits[0]);
        self.reached_by_32 = None;
        self.scale = 1.0;
        self.selected = None;
        self.vocab_size = logits.len();
        None
    }
}

/// The positions of the `best` best-ranked finite logits of a row (`0 < best < len`), in rank
/// order, found in the read that checks the row; `None` if a logit is NaN or `+inf`, or fewer
/// than `best` are finite.
///
/// The scan starts at a logit about `4·best` reach (the `r`-th best of a strided sample, `r`
/// from 4 to 16), or at the lowest finite one for a `best` that large next to the row; if
/// fewer than `best` reach the start (for `r = 4`, when 4 of the sample fall among the `best`:
/// under 1% for a `best` of 40 + 64 in 151 936), a second read starts from the lowest.
fn best_positions(logits: &[f32], best: usize) -> Option<Vec<u32>> {
    let n = logits.len();
    // The sample rank whose logit about 4·best reach (rounded up).
    let rank_for_4_best = (4 * best * SAMPLE).div_ceil(n);
    let start = match rank_for_4_best {
        0..=4 => top::sample_rank::<4>(logits),
        5..=8 => top::sample_rank::<8>(logits),
        9..=16 => top::sample_rank::<16>(logits),
        _ => f32::MIN,
    };
    let start = start.max(f32::MIN); // -inf (too few finite) scans from the lowest
    let (mut keys, clean) = best_keys(logits, best, start);
    if !clean {
        return None;
    }
    if keys.len() < best && start > f32::MIN {
        keys = best_keys(logits, best, f32::MIN).0;
    }
    if keys.len() < best {
        return None;
    }
    keys.sort_unstable_by(|a, b| b.cmp(a));
    Some(keys.into_iter().map(key_position).collect())
}

/// The [`rank_key`]s of the best `k` (`k > 0`) of the logits at or above `start` (all of them
/// if fewer), in no particular order, and whether the row is clean: one checking scan
/// ([`math::scan_at_least_checked`]) with a running threshold, the k-th best so far, raised
/// each time the buffer of contenders fills. Integer keys make the selections branch-light.
fn best_keys(logits: &[f32], k: usize, start: f32) -> (Vec<u64>, bool) {
    let cap = k + k / 2 + 16;
    // Room for one more block of hits past `cap`.
    let mut buf: Vec<u64> = Vec::with_capacity(cap + math::SCAN_BLOCK);
    let mut threshold = start;
    let clean = math::scan_at_least_checked(logits, start, |positions| {
        buf.extend(positions.iter().map(|&p| rank_key(logits[p as usize], p)));
        if buf.len() >= cap {
            buf.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
            buf.truncate(k);
            // The k-th best, the least of those kept.
            threshold = logits[key_position(buf[k - 1]) as usize];
        }
        threshold
    });
    if buf.len() > k {
        buf.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
        buf.truncate(k);
    }
    (buf, clean)
}

/// Candidate `pos` of a dense row with logit `x` (not NaN) as one integer whose descending
/// order is [`rank`]'s: the logit's bits made monotone in the high half (`-0.0` read as
/// `0.0`, which `rank` ties with it), the complement of the position in the low half (so the
/// lower id comes first among equal logits).
fn rank_key(x: f32, pos: u32) -> u64 {
    let bits = (x + 0.0).to_bits();
    let monotone = if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    };
    (u64::from(monotone) << 32) | u64::from(!pos)
}

/// The position a [`rank_key`] was made from.
fn key_position(key: u64) -> u32 {
    !(key as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cmp::Ordering;

    /// `rank_key`'s integer order is `rank`'s order, reversed (rank puts the best first).
    #[test]
    fn rank_keys_order_as_rank_does() {
        let values = [
            f32::NEG_INFINITY,
            f32::MIN,
            -1.5,
            -f32::MIN_POSITIVE,
            -1e-45,
            -0.0,
            0.0,
            1e-45,
            f32::MIN_POSITIVE,
            1.5,
            f32::MAX,
        ];
        for (i, &x) in values.iter().enumerate() {
            for (j, &y) in values.iter().enumerate() {
                for (a, b) in [(3u32, 9u32), (9, 3), (5, 5), (0, u32::MAX)] {
                    let want = rank((x, a), (y, b));
                    let got = rank_key(y, b).cmp(&rank_key(x, a));
                    assert_eq!(got, want, "{x} at {a} against {y} at {b} ({i}, {j})");
                    assert_eq!(key_position(rank_key(x, a)), a);
                }
            }
        }
        assert_eq!(rank_key(-0.0, 1).cmp(&rank_key(0.0, 1)), Ordering::Equal);
    }
}

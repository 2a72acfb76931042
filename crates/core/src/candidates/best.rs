//! Loading only the best candidates of a borrowed row: what a pipeline whose `top_k` comes
//! before any stage that reads the whole vocabulary needs ([`crate::prefilter`]).

use alloc::vec::Vec;

use super::top::{self, SAMPLE};
use super::{key_position, rank_key, Candidates};
use crate::math;

impl Candidates {
    /// Replaces the candidates with the `best` best-ranked finite logits of `logits` followed
    /// by the tokens of `also` not among them, in increasing id order, whatever their logits
    /// (ids past the row are ignored): sparse candidates out of a vocabulary of
    /// `logits.len()`. The best come in rank order (largest first, ties by lower id, and
    /// [`Candidates::is_sorted`]) when nothing follows them, in no particular order otherwise
    /// (a pipeline's stages then change some of them before its `top_k` orders them).
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
        let Some(mut keys) = best_keys_of_row(logits, best) else {
            return self.load_checked_from(logits);
        };
        // The least of the best: a token of `also` below it is not among them.
        let least = keys.iter().copied().min().unwrap_or(u64::MAX);
        let mut extra: Vec<u32> = also
            .iter()
            .copied()
            .filter(|&t| (t as usize) < logits.len() && rank_key(logits[t as usize], t) < least)
            .collect();
        extra.sort_unstable();
        extra.dedup();
        // Sorted only when nothing follows the best: otherwise the stages before `top_k`
        // change some logits and `top_k` orders its survivors itself.
        let sorted = extra.is_empty();
        if sorted {
            keys.sort_unstable_by(|a, b| b.cmp(a));
        }
        self.ids.clear();
        self.logits.clear();
        for p in keys.into_iter().map(key_position).chain(extra) {
            self.ids.push(p);
            self.logits.push(logits[p as usize]);
        }
        self.dense = false;
        self.sorted = sorted;
        self.probs_valid = false;
        self.max = sorted.then(|| self.logits[0]);
        self.reached_by_32 = None;
        self.scale = 1.0;
        self.selected = None;
        self.vocab_size = logits.len();
        None
    }
}

/// The [`rank_key`]s of the `best` best-ranked finite logits of a row (`0 < best < len`), in
/// no particular order, found in the read that checks the row; `None` if a logit is NaN or
/// `+inf`, or fewer than `best` are finite. The scan starts at [`start_threshold`]; if fewer
/// than `best` reach it, a second read starts from the lowest finite logit.
fn best_keys_of_row(logits: &[f32], best: usize) -> Option<Vec<u64>> {
    let start = start_threshold(logits, best).max(f32::MIN); // -inf scans from the lowest
    let (mut keys, clean) = best_keys(logits, best, start);
    if !clean {
        return None;
    }
    if keys.len() < best && start > f32::MIN {
        keys = best_keys(logits, best, f32::MIN).0;
    }
    (keys.len() == best).then_some(keys)
}

/// Sample blocks of [`start_threshold`], spread evenly over the row.
const SAMPLE_BLOCKS: usize = 64;
/// Values per sample block: one vectorized maximum each.
const SAMPLE_WIDTH: usize = 64;

/// Where the scan for the `best` best logits starts: a logit about `4·best` of the row reach,
/// so that the scan collects few more than it keeps and rarely fewer than `best`.
///
/// The sample is 64 blocks of 64 consecutive logits spread evenly over the row (16 KB read
/// in runs, about 0.3 µs), and the start the `r`-th largest of their maxima, `r` about
/// `4·best·4096 / len` (at least 4): at least `r` sampled logits reach it, and about
/// `r·len / 4096` of the row's. Too few reach it only when `r` of the 64 blocks hold a logit
/// among the row's `best` best (`r ≥ 4` such blocks where about `r / 4` are expected). When
/// `r` would pass 32 (a `best` that large next to the row), or for a row shorter than
/// 8192, the start is the `r`-th best of a strided sample of 1024 logits, or the lowest.
fn start_threshold(logits: &[f32], best: usize) -> f32 {
    let n = logits.len();
    if n >= 2 * SAMPLE_BLOCKS * SAMPLE_WIDTH {
        let r = (4 * best * SAMPLE_BLOCKS * SAMPLE_WIDTH).div_ceil(n).max(4);
        if r <= SAMPLE_BLOCKS / 2 {
            let stride = n / SAMPLE_BLOCKS;
            let mut maxima = [0.0f32; SAMPLE_BLOCKS];
            for (j, m) in maxima.iter_mut().enumerate() {
                *m = math::max(&logits[j * stride..j * stride + SAMPLE_WIDTH]);
            }
            maxima.select_nth_unstable_by(r - 1, |a, b| b.total_cmp(a));
            return maxima[r - 1];
        }
    }
    // The sample rank whose logit about 4·best reach (rounded up).
    match (4 * best * SAMPLE).div_ceil(n) {
        0..=4 => top::sample_rank::<4>(logits),
        5..=8 => top::sample_rank::<8>(logits),
        9..=16 => top::sample_rank::<16>(logits),
        _ => f32::MIN,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::rank;
    use alloc::vec;
    use core::cmp::{Ordering, Reverse};

    /// What `load_best_checked_from` must leave: the `best` best finite logits by rank, then
    /// the other ids of `also` inside the row, increasing.
    fn reference(logits: &[f32], best: usize, also: &[u32]) -> Vec<(u32, u32)> {
        let mut order: Vec<u32> = (0..logits.len() as u32)
            .filter(|&p| logits[p as usize] > f32::NEG_INFINITY)
            .collect();
        order.sort_by(|&a, &b| rank((logits[a as usize], a), (logits[b as usize], b)));
        order.truncate(best);
        let mut extra: Vec<u32> = also
            .iter()
            .copied()
            .filter(|&t| (t as usize) < logits.len() && !order.contains(&t))
            .collect();
        extra.sort_unstable();
        extra.dedup();
        order.extend(extra);
        order
            .iter()
            .map(|&p| (p, logits[p as usize].to_bits()))
            .collect()
    }

    fn loaded(c: &Candidates) -> Vec<(u32, u32)> {
        c.iter().map(|(id, x)| (id, x.to_bits())).collect()
    }

    /// A deterministic row of `n` values in `[-8, 8)`, rounded to quarters when `ties`.
    fn row(n: usize, seed: u64, ties: bool) -> Vec<f32> {
        let mut state = seed | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let x = (state >> 40) as f32 / (1u64 << 24) as f32 * 16.0 - 8.0;
                if ties {
                    (x * 4.0).round() / 4.0 + 0.0
                } else {
                    x
                }
            })
            .collect()
    }

    #[test]
    fn loads_the_best_then_the_others_asked_for() {
        let also = [3u32, 3, 17, 4_000_000, 100, 5];
        for n in [40, 1000, 8191, 8192, 20_000, 151_936] {
            for ties in [false, true] {
                let logits = row(n, n as u64, ties);
                for best in [1, 2, 32, 33, 104, n / 3] {
                    if best >= n {
                        continue;
                    }
                    let mut c = Candidates::new();
                    c.load(&[1.0, 2.0]); // a previous step's state must not leak
                    c.scale_logits(0.5);
                    assert_eq!(c.load_best_checked_from(&logits, best, &also), None);
                    let want = reference(&logits, best, &also);
                    let mut got = loaded(&c);
                    let sorted = want.len() == best;
                    assert_eq!(c.is_sorted(), sorted);
                    if !sorted {
                        // The best in no particular order, then the others in id order.
                        got[..best]
                            .sort_by_key(|&(id, x)| Reverse(rank_key(f32::from_bits(x), id)));
                    }
                    assert_eq!(got, want, "n {n} best {best} ties {ties}");
                    assert!(!c.is_dense() && c.vocab_size() == n && c.pending_scale() == 1.0);
                    assert_eq!(c.max_logit(), f32::from_bits(want[0].1));
                }
            }
        }
    }

    #[test]
    fn a_start_too_high_scans_again_and_a_bad_row_is_loaded_whole() {
        // The row's best logits all sit in the sampled blocks, so the start the sample gives
        // is reached by fewer than `best`: the second read must still find them.
        let n = 151_936;
        let mut logits = row(n, 7, false);
        let stride = n / SAMPLE_BLOCKS;
        for j in 0..SAMPLE_BLOCKS {
            for i in 0..4 {
                logits[j * stride + i] = 100.0 + (j * 4 + i) as f32;
            }
        }
        let mut c = Candidates::new();
        assert_eq!(c.load_best_checked_from(&logits, 104, &[]), None);
        assert_eq!(loaded(&c), reference(&logits, 104, &[]));
        // Fewer finite logits than `best`: the whole row.
        let mut masked = vec![f32::NEG_INFINITY; 20_000];
        masked[5] = 1.0;
        masked[19_999] = 2.0;
        assert_eq!(c.load_best_checked_from(&masked, 3, &[7]), None);
        assert!(c.is_dense() && c.len() == 20_000);
        // NaN or +inf: the whole row, read as `load_checked_from` reads it, and its report.
        for (at, bad) in [(0, f32::NAN), (12_345, f32::INFINITY), (19_999, -f32::NAN)] {
            let mut dirty = row(20_000, 3, false);
            dirty[at] = bad;
            let mut want = Candidates::new();
            let report = want.load_checked_from(&dirty);
            assert_eq!(report.map(|r| r.0), Some(at));
            let got = c.load_best_checked_from(&dirty, 40, &[1]);
            assert_eq!(
                got.map(|(i, x)| (i, x.to_bits())),
                report.map(|(i, x)| (i, x.to_bits()))
            );
            assert_eq!(loaded(&c), loaded(&want));
        }
    }

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

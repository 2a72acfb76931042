//! Loading a borrowed logits row in one pass: the copy into the candidates' own buffer, the
//! check for NaN and `+inf`, and the maximum (with the top-k hint) come out of one read of
//! the row, block by block while each block is in the first-level cache.
//!
//! The result is bit for bit what [`Candidates::load_owned`] gives for a copy of the row: the
//! same 32 lanes see the same values in the same order, and fold the same way as
//! [`math::max_if_clean`](crate::math::max_if_clean) folds them.

use super::Candidates;
use crate::math;

/// Lanes of the running maximum and sum: those of [`math::max_if_clean`].
const LANES: usize = math::max::MAX_LANES;

/// Values copied per block: a multiple of [`LANES`] (so every block but the last splits into
/// whole lane rows, as the whole row does) small enough to stay in the first-level cache
/// between the copy and the read of the lanes.
const BLOCK: usize = 1024;

impl Candidates {
    /// Replaces the candidates with a full logits vector copied from `logits` into the
    /// candidates' own buffer (reused between steps), in one pass that copies, checks that no
    /// value is NaN or `+inf`, and finds the largest: the state, bit for bit, that
    /// [`Candidates::load_owned`] leaves for a copy of `logits`, for one read of the row where
    /// a copy and `load_owned` take two.
    ///
    /// Returns the first position holding NaN or `+inf`, with its value, if any: then the
    /// candidates hold the row read as [`Candidates::load`] reads it (NaN as `-inf`, `+inf` as
    /// `f32::MAX`), for callers that load anyway; callers that must refuse such rows report
    /// the position.
    pub fn load_checked_from(&mut self, logits: &[f32]) -> Option<(usize, f32)> {
        let mut acc = [f32::NEG_INFINITY; LANES];
        let mut sum = [0.0f32; LANES];
        self.logits.clear();
        self.logits.reserve(logits.len());
        for block in logits.chunks(BLOCK) {
            self.logits.extend_from_slice(block);
            for row in block.chunks_exact(LANES) {
                for i in 0..LANES {
                    let x = row[i];
                    sum[i] += x;
                    acc[i] = if x > acc[i] { x } else { acc[i] };
                }
            }
        }
        // Only the last block can end in a partial lane row: the row's tail.
        let tail = &logits[logits.len() / LANES * LANES..];
        let total = sum.iter().chain(tail).fold(0.0f32, |s, &x| s + x);
        let clean = total < f32::INFINITY || total == f32::NEG_INFINITY;
        let reached_by_32 = acc.iter().fold(f32::INFINITY, |m, &a| m.min(a));
        // A sum of finite values can overflow: then the exact test decides.
        let clean = clean || self.logits.iter().all(|&x| x < f32::INFINITY);
        let mut bad = None;
        if !clean {
            bad = Candidates::first_non_finite(logits);
            for x in &mut self.logits {
                *x = math::sanitize(*x);
            }
        }
        self.reset_dense();
        if clean {
            self.max = Some(math::max::fold_max(acc, tail));
            self.reached_by_32 = Some(reached_by_32);
        }
        bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    /// Everything `load_owned` leaves that a stage can see, as bits.
    fn state(c: &Candidates) -> (Vec<u32>, Option<u32>, Option<u32>, u32, usize, bool) {
        (
            c.raw_logits().iter().map(|x| x.to_bits()).collect(),
            c.max.map(f32::to_bits),
            c.top_hint().map(f32::to_bits),
            c.raw_max().to_bits(),
            c.vocab_size(),
            c.is_dense(),
        )
    }

    fn assert_same_as_load_owned(logits: &[f32], what: &str) {
        let mut want = Candidates::new();
        want.load_owned(logits.to_vec());
        let mut got = Candidates::new();
        // Dirty the buffer first: a previous step's state must not leak.
        got.load(&[5.0, 1.0, 2.0]);
        got.keep_top(1);
        got.scale_logits(0.5);
        let bad = got.load_checked_from(logits);
        assert_eq!(state(&got), state(&want), "{what}");
        assert_eq!(
            bad.map(|(i, _)| i),
            Candidates::first_non_finite(logits).map(|(i, _)| i),
            "{what}"
        );
        assert_eq!(
            bad.map(|(_, x)| x.to_bits()),
            Candidates::first_non_finite(logits).map(|(_, x)| x.to_bits()),
            "{what}"
        );
        assert!(!got.is_sorted() && got.selected().is_none() && got.pending_scale() == 1.0);
    }

    /// A deterministic wavy row with some structure in every lane.
    fn row(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let h = (i as u32)
                    .wrapping_mul(2_654_435_761)
                    .wrapping_add(seed.wrapping_mul(40_503));
                (h >> 8) as f32 / (1u32 << 24) as f32 * 20.0 - 10.0
            })
            .collect()
    }

    #[test]
    fn load_checked_from_equals_load_owned_on_clean_rows_of_every_length() {
        for n in [
            0, 1, 2, 31, 32, 33, 63, 64, 100, 1023, 1024, 1025, 2048, 5000, 151_936,
        ] {
            assert_same_as_load_owned(&row(n, n as u32), &format!("length {n}"));
        }
    }

    #[test]
    fn load_checked_from_reports_and_sanitizes_nan_and_pos_inf() {
        for n in [1, 33, 1030, 4097] {
            for (at, bad) in [(0, f32::NAN), (n - 1, f32::INFINITY), (n / 2, -f32::NAN)] {
                let mut r = row(n, 7);
                r[at] = bad;
                if n > 3 {
                    r[n - 2] = f32::NAN; // a later bad value: the first is reported
                }
                assert_same_as_load_owned(&r, &format!("length {n}, {bad} at {at}"));
                let mut c = Candidates::new();
                let first = if n > 3 { at.min(n - 2) } else { at };
                let (i, x) = c.load_checked_from(&r).unwrap();
                assert_eq!((i, x.to_bits()), (first, r[first].to_bits()));
                assert!(c
                    .raw_logits()
                    .iter()
                    .all(|x| !x.is_nan() && *x < f32::INFINITY));
            }
        }
    }

    #[test]
    fn load_checked_from_handles_neg_inf_zeros_and_overflowing_sums() {
        // Masked tokens, an all-masked row, signed zeros as the maximum (in lanes and tail),
        // and finite values whose sum overflows (a false alarm the exact test clears).
        let mut masked = row(3000, 1);
        for x in masked.iter_mut().step_by(3) {
            *x = f32::NEG_INFINITY;
        }
        let cases: Vec<(&str, Vec<f32>)> = vec![
            ("masked", masked),
            ("all -inf", vec![f32::NEG_INFINITY; 1100]),
            (
                "zeros",
                (0..1057)
                    .map(|i| if i % 5 == 0 { 0.0 } else { -0.0 })
                    .collect(),
            ),
            ("negative zeros then zero in the tail", {
                let mut z = vec![-0.0f32; 65];
                z[64] = 0.0;
                z
            }),
            ("max values", vec![f32::MAX; 2100]),
            ("max and -inf", {
                let mut v = vec![f32::MAX; 70];
                v[3] = f32::NEG_INFINITY;
                v
            }),
            (
                "lowest and max",
                (0..99)
                    .map(|i| if i % 2 == 0 { f32::MIN } else { f32::MAX })
                    .collect(),
            ),
        ];
        for (what, logits) in cases {
            assert_same_as_load_owned(&logits, what);
        }
    }

    #[test]
    fn load_checked_from_reuses_the_buffer_and_feeds_stages_like_load_owned() {
        let r = row(4096, 3);
        let mut a = Candidates::new();
        a.load_owned(r.clone());
        a.keep_top(40);
        let mut b = Candidates::new();
        for _ in 0..3 {
            assert_eq!(b.load_checked_from(&r), None);
            b.keep_top(40);
            assert_eq!(b.iter().collect::<Vec<_>>(), a.iter().collect::<Vec<_>>());
        }
        assert!(b.take_logits().capacity() >= 4096);
    }
}

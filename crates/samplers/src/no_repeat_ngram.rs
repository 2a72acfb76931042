//! `no_repeat_ngram(n)`: ban every token that would repeat an n-gram already in the history.
//!
//! # Formula
//! With history `h` (the prompt included) of length `L`: if `L < n`, nothing happens. Otherwise
//! let the prefix be the last `n − 1` tokens `h[L−n+1 .. L]`; for every earlier n-gram
//! `h[i .. i+n]` whose first `n − 1` tokens equal the prefix, its last token `h[i+n−1]` is banned
//! (`l = -inf`). For `n = 1` the prefix is empty, so every token of the history is banned.
//!
//! # Reference
//! HF `NoRepeatNGramLogitsProcessor` (fairseq's `no_repeat_ngram_size`): same n-grams, same
//! hard ban, prompt included.
//!
//! # Edge cases
//! - `n = 0` is the neutral value: the stage is an identity. (HF rejects `ngram_size <= 0`;
//!   sieve accepts 0 as "off", like the other stages' neutral values.)
//! - Banned tokens are masked (`-inf`), not removed; ids beyond the vocabulary or not among the
//!   candidates are ignored. If every candidate gets banned the pipeline reports it.
//! - Cost: the prefix's occurrences are found with Knuth–Morris–Pratt in `O(L)` (not `O(L·n)`),
//!   then on dense candidates one write per banned token, on sparse candidates one binary
//!   search per candidate.

use alloc::vec::Vec;

use sieve_core::{
    BuildContext, Candidates, Context, Error, Footprint, Params, Range, Sampler, Stage,
};

/// The `no_repeat_ngram` stage.
#[derive(Debug, Clone)]
pub struct NoRepeatNgram {
    n: usize,
    /// Scratch: the KMP failure function of the prefix.
    failure: Vec<usize>,
    /// Scratch: banned ids, sorted and distinct after [`banned_tokens`].
    banned: Vec<u32>,
}

impl NoRepeatNgram {
    /// Bans repeats of n-grams of length `n`; `n = 0` is off.
    pub fn new(n: usize) -> Self {
        NoRepeatNgram {
            n,
            failure: Vec::new(),
            banned: Vec::new(),
        }
    }
}

/// Writes to `out`, sorted and without duplicates, every token that follows an occurrence of
/// the last `n − 1` tokens of `history` in `history` (an occurrence that is followed by a token,
/// so never the suffix itself). Nothing for `n = 0` or a history shorter than `n`.
fn banned_tokens(history: &[u32], n: usize, failure: &mut Vec<usize>, out: &mut Vec<u32>) {
    out.clear();
    let len = history.len();
    if n == 0 || len < n {
        return;
    }
    let m = n - 1;
    if m == 0 {
        out.extend_from_slice(history);
    } else {
        let pattern = &history[len - m..];
        // failure[i]: length of the longest proper prefix of pattern[..=i] that is also its suffix.
        failure.clear();
        failure.resize(m, 0);
        let mut k = 0;
        for i in 1..m {
            while k > 0 && pattern[i] != pattern[k] {
                k = failure[k - 1];
            }
            if pattern[i] == pattern[k] {
                k += 1;
            }
            failure[i] = k;
        }
        // Search the history without its last token: a match must be followed by a token.
        let mut q = 0;
        for (j, &t) in history[..len - 1].iter().enumerate() {
            while q > 0 && pattern[q] != t {
                q = failure[q - 1];
            }
            if pattern[q] == t {
                q += 1;
            }
            if q == m {
                out.push(history[j + 1]);
                q = failure[q - 1];
            }
        }
    }
    out.sort_unstable();
    out.dedup();
}

impl Sampler for NoRepeatNgram {
    fn apply(&mut self, candidates: &mut Candidates, cx: &Context<'_>) -> Result<(), Error> {
        if self.n == 0 || candidates.is_empty() {
            return Ok(());
        }
        banned_tokens(cx.history, self.n, &mut self.failure, &mut self.banned);
        if self.banned.is_empty() {
            return Ok(());
        }
        if candidates.is_dense() {
            for &id in &self.banned {
                if (id as usize) < candidates.len() {
                    candidates.set_logit(id as usize, f32::NEG_INFINITY);
                }
            }
        } else {
            let (ids, logits) = candidates.parts_mut();
            for (id, l) in ids.iter().zip(logits.iter_mut()) {
                if self.banned.binary_search(id).is_ok() {
                    *l = f32::NEG_INFINITY;
                }
            }
        }
        Ok(())
    }

    /// The tokens it bans on this step.
    fn footprint(&mut self, cx: &Context<'_>, touched: &mut Vec<u32>) -> Footprint {
        if self.n == 0 {
            return Footprint::Nothing;
        }
        banned_tokens(cx.history, self.n, &mut self.failure, &mut self.banned);
        touched.extend_from_slice(&self.banned);
        Footprint::Tokens
    }
}

/// The parameters of `no_repeat_ngram`.
#[derive(Debug, Clone, Params)]
pub struct NoRepeatNgramParams {
    /// n-gram length; every n-gram may occur once in the history, prompt included; 0 = off
    #[param(range = Range::closed(0.0, u32::MAX as f64))]
    pub n: usize,
}

impl Stage for NoRepeatNgram {
    const NAME: &'static str = "no_repeat_ngram";
    const DOC: &'static str = "ban tokens that would repeat an n-gram of the history (0 = off)";
    type Params = NoRepeatNgramParams;
    fn new(p: NoRepeatNgramParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(NoRepeatNgram::new(p.n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sieve_core::{Args, BuildContext, Value};

    fn banned(history: &[u32], n: usize) -> Vec<u32> {
        let mut out = Vec::new();
        banned_tokens(history, n, &mut Vec::new(), &mut out);
        out
    }

    /// The definition, literally: compare every window with the prefix.
    fn banned_naive(history: &[u32], n: usize) -> Vec<u32> {
        let len = history.len();
        if n == 0 || len < n {
            return Vec::new();
        }
        let prefix = &history[len - (n - 1)..];
        let mut out: Vec<u32> = history
            .windows(n)
            .filter(|w| &w[..n - 1] == prefix)
            .map(|w| w[n - 1])
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    #[test]
    fn bigram_bans_what_followed_the_last_token() {
        // [1, 2, 3, 1], n = 2: prefix [1]; bigrams (1,2) (2,3) (3,1) → ban 2.
        assert_eq!(banned(&[1, 2, 3, 1], 2), vec![2]);
        // [1, 2, 3, 1, 2, 4, 1, 2], n = 3: prefix [1, 2]; trigrams starting with it end in 3, 4.
        assert_eq!(banned(&[1, 2, 3, 1, 2, 4, 1, 2], 3), vec![3, 4]);
    }

    #[test]
    fn overlapping_occurrences_are_found() {
        // [1, 1, 1, 2, 1, 1], n = 3: prefix [1, 1]; (1,1,1) → 1, (1,1,2) → 2.
        assert_eq!(banned(&[1, 1, 1, 2, 1, 1], 3), vec![1, 2]);
        // [5, 5, 5], n = 3: prefix [5, 5]; the one trigram (5,5,5) → 5.
        assert_eq!(banned(&[5, 5, 5], 3), vec![5]);
    }

    #[test]
    fn short_history_and_unigrams() {
        // Fewer than n tokens: nothing; exactly n − 1 tokens: no n-gram yet.
        assert!(banned(&[1, 2], 3).is_empty());
        assert!(banned(&[1, 2, 3], 3).is_empty());
        // n = 1: every token seen is banned.
        assert_eq!(banned(&[4, 2, 4], 1), vec![2, 4]);
        assert!(banned(&[], 1).is_empty());
    }

    proptest! {
        #[test]
        fn kmp_matches_the_definition(history in prop::collection::vec(0u32..3, 0..40), n in 1usize..6) {
            prop_assert_eq!(banned(&history, n), banned_naive(&history, n));
        }
    }

    #[test]
    fn masks_dense_and_sparse_candidates() {
        let history = [1, 2, 3, 1];
        let mut c = Candidates::from_logits(&[0.0, 1.0, 2.0, 3.0]);
        NoRepeatNgram::new(2)
            .apply(&mut c, &Context::with_history(&history))
            .unwrap();
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            vec![(0, 0.0), (1, 1.0), (2, f32::NEG_INFINITY), (3, 3.0)]
        );

        let mut c = Candidates::from_sparse(vec![3, 2, 9], vec![3.0, 2.0, 1.0], 10).unwrap();
        NoRepeatNgram::new(2)
            .apply(&mut c, &Context::with_history(&history))
            .unwrap();
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            vec![(3, 3.0), (2, f32::NEG_INFINITY), (9, 1.0)]
        );
    }

    #[test]
    fn zero_is_an_identity_and_out_of_vocab_ids_are_ignored() {
        let mut c = Candidates::from_logits(&[0.5, 1.0]);
        NoRepeatNgram::new(0)
            .apply(&mut c, &Context::with_history(&[1, 1, 1]))
            .unwrap();
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![(0, 0.5), (1, 1.0)]);
        assert!(c.is_dense());
        // [7, 8, 7] with n = 2 bans 8, which is not a candidate.
        NoRepeatNgram::new(2)
            .apply(&mut c, &Context::with_history(&[7, 8, 7]))
            .unwrap();
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![(0, 0.5), (1, 1.0)]);
    }

    #[test]
    fn n_is_required() {
        let e = sieve_core::StageEntry::of::<NoRepeatNgram>();
        assert!(e.info.params[0].default.is_none());
        assert!(e.info.params[0].check(&Value::Int(-1)).is_err());
        let args = Args::new("no_repeat_ngram", vec![("n".into(), Value::Int(2))]);
        let mut stage = (e.build)(&args, &BuildContext::default()).unwrap();
        let mut c = Candidates::from_logits(&[0.0, 0.0]);
        stage
            .apply(&mut c, &Context::with_history(&[0, 1, 0]))
            .unwrap();
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            vec![(0, 0.0), (1, f32::NEG_INFINITY)]
        );
    }
}

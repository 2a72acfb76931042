//! Prompt lookup: draft tokens copied from an earlier occurrence of the text's last n-gram,
//! with no second model (Saxena 2023, <https://github.com/apoorvumang/prompt-lookup-decoding>).
//!
//! # Rule
//! The matching rule of transformers' `PromptLookupCandidateGenerator.get_candidates`
//! (`prompt_lookup_num_tokens = N`, `max_matching_ngram_size = n_max`), over the history
//! `h` (prompt and generated tokens, length `L`):
//!
//! 1. for `n` from `min(n_max, L − 1)` down to 1, the n-gram `g = h[L−n..]`;
//! 2. scan the windows `h[i..i+n] == g` from the left (`i = 0, 1, …`); the first one with a
//!    continuation (`i + n < L`) gives the draft `h[i+n .. min(i+n+N, L)]` — the *earliest*
//!    occurrence, not the most recent;
//! 3. the draft is cut before its first EOS id (the target would otherwise accept the EOS and
//!    go on after it); if that leaves nothing, there is no draft (no shorter n-gram is tried,
//!    as in transformers);
//! 4. with no match for any `n`, there is no draft: the step is plain decoding.
//!
//! transformers also drops draft tokens its logits processors forbid (a cheap pre-check);
//! here the target's pipeline rejects them at verification instead (a forbidden token has
//! `p = 0`, so it is never accepted), which changes the speed but not the output.

/// The draft for `history`: at most `max_tokens` tokens after the earliest earlier occurrence
/// of its last n-gram (`n ≤ max_ngram`, longest first), cut before the first id in `eos`
/// (see the [module](self) docs). Empty when nothing matches.
pub fn lookup<'h>(
    history: &'h [u32],
    max_ngram: usize,
    max_tokens: usize,
    eos: &[u32],
) -> &'h [u32] {
    let len = history.len();
    if len < 2 || max_tokens == 0 {
        return &[];
    }
    for n in (1..=max_ngram.min(len - 1)).rev() {
        let gram = &history[len - n..];
        let found = history
            .windows(n)
            .enumerate()
            .find(|&(i, w)| w == gram && i + n < len);
        if let Some((i, _)) = found {
            let start = i + n;
            let draft = &history[start..(start + max_tokens).min(len)];
            let end = draft
                .iter()
                .position(|t| eos.contains(t))
                .unwrap_or(draft.len());
            return &draft[..end];
        }
    }
    &[]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_ngram_first_and_its_earliest_occurrence() {
        // h = 1 2 3 9 1 2 4 1 2 | last bigram "1 2" occurs at 0 and 4 (and at 7, the end):
        // the earliest, at 0, continues with 3 9 1.
        let h = [1, 2, 3, 9, 1, 2, 4, 1, 2];
        assert_eq!(lookup(&h, 2, 3, &[]), &[3, 9, 1]);
        // With n ≤ 3, the trigram "4 1 2" has no earlier occurrence: the bigram decides.
        assert_eq!(lookup(&h, 3, 3, &[]), &[3, 9, 1]);
        // A trigram that does occur wins over the bigram's earlier match:
        // h = 1 2 5 | 7 1 2 6 | 7 1 2: "7 1 2" at 3 continues with 6 7 1.
        let h = [1, 2, 5, 7, 1, 2, 6, 7, 1, 2];
        assert_eq!(lookup(&h, 3, 3, &[]), &[6, 7, 1]);
        assert_eq!(lookup(&h, 2, 3, &[]), &[5, 7, 1]);
    }

    #[test]
    fn falls_back_to_shorter_ngrams_and_stops_at_the_end() {
        // Last bigram "8 3" never occurred before; the unigram "3" did, at 1.
        let h = [5, 3, 4, 8, 3];
        assert_eq!(lookup(&h, 2, 10, &[]), &[4, 8, 3]);
        // The draft is cut by the end of the history.
        assert_eq!(lookup(&h, 1, 10, &[]), &[4, 8, 3]);
        assert_eq!(lookup(&h, 1, 2, &[]), &[4, 8]);
    }

    #[test]
    fn overlapping_repeats() {
        // "7 7 7": the bigram "7 7" first occurs at 0, continuing with 7.
        assert_eq!(lookup(&[7, 7, 7], 2, 5, &[]), &[7]);
        assert_eq!(lookup(&[7, 7], 2, 5, &[]), &[7]);
    }

    #[test]
    fn nothing_to_copy() {
        assert!(lookup(&[1, 2, 3, 4], 3, 5, &[]).is_empty());
        assert!(lookup(&[1], 3, 5, &[]).is_empty());
        assert!(lookup(&[], 3, 5, &[]).is_empty());
        assert!(lookup(&[1, 2, 1], 3, 0, &[]).is_empty());
        assert!(lookup(&[1, 2, 1], 0, 5, &[]).is_empty());
    }

    #[test]
    fn cut_before_eos_without_trying_another_match() {
        let h = [1, 2, 0, 5, 1, 2];
        assert_eq!(lookup(&h, 2, 4, &[0]), &[] as &[u32]);
        assert_eq!(lookup(&h, 2, 4, &[5]), &[0]);
        assert_eq!(lookup(&h, 2, 4, &[]), &[0, 5, 1, 2]);
    }
}

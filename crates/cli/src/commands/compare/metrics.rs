//! The numbers `sieve compare` reports per pipeline, each a plain function of token ids or of
//! per-step statistics, so each can be checked by hand.
//!
//! Diversity, over the generated token ids of every sample (n-grams never cross two samples):
//! - **distinct-n** (Li et al., 2016, *A Diversity-Promoting Objective Function for Neural
//!   Conversation Models*): distinct n-grams over all n-grams of all samples, in `[0, 1]`;
//! - **repeated-4-gram rate**: of all 4-grams of all samples, the share that already occurred
//!   earlier in the same sample (degenerate loops push it toward 1);
//! - **pairwise overlap**: the mean, over every pair of samples of the same prompt, of the
//!   Jaccard similarity `|A ∩ B| / |A ∪ B|` of their bigram sets (1: the samples are the same
//!   text; pairs where both have no bigram count as 0).
//!
//! Quality under the raw model (before any stage), from the engine's per-step statistics:
//! - **mean log-probability** of the generated tokens, and **perplexity** `exp(−mean)`;
//! - **mean entropy** of the raw distribution at each step (nats);
//! - **single-candidate share**: the share of steps after which exactly one candidate with a
//!   finite logit was left (truncation to one token; `greedy` and `dist` select without
//!   truncating, so they leave more).

use std::collections::HashSet;

/// Distinct n-grams over all n-grams of `samples`; 0 when there is no n-gram.
pub fn distinct_n(samples: &[Vec<u32>], n: usize) -> f64 {
    let mut seen = HashSet::new();
    let mut total = 0usize;
    for sample in samples {
        for gram in sample.windows(n) {
            seen.insert(gram);
            total += 1;
        }
    }
    ratio(seen.len(), total)
}

/// Of all 4-grams of `samples`, the share that already occurred earlier in the same sample;
/// 0 when there is no 4-gram.
pub fn repeated_4gram_rate(samples: &[Vec<u32>]) -> f64 {
    let (mut repeated, mut total) = (0usize, 0usize);
    for sample in samples {
        let mut seen = HashSet::new();
        for gram in sample.windows(4) {
            if !seen.insert(gram) {
                repeated += 1;
            }
            total += 1;
        }
    }
    ratio(repeated, total)
}

/// The mean Jaccard similarity of the bigram sets of every pair of samples in each group
/// (a group: the samples of one prompt); 0 when no group has two samples.
pub fn pairwise_overlap(groups: &[Vec<Vec<u32>>]) -> f64 {
    let (mut sum, mut pairs) = (0.0, 0usize);
    for group in groups {
        let sets: Vec<HashSet<&[u32]>> = group.iter().map(|s| s.windows(2).collect()).collect();
        for (i, a) in sets.iter().enumerate() {
            for b in &sets[i + 1..] {
                let union = a.union(b).count();
                let common = a.intersection(b).count();
                sum += ratio(common, union);
                pairs += 1;
            }
        }
    }
    if pairs == 0 {
        0.0
    } else {
        sum / pairs as f64
    }
}

/// The mean of `values`; `None` when there is none.
pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// `part / whole`, 0 for an empty whole.
fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_n_by_hand() {
        // Unigrams: 1 2 1 | 3 → distinct {1, 2, 3} of 4; bigrams: (1,2) (2,1) | none → 2 of 2.
        let samples = vec![vec![1, 2, 1], vec![3]];
        assert_eq!(distinct_n(&samples, 1), 0.75);
        assert_eq!(distinct_n(&samples, 2), 1.0);
        assert_eq!(distinct_n(&samples, 3), 1.0);
        // The same sample twice: every n-gram appears twice.
        assert_eq!(distinct_n(&[vec![5, 6, 7], vec![5, 6, 7]], 2), 0.5);
        assert_eq!(distinct_n(&[vec![], vec![1]], 2), 0.0);
    }

    #[test]
    fn repeated_4grams_by_hand() {
        // 1 2 3 4 1 2 3 4: 4-grams 1234 2341 3412 4123 1234 → the last repeats: 1 of 5.
        assert_eq!(repeated_4gram_rate(&[vec![1, 2, 3, 4, 1, 2, 3, 4]]), 0.2);
        // A repeat across samples is not a repeat within a sample.
        assert_eq!(
            repeated_4gram_rate(&[vec![1, 2, 3, 4], vec![1, 2, 3, 4]]),
            0.0
        );
        // A loop of one token: 7 7 7 7 7 7 → three 4-grams, the last two repeats.
        assert!((repeated_4gram_rate(&[vec![7; 6]]) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(repeated_4gram_rate(&[vec![1, 2, 3]]), 0.0);
    }

    #[test]
    fn pairwise_overlap_by_hand() {
        // Bigrams {12, 23} and {12, 24}: 1 shared of 3 → 1/3; the same text → 1.
        let groups = vec![vec![vec![1, 2, 3], vec![1, 2, 4]]];
        assert!((pairwise_overlap(&groups) - 1.0 / 3.0).abs() < 1e-12);
        let same = vec![vec![vec![1, 2, 3], vec![1, 2, 3]]];
        assert_eq!(pairwise_overlap(&same), 1.0);
        // Three samples: pairs (a,b)=1/3, (a,c)=0, (b,c)=0 → mean 1/9; groups pool their pairs.
        let three = vec![vec![vec![1, 2, 3], vec![1, 2, 4], vec![9, 9]]];
        assert!((pairwise_overlap(&three) - 1.0 / 9.0).abs() < 1e-12);
        assert_eq!(pairwise_overlap(&[vec![vec![1, 2]]]), 0.0);
    }

    #[test]
    fn means() {
        assert_eq!(mean([1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(mean(std::iter::empty()), None);
    }
}

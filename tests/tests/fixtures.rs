//! The fixtures are what they claim to be: shapes of the small ones, and `zipf50k`'s law,
//! noise bound, shuffle and determinism.

use sieve_tests::logits::{self, ZIPF_LEN};

#[test]
fn peaked_has_one_token_far_above_the_rest() {
    let l = logits::peaked();
    assert_eq!(l.len(), logits::SMALL);
    let second = l
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != 1)
        .map(|(_, &x)| x)
        .fold(f32::MIN, f32::max);
    assert_eq!(l[1], 5.0);
    assert!(l[1] - second >= 3.5, "gap {}", l[1] - second);
}

#[test]
fn flat_ties_and_masked_fixtures_have_their_shapes() {
    assert!(logits::flat().iter().all(|&x| x == 1.0));
    let mut distinct: Vec<f32> = logits::ties();
    distinct.sort_by(f32::total_cmp);
    distinct.dedup();
    assert_eq!(distinct, vec![-3.0, -0.5, 1.0, 2.0]);
    let masked: Vec<usize> = (0..16)
        .filter(|&i| logits::neg_inf()[i] == f32::NEG_INFINITY)
        .collect();
    assert_eq!(masked, vec![0, 6, 14]);
    let nans: Vec<usize> = (0..16).filter(|&i| logits::nan()[i].is_nan()).collect();
    assert_eq!(nans, vec![1, 3, 10]);
    assert!(logits::base()
        .iter()
        .all(|&x| (-1.0..=1.5).contains(&x) && (x * 4.0).fract() == 0.0));
}

#[test]
fn zipf50k_follows_the_law_within_the_noise() {
    let l = logits::zipf50k();
    assert_eq!(l.len(), ZIPF_LEN);
    let mut sorted = l.clone();
    sorted.sort_by(|a, b| b.total_cmp(a));
    // The r-th largest of f(k) + noise (f decreasing, |noise| <= 0.05) lies within 0.05 of f(r).
    for (r, &x) in sorted.iter().enumerate() {
        let law = -1.1 * ((r + 1) as f64).ln();
        assert!(
            (x as f64 - law).abs() <= 0.05 + 1e-5,
            "rank {r}: {x} vs {law}"
        );
    }
}

#[test]
fn zipf50k_is_shuffled_and_deterministic() {
    let l = logits::zipf50k();
    assert_eq!(l, logits::zipf50k());
    let descents = l.windows(2).filter(|w| w[0] > w[1]).count();
    // A sorted vector would have 49 999 descents; a shuffled one about half.
    assert!((20_000..30_000).contains(&descents), "{descents} descents");
    let ranks = logits::ranks(&l);
    let top10: Vec<usize> = (0..ZIPF_LEN).filter(|&i| ranks[i] < 10).collect();
    assert_ne!(
        top10,
        (0..10).collect::<Vec<_>>(),
        "the most likely tokens are the first ids"
    );
}

#[test]
fn ranks_order_by_logit_then_id() {
    assert_eq!(
        logits::ranks(&[1.0, 3.0, f32::NAN, 3.0, -1.0]),
        vec![2, 0, 4, 1, 3]
    );
}

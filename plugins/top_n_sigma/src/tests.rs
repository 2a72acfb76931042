//! Vectors derived by hand from llama.cpp's semantics (see the crate docs).

use super::*;

fn run(n: f64, logits: &[f32]) -> Vec<(u32, f32)> {
    let mut c = Candidates::from_logits(logits);
    TopNSigma { n }.apply(&mut c, &Context::default()).unwrap();
    c.iter().collect()
}

/// Logits 2, 4, 4, 4, 5, 5, 7, 9 (ids 0..=7): mean 40/8 = 5; deviations −3, −1, −1, −1, 0, 0,
/// 2, 4, squares summing to 9+1+1+1+0+0+4+16 = 32, so the population variance is 32/8 = 4 and
/// σ = 2 (the unbiased σ would be √(32/7) ≈ 2.14). Maximum 9.
const TEXTBOOK: [f32; 8] = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];

#[test]
fn keeps_logits_at_least_max_minus_n_sigma() {
    // n = 1: threshold 9 − 2 = 7; the 7 itself is kept (>=).
    assert_eq!(run(1.0, &TEXTBOOK), [(6, 7.0), (7, 9.0)]);
    // n = 2: threshold 5; both 5s kept.
    assert_eq!(
        run(2.0, &TEXTBOOK),
        [(4, 5.0), (5, 5.0), (6, 7.0), (7, 9.0)]
    );
    // n = 0.5: threshold 8; only the maximum.
    assert_eq!(run(0.5, &TEXTBOOK), [(7, 9.0)]);
    // n = 3.5: threshold 2; everything (2 == threshold is kept).
    assert_eq!(run(3.5, &TEXTBOOK).len(), 8);
}

#[test]
fn masked_logits_are_left_out_of_the_statistics() {
    // The same eight finite logits with a -inf at id 2: μ and σ are still 5 and 2.
    let logits = [2.0, 4.0, f32::NEG_INFINITY, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
    // n = 1: threshold 7.
    assert_eq!(run(1.0, &logits), [(7, 7.0), (8, 9.0)]);
    // n = 3: threshold 9 − 6 = 3: the 2 goes (and the -inf candidate). Had the -inf counted
    // as 0 (as HF-style ports do), μ would be 40/9 ≈ 4.444 and the population σ
    // √(54.222/9) ≈ 2.4545, a threshold of ≈ 1.636 that keeps the 2.
    assert_eq!(
        run(3.0, &logits),
        [
            (1, 4.0),
            (3, 4.0),
            (4, 4.0),
            (5, 5.0),
            (6, 5.0),
            (7, 7.0),
            (8, 9.0)
        ]
    );
}

#[test]
fn neutral_cases_are_identities() {
    let all: Vec<(u32, f32)> = TEXTBOOK
        .iter()
        .enumerate()
        .map(|(i, &l)| (i as u32, l))
        .collect();
    assert_eq!(run(0.0, &TEXTBOOK), all);
    assert_eq!(run(-1.0, &TEXTBOOK), all);
    assert_eq!(run(1.0, &[3.0]), [(0, 3.0)]);
    // Every finite logit equal: σ = 0, threshold = max, all kept.
    assert_eq!(run(1.0, &[3.0, 3.0, 3.0]).len(), 3);
    // No finite logit: nothing to measure, nothing changes.
    assert_eq!(run(1.0, &[f32::NEG_INFINITY; 2]).len(), 2);
}

#[test]
fn two_candidates() {
    // 0 and 1: μ = 0.5, σ = 0.5. n = 1: threshold 0.5 keeps only the 1; n = 2: threshold 0,
    // which keeps the 0 too.
    assert_eq!(run(1.0, &[0.0, 1.0]), [(1, 1.0)]);
    assert_eq!(run(2.0, &[0.0, 1.0]), [(0, 0.0), (1, 1.0)]);
}

#[test]
fn the_kept_set_ignores_a_temperature_applied_before() {
    for t in [0.25f32, 0.7, 2.0] {
        let mut c = Candidates::from_logits(&TEXTBOOK);
        c.scale_logits(1.0 / t);
        // n = 1.5: threshold 6 / t, between the scaled 5 and 7 (not at a logit, where
        // rounding of l / t could decide).
        TopNSigma { n: 1.5 }
            .apply(&mut c, &Context::default())
            .unwrap();
        let ids: Vec<u32> = c.iter().map(|(id, _)| id).collect();
        assert_eq!(ids, [6, 7], "t = {t}");
    }
}

#[test]
fn sparse_candidates_keep_their_order() {
    let mut c = Candidates::from_sparse(vec![40, 7, 9, 3], vec![1.0, 9.0, 5.0, 7.0], 50).unwrap();
    // μ = 5.5, deviations −4.5, 3.5, −0.5, 1.5: Σ² = 20.25 + 12.25 + 0.25 + 2.25 = 35,
    // σ = √8.75 ≈ 2.958; n = 1: threshold ≈ 6.042.
    TopNSigma { n: 1.0 }
        .apply(&mut c, &Context::default())
        .unwrap();
    assert_eq!(c.iter().collect::<Vec<_>>(), [(7, 9.0), (3, 7.0)]);
}

#[test]
fn moments_match_a_plain_computation_at_every_length() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in 0..40 {
        let logits: Vec<f32> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if state.is_multiple_of(5) {
                    f32::NEG_INFINITY
                } else {
                    (state % 1000) as f32 / 100.0 - 5.0
                }
            })
            .collect();
        let finite: Vec<f64> = logits
            .iter()
            .filter(|x| x.is_finite())
            .map(|&x| f64::from(x))
            .collect();
        let got = finite_moments(&logits);
        if finite.is_empty() {
            assert_eq!(got, None);
            continue;
        }
        let n = finite.len() as f64;
        let mean = finite.iter().sum::<f64>() / n;
        let sigma = (finite.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        let max = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (m, mu, s) = got.unwrap();
        assert_eq!(f64::from(m), max);
        assert!(
            (mu - mean).abs() < 1e-9 && (s - sigma).abs() < 1e-9,
            "len {len}"
        );
    }
}

#[test]
fn thresholds_round_up_to_the_next_f32() {
    for x in [
        0.0,
        -0.0,
        1.0,
        0.1,
        -0.1,
        1e-40,
        -1e-40,
        3.4e38,
        -3.5e38,
        7.000000000000001,
    ] {
        let t = ceil_f32(x);
        assert!(f64::from(t) >= x, "{x}: {t}");
        // The f32 just below t is below x.
        let below = if t > 0.0 {
            f32::from_bits(t.to_bits() - 1)
        } else if t == 0.0 {
            -f32::from_bits(1)
        } else {
            f32::from_bits(t.to_bits() + 1)
        };
        assert!(f64::from(below) < x, "{x}: {t} {below}");
    }
    assert_eq!(ceil_f32(f64::NEG_INFINITY), f32::NEG_INFINITY);
    assert_eq!(ceil_f32(-1e300), -f32::MAX);
    assert_eq!(ceil_f32(7.0), 7.0);
}

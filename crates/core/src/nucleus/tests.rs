//! The nucleus against sorting everything and walking the prefix, and its fast bound against
//! the exact weights.

use super::*;
use alloc::vec;
use alloc::vec::Vec;

/// The kept ids of `logits` at `p` and `min_keep`, increasing.
fn run(p: f64, min_keep: usize, logits: &[f32]) -> Vec<u32> {
    let mut c = Candidates::from_logits(logits);
    Nucleus::default().keep(&mut c, p, min_keep);
    let mut ids: Vec<u32> = c.iter().map(|(id, _)| id).collect();
    ids.sort_unstable();
    ids
}

/// A deterministic stream of uniform values in `[0, 1)` (xorshift64, 24 bits each), for tests
/// that need many reproducible logits without a dependency.
fn uniform_stream() -> impl FnMut() -> f32 {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// The sorted walk over the candidates' own weights (the short path, on any length): the
/// kept ids, and the exact margin `|Σ_{i<m'} w_i − p·Z| / Z` of the nearest boundary
/// `m'` (the cut or the one before it).
fn by_sorting(logits: &[f32], scale: f32, p: f64) -> (Vec<u32>, f64) {
    let mut c = Candidates::from_logits(logits);
    c.scale_logits(scale);
    c.sort_desc();
    let (w, _) = c.weights();
    let w = w.to_vec();
    let total = math::sum_f64(&w);
    let count = prefix_count(&w, p * total, 1);
    let before: f64 = w[..count - 1].iter().map(|&x| x as f64).sum();
    let at = before + w[count - 1] as f64;
    let margin = (before - p * total).abs().min((at - p * total).abs()) / total;
    c.truncate(count);
    let mut ids: Vec<u32> = c.iter().map(|(id, _)| id).collect();
    ids.sort_unstable();
    (ids, margin)
}

/// The long path must keep exactly what sorting everything and walking the prefix keeps,
/// unless the mass at the boundary is within `f64` rounding (`1e-12·Z`) of `p·Z`.
fn check_long_path(logits: &[f32], p: f64) {
    let scale = 1.0 / 0.7;
    let mut fast = Candidates::from_logits(logits);
    fast.scale_logits(scale);
    Nucleus::default().keep(&mut fast, p, 1);
    let mut got: Vec<u32> = fast.iter().map(|(id, _)| id).collect();
    got.sort_unstable();
    let (want, margin) = by_sorting(logits, scale, p);
    assert!(
        got == want || margin < 1e-12,
        "p={p}: {} vs {} kept, margin {margin}",
        got.len(),
        want.len()
    );
}

#[test]
fn long_path_matches_full_sort() {
    let mut next = uniform_stream();
    // Roughly normal logits (sum of uniforms), a long flat tail, many ties.
    let normal: Vec<f32> = (0..50_000)
        .map(|_| (next() + next() + next() + next() - 2.0) * 4.0)
        .collect();
    let ties: Vec<f32> = (0..20_000).map(|i| (i % 7) as f32).collect();
    let peaked: Vec<f32> = (0..30_000)
        .map(|i| if i == 12_345 { 30.0 } else { next() })
        .collect();
    for logits in [&normal, &ties, &peaked] {
        for p in [0.0, 0.1, 0.5, 0.9, 0.95, 0.999] {
            check_long_path(logits, p);
        }
    }
}

#[test]
fn long_path_matches_full_sort_on_heavy_heads_and_tails() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 40) as f32 + 0.5) / (1u64 << 24) as f32
    };
    // Laplace logits (a few heavy tokens, a long thin tail), a Zipf-like decline with
    // noise (mass spread over thousands), and a wide normal one (the sure depth).
    let laplace: Vec<f32> = (0..100_000)
        .map(|_| {
            let u = next();
            3.0 * if u < 0.5 {
                (2.0 * u).ln()
            } else {
                -(2.0 - 2.0 * u).ln()
            }
        })
        .collect();
    let zipf: Vec<f32> = (0..60_000)
        .map(|i| -2.0 * ((i % 7919) as f32 + 1.0).ln() + next())
        .collect();
    let wide: Vec<f32> = (0..40_000)
        .map(|_| (next() + next() + next() - 1.5) * 20.0)
        .collect();
    for logits in [&laplace, &zipf, &wide] {
        for p in [0.05, 0.5, 0.8, 0.9, 0.99, 0.9999] {
            check_long_path(logits, p);
        }
    }
}

#[test]
fn long_path_handles_min_keep_masks_and_sparse_ids() {
    let logits: Vec<f32> = (0..5000)
        .map(|i| match i % 10 {
            0 => f32::NEG_INFINITY,
            _ => ((i * 7919 % 1000) as f32).sin() * 3.0,
        })
        .collect();
    let nucleus = run(0.5, 1, &logits);
    assert!(
        nucleus.iter().all(|&id| id % 10 != 0),
        "a masked token kept"
    );
    // min_keep beyond the nucleus: the min_keep best instead, sorted.
    let mut c = Candidates::from_logits(&logits);
    Nucleus::default().keep(&mut c, 0.5, nucleus.len() + 10);
    assert_eq!(c.len(), nucleus.len() + 10);
    assert!(c.is_sorted());
    // The same candidates as sparse ids in another order keep the same tokens.
    let order: Vec<u32> = (0..logits.len() as u32).rev().collect();
    let shuffled: Vec<f32> = order.iter().map(|&i| logits[i as usize]).collect();
    let mut c = Candidates::from_sparse(order, shuffled, logits.len()).unwrap();
    Nucleus::default().keep(&mut c, 0.5, 1);
    let mut ids: Vec<u32> = c.iter().map(|(id, _)| id).collect();
    ids.sort_unstable();
    assert_eq!(ids, nucleus);
    // Everything masked: nothing is left.
    let mut c = Candidates::from_logits(&[f32::NEG_INFINITY; 3000]);
    Nucleus::default().keep(&mut c, 0.9, 1);
    assert!(c.is_empty());
}

/// Normal logits (sum of four uniforms), `n` of them from `seed`.
fn normal(n: usize, seed: u64, spread: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..n)
        .map(|_| (next() + next() + next() + next() - 2.0) * spread)
        .collect()
}

#[test]
fn a_cut_the_fast_bound_leaves_in_doubt_is_decided_by_the_exact_weights() {
    // p placed 1e-9 of the mass past a boundary of the exact sorted walk: far beyond f64
    // rounding, far inside the fast weights' bound. The fast attempt must give up, and the
    // stage must keep exactly the sorted walk's tokens (the boundary token too).
    let scale = 1.0 / 0.7;
    let logits = normal(50_000, 7, 5.0);
    let mut sorted = Candidates::from_logits(&logits);
    sorted.scale_logits(scale);
    sorted.sort_desc();
    let w = sorted.weights().0.to_vec();
    let total = math::sum_f64(&w);
    let mut doubts = 0;
    for m in [3usize, 40, 200, 900] {
        let before: f64 = w[..m].iter().map(|&x| x as f64).sum();
        for nudge in [-1e-9, 1e-9] {
            let p = (before + nudge * total) / total;
            let mut c = Candidates::from_logits(&logits);
            c.scale_logits(scale);
            let mut found = Found::default();
            if nucleus(&c, p, &mut found, None) == Outcome::InDoubt {
                doubts += 1;
            }
            Nucleus::default().keep(&mut c, p, 1);
            let mut got: Vec<u32> = c.iter().map(|(id, _)| id).collect();
            got.sort_unstable();
            let (want, margin) = by_sorting(&logits, scale, p);
            assert!(margin > 1e-10, "m = {m}: margin {margin}");
            assert_eq!(got.len(), if nudge < 0.0 { m } else { m + 1 }, "m = {m}");
            assert_eq!(got, want, "m = {m}, nudge {nudge}");
        }
    }
    assert_eq!(
        doubts, 8,
        "the fast bound should not settle a cut 1e-9 from p"
    );
}

#[test]
fn the_fast_bound_settles_most_cuts_and_always_as_the_exact_walk() {
    // Normal logits at several spreads and masses: every cut equals the sorted walk's
    // (strictly, unless within 1e-12 of p). The exact fallback is rare up to p = 0.95;
    // nearer 1 the token at the cut is light next to the bound, and it is common.
    let (mut cases, mut doubts) = (0, 0);
    for seed in 0..6u64 {
        for spread in [1.0f32, 2.5, 6.0] {
            let logits = normal(20_000, 2 * seed + 1, spread);
            for p in [0.3, 0.7, 0.9, 0.95, 0.99, 0.999] {
                let mut c = Candidates::from_logits(&logits);
                c.scale_logits(1.0 / 0.7);
                let mut found = Found::default();
                if p <= 0.95 {
                    cases += 1;
                    if nucleus(&c, p, &mut found, None) == Outcome::InDoubt {
                        doubts += 1;
                    }
                }
                check_long_path(&logits, p);
            }
        }
    }
    assert!(
        doubts * 10 <= cases,
        "{doubts} of {cases} cuts left in doubt"
    );
}

#[test]
fn cached_weights_decide_directly() {
    // A stage before computed the softmax: the long path uses those probabilities.
    let logits = normal(30_000, 3, 2.5);
    for p in [0.5, 0.9, 0.99] {
        let mut c = Candidates::from_logits(&logits);
        c.scale_logits(1.0 / 0.7);
        c.softmax();
        Nucleus::default().keep(&mut c, p, 1);
        assert!(c.cached_probs().is_some());
        let mut got: Vec<u32> = c.iter().map(|(id, _)| id).collect();
        got.sort_unstable();
        let (want, margin) = by_sorting(&logits, 1.0 / 0.7, p);
        assert!(got == want || margin < 1e-6, "p = {p}: margin {margin}");
    }
}

#[test]
fn the_tail_bound_covers_the_fast_weights() {
    // The bound against the exact tail mass, on tails of every depth: summed below the
    // floor, or below a shallower first floor less the band between the two.
    let logits = normal(40_000, 11, 6.0);
    for scale in [1.0f32, 1.0 / 0.7, 0.2, 5.0] {
        let mut c = Candidates::from_logits(&logits);
        c.scale_logits(scale);
        let (raw, max, n) = (c.raw_logits(), c.raw_max(), logits.len());
        let mut exact = vec![0.0f32; n];
        math::exp_shifted_into(raw, max, scale, &mut exact);
        let mut fast = vec![0.0f32; n];
        math::fast_weights_into(raw, max, scale, &mut fast);
        let below = |floor: f32, w: &[f32]| -> f64 {
            (0..n)
                .filter(|&i| raw[i] < floor)
                .map(|i| w[i] as f64)
                .sum()
        };
        for first in [0.5f32, 2.0, 5.0, 10.0, 20.0, 40.0] {
            let first_floor = max - first / scale;
            let tail0 = math::fast_weight_sum_below(raw, max, scale, first_floor);
            let rounding = math::fast_weight_sum_rounding(tail0, n);
            for deeper in [0.0f32, 1.0, 6.0] {
                let floor = max - (first + deeper) / scale;
                let band: f64 = (0..n)
                    .filter(|&i| raw[i] >= floor && raw[i] < first_floor)
                    .map(|i| fast[i] as f64)
                    .sum();
                let tail = tail0 - band;
                let want = below(floor, &exact);
                let err = tail_error(tail, rounding, n);
                assert!(
                    (want - tail).abs() <= err,
                    "scale {scale}, depth {first}+{deeper}: {want} vs {tail} ± {err}"
                );
                assert!(err <= 2e-5 * tail0 + 1e-9, "{err} on {tail0}");
            }
        }
    }
}

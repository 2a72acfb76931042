//! Unit tests of `Candidates`, with values worked out by hand.

use super::Candidates;
use alloc::vec;
use alloc::vec::Vec;

fn pairs(c: &Candidates) -> Vec<(u32, f32)> {
    c.iter().collect()
}

#[test]
fn load_reads_nan_as_neg_inf_and_pos_inf_as_max() {
    let mut c = Candidates::from_logits(&[1.0, f32::NAN, -2.0, f32::INFINITY]);
    assert_eq!(
        pairs(&c),
        vec![(0, 1.0), (1, f32::NEG_INFINITY), (2, -2.0), (3, f32::MAX)]
    );
    assert!(c.is_dense());
    assert_eq!(c.softmax(), &[0.0, 0.0, 0.0, 1.0]);
    let input = [0.0, 1.0, f32::INFINITY, f32::NAN];
    assert_eq!(
        Candidates::first_non_finite(&input),
        Some((2, f32::INFINITY))
    );
    assert_eq!(
        Candidates::first_non_finite(&[0.0, f32::NEG_INFINITY]),
        None
    );
}

#[test]
fn load_owned_reuses_the_buffer_and_reads_bad_values_like_load() {
    let mut c = Candidates::new();
    assert_eq!(c.load_owned(vec![2.0, f32::NAN, f32::INFINITY]), 1);
    assert_eq!(
        pairs(&c),
        vec![(0, 2.0), (1, f32::NEG_INFINITY), (2, f32::MAX)]
    );
    let mut buffer = c.take_logits();
    assert!(c.is_empty());
    buffer.clear();
    buffer.extend_from_slice(&[0.5, 1.5]);
    assert_eq!(c.load_owned(buffer), 0);
    c.keep_top(1);
    assert_eq!(pairs(&c), vec![(1, 1.5)]);
}

#[test]
fn softmax_by_hand() {
    // p = e^l / Σ e^l with l = [0, ln 3, -inf] → [1/4, 3/4, 0]
    let mut c = Candidates::from_logits(&[0.0, 3f32.ln(), f32::NEG_INFINITY]);
    let p = c.softmax().to_vec();
    assert!((p[0] - 0.25).abs() < 1e-6 && (p[1] - 0.75).abs() < 1e-6 && p[2] == 0.0);
}

#[test]
fn pending_scale_applies_to_reads_and_softmax() {
    let mut c = Candidates::from_logits(&[2.0, 0.0]);
    c.scale_logits(0.5);
    assert_eq!(c.raw_logits(), &[2.0, 0.0]);
    assert_eq!(c.logit(0), 1.0);
    let p = c.softmax().to_vec();
    let want = 1.0 / (1.0 + (-1.0f32).exp());
    assert!((p[0] - want).abs() < 1e-6);
    assert_eq!(c.logits(), &[1.0, 0.0]);
    assert_eq!(c.pending_scale(), 1.0);
}

#[test]
fn keep_top_breaks_ties_toward_lower_id_on_both_paths() {
    for n in [10usize, 5000] {
        let logits: Vec<f32> = (0..n).map(|i| if i % 3 == 0 { 1.0 } else { 0.0 }).collect();
        let mut c = Candidates::from_logits(&logits);
        c.keep_top(4);
        assert_eq!(
            pairs(&c),
            vec![(0, 1.0), (3, 1.0), (6, 1.0), (9, 1.0)],
            "n = {n}"
        );
        assert!(c.is_sorted());
    }
}

/// The best `k` by sorting everything: the reference for `keep_top`.
fn top_by_sorting(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut all: Vec<(u32, f32)> = logits
        .iter()
        .copied()
        .enumerate()
        .map(|(i, l)| (i as u32, l))
        .collect();
    all.retain(|p| p.1 > f32::NEG_INFINITY);
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

fn wavy(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919 % 1000) as f32).sin() * 3.0)
        .collect()
}

#[test]
fn keep_top_agrees_with_sorting_on_every_path() {
    let logits = wavy(20_000);
    for k in [1, 40, 300, 2_000, 5_000] {
        let mut c = Candidates::from_logits(&logits);
        c.keep_top(k);
        assert_eq!(pairs(&c), top_by_sorting(&logits, k), "dense, k = {k}");
        let ids: Vec<u32> = (0..logits.len() as u32).collect();
        let mut sparse = Candidates::from_sparse(ids, logits.clone(), logits.len()).unwrap();
        sparse.keep_top(k);
        assert_eq!(
            pairs(&sparse),
            top_by_sorting(&logits, k),
            "sparse, k = {k}"
        );
    }
}

#[test]
fn keep_top_running_threshold_path_agrees_with_sorting() {
    // 2·k·1024 < n selects the running-threshold scan; ties (values repeat every 1000) test
    // that equal logits keep the lower ids.
    let logits = wavy(300_000);
    for k in [1, 40, 120] {
        let mut c = Candidates::from_logits(&logits);
        c.keep_top(k);
        assert_eq!(pairs(&c), top_by_sorting(&logits, k), "dense, k = {k}");
        let ids: Vec<u32> = (0..logits.len() as u32).rev().collect();
        let mut sparse =
            Candidates::from_sparse(ids.clone(), logits.clone(), logits.len()).unwrap();
        sparse.keep_top(k);
        let mut by_id = vec![0.0f32; logits.len()];
        for (&id, &l) in ids.iter().zip(&logits) {
            by_id[id as usize] = l;
        }
        assert_eq!(pairs(&sparse), top_by_sorting(&by_id, k), "sparse, k = {k}");
    }
}

#[test]
fn set_logit_is_seen_by_keep_top() {
    let mut logits = wavy(20_000);
    let mut c = Candidates::from_logits(&logits);
    c.set_logit(12_345, 50.0);
    logits[12_345] = 50.0;
    c.keep_top(3);
    assert_eq!(pairs(&c), top_by_sorting(&logits, 3));
    assert_eq!(c.id(0), 12_345);
}

#[test]
fn lowered_logits_leave_too_few_contenders_and_keep_top_still_exact() {
    // Lowering the 400 best logits (after the sample was possibly drawn from them) leaves the
    // first estimates with too few contenders, so the scan falls back to lower ones.
    let mut logits = wavy(20_000);
    let mut c = Candidates::from_logits(&logits);
    let best: Vec<u32> = top_by_sorting(&logits, 400)
        .into_iter()
        .map(|p| p.0)
        .collect();
    for &id in &best {
        c.set_logit(id as usize, -10.0);
        logits[id as usize] = -10.0;
    }
    c.keep_top(40);
    assert_eq!(pairs(&c), top_by_sorting(&logits, 40));
}

#[test]
fn keep_ranked_through_skips_nothing_it_should_keep() {
    let logits = wavy(20_000);
    let cut = top_by_sorting(&logits, 77)[76];
    let mut c = Candidates::from_logits(&logits);
    c.keep_ranked_through(cut.1, cut.0);
    let mut kept = pairs(&c);
    kept.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    assert_eq!(kept, top_by_sorting(&logits, 77));
}

#[test]
fn keep_top_on_sparse_unsorted_ids() {
    let ids: Vec<u32> = (0..4000).rev().collect();
    let logits = vec![0.5; 4000];
    let mut c = Candidates::from_sparse(ids, logits, 4000).unwrap();
    c.keep_top(3);
    assert_eq!(pairs(&c), vec![(0, 0.5), (1, 0.5), (2, 0.5)]);
}

#[test]
fn keep_top_drops_masked() {
    let mut c = Candidates::from_logits(&[f32::NEG_INFINITY, 1.0, f32::NEG_INFINITY]);
    c.keep_top(2);
    assert_eq!(pairs(&c), vec![(1, 1.0)]);
}

#[test]
fn retain_keeps_order_and_probabilities() {
    let mut c = Candidates::from_logits(&[0.0, 1.0, 2.0, 3.0]);
    c.softmax();
    c.retain(|id, _| id % 2 == 1);
    assert_eq!(pairs(&c), vec![(1, 1.0), (3, 3.0)]);
    let p = c.softmax().to_vec();
    let want = 1.0 / (1.0 + 2f32.exp());
    assert!((p[0] - want).abs() < 1e-6, "{p:?}");
}

#[test]
fn keep_ranked_through_is_a_rank_prefix() {
    let mut c = Candidates::from_logits(&[1.0, 3.0, 2.0, 3.0, 2.0]);
    c.scale_logits(0.5);
    // rank order: (3,id1) (3,id3) (2,id2) (2,id4) (1,id0); through (2, id 2)
    c.keep_ranked_through(2.0, 2);
    assert_eq!(pairs(&c), vec![(1, 1.5), (2, 1.0), (3, 1.5)]);
}

#[test]
fn sort_desc_orders_ties_by_id() {
    let mut c = Candidates::from_sparse(vec![5, 2, 9], vec![1.0, 1.0, 2.0], 10).unwrap();
    c.sort_desc();
    assert_eq!(pairs(&c), vec![(9, 2.0), (2, 1.0), (5, 1.0)]);
}

#[test]
fn survivors_of_underflowed_probabilities_are_renormalized_from_their_logits() {
    // Beside a logit of 60 the others weigh e^-100 and e^-101 in f32: zero or subnormal.
    // After the top is cut (XTC's `remove_first`, or `retain`), their probabilities must come
    // from their own logits, not from the underflowed cache (which once normalized to NaN).
    for cut in 0..2 {
        let mut c = Candidates::from_logits(&[60.0, -40.0, -41.0]);
        c.sort_desc();
        c.softmax();
        if cut == 0 {
            c.remove_first(1);
        } else {
            c.retain(|id, _| id != 0);
        }
        let p = c.softmax().to_vec();
        let want = 1.0 / (1.0 + (-1f32).exp());
        assert!((p[0] - want).abs() < 1e-6, "{p:?}");
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6, "{p:?}");
    }
}

#[test]
fn the_cached_maximum_follows_every_change() {
    let logits = wavy(5000);
    let plain = |c: &Candidates| {
        c.raw_logits()
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max)
    };
    let mut c = Candidates::new();
    c.load_owned(logits.clone());
    assert_eq!(c.raw_max(), plain(&c));
    // Raising one logit above the maximum, then lowering it again.
    c.set_logit(17, 40.0);
    assert_eq!(c.raw_max(), 40.0);
    c.set_logit(17, -40.0);
    assert_eq!(c.raw_max(), plain(&c));
    // A pending scale leaves the raw maximum; applying it scales it.
    c.scale_logits(0.5);
    assert_eq!(c.raw_max(), plain(&c));
    assert_eq!(c.max_logit(), plain(&c) * 0.5);
    c.set_logit(3, 1.0);
    assert_eq!(c.raw_max(), plain(&c));
    // Dropping the maximum.
    let top = c
        .raw_logits()
        .iter()
        .position(|&x| x == c.raw_max())
        .unwrap() as u32;
    c.retain(|id, _| id != top);
    assert_eq!(c.raw_max(), plain(&c));
    c.truncate(10);
    assert_eq!(c.raw_max(), plain(&c));
    c.logits_mut()[0] = 99.0;
    assert_eq!(c.raw_max(), 99.0);
}

#[test]
fn positions_with_logit_at_least_match_the_scaled_logits() {
    let logits = wavy(3000);
    for scale in [1.0f32, 1.0 / 0.7, 3.0, 1e-30, 1e30, 0.1] {
        let mut c = Candidates::from_logits(&logits);
        c.scale_logits(scale);
        let scaled: Vec<f32> = c.iter().map(|(_, l)| l).collect();
        // Thresholds between, at and around the scaled values themselves.
        let mut ts: Vec<f32> = scaled.iter().step_by(97).copied().collect();
        ts.extend(
            ts.clone()
                .iter()
                .flat_map(|&t| [t.next_up(), t.next_down()]),
        );
        ts.extend([0.0, -0.0, f32::NEG_INFINITY, f32::MAX, -f32::MAX]);
        for t in ts {
            let want: Vec<u32> = (0..scaled.len() as u32)
                .filter(|&i| scaled[i as usize] >= t)
                .collect();
            assert_eq!(
                c.positions_with_logit_at_least(t),
                want,
                "scale {scale}, t {t}"
            );
        }
    }
}

#[test]
fn keep_positions_keeps_order_and_probabilities() {
    let mut c = Candidates::from_sparse(vec![9, 4, 7, 1], vec![0.0, 1.0, 2.0, 3.0], 10).unwrap();
    c.softmax();
    c.keep_positions(&[1, 3]);
    assert_eq!(pairs(&c), vec![(4, 1.0), (1, 3.0)]);
    let p = c.softmax().to_vec();
    let want = 1.0 / (1.0 + 2f32.exp());
    assert!((p[0] - want).abs() < 1e-6, "{p:?}");
    let mut dense = Candidates::from_logits(&[5.0, 6.0, 7.0]);
    dense.keep_positions(&[0, 2]);
    assert_eq!(pairs(&dense), vec![(0, 5.0), (2, 7.0)]);
    dense.keep_positions(&[]);
    assert!(dense.is_empty());
}

#[test]
#[should_panic(expected = "increasing")]
fn keep_positions_refuses_an_unordered_list() {
    Candidates::from_logits(&[1.0, 2.0, 3.0]).keep_positions(&[2, 1]);
}

#[test]
fn keep_top_is_exact_when_the_sample_holds_the_best() {
    // The running scan starts at the third best of a strided sample of 1024; with the best
    // logits placed exactly at sampled positions, fewer than k reach it, and the scan must
    // start over from the lowest.
    let n = 300_000;
    let mut logits = wavy(n);
    for j in 0..8 {
        logits[j * 97 * n / 1024] = 100.0 + j as f32;
    }
    for k in [5, 40, 100] {
        let mut c = Candidates::from_logits(&logits);
        c.keep_top(k);
        assert_eq!(pairs(&c), top_by_sorting(&logits, k), "k = {k}");
    }
}

#[test]
fn keep_top_is_exact_when_edits_leave_too_few_above_the_load_hint() {
    // load_owned leaves a start for the running scan that about 32 logits reach; lowering
    // the best 200 after loading leaves fewer than k above it, and the scan must start over.
    // Distinct logits (a permutation of 0..n), so the start is not one big tie.
    let n: u64 = 300_000;
    let mut logits: Vec<f32> = (0..n).map(|i| ((i * 7919) % n) as f32).collect();
    let mut c = Candidates::new();
    c.load_owned(logits.clone());
    for (id, _) in top_by_sorting(&logits, 200) {
        c.set_logit(id as usize, -10.0);
        logits[id as usize] = -10.0;
    }
    c.keep_top(40);
    assert_eq!(pairs(&c), top_by_sorting(&logits, 40));
    // Untouched, the hint serves as is.
    let logits: Vec<f32> = (0..n).map(|i| ((i * 7919) % n) as f32).collect();
    let mut c = Candidates::new();
    c.load_owned(logits.clone());
    c.keep_top(60);
    assert_eq!(pairs(&c), top_by_sorting(&logits, 60));
}

#[test]
fn has_finite_holds_through_loads_edits_and_cuts() {
    let n = 5000;
    let mut row = vec![f32::NEG_INFINITY; n];
    assert!(!Candidates::from_logits(&row).has_finite());
    row[n - 1] = 0.5;
    let mut c = Candidates::from_logits(&row);
    assert!(c.has_finite(), "only the last is finite");
    c.set_logit(n - 1, f32::NEG_INFINITY);
    assert!(!c.has_finite(), "its one finite logit masked");
    c.logits_mut()[1234] = -3.0;
    assert!(
        c.has_finite(),
        "an edit through logits_mut (no known maximum)"
    );
    c.logits_mut()[1234] = f32::NEG_INFINITY;
    assert!(!c.has_finite());
    let mut c = Candidates::from_logits(&row);
    c.keep_top(40);
    assert_eq!(c.len(), 1);
    assert!(c.has_finite(), "sorted after keep_top");
    for len in [1, 255, 256, 257, 1000] {
        for at in [0, len / 2, len - 1] {
            let mut r = vec![f32::NEG_INFINITY; len];
            let mut c = Candidates::from_logits(&r);
            c.logits_mut();
            assert!(!c.has_finite(), "{len} masked");
            r[at] = f32::MIN;
            let mut c = Candidates::from_logits(&r);
            c.logits_mut();
            assert!(c.has_finite(), "{len}, finite at {at}");
        }
    }
}

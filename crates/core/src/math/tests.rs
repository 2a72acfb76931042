//! The math kernels against `f64` and `libm`, exhaustively where the range allows.

use super::exp::exp_up_to_high;
use super::weights::fast_weight;
use super::*;

#[test]
fn exp_matches_libm_closely() {
    let mut worst = 0.0f64;
    let mut x = -87.0f32;
    while x < 88.0 {
        let want = (x as f64).exp();
        let got = exp(x) as f64;
        worst = worst.max(((got - want) / want).abs());
        x += 0.0137;
    }
    assert!(worst < 5e-7, "worst relative error {worst}");
    assert_eq!(exp(0.0), 1.0);
    assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp(-100.0), 0.0);
    assert_eq!(exp(100.0), f32::INFINITY);
}

#[test]
fn the_finite_check_accepts_neg_inf_and_refuses_nan_and_pos_inf() {
    let mut xs = alloc::vec![0.5f32; 100];
    xs[3] = f32::NEG_INFINITY;
    assert!(none_nan_or_pos_inf(&xs));
    for (at, bad) in [
        (40, f32::NAN),
        (99, f32::NAN),
        (7, f32::INFINITY),
        (98, f32::INFINITY),
    ] {
        let mut ys = xs.clone();
        ys[at] = bad;
        assert!(!none_nan_or_pos_inf(&ys), "{bad} at {at}");
    }
    assert!(none_nan_or_pos_inf(&[]));
    // Finite values whose sum overflows (a false alarm of the fast check) are clean.
    let big = alloc::vec![f32::MAX; 100];
    assert_eq!(max_if_clean(&big), Some((f32::MAX, f32::MAX)));
    let mut ys = big.clone();
    ys[50] = f32::NEG_INFINITY;
    assert_eq!(max_if_clean(&ys).map(|m| m.0), Some(f32::MAX));
    assert_eq!(max_if_clean(&xs).map(|m| m.0), Some(0.5));
    assert_eq!(
        max_if_clean(&[f32::NEG_INFINITY; 40]),
        Some((f32::NEG_INFINITY, f32::NEG_INFINITY))
    );
    // At least 32 values reach the second value: 32 lanes, each with a maximum of its own.
    let ws: Vec<f32> = (0..1000).map(|i| ((i * 7919) % 1000) as f32).collect();
    let (max, floor) = max_if_clean(&ws).unwrap();
    assert_eq!(max, 999.0);
    assert!(ws.iter().filter(|&&w| w >= floor).count() >= 32);
    assert_eq!(max_if_clean(&[1.0; 31]), Some((1.0, f32::NEG_INFINITY)));
}

#[test]
fn positions_at_least_finds_every_hit_in_order() {
    let xs: alloc::vec::Vec<f32> = (0..1003).map(|i| ((i * 37) % 101) as f32).collect();
    let mut got = alloc::vec::Vec::new();
    positions_at_least(&xs, 97.0, 5, &mut got);
    let want: alloc::vec::Vec<u32> = (0..xs.len())
        .filter(|&i| xs[i] >= 97.0)
        .map(|i| i as u32 + 5)
        .collect();
    assert_eq!(got, want);
    got.clear();
    positions_at_least(&[f32::NEG_INFINITY, 0.0], f32::NEG_INFINITY, 0, &mut got);
    assert_eq!(got, [0, 1]);
}

#[test]
fn max_ignores_nan_and_handles_tails() {
    assert_eq!(max(&[]), f32::NEG_INFINITY);
    assert_eq!(max(&[1.0, f32::NAN, 3.0]), 3.0);
    let xs: alloc::vec::Vec<f32> = (0..37).map(|i| (i * 7 % 37) as f32).collect();
    assert_eq!(max(&xs), 36.0);
}

#[test]
fn exp_sum_is_the_sum_of_outputs() {
    let xs: alloc::vec::Vec<f32> = (0..2500).map(|i| (i % 17) as f32 * 0.1).collect();
    let mut out = alloc::vec![0.0; xs.len()];
    let total = exp_shifted_into(&xs, 1.6, 1.0, &mut out);
    let direct: f64 = out.iter().map(|&e| e as f64).sum();
    assert!((total - direct).abs() / direct < 1e-6);
    assert!((out[0] as f64 - (-1.6f64).exp()).abs() < 1e-7);
}

/// Values from a fixed xorshift stream in `[-8, 8)`, with some NaN, `±inf` and repeats.
fn assorted(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            match state % 97 {
                0 => f32::NAN,
                1 => f32::NEG_INFINITY,
                2 => f32::INFINITY,
                3 => 2.0, // repeats, for ties with a threshold
                _ => ((state >> 40) as f32 / (1u64 << 24) as f32) * 16.0 - 8.0 + i as f32 * 0.0,
            }
        })
        .collect()
}

#[test]
fn positions_at_least_agrees_with_a_plain_filter_at_every_density_and_length() {
    for n in [0, 1, 7, 31, 32, 33, 64, 65, 100, 1000, 4099] {
        let xs = assorted(n, n as u64 + 3);
        for t in [
            -9.0,
            -4.0,
            0.0,
            2.0,
            6.0,
            7.9,
            f32::NEG_INFINITY,
            f32::INFINITY,
        ] {
            let mut got = alloc::vec![7u32]; // appended to, not replaced
            positions_at_least(&xs, t, 10, &mut got);
            let want: Vec<u32> = core::iter::once(7)
                .chain((0..n).filter(|&i| xs[i] >= t).map(|i| i as u32 + 10))
                .collect();
            assert_eq!(got, want, "n = {n}, t = {t}");
        }
    }
}

#[test]
fn scan_at_least_calls_back_per_block_with_the_running_threshold() {
    // The documented calls: per block of SCAN_BLOCK, the positions at or above the
    // threshold as it stands; here each call raises it to the largest value seen.
    let reference = |xs: &[f32]| {
        let mut t = f32::MIN;
        let mut calls = Vec::new();
        for (b, block) in xs.chunks(SCAN_BLOCK).enumerate() {
            let hits: Vec<u32> = (0..block.len())
                .filter(|&j| block[j] >= t)
                .map(|j| (b * SCAN_BLOCK + j) as u32)
                .collect();
            if !hits.is_empty() {
                t = hits.iter().map(|&i| xs[i as usize]).fold(t, f32::max);
                calls.push(hits);
            }
        }
        calls
    };
    for n in [5, 32, 33, 1000, 4099] {
        let xs = assorted(n, 11 * n as u64);
        let mut calls = Vec::new();
        scan_at_least(&xs, f32::MIN, |hits| {
            calls.push(hits.to_vec());
            let t = calls.iter().flatten().map(|&i| xs[i as usize]);
            t.fold(f32::MIN, f32::max)
        });
        assert_eq!(calls, reference(&xs), "n = {n}");
    }
}

#[test]
fn scan_at_least_checked_makes_the_same_calls_and_checks_the_row() {
    // The same calls as `scan_at_least` (the chunked kernel packs a block flagged under a
    // threshold raised since under the new one), and the check of `none_nan_or_pos_inf`.
    let calls_of = |xs: &[f32], checked: bool| {
        let mut calls: Vec<Vec<u32>> = Vec::new();
        let mut on_hits = |hits: &[u32]| {
            calls.push(hits.to_vec());
            let seen = calls.iter().flatten().map(|&i| xs[i as usize]);
            seen.filter(|x| *x < f32::INFINITY).fold(f32::MIN, f32::max)
        };
        let clean = if checked {
            scan_at_least_checked(xs, f32::MIN, &mut on_hits)
        } else {
            scan_at_least(xs, f32::MIN, &mut on_hits);
            true
        };
        (calls, clean)
    };
    for n in [0, 5, 64, 65, 1000, 1024, 1089, 4099] {
        // `assorted` without its NaN and `+inf`.
        let clean: Vec<f32> = assorted(n, 3 * n as u64 + 1)
            .into_iter()
            .map(|x| if x < f32::INFINITY { x } else { 1.5 })
            .collect();
        let mut rows = alloc::vec![(clean.clone(), true)];
        for at in [0, n / 2, n.saturating_sub(1)]
            .into_iter()
            .filter(|_| n > 0)
        {
            for bad in [f32::NAN, -f32::NAN, f32::INFINITY] {
                let mut row = clean.clone();
                row[at] = bad;
                rows.push((row, false));
            }
            let mut row = clean.clone();
            row[at] = f32::NEG_INFINITY;
            rows.push((row, true));
        }
        // Finite values whose sum overflows: a false alarm the exact read clears.
        rows.push((alloc::vec![f32::MAX; n], true));
        rows.push((alloc::vec![f32::NEG_INFINITY; n], true));
        for (row, want_clean) in rows {
            let (calls, clean) = calls_of(&row, true);
            assert_eq!(clean, want_clean, "n = {n}");
            assert_eq!(clean, none_nan_or_pos_inf(&row), "n = {n}");
            if want_clean {
                assert_eq!(calls, calls_of(&row, false).0, "n = {n}");
            }
        }
    }
}

#[test]
fn a_nan_hides_no_hit() {
    // A NaN in each group of a block, the only hit in another group of it.
    for nan_at in 0..SCAN_BLOCK {
        for hit_at in (0..SCAN_BLOCK).filter(|&h| h != nan_at) {
            let mut xs = alloc::vec![0.0f32; 2 * SCAN_BLOCK];
            xs[nan_at] = f32::NAN;
            xs[hit_at] = 1.0;
            let mut got = Vec::new();
            positions_at_least(&xs, 0.5, 0, &mut got);
            assert_eq!(got, [hit_at as u32], "NaN at {nan_at}");
        }
    }
}

/// `(shift, scale, values)`: values from the maximum down to far below it (`-inf` too),
/// at several scales.
fn depths() -> Vec<(f32, f32, Vec<f32>)> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    [1.0f32, 1.0 / 0.7, 0.3, 3.0, 1e-3, 50.0, 1e-30]
        .into_iter()
        .map(|scale| {
            let shift = 3.0 + 20.0 * next();
            let xs = (0..20_000)
                .map(|i| match i % 1000 {
                    0 => f32::NEG_INFINITY,
                    1 => shift,
                    _ => shift - next() * next() * 100.0 / scale.clamp(0.05, 1.0),
                })
                .collect();
            (shift, scale, xs)
        })
        .collect()
}

#[test]
fn fast_weights_are_within_their_documented_bound() {
    // |ln(v/w)| ≤ BASE + PER_UNIT·|e| for |e| ≤ 86, both below 1.01·e^-C deeper than any
    // C ≤ 80; exactly 1 at the maximum; 2^-126 (the clamp) for -inf, whose weight is 0.
    let mut worst = 0.0f64;
    for (shift, scale, xs) in depths() {
        let mut exact = alloc::vec![0.0; xs.len()];
        exp_shifted_into(&xs, shift, scale, &mut exact);
        let mut fast = alloc::vec![0.0; xs.len()];
        fast_weights_into(&xs, shift, scale, &mut fast);
        for ((&x, &w), &v) in xs.iter().zip(&exact).zip(&fast) {
            let e = ((x - shift) * scale) as f64;
            if x == shift {
                assert_eq!((v, w), (1.0, 1.0));
            } else if x == f32::NEG_INFINITY {
                assert_eq!((v, w), (f32::from_bits(1 << 23), 0.0));
            } else if e.abs() <= 86.0 {
                let bound = FAST_WEIGHT_REL_BASE + FAST_WEIGHT_REL_PER_UNIT * e.abs();
                let off = (v as f64 / w as f64).ln().abs();
                assert!(off <= bound, "x {x}, scale {scale}: {v} vs {w}");
                worst = worst.max(off / bound);
            } else {
                let below = 1.01 * (-e.abs().min(FAST_WEIGHT_MAX_DEPTH)).exp();
                assert!((v as f64) < below && (w as f64) < below, "x {x}: {v}, {w}");
            }
        }
    }
    assert!(
        worst > 0.05,
        "the bound is far too loose to be tested: {worst}"
    );
}

#[test]
fn the_fast_sum_adds_the_fast_weights_below_the_floor_in_its_documented_order() {
    for (shift, scale, xs) in depths() {
        for floor in [
            f32::INFINITY,
            shift,
            shift - 5.0 / scale,
            shift - 40.0 / scale,
        ] {
            for len in [0, 1, 63, 64, 65, 1000, xs.len()] {
                let xs = &xs[..len];
                let mut v = alloc::vec![0.0f32; len];
                fast_weights_into(xs, shift, scale, &mut v);
                for (w, &x) in v.iter_mut().zip(xs) {
                    if x >= floor {
                        *w = 0.0;
                    }
                }
                let mut lanes = [0.0f64; LANES];
                let runs = len / 64 * 64;
                for run in v[..runs].chunks_exact(64) {
                    let mut part = [0.0f32; LANES];
                    for (k, &w) in run.iter().enumerate() {
                        part[k % LANES] += w;
                    }
                    for i in 0..LANES {
                        lanes[i] += part[i] as f64;
                    }
                }
                let mut want = 0.0f64;
                for l in lanes {
                    want += l;
                }
                for &w in &v[runs..] {
                    want += w as f64;
                }
                let got = fast_weight_sum_below(xs, shift, scale, floor);
                assert_eq!(got.to_bits(), want.to_bits(), "len {len}, floor {floor}");
                let exact: f64 = v.iter().map(|&w| w as f64).sum();
                assert!((got - exact).abs() <= fast_weight_sum_rounding(got, len));
            }
        }
    }
}

#[test]
fn f64_sums_add_in_their_documented_order() {
    let xs = assorted(1003, 9);
    let ws: Vec<f32> = xs.iter().map(|&x| exp(sanitize(x) - 8.0)).collect();
    let mut lanes = [0.0f64; LANES];
    for (k, &w) in ws[..1000].iter().enumerate() {
        lanes[k % LANES] += w as f64;
    }
    let want = lanes.iter().sum::<f64>() + ws[1000..].iter().map(|&w| w as f64).sum::<f64>();
    assert_eq!(sum_f64(&ws).to_bits(), want.to_bits());
    for floor in [f32::NEG_INFINITY, -3.0, 0.0, 2.0, 9.0] {
        let direct: f64 = (0..xs.len())
            .filter(|&i| xs[i] < floor)
            .map(|i| ws[i] as f64)
            .sum();
        let got = sum_f64_below(&xs, &ws, floor);
        assert!((got - direct).abs() <= 1e-15 * direct, "floor {floor}");
    }
}

/// The worst relative error of `f`'s value at every `f32` in `[lo, 0]` against `want`.
fn worst_over(lo: f32, f: impl Fn(f32) -> f32, want: impl Fn(f64) -> f64) -> f64 {
    let mut worst = 0.0f64;
    let mut check = |x: f32| {
        let (got, want) = (f(x) as f64, want(x as f64));
        worst = worst.max(((got - want) / want).abs());
    };
    let mut bits = 0x8000_0000u32; // -0.0, then down
    while f32::from_bits(bits) >= lo {
        check(f32::from_bits(bits));
        bits += 1;
    }
    worst
}

/// The two measured constants in [`FAST_WEIGHT_REL_BASE`], over every `f32` input (about
/// 2·10^9 values; a few minutes in release:
/// `cargo test --release -p sieve-core exhaustive -- --ignored`).
#[test]
#[ignore]
fn exhaustive_error_bounds() {
    let exp_worst = worst_over(-87.3, exp_up_to_high, f64::exp);
    let fast_worst = worst_over(
        -124.5,
        |t| fast_weight(t, 0.0, 1.0),
        |t| (t as f32 as f64).exp2(),
    );
    assert!(exp_worst <= 8.14e-8, "exp: {exp_worst}");
    assert!(fast_worst <= 2.913e-6, "fast 2^t: {fast_worst}");
    assert!((exp_worst + fast_worst) * (1.0 + 1e-6) <= FAST_WEIGHT_REL_BASE);
}

#[test]
fn the_vector_form_of_the_weights_equals_the_slice_form() {
    let xs = assorted(3000, 5);
    let clean: Vec<f32> = xs.iter().map(|&x| sanitize(x)).collect();
    let m = max(&clean);
    let mut into = alloc::vec![0.0; clean.len()];
    let a = exp_shifted_into(&clean, m, 0.7, &mut into);
    let mut to_vec = alloc::vec![9.0; 5]; // replaced, whatever it held
    let b = exp_shifted_to_vec(&clean, m, 0.7, &mut to_vec);
    assert_eq!(a.to_bits(), b.to_bits());
    assert_eq!(into, to_vec);
}

#[test]
fn fill_writes_every_value_and_nothing_past_the_slice() {
    for n in [0, 1, 7, 4095, 4096, 4097, 20_000] {
        let mut buf = alloc::vec![1.5f32; n + 2];
        fill(&mut buf[1..=n], f32::NEG_INFINITY);
        assert_eq!(buf[0], 1.5, "n = {n}");
        assert_eq!(buf[n + 1], 1.5, "n = {n}");
        assert!(
            buf[1..=n].iter().all(|&x| x == f32::NEG_INFINITY),
            "n = {n}"
        );
        fill(&mut buf[1..=n], -0.0);
        assert!(
            buf[1..=n]
                .iter()
                .all(|&x| x.to_bits() == (-0.0f32).to_bits()),
            "n = {n}"
        );
    }
}

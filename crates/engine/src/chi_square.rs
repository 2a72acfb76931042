//! Pearson's chi-square tests on categorical outcomes: [`homogeneity`] (do two samples come
//! from one distribution?) and [`goodness_of_fit`] (does a sample come from known
//! probabilities?). What the speculative-decoding tests use to compare the tokens of plain
//! and speculative sampling over many seeds.
//!
//! # Formulas
//! For `n` outcomes counted into bins `k` with probabilities `π_k`, `O_k` observed and
//! `E_k = n·π_k` expected: `χ² = Σ_k (O_k − E_k)² / E_k`, `df = bins − 1`.
//!
//! For two samples of sizes `n_a` and `n_b` (`N = n_a + n_b`) counted into bins `k`, with
//! `O_sk` the count of sample `s` in bin `k`, the expected count under homogeneity is
//! `E_sk = n_s · (O_ak + O_bk) / N` and
//!
//! ```text
//! χ² = Σ_k Σ_s (O_sk − E_sk)² / E_sk,   df = bins − 1.
//! ```
//!
//! The p-value is the chi-square survival function `Q(df/2, χ²/2)`, the regularized upper
//! incomplete gamma function: a power series for `x < a + 1`, a continued fraction (modified
//! Lentz) otherwise, with `ln Γ(a)` exact for the half-integers `a = df/2`.
//!
//! # Pooling
//! The chi-square approximation needs expected counts that are not too small (5 is the usual
//! rule): bins whose smaller expected count is below `min_expected` are pooled into one bin,
//! which is merged into the smallest remaining bin if it is still too small.

use std::collections::BTreeMap;

/// The result of a chi-square test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChiSquare {
    /// Pearson's `χ²`.
    pub statistic: f64,
    /// Degrees of freedom: bins after pooling, minus one.
    pub df: usize,
    /// `P(χ²_df ≥ statistic)`: small values say the samples differ.
    pub p_value: f64,
}

/// Tests whether the counts `a` and `b` (outcome → count) come from one distribution,
/// pooling bins whose expected count is below `min_expected` (see the [module](self) docs).
/// With fewer than two bins left (or an empty sample) there is nothing to test: `χ² = 0`,
/// `df = 0`, p-value 1.
pub fn homogeneity<K: Ord + Clone>(
    a: &BTreeMap<K, u64>,
    b: &BTreeMap<K, u64>,
    min_expected: f64,
) -> ChiSquare {
    let (na, nb) = (
        a.values().sum::<u64>() as f64,
        b.values().sum::<u64>() as f64,
    );
    let nothing = ChiSquare {
        statistic: 0.0,
        df: 0,
        p_value: 1.0,
    };
    if na == 0.0 || nb == 0.0 {
        return nothing;
    }
    let mut keys: Vec<&K> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let count = |m: &BTreeMap<K, u64>, k: &K| m.get(k).copied().unwrap_or(0) as f64;
    // Expected counts are proportional to the bin's total, so the smaller one is
    // `min(na, nb) · total / N`.
    let small = na.min(nb) / (na + nb);
    let mut kept: Vec<(f64, f64)> = Vec::new();
    let mut pool = (0.0, 0.0);
    for k in keys {
        let (oa, ob) = (count(a, k), count(b, k));
        if small * (oa + ob) < min_expected {
            pool = (pool.0 + oa, pool.1 + ob);
        } else {
            kept.push((oa, ob));
        }
    }
    if pool.0 + pool.1 > 0.0 {
        if small * (pool.0 + pool.1) < min_expected && !kept.is_empty() {
            let smallest = (0..kept.len())
                .min_by(|&i, &j| (kept[i].0 + kept[i].1).total_cmp(&(kept[j].0 + kept[j].1)))
                .unwrap_or(0);
            kept[smallest].0 += pool.0;
            kept[smallest].1 += pool.1;
        } else {
            kept.push(pool);
        }
    }
    if kept.len() < 2 {
        return nothing;
    }
    let n = na + nb;
    let statistic = kept
        .iter()
        .map(|&(oa, ob)| {
            let (ea, eb) = (na * (oa + ob) / n, nb * (oa + ob) / n);
            (oa - ea).powi(2) / ea + (ob - eb).powi(2) / eb
        })
        .sum();
    let df = kept.len() - 1;
    ChiSquare {
        statistic,
        df,
        p_value: survival(df, statistic),
    }
}

/// Tests whether the counts `observed` (outcome → count) were drawn from `probabilities`
/// (outcome → probability, summing to 1), pooling bins whose expected count is below
/// `min_expected` as [`homogeneity`] does. An outcome observed but given probability 0 (or
/// none) makes `χ²` infinite and the p-value 0. With fewer than two bins left there is
/// nothing to test: `χ² = 0`, `df = 0`, p-value 1.
pub fn goodness_of_fit<K: Ord>(
    observed: &BTreeMap<K, u64>,
    probabilities: &BTreeMap<K, f64>,
    min_expected: f64,
) -> ChiSquare {
    let n = observed.values().sum::<u64>() as f64;
    if observed
        .iter()
        .any(|(k, &o)| o > 0 && probabilities.get(k).is_none_or(|&p| p <= 0.0))
    {
        return ChiSquare {
            statistic: f64::INFINITY,
            df: probabilities.len().saturating_sub(1).max(1),
            p_value: 0.0,
        };
    }
    let mut kept: Vec<(f64, f64)> = Vec::new();
    let mut pool = (0.0, 0.0);
    for (k, &p) in probabilities {
        let o = observed.get(k).copied().unwrap_or(0) as f64;
        if n * p < min_expected {
            pool = (pool.0 + o, pool.1 + n * p);
        } else {
            kept.push((o, n * p));
        }
    }
    if pool.1 > 0.0 {
        if pool.1 < min_expected && !kept.is_empty() {
            let smallest = (0..kept.len())
                .min_by(|&i, &j| kept[i].1.total_cmp(&kept[j].1))
                .unwrap_or(0);
            kept[smallest].0 += pool.0;
            kept[smallest].1 += pool.1;
        } else {
            kept.push(pool);
        }
    }
    if kept.len() < 2 || n == 0.0 {
        return ChiSquare {
            statistic: 0.0,
            df: 0,
            p_value: 1.0,
        };
    }
    let statistic = kept.iter().map(|&(o, e)| (o - e).powi(2) / e).sum();
    let df = kept.len() - 1;
    ChiSquare {
        statistic,
        df,
        p_value: survival(df, statistic),
    }
}

/// The chi-square survival function `P(χ²_df ≥ x) = Q(df/2, x/2)`; 1 for `x ≤ 0`.
///
/// # Panics
/// If `df` is 0.
pub fn survival(df: usize, x: f64) -> f64 {
    assert!(
        df > 0,
        "a chi-square distribution needs a degree of freedom"
    );
    if x <= 0.0 {
        return 1.0;
    }
    upper_gamma(df as f64 / 2.0, x / 2.0, ln_gamma_half(df))
}

/// `ln Γ(k/2)`, exactly: `Γ(1) = 1`, `Γ(1/2) = √π`, `Γ(a + 1) = a·Γ(a)`.
fn ln_gamma_half(k: usize) -> f64 {
    let (mut a, mut acc) = if k.is_multiple_of(2) {
        (1.0, 0.0)
    } else {
        (0.5, 0.5 * std::f64::consts::PI.ln())
    };
    while a < k as f64 / 2.0 {
        acc += a.ln();
        a += 1.0;
    }
    acc
}

/// The regularized upper incomplete gamma function `Q(a, x) = Γ(a, x) / Γ(a)` for `x > 0`,
/// given `ln Γ(a)`.
fn upper_gamma(a: f64, x: f64, ln_gamma_a: f64) -> f64 {
    // The common factor e^(−x) x^a / Γ(a).
    let front = (a * x.ln() - x - ln_gamma_a).exp();
    if x < a + 1.0 {
        // P(a, x) = e^(−x) x^a / Γ(a) · Σ_{n≥0} x^n / (a (a+1) … (a+n)).
        let mut term = 1.0 / a;
        let mut sum = term;
        let mut d = a;
        for _ in 0..10_000 {
            d += 1.0;
            term *= x / d;
            sum += term;
            if term < sum * 1e-17 {
                break;
            }
        }
        (1.0 - front * sum).max(0.0)
    } else {
        // Q(a, x) = e^(−x) x^a / Γ(a) · 1 / (x + 1 − a − 1·(1 − a) / (x + 3 − a − 2·(2 − a) /
        // (x + 5 − a − …))), evaluated with the modified Lentz method.
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut f = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (front * f).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} vs {b}");
    }

    #[test]
    fn survival_against_closed_forms_and_tables() {
        // df = 2: Q = e^(−x/2) exactly.
        for x in [0.1, 1.0, 3.0, 10.0, 40.0] {
            close(survival(2, x), (-x / 2.0).exp(), 1e-13);
        }
        // df = 4: Q = e^(−x/2) (1 + x/2).
        for x in [0.5, 2.0, 7.0, 30.0] {
            close(survival(4, x), (-x / 2.0).exp() * (1.0 + x / 2.0), 1e-13);
        }
        // Textbook critical values (5 % and 0.1 %).
        close(survival(1, 3.841_458_820_694_124), 0.05, 1e-9);
        close(survival(10, 18.307_038_053_275_146), 0.05, 1e-9);
        close(survival(30, 59.703_064_304_429_93), 0.001, 1e-12);
        close(survival(63, 103.442_377_319_873_14), 0.001, 1e-12);
        // Values of mpmath's `gammainc(df/2, x/2, inf, regularized=True)`, both branches.
        close(survival(3, 0.2), 0.977_589_297_761_649_4, 1e-13);
        close(survival(7, 3.3), 0.855_933_047_251_493_1, 1e-13);
        close(survival(25, 40.1), 0.028_481_915_206_758_71, 1e-13);
        close(survival(100, 150.0), 0.000_903_932_042_354_009_1, 1e-15);
        assert_eq!(survival(3, 0.0), 1.0);
    }

    #[test]
    fn ln_gamma_at_half_integers() {
        close(ln_gamma_half(1), std::f64::consts::PI.sqrt().ln(), 1e-15);
        close(ln_gamma_half(2), 0.0, 0.0);
        close(ln_gamma_half(10), 24f64.ln(), 1e-14); // Γ(5) = 4!
        close(
            ln_gamma_half(5),
            (0.75 * std::f64::consts::PI.sqrt()).ln(),
            1e-14,
        ); // Γ(5/2)
    }

    #[test]
    fn identical_and_different_samples() {
        let a: BTreeMap<u32, u64> = [(0, 100), (1, 200), (2, 300)].into();
        let h = homogeneity(&a, &a, 5.0);
        assert_eq!((h.statistic, h.df, h.p_value), (0.0, 2, 1.0));
        // By hand: totals 100/100 per bin over n_a = n_b = 100:
        // a = [30, 70], b = [70, 30], E = 50 each: χ² = 4 · 400/50 = 32, df = 1.
        let a: BTreeMap<u32, u64> = [(0, 30), (1, 70)].into();
        let b: BTreeMap<u32, u64> = [(0, 70), (1, 30)].into();
        let h = homogeneity(&a, &b, 5.0);
        close(h.statistic, 32.0, 1e-12);
        assert_eq!(h.df, 1);
        assert!(h.p_value < 1e-7);
    }

    #[test]
    fn goodness_of_fit_by_hand() {
        // 100 draws, probabilities [0.5, 0.3, 0.2], observed [40, 35, 25]:
        // χ² = 100/50 + 25/30 + 25/20 = 2 + 0.8333… + 1.25, df = 2, p = e^(−χ²/2).
        let o: BTreeMap<u32, u64> = [(0, 40), (1, 35), (2, 25)].into();
        let p: BTreeMap<u32, f64> = [(0, 0.5), (1, 0.3), (2, 0.2)].into();
        let h = goodness_of_fit(&o, &p, 5.0);
        close(h.statistic, 2.0 + 25.0 / 30.0 + 1.25, 1e-12);
        assert_eq!(h.df, 2);
        close(h.p_value, (-h.statistic / 2.0).exp(), 1e-12);
        // Id 3 (expected 1) and id 4 (expected 2) pool into 3, still small: they join the
        // smallest kept bin, id 2.
        let o: BTreeMap<u32, u64> = [(0, 40), (1, 30), (2, 20), (3, 10)].into();
        let p: BTreeMap<u32, f64> = [(0, 0.5), (1, 0.3), (2, 0.17), (3, 0.01), (4, 0.02)].into();
        let h = goodness_of_fit(&o, &p, 5.0);
        assert_eq!(h.df, 2);
        close(h.statistic, 100.0 / 50.0 + 0.0 + 100.0 / 20.0, 1e-12);
        // An outcome of probability 0 fails outright.
        let o: BTreeMap<u32, u64> = [(0, 1), (9, 1)].into();
        let h = goodness_of_fit(&o, &p, 5.0);
        assert_eq!((h.statistic, h.p_value), (f64::INFINITY, 0.0));
    }

    #[test]
    fn small_bins_are_pooled() {
        // Bins 2 and 3 have expected counts 1 and 1.5: pooled into one bin (2, 3) vs (1, 4)…
        // whose expected count 2.5 is still small, so it joins the smallest kept bin (1).
        let a: BTreeMap<u32, u64> = [(0, 50), (1, 20), (2, 1), (3, 2)].into();
        let b: BTreeMap<u32, u64> = [(0, 50), (1, 20), (2, 1), (3, 1)].into();
        let h = homogeneity(&a, &b, 5.0);
        assert_eq!(h.df, 1);
        // Bins [50, 23] vs [50, 22]: n_a = 73, n_b = 72.
        let (na, nb, n) = (73.0, 72.0, 145.0);
        let want: f64 = [(50.0, 50.0), (23.0, 22.0)]
            .iter()
            .map(|&(oa, ob): &(f64, f64)| {
                let (ea, eb) = (na * (oa + ob) / n, nb * (oa + ob) / n);
                (oa - ea).powi(2) / ea + (ob - eb).powi(2) / eb
            })
            .sum();
        close(h.statistic, want, 1e-12);
        // A single bin tests nothing.
        let one: BTreeMap<u32, u64> = [(0, 10)].into();
        assert_eq!(homogeneity(&one, &one, 5.0).df, 0);
    }
}

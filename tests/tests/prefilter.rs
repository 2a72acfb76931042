//! `Pipeline::load` against the full load: loading only the candidates a `top_k` can keep
//! (`sieve_core::prefilter`) must change nothing a pipeline does, bit for bit.
//!
//! Each case builds one pipeline twice from the same text and seed: the first loads every
//! logit of a row (`Candidates::load_checked_from`), the second lets the pipeline choose
//! (`Pipeline::load`). Over a few steps of a growing history, both must report the same bad
//! logit, return the same token or the same error, leave the same candidates (ids, logit bits,
//! order) and, through `Pipeline::transform`, the same distribution (probability bits).
//!
//! The pipelines are a prefix of the stages that tell what they do (`penalty` with every kind
//! of parameter, `temp` fixed, dynamic, zero and extreme, `logit_bias` up and down and `-inf`,
//! `no_repeat_ngram`), a `top_k` (sometimes none, sometimes 0), and a tail of any built-in
//! stages and selectors. Histories and biases favour the row's best tokens, so that the
//! penalties and biases move tokens across the `top_k` boundary; rows are sometimes rounded
//! (ties decided by id), mostly masked (fewer finite logits than the prefilter asks for), or
//! hold NaN or `+inf`.

use proptest::prelude::*;
use sieve_core::{Candidates, Context, Error, Pipeline};
use sieve_tests::run;
use sieve_tests::splitmix::SplitMix64;

/// `cases` proptest cases, or `PROPTEST_CASES` when set.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig::with_cases(cases)
}

/// A row of `n` logits made from `seed`: uniform in `[-20, 20]`, rounded to halves when
/// `ties`, masked but for about 1 in 64 when `sparse`, with a NaN or `+inf` when `dirty`.
fn row(n: usize, seed: u64, ties: bool, sparse: bool, dirty: bool) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    let mut row: Vec<f32> = (0..n)
        .map(|_| {
            let x = (rng.below(1 << 24) as f32 / (1u32 << 24) as f32) * 40.0 - 20.0;
            if ties {
                (x * 2.0).round() / 2.0 + 0.0
            } else {
                x
            }
        })
        .collect();
    if sparse {
        for x in &mut row {
            if rng.below(64) != 0 {
                *x = f32::NEG_INFINITY;
            }
        }
    }
    if dirty {
        let at = rng.below(n as u64) as usize;
        row[at] = if rng.below(2) == 0 {
            f32::NAN
        } else {
            f32::INFINITY
        };
    }
    row
}

/// The row's tokens by rank (largest logit first, ties by id; NaN last).
fn ranked(row: &[f32]) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..row.len() as u32).collect();
    ids.sort_by(|&a, &b| {
        let (x, y) = (row[a as usize], row[b as usize]);
        y.partial_cmp(&x)
            .unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()))
            .then(a.cmp(&b))
    });
    ids
}

/// A token chosen by `pick`: mostly among the row's 64 best, sometimes anywhere.
fn token(pick: u64, ranked: &[u32]) -> u32 {
    let near_top = !pick.is_multiple_of(4);
    let span = if near_top {
        ranked.len().min(64)
    } else {
        ranked.len()
    };
    ranked[(pick / 4) as usize % span]
}

/// The stages before the `top_k`, in the DSL.
fn prefix_stage() -> impl Strategy<Value = Prefix> {
    prop_oneof![
        (
            prop::sample::select(vec![0.5f64, 1.0, 1.1, 2.0]),
            prop::sample::select(vec![0.0f64, 0.5, -0.5]),
            prop::sample::select(vec![0.0f64, 1.0, -1.0]),
            prop::sample::select(vec![0usize, 1, 8, 64]),
        )
            .prop_map(|(r, f, p, n)| Prefix::Penalty(r, f, p, n)),
        prop::sample::select(vec![
            "temp(0.7)",
            "temp(1)",
            "temp(1.5)",
            "temp(0)",
            "temp(1e-30)",
            "temp(1e-39)",
            "temp(1e30)",
            "temp(3e38)",
            "temp(1.0, range=0.5)",
        ])
        .prop_map(|t| Prefix::Text(t.to_string())),
        (
            prop::collection::vec(any::<u64>(), 1..4),
            prop::sample::select(vec!["2.5", "-2.5", "-inf", "40", "-40"]),
        )
            .prop_map(|(picks, bias)| Prefix::Bias(picks, bias.to_string())),
        prop::sample::select(vec![2usize, 3]).prop_map(Prefix::NoRepeat),
    ]
}

/// One stage before the `top_k`.
#[derive(Debug, Clone)]
enum Prefix {
    /// `penalty(repeat, frequency, presence, last_n)`.
    Penalty(f64, f64, f64, usize),
    /// A stage written out.
    Text(String),
    /// `logit_bias` on the tokens the picks choose, all with this bias.
    Bias(Vec<u64>, String),
    /// `no_repeat_ngram(n)`.
    NoRepeat(usize),
}

impl Prefix {
    fn text(&self, ranked: &[u32]) -> String {
        match self {
            Prefix::Penalty(r, f, p, n) => {
                format!("penalty({r:?}, frequency={f:?}, presence={p:?}, last_n={n})")
            }
            Prefix::Text(t) => t.clone(),
            Prefix::Bias(picks, bias) => {
                let entries: Vec<String> = picks
                    .iter()
                    .map(|&p| format!("{}: {bias}", token(p, ranked)))
                    .collect();
                format!("logit_bias({{{}}})", entries.join(", "))
            }
            Prefix::NoRepeat(n) => format!("no_repeat_ngram({n})"),
        }
    }
}

/// The stages after the `top_k` (selectors included): any built-in.
fn tail() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(
        prop::sample::select(vec![
            "top_p(0.9)",
            "min_p(0.05)",
            "typical(0.9)",
            "temp(0.7)",
            "top_k(3)",
            "xtc(threshold=0.1, probability=0.5, seed=3)",
            "penalty(1.3)",
            "epsilon(0.01)",
        ]),
        0..3,
    )
}

/// Everything a stage or the caller can see of the candidates: ids, logit bits, order.
fn seen(c: &Candidates) -> Vec<(u32, u32)> {
    c.iter().map(|(id, x)| (id, x.to_bits())).collect()
}

/// What one step gave: the load's report, the token or error, the candidates after.
type Outcome = (Option<(usize, u32)>, Result<u32, String>, Vec<(u32, u32)>);

/// One step of `pipeline` on `row` after `history`, loading all of the row or letting the
/// pipeline choose.
fn step(pipeline: &mut Pipeline, row: &[f32], history: &[u32], choose: bool) -> Outcome {
    let cx = Context::with_history(history);
    let mut c = Candidates::new();
    let bad = if choose {
        pipeline.load(&mut c, row, &cx)
    } else {
        c.load_checked_from(row)
    };
    let token = pipeline
        .sample(&mut c, &cx)
        .map_err(|e: Error| e.to_string());
    (bad.map(|(i, x)| (i, x.to_bits())), token, seen(&c))
}

/// The distribution `Pipeline::transform` leaves, as (id, logit bits, probability bits).
fn distribution(
    pipeline: &mut Pipeline,
    row: &[f32],
    history: &[u32],
    choose: bool,
) -> Vec<[u32; 3]> {
    let cx = Context::with_history(history);
    let mut c = Candidates::new();
    if choose {
        pipeline.load(&mut c, row, &cx);
    } else {
        c.load_checked_from(row);
    }
    if pipeline.transform(&mut c, &cx).is_err() {
        return Vec::new();
    }
    let pairs: Vec<(u32, f32)> = c.iter().collect();
    let probs = c.softmax().to_vec();
    pairs
        .iter()
        .zip(probs)
        .map(|(&(id, x), p)| [id, x.to_bits(), p.to_bits()])
        .collect()
}

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn loading_the_best_candidates_changes_nothing(
        n in prop_oneof![7 => 64usize..3000, 1 => 3000usize..20_000],
        seed in any::<u64>(),
        ties in any::<bool>(),
        sparse in prop::bool::weighted(0.1),
        dirty in prop::bool::weighted(0.05),
        prefix in prop::collection::vec(prefix_stage(), 0..4),
        top_k in prop::sample::select(vec![None, Some(0usize), Some(1), Some(2), Some(5), Some(40)]),
        tail in tail(),
        selector in prop::sample::select(vec!["", "greedy", "dist", "mirostat(seed=4)", "mirostat_v2"]),
        picks in prop::collection::vec(any::<u64>(), 0..80),
    ) {
        let row = row(n, seed, ties, sparse, dirty);
        let ranked = ranked(&row);
        let mut stages: Vec<String> = prefix.iter().map(|s| s.text(&ranked)).collect();
        if let Some(k) = top_k {
            stages.push(format!("top_k({k})"));
        }
        stages.extend(tail.iter().map(|s| s.to_string()));
        if !selector.is_empty() {
            stages.push(selector.to_string());
        }
        let text = if stages.is_empty() { "dist".to_string() } else { stages.join(" | ") };
        let mut all = run::compile(&text, 7).pipeline;
        let mut chosen = run::compile(&text, 7).pipeline;
        let mut history: Vec<u32> = picks.iter().map(|&p| token(p, &ranked)).collect();
        for _ in 0..3 {
            let want = step(&mut all, &row, &history, false);
            let got = step(&mut chosen, &row, &history, true);
            prop_assert_eq!(&got, &want, "`{}` on {} logits", text, n);
            prop_assert_eq!(
                distribution(&mut chosen, &row, &history, true),
                distribution(&mut all, &row, &history, false),
                "`{}` on {} logits", text, n
            );
            match want.1 {
                Ok(token) => {
                    all.accept(token);
                    chosen.accept(token);
                    history.push(token);
                }
                Err(_) => break,
            }
        }
    }
}

/// The card pipeline on a real vocabulary's row loads 40 + the window's distinct tokens;
/// stages that do not tell what they do, a `top_k` that keeps too many, a temperature that
/// does not just scale, or an edit after the scale turn the prefilter off.
#[test]
fn which_pipelines_load_only_the_best() {
    let n = 151_936;
    let history: Vec<u32> = (0..64).map(|i| (i * 7) % 50).collect(); // 50 distinct tokens
    let cx = Context::with_history(&history);
    let plan = |text: &str| run::compile(text, 1).pipeline.prefilter(&cx, n);
    let card = plan("penalty(1.1) | temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05)")
        .expect("the card pipeline loads only the best");
    assert_eq!(card.best, 90);
    assert_eq!(card.also, (0..50).collect::<Vec<u32>>());
    assert_eq!(
        plan("top_k(40)").map(|p| (p.best, p.also.len())),
        Some((40, 0))
    );
    assert_eq!(plan("temp(0.5) | top_k(1) | dist").map(|p| p.best), Some(1));
    assert_eq!(
        plan("logit_bias({7: 2, 7: 1, 999999: 1}) | top_k(3)").map(|p| p.also),
        Some(vec![7])
    );
    for off in [
        "top_p(0.9) | top_k(40)",
        "min_p(0.05) | top_k(40)",
        "temp(0.7, range=0.5) | top_k(40)",
        "temp(0) | top_k(40)",
        "temp(1e-39) | top_k(40)",
        "temp(0.7) | penalty(1.1) | top_k(40)",
        "top_k(10000)",
        "top_k(0) | dist",
        "penalty(1.1) | dist",
    ] {
        assert_eq!(plan(off), None, "{off}");
    }
    // Only the stages before the selector count: a `top_k` at the end is not one of them.
    let mut pipeline = sieve_core::Pipeline::new(vec![(
        "top_k".to_string(),
        Box::new(sieve_samplers::top_k::TopK::new(40)) as Box<dyn sieve_core::Sampler>,
    )]);
    assert_eq!(pipeline.prefilter(&cx, n), None);
}

/// Why an edit after a scale ends the plan: the edit applies the scale to every logit first,
/// and its rounding can tie two neighbouring logits, which then rank by id. Here the better
/// of two such logits has the higher id, and the penalty sinks the row's best token (the one
/// in the history), so the other one of the two is picked, though it is not among the
/// `k + 1 = 2` best of the row; loading only those would lose it.
#[test]
fn an_edit_after_a_scale_ends_the_plan() {
    let scale = (1.0 / 0.7f64) as f32;
    let x = (0..1_000_000)
        .map(|i| 8.0f32 + i as f32 * 1e-5)
        .find(|&x| x * scale == x.next_down() * scale)
        .expect("two neighbours the scale ties");
    let mut row = vec![0.0f32; 4096];
    row[10] = x.next_down(); // lower id, lower logit: ties with row[20] once scaled
    row[20] = x;
    row[5] = 100.0;
    let history = [5u32];
    let text = "temp(0.7) | penalty(1.5, presence=200) | top_k(1) | greedy";
    let mut all = run::compile(text, 1).pipeline;
    let mut chosen = run::compile(text, 1).pipeline;
    let want = step(&mut all, &row, &history, false);
    assert_eq!(want.1, Ok(10), "the tie goes to the lower id");
    assert_eq!(step(&mut chosen, &row, &history, true), want);
}

//! Invariants of every built-in stage over random logits and random pipelines, built through the
//! DSL (`sieve_dsl::compile` with the built-in registry):
//!
//! - (a) a pipeline always selects a survivor with a finite logit, unless a masking stage
//!   (`logit_bias` with `-inf`, `no_repeat_ngram`) legitimately masked every finite candidate it
//!   was given, and then the error names that stage;
//! - (b) the core's softmax over the final candidates sums to 1 (± 1e-5), masked ones at 0;
//! - (c) for deterministic pipelines, permuting the input ids (sparse candidates) changes neither
//!   which ids survive, nor their logits, nor the token selected;
//! - (d) neutral stages (`top_k(0)`, `top_p(1)`, `min_p(0)`, `temp(1)`, `penalty(1)`,
//!   `typical(1)`, `epsilon(0)`, `eta(0)`, `xtc(probability=0)`, …) leave the `(id, logit)`
//!   pairs unchanged, in order;
//! - (e) `top_k(k)` keeps `min(k, #finite)` candidates, each at least as likely as every dropped
//!   one, ties at the boundary to the lower ids, in rank order;
//! - (f) `top_p(p)` keeps the smallest rank prefix reaching `p`, on its sorting path (short
//!   inputs) and its sort-free path (over 1024 candidates) alike.
//!
//! The error path of (a) is rare with random masks, so one more property builds a mask that
//! covers every token and checks that it is always reported, naming the masking stage.
//! `signed_zeros_tie_by_id` pins a bug found here (signed zeros used to rank apart): see its doc.
//!
//! Logits: 1 to 2999 values in `[-30, 30]`, with `-inf` and NaN sprinkled in, sometimes rounded
//! to multiples of 0.5 (many ties), at least one finite.

use std::collections::HashSet;
use std::fmt;

use proptest::prelude::*;
use proptest::sample::Index;
use sieve_core::{Candidates, Context, Error};
use sieve_tests::run;
use sieve_tests::splitmix::SplitMix64;

/// `cases` proptest cases, or `PROPTEST_CASES` when set (for a deeper run:
/// `PROPTEST_CASES=5000 cargo test -p sieve-tests --release --test properties`).
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig::with_cases(cases)
}

// ---------------------------------------------------------------------------------------------
// Inputs

/// One random logit: mostly in `[-30, 30]`, sometimes `-inf` or NaN.
fn logit() -> impl Strategy<Value = f32> {
    prop_oneof![
        90 => -30.0f32..=30.0,
        5 => Just(f32::NEG_INFINITY),
        5 => Just(f32::NAN),
    ]
}

/// A logits vector (sometimes a tiny one, where masks can cover every token) with at least one
/// finite value; rounded to multiples of 0.5 when `ties`.
fn logits() -> impl Strategy<Value = Vec<f32>> {
    let values = prop_oneof![
        4 => prop::collection::vec(logit(), 1..3000),
        1 => prop::collection::vec(logit(), 1..8),
    ];
    (values, any::<Index>(), any::<bool>()).prop_map(|(mut l, at, ties)| {
        if ties {
            for x in &mut l {
                // `+ 0.0` turns a rounded `-0.0` into `0.0`: signed zeros are covered by
                // `signed_zeros_tie_by_id` below, not here.
                *x = (*x * 2.0).round() / 2.0 + 0.0;
            }
        }
        if !l.iter().any(|x| x.is_finite()) {
            let i = at.index(l.len());
            l[i] = 0.0;
        }
        l
    })
}

/// A token id: mostly small, so that histories and biases meet the candidates, sometimes beyond
/// any vocabulary here.
fn token() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0u32..8, 5 => 0u32..40, 1 => 0u32..3100]
}

/// A history of up to 24 tokens.
fn history() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(token(), 0..24)
}

/// The input as candidates: dense, or (with a permutation seed) sparse with the ids permuted.
fn candidates(logits: &[f32], permutation: Option<u64>) -> Candidates {
    match permutation {
        None => Candidates::from_logits(logits),
        Some(seed) => {
            let mut ids: Vec<u32> = (0..logits.len() as u32).collect();
            let mut rng = SplitMix64::new(seed);
            for i in (1..ids.len()).rev() {
                ids.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let values = ids.iter().map(|&id| logits[id as usize]).collect();
            Candidates::from_sparse(ids, values, logits.len()).expect("as many ids as logits")
        }
    }
}

/// NaN counts as `-inf`, as loading does.
fn loaded(x: f32) -> f32 {
    if x.is_nan() {
        f32::NEG_INFINITY
    } else {
        x
    }
}

// ---------------------------------------------------------------------------------------------
// Pipelines

/// A non-selecting built-in stage with valid arguments.
#[derive(Debug, Clone)]
enum Stage {
    Temp {
        t: f64,
        range: f64,
        exponent: f64,
    },
    TopK(u32),
    TopP {
        p: f64,
        min_keep: u32,
    },
    MinP {
        p: f64,
        min_keep: u32,
    },
    Typical {
        p: f64,
        min_keep: u32,
    },
    Epsilon(f64),
    Eta(f64),
    Penalty {
        repeat: f64,
        frequency: f64,
        presence: f64,
        last_n: u32,
    },
    Xtc {
        threshold: f64,
        probability: f64,
        min_keep: u32,
        seed: u64,
    },
    LogitBias(Vec<(u32, f64)>),
    NoRepeatNgram(u32),
}

/// Pipeline text for the stage (floats in Rust's round-trip form, which the DSL reads back).
impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Temp { t, range, exponent } => {
                write!(f, "temp({t:?}, range={range:?}, exponent={exponent:?})")
            }
            Stage::TopK(k) => write!(f, "top_k({k})"),
            Stage::TopP { p, min_keep } => write!(f, "top_p({p:?}, min_keep={min_keep})"),
            Stage::MinP { p, min_keep } => write!(f, "min_p({p:?}, min_keep={min_keep})"),
            Stage::Typical { p, min_keep } => write!(f, "typical({p:?}, min_keep={min_keep})"),
            Stage::Epsilon(e) => write!(f, "epsilon({e:?})"),
            Stage::Eta(e) => write!(f, "eta({e:?})"),
            Stage::Penalty {
                repeat,
                frequency,
                presence,
                last_n,
            } => {
                write!(f, "penalty({repeat:?}, frequency={frequency:?}, ")?;
                write!(f, "presence={presence:?}, last_n={last_n})")
            }
            Stage::Xtc {
                threshold,
                probability,
                min_keep,
                seed,
            } => {
                write!(
                    f,
                    "xtc({threshold:?}, {probability:?}, min_keep={min_keep}, seed={seed})"
                )
            }
            Stage::LogitBias(biases) => {
                let entries: Vec<String> = biases
                    .iter()
                    .map(|(id, b)| format!("{id}: {b:?}"))
                    .collect();
                write!(f, "logit_bias({{{}}})", entries.join(", "))
            }
            Stage::NoRepeatNgram(n) => write!(f, "no_repeat_ngram({n})"),
        }
    }
}

impl Stage {
    /// Whether the stage masks every candidate it was given with a finite logit (`before`),
    /// which is the only way a stage may leave nothing finite.
    fn masks_all(&self, before: &Candidates, history: &[u32]) -> bool {
        let finite: Vec<u32> = before
            .iter()
            .filter(|&(_, l)| l > f32::NEG_INFINITY)
            .map(|(id, _)| id)
            .collect();
        match self {
            Stage::LogitBias(biases) => finite.iter().all(|&id| {
                biases
                    .iter()
                    .filter(|(t, _)| *t == id)
                    .map(|(_, b)| b)
                    .sum::<f64>()
                    == f64::NEG_INFINITY
            }),
            Stage::NoRepeatNgram(n) => {
                let banned = banned_by_ngrams(history, *n as usize);
                finite.iter().all(|id| banned.contains(id))
            }
            _ => false,
        }
    }
}

/// The tokens `no_repeat_ngram(n)` bans after `history`, by the definition (quadratic scan):
/// every `h[i + n − 1]` whose preceding `n − 1` tokens equal the history's last `n − 1`.
fn banned_by_ngrams(history: &[u32], n: usize) -> Vec<u32> {
    let len = history.len();
    if n == 0 || len < n {
        return Vec::new();
    }
    let prefix = &history[len - (n - 1)..];
    (0..=len - n)
        .filter(|&i| &history[i..i + n - 1] == prefix)
        .map(|i| history[i + n - 1])
        .collect()
}

/// A selector with valid arguments.
#[derive(Debug, Clone)]
enum Selector {
    Dist,
    Greedy,
    Mirostat { tau: f64, eta: f64, m: u32 },
    MirostatV2 { tau: f64, eta: f64 },
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Dist => f.write_str("dist"),
            Selector::Greedy => f.write_str("greedy"),
            Selector::Mirostat { tau, eta, m } => write!(f, "mirostat({tau:?}, {eta:?}, m={m})"),
            Selector::MirostatV2 { tau, eta } => write!(f, "mirostat_v2({tau:?}, {eta:?})"),
        }
    }
}

fn unit() -> impl Strategy<Value = f64> {
    prop_oneof![8 => 0.0f64..=1.0, 1 => Just(0.0), 1 => Just(1.0)]
}

fn min_keep() -> impl Strategy<Value = u32> {
    prop_oneof![3 => Just(1u32), 1 => 1u32..6]
}

/// A deterministic (non-random) stage.
fn deterministic_stage() -> impl Strategy<Value = Stage> {
    let bias = prop_oneof![4 => -10.0f64..10.0, 1 => Just(f64::NEG_INFINITY)];
    prop_oneof![
        (
            0.0f64..3.0,
            prop_oneof![Just(0.0), 0.0f64..1.5],
            0.0f64..3.0
        )
            .prop_map(|(t, range, exponent)| Stage::Temp { t, range, exponent }),
        Just(Stage::Temp {
            t: 0.0,
            range: 0.0,
            exponent: 1.0
        }),
        prop_oneof![0u32..100, 0u32..4000].prop_map(Stage::TopK),
        (unit(), min_keep()).prop_map(|(p, min_keep)| Stage::TopP { p, min_keep }),
        (unit(), min_keep()).prop_map(|(p, min_keep)| Stage::MinP { p, min_keep }),
        (unit(), min_keep()).prop_map(|(p, min_keep)| Stage::Typical { p, min_keep }),
        prop_oneof![0.0f64..0.2, 0.0f64..0.99].prop_map(Stage::Epsilon),
        prop_oneof![0.0f64..0.2, 0.0f64..0.99].prop_map(Stage::Eta),
        (0.05f64..3.0, -2.0f64..2.0, -2.0f64..2.0, 0u32..64).prop_map(
            |(repeat, frequency, presence, last_n)| {
                Stage::Penalty {
                    repeat,
                    frequency,
                    presence,
                    last_n,
                }
            }
        ),
        prop::collection::vec((token(), bias), 0..8).prop_map(Stage::LogitBias),
        (0u32..5).prop_map(Stage::NoRepeatNgram),
    ]
}

/// Any stage: the deterministic ones and `xtc`.
fn stage() -> impl Strategy<Value = Stage> {
    prop_oneof![
        11 => deterministic_stage(),
        1 => (unit(), unit(), 1u32..4, any::<u32>()).prop_map(
            |(threshold, probability, min_keep, seed)| {
                Stage::Xtc { threshold, probability, min_keep, seed: seed as u64 }
            }
        ),
    ]
}

fn selector() -> impl Strategy<Value = Selector> {
    prop_oneof![
        Just(Selector::Dist),
        Just(Selector::Greedy),
        (0.0f64..10.0, 0.0f64..1.0, 2u32..200).prop_map(|(tau, eta, m)| Selector::Mirostat {
            tau,
            eta,
            m
        }),
        (0.0f64..10.0, 0.0f64..1.0).prop_map(|(tau, eta)| Selector::MirostatV2 { tau, eta }),
    ]
}

/// The pipeline text of `stages` followed by `selector`.
fn source(stages: &[Stage], selector: &Selector) -> String {
    let mut parts: Vec<String> = stages.iter().map(ToString::to_string).collect();
    parts.push(selector.to_string());
    parts.join(" | ")
}

/// One traced run of a pipeline.
struct Traced {
    /// What `sample` returned.
    outcome: Result<u32, Error>,
    /// The candidates at the end.
    last: Candidates,
    /// The candidates as they were before the first stage and after each stage that succeeded.
    trail: Vec<Candidates>,
}

/// Runs `source` once, keeping the candidates as they were after each stage (the input first).
fn run_traced(
    source: &str,
    seed: u64,
    mut input: Candidates,
    history: &[u32],
) -> Result<Traced, TestCaseError> {
    let mut compiled =
        run::try_compile(source, seed).map_err(|d| TestCaseError::fail(d.render(source)))?;
    let mut trail = vec![input.clone()];
    let outcome =
        compiled
            .pipeline
            .sample_observed(&mut input, &Context::with_history(history), |_, c| {
                trail.push(c.clone());
            });
    Ok(Traced {
        outcome,
        last: input,
        trail,
    })
}

/// `(id, logit)` of the finite candidates, sorted by id.
fn finite_by_id(c: &Candidates) -> Vec<(u32, f32)> {
    let mut v: Vec<(u32, f32)> = c.iter().filter(|&(_, l)| l > f32::NEG_INFINITY).collect();
    v.sort_by_key(|&(id, _)| id);
    v
}

/// Whether `a` comes before `b` in rank order: larger logit, ties to the lower id.
fn ranks_before(a: (u32, f32), b: (u32, f32)) -> bool {
    a.1 > b.1 || (a.1 == b.1 && a.0 < b.0)
}

// ---------------------------------------------------------------------------------------------
// (a) and (b)

/// (a) and (b) for one random pipeline run.
fn check_selection(
    input: &[f32],
    stages: &[Stage],
    selector: &Selector,
    history: &[u32],
    seed: u64,
    permutation: Option<u64>,
) -> Result<(), TestCaseError> {
    let source = source(stages, selector);
    let Traced {
        outcome,
        mut last,
        trail,
    } = run_traced(&source, seed, candidates(input, permutation), history)?;
    match outcome {
        Ok(id) => {
            // (a) The selection is a survivor with a finite logit, and was finite on input.
            prop_assert_eq!(last.selected_id(), Some(id), "{}", source);
            let at = last.position(id);
            prop_assert!(
                at.is_some(),
                "{}: selected {} is not a candidate",
                source,
                id
            );
            let logit = last.logit(at.unwrap_or(0));
            prop_assert!(
                logit > f32::NEG_INFINITY,
                "{}: selected {} is masked",
                source,
                id
            );
            let was = loaded(input[id as usize]);
            prop_assert!(
                was > f32::NEG_INFINITY,
                "{}: {} was masked on input",
                source,
                id
            );
            // (b) The core's softmax over the survivors sums to 1; masked candidates get 0.
            let masked: Vec<bool> = last.iter().map(|(_, l)| l == f32::NEG_INFINITY).collect();
            let probs = last.softmax().to_vec();
            let total: f64 = probs.iter().map(|&p| p as f64).sum();
            prop_assert!(
                (total - 1.0).abs() <= 1e-5,
                "{}: p sums to {}",
                source,
                total
            );
            let masked_zero = probs.iter().zip(&masked).all(|(&p, &m)| !m || p == 0.0);
            prop_assert!(masked_zero, "{}: a masked candidate has p > 0", source);
            let in_unit = probs.iter().all(|&p| (0.0..=1.0).contains(&p));
            prop_assert!(in_unit, "{}: p outside [0, 1]", source);
        }
        Err(Error::NoFiniteCandidates { stage }) => {
            // Only a masking stage may do this, and only by masking all it was given.
            let index = trail.len() - 1;
            let Some(culprit) = stages.get(index) else {
                return Err(TestCaseError::fail(format!(
                    "{source}: `{stage}` left nothing finite"
                )));
            };
            let named = culprit.to_string().starts_with(&format!("{stage}("));
            prop_assert!(
                named,
                "{}: error names `{}`, stage {} is {}",
                source,
                stage,
                index,
                culprit
            );
            let legitimate = culprit.masks_all(&trail[index], history);
            prop_assert!(legitimate, "{}: `{}` left nothing finite", source, culprit);
        }
        Err(e) => prop_assert!(false, "{}: {}", source, e),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn a_pipeline_selects_a_finite_survivor_and_probabilities_sum_to_one(
        input in logits(),
        stages in prop::collection::vec(stage(), 0..5),
        selector in selector(),
        history in history(),
        seed in any::<u32>(),
        permutation in any::<Option<u64>>(),
    ) {
        check_selection(&input, &stages, &selector, &history, seed as u64, permutation)?;
    }
}

/// The error path of (a), made certain: `mask` covers every token of `input` (with `history`),
/// and must be reported as `name` whatever runs before it and whatever would come after.
fn check_masking_everything(
    input: &[f32],
    before: Vec<Stage>,
    (mask, name, history): (Stage, &str, Vec<u32>),
    after: Vec<Stage>,
    selector: &Selector,
) -> Result<(), TestCaseError> {
    // Nothing before the mask may mask everything itself.
    let before = before
        .into_iter()
        .filter(|s| !matches!(s, Stage::LogitBias(_) | Stage::NoRepeatNgram(_)));
    let stages: Vec<Stage> = before.chain([mask]).chain(after).collect();
    let source = source(&stages, selector);
    let Traced { outcome, .. } = run_traced(&source, 1, candidates(input, None), &history)?;
    let want: Result<u32, Error> = Err(Error::NoFiniteCandidates {
        stage: name.to_string(),
    });
    prop_assert_eq!(outcome, want, "{}", source);
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn masking_every_token_is_reported_naming_the_stage(
        mut input in prop::collection::vec(logit(), 1..40),
        before in prop::collection::vec(deterministic_stage(), 0..3),
        after in prop::collection::vec(stage(), 0..3),
        selector in selector(),
        by_ngram in any::<bool>(),
    ) {
        input[0] = 1.0;
        let n = input.len() as u32;
        let mask = if by_ngram {
            (Stage::NoRepeatNgram(1), "no_repeat_ngram", (0..n).collect())
        } else {
            let ban_all = (0..n).map(|id| (id, f64::NEG_INFINITY)).collect();
            (Stage::LogitBias(ban_all), "logit_bias", Vec::new())
        };
        check_masking_everything(&input, before, mask, after, &selector)?;
    }
}

// ---------------------------------------------------------------------------------------------
// (c)

/// (c): the same pipeline on dense and on id-permuted sparse candidates.
fn check_permutation(
    input: &[f32],
    stages: &[Stage],
    history: &[u32],
    permutation: u64,
) -> Result<(), TestCaseError> {
    let source = source(stages, &Selector::Greedy);
    let dense = run_traced(&source, 0, candidates(input, None), history)?;
    let sparse = run_traced(&source, 0, candidates(input, Some(permutation)), history)?;
    prop_assert_eq!(&dense.outcome, &sparse.outcome, "{}", source);
    let (a, b) = (finite_by_id(&dense.last), finite_by_id(&sparse.last));
    let ids = |v: &[(u32, f32)]| v.iter().map(|&(id, _)| id).collect::<Vec<_>>();
    prop_assert_eq!(ids(&a), ids(&b), "{}: different survivors", source);
    for (&(id, x), &(_, y)) in a.iter().zip(&b) {
        // Dynamic temperature sums the entropy in candidate order, so allow rounding.
        let close = (x - y).abs() <= 1e-5 * x.abs().max(1.0);
        prop_assert!(close, "{}: token {} has {} vs {}", source, id, x, y);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn permuting_the_ids_changes_nothing_for_deterministic_pipelines(
        input in logits(),
        stages in prop::collection::vec(deterministic_stage(), 1..5),
        history in history(),
        permutation in any::<u64>(),
    ) {
        check_permutation(&input, &stages, &history, permutation)?;
    }
}

// ---------------------------------------------------------------------------------------------
// (d)

/// Stages built with their neutral parameters.
const NEUTRAL: [&str; 16] = [
    "top_k(0)",
    "top_p(1)",
    "top_p(1.0, min_keep=5)",
    "min_p(0)",
    "min_p(0, min_keep=3)",
    "temp(1)",
    "temp(1.0, range=0.0, exponent=2.0)",
    "penalty(1)",
    "penalty(2.0, frequency=1.0, presence=1.0, last_n=0)",
    "typical(1)",
    "epsilon(0)",
    "eta(0)",
    "xtc(threshold=0.1, probability=0)",
    "xtc(threshold=0.75, probability=1)",
    "no_repeat_ngram(0)",
    "logit_bias({3: 1.5, 3: -1.5})",
];

/// (d): every neutral stage, and all of them chained, leave the candidates as they were.
fn check_neutral(
    input: &[f32],
    history: &[u32],
    permutation: Option<u64>,
) -> Result<(), TestCaseError> {
    let before = candidates(input, permutation);
    let want: Vec<(u32, u32)> = before.iter().map(|(id, l)| (id, l.to_bits())).collect();
    let all = NEUTRAL.join(" | ");
    for neutral in NEUTRAL.iter().copied().chain([all.as_str()]) {
        let source = format!("{neutral} | greedy");
        let Traced { trail, .. } = run_traced(&source, 9, before.clone(), history)?;
        // The candidates after the last neutral stage, before `greedy`.
        let after = &trail[trail.len() - 2];
        let got: Vec<(u32, u32)> = after.iter().map(|(id, l)| (id, l.to_bits())).collect();
        prop_assert!(got == want, "{} changed the candidates", neutral);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn neutral_stages_are_identities(
        input in logits(),
        history in history(),
        permutation in any::<Option<u64>>(),
    ) {
        check_neutral(&input, &history, permutation)?;
    }
}

// ---------------------------------------------------------------------------------------------
// (e)

/// (e) for one `k`.
fn check_top_k(input: &[f32], k: usize, permutation: Option<u64>) -> Result<(), TestCaseError> {
    let source = format!("top_k({k}) | greedy");
    let Traced {
        outcome,
        last: after,
        ..
    } = run_traced(&source, 0, candidates(input, permutation), &[])?;
    let finite = input.iter().filter(|x| x.is_finite()).count();
    let kept: Vec<(u32, f32)> = after
        .iter()
        .filter(|&(_, l)| l > f32::NEG_INFINITY)
        .collect();
    prop_assert_eq!(kept.len(), k.min(finite), "{}", source);
    if k < input.len() {
        // Truncated: nothing masked is left, and the survivors are in rank order.
        prop_assert_eq!(
            after.len(),
            kept.len(),
            "{}: a masked token was kept",
            source
        );
        prop_assert!(after.is_sorted(), "{}: not flagged sorted", source);
        let in_order = kept.windows(2).all(|w| ranks_before(w[0], w[1]));
        prop_assert!(in_order, "{}: not in rank order", source);
    }
    let first = kept
        .iter()
        .copied()
        .reduce(|a, b| if ranks_before(b, a) { b } else { a });
    let last = kept
        .iter()
        .copied()
        .reduce(|a, b| if ranks_before(a, b) { b } else { a });
    let (Some((first_id, _)), Some(last)) = (first, last) else {
        return Err(TestCaseError::fail(format!("{source}: nothing kept")));
    };
    let kept_ids: HashSet<u32> = kept.iter().map(|&(id, _)| id).collect();
    for (id, &x) in input.iter().enumerate() {
        let dropped = (id as u32, x);
        if x.is_finite() && !kept_ids.contains(&dropped.0) {
            // Every dropped token ranks after the last kept one.
            let after_last = ranks_before(last, dropped);
            prop_assert!(
                after_last,
                "{}: dropped {:?} outranks kept {:?}",
                source,
                dropped,
                last
            );
        }
    }
    prop_assert_eq!(
        outcome.ok(),
        Some(first_id),
        "{}: greedy chose another",
        source
    );
    Ok(())
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn top_k_keeps_the_k_most_likely(
        input in logits(),
        k in prop_oneof![1usize..64, 1usize..3100],
        permutation in any::<Option<u64>>(),
    ) {
        check_top_k(&input, k, permutation)?;
    }
}

// ---------------------------------------------------------------------------------------------
// top_p against its definition

/// `top_p(p, min_keep)` keeps the smallest rank prefix whose probability reaches `p`, and at
/// least `min_keep`. Inputs longer than 1024 take the stage's sort-free path, shorter ones the
/// sorting path.
///
/// Where the prefix mass crosses `p` is decided in floating point: the stage sums `f32`
/// weights (normalized or not, by path) in `f64`, so a mass within rounding of `p` may put the
/// cut one token either way. In a tail of near-zero probabilities (a logit of 0 beside one of
/// 29 weighs `e^-29`) that is many tokens, so the property is checked against the exact
/// (`f64`) softmax with a tolerance `EPS`: the kept set is a rank prefix of some length `m`,
/// `mass(m) ≥ p − EPS`, and `mass(m − 1) < p + EPS` unless `m` is `min_keep` (or 1).
fn check_top_p(input: &[f32], p: f64, min_keep: usize) -> Result<(), TestCaseError> {
    const EPS: f64 = 1e-6;
    let source = format!("top_p({p:?}, min_keep={min_keep}) | greedy");
    let mut ranked: Vec<(u32, f32)> = Candidates::from_logits(input).iter().collect();
    ranked.sort_by(|a, b| sieve_core::rank((a.1, a.0), (b.1, b.0)));
    let max = ranked.first().map_or(f32::NEG_INFINITY, |&(_, l)| l);
    let exact = |l: f32| {
        if l.is_nan() || l == f32::NEG_INFINITY {
            0.0
        } else {
            ((l - max) as f64).exp()
        }
    };
    let total: f64 = ranked.iter().map(|&(_, l)| exact(l)).sum();
    let mut cum = vec![0.0f64];
    for &(_, l) in &ranked {
        cum.push(cum.last().unwrap() + exact(l) / total);
    }
    let Traced { last, .. } = run_traced(&source, 0, candidates(input, None), &[])?;
    let got: Vec<u32> = finite_by_id(&last).into_iter().map(|(id, _)| id).collect();
    let finite = ranked
        .iter()
        .filter(|&&(_, l)| l > f32::NEG_INFINITY)
        .count();
    let m = got.len();
    prop_assert!(
        m >= 1 && m <= finite.max(1),
        "{}: kept {} of {}",
        source,
        m,
        finite
    );
    let mut prefix: Vec<u32> = ranked[..m].iter().map(|&(id, _)| id).collect();
    prefix.sort_unstable();
    prop_assert_eq!(
        &got,
        &prefix,
        "{}: not a rank prefix on {} logits",
        source,
        input.len()
    );
    let least = min_keep.clamp(1, finite.max(1));
    if total > 0.0 && m < finite {
        prop_assert!(
            cum[m] >= p - EPS,
            "{}: kept {} with mass {} < p",
            source,
            m,
            cum[m]
        );
    }
    if m > least {
        prop_assert!(
            cum[m - 1] < p + EPS,
            "{}: {} would have reached p ({} ≥ {})",
            source,
            m - 1,
            cum[m - 1],
            p
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn top_p_keeps_the_smallest_prefix_reaching_p(
        input in logits(),
        p in prop_oneof![0.0f64..1.0, 0.9f64..1.0, 0.99f64..1.0],
        min_keep in min_keep(),
    ) {
        check_top_p(&input, p, min_keep as usize)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Signed zeros

/// `-0.0` and `0.0` are equal logits, so by the documented rank order (descending logit, ties
/// by ascending id) they tie and the lower id comes first, in `greedy` and in every stage that
/// sorts. (Sorting with `total_cmp` once put `0.0` first, so `top_k(1) | greedy` and `greedy`
/// chose different tokens.)
#[test]
fn signed_zeros_tie_by_id() {
    let input = [-0.0f32, 0.0];
    let mut greedy = run::compile("greedy", 0).pipeline;
    let mut top1 = run::compile("top_k(1) | greedy", 0).pipeline;
    let alone = greedy.sample(&mut Candidates::from_logits(&input), &Context::default());
    let after_top_k = top1.sample(&mut Candidates::from_logits(&input), &Context::default());
    assert_eq!(alone, Ok(0));
    assert_eq!(
        after_top_k,
        Ok(0),
        "top_k(1) kept token 1 (0.0) over token 0 (-0.0)"
    );
}

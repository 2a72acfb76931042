//! Seeded token sequences: 20 draws with run seed 42, each drawn token passed to
//! `Pipeline::accept` and appended to the history (after the prompt [`HISTORY`]), the same
//! logits at every step. The snapshots pin the sequences; the other tests check that a seed
//! reproduces its sequence, that `reset` replays it, and that the seed is what decides it.
//!
//! # Checked by hand
//!
//! Every snapshot was recomputed by `tests/oracle/sequences.py` before it was accepted: it
//! re-implements ChaCha8 as `rand_chacha` 0.10 runs it (PCG32 `seed_from_u64`, the stream set
//! to the FNV-1a hash of the stage name; it reproduces the core's pinned first draw
//! 672781725832014280 for seed 42 on `dist`) and the stages from their module docs (inverse-CDF
//! draw in the current candidate order with a strict `cum > u·Σw`; mirostat's μ update after
//! each draw; xtc's `f32` coin before `dist`'s draw), and derives the same 20 tokens for every
//! pipeline here (`python3 tests/oracle/sequences.py tests/tests/snapshots`).

use sieve_tests::logits;
use sieve_tests::run::{self, HISTORY};

/// The run seed of the snapshots.
const SEED: u64 = 42;
/// Tokens drawn per sequence.
const DRAWS: usize = 20;

/// `(snapshot name, fixture, pipeline)`.
const CASES: [(&str, &str, &str); 6] = [
    ("dist_zipf50k", "zipf50k", "dist"),
    (
        "card_zipf50k",
        "zipf50k",
        "penalty(1.1) | temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05) | dist",
    ),
    ("mirostat_zipf50k", "zipf50k", "mirostat"),
    ("mirostat_v2_zipf50k", "zipf50k", "mirostat_v2"),
    (
        "xtc_zipf50k",
        "zipf50k",
        "xtc(threshold=0.05, probability=0.5) | dist",
    ),
    (
        "penalty_flat",
        "flat",
        "penalty(repeat=1.5, presence=2.0, last_n=8) | dist",
    ),
];

/// The logits of the fixture called `name`.
fn fixture(name: &str) -> Vec<f32> {
    logits::all()
        .into_iter()
        .find(|f| f.name == name)
        .map(|f| f.logits)
        .unwrap_or_else(|| panic!("no fixture `{name}`"))
}

/// The logits of the reproducibility tests: a 2000-token Zipf-like vector (the 50 000-token one
/// makes no difference to what they check, and is slow in debug builds).
fn quick_logits() -> Vec<f32> {
    logits::zipf(2000, 7)
}

/// The sequence `source` draws on `logits` with run seed `seed`.
fn draws(source: &str, logits: &[f32], seed: u64) -> Vec<u32> {
    let mut pipeline = run::compile(source, seed).pipeline;
    run::sequence(&mut pipeline, logits, &HISTORY, DRAWS)
        .unwrap_or_else(|e| panic!("{source}: {e}"))
}

/// The snapshot text: the pipeline, then one line per draw with the token's rank in the input
/// (0 = most likely).
fn report(fixture_name: &str, source: &str) -> String {
    let logits = fixture(fixture_name);
    let ranks = logits::ranks(&logits);
    let spec = run::compile(source, SEED).spec;
    let mut out = format!("pipeline: {source}\ncanonical: {spec}\n");
    out.push_str(&format!(
        "fixture: {fixture_name}; run seed {SEED}; prompt {HISTORY:?}\n"
    ));
    out.push_str(&format!("{:>4} {:>8} {:>6}\n", "step", "token", "rank"));
    for (step, token) in draws(source, &logits, SEED).into_iter().enumerate() {
        out.push_str(&format!(
            "{step:>4} {token:>8} {:>6}\n",
            ranks[token as usize]
        ));
    }
    out
}

#[test]
fn seeded_sequences() {
    for (name, fixture_name, source) in CASES {
        insta::assert_snapshot!(name, report(fixture_name, source), source);
    }
}

#[test]
fn the_same_seed_gives_the_same_sequence() {
    let logits = quick_logits();
    for (_, _, source) in CASES {
        assert_eq!(
            draws(source, &logits, SEED),
            draws(source, &logits, SEED),
            "{source}"
        );
    }
}

#[test]
fn reset_replays_the_sequence() {
    let logits = quick_logits();
    for (_, _, source) in CASES {
        let mut pipeline = run::compile(source, SEED).pipeline;
        let first = run::sequence(&mut pipeline, &logits, &HISTORY, DRAWS).unwrap();
        pipeline.reset();
        let again = run::sequence(&mut pipeline, &logits, &HISTORY, DRAWS).unwrap();
        assert_eq!(first, again, "{source}");
    }
}

#[test]
fn without_reset_the_stream_goes_on() {
    // The second run continues the random stream (and mirostat's μ), so it differs.
    let logits = quick_logits();
    for (_, _, source) in CASES {
        let mut pipeline = run::compile(source, SEED).pipeline;
        let first = run::sequence(&mut pipeline, &logits, &HISTORY, DRAWS).unwrap();
        let second = run::sequence(&mut pipeline, &logits, &HISTORY, DRAWS).unwrap();
        assert_ne!(first, second, "{source}");
    }
}

#[test]
fn another_run_seed_gives_another_sequence() {
    let logits = quick_logits();
    for (_, _, source) in CASES {
        assert_ne!(
            draws(source, &logits, SEED),
            draws(source, &logits, SEED + 1),
            "{source}"
        );
    }
}

#[test]
fn an_explicit_seed_overrides_the_run_seed() {
    let logits = quick_logits();
    for (explicit, implicit) in [
        ("dist(seed=42)", "dist"),
        ("mirostat(seed=42)", "mirostat"),
        ("mirostat_v2(seed=42)", "mirostat_v2"),
        (
            "xtc(threshold=0.05, seed=42) | dist(seed=42)",
            "xtc(threshold=0.05) | dist",
        ),
    ] {
        assert_eq!(
            draws(explicit, &logits, 7),
            draws(implicit, &logits, SEED),
            "{explicit}"
        );
    }
}

#[test]
fn greedy_needs_no_seed() {
    let logits = quick_logits();
    let top = logits::ranks(&logits).iter().position(|&r| r == 0).unwrap() as u32;
    assert_eq!(draws("greedy", &logits, 1), vec![top; DRAWS]);
    assert_eq!(draws("greedy", &logits, 2), vec![top; DRAWS]);
}

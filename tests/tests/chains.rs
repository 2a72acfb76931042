//! Snapshots of chain outputs: for every fixture, what a pipeline leaves (the survivors with
//! their logits and probabilities renormalized over them) and which token it selects.
//!
//! The pipelines end in a selector; `greedy` only marks its choice, so the candidates after
//! [`sieve_core::Pipeline::sample`] are the survivors of the stages before it. Each pipeline
//! is built fresh per fixture (seed 42) and run once with the history [`run::HISTORY`].
//! `zipf50k` prints only the count, the mass and the top 10.
//!
//! # Checked by hand
//!
//! Before the snapshots were accepted, every section of every snapshot (23 pipelines x 6
//! fixtures = 138) was recomputed by `tests/oracle/chains.py`, an independent Python
//! re-implementation of each stage written from the formulas in its module doc (f64 softmax,
//! the `temp`/`penalty` arithmetic rounded to f32 as the stages do, fixtures regenerated with
//! their own SplitMix64): survivor count, every printed row (id, logit, p as `%.6g`), the input
//! mass and the selected token all agree. The selection is checked too: greedy's lowest id among
//! the largest logits, and for `dist`/`mirostat`/`mirostat_v2` the first draw of their ChaCha8
//! stream, replayed by `tests/oracle/chacha.py` over the survivors in the order the stage leaves
//! them. `python3 tests/oracle/chains.py tests/tests/snapshots` prints "138 ... checked, 0
//! mismatches", and flags a one-digit edit of a snapshot. Values also checked one by one with
//! `python3 -c` (peaked = base `0.25·((7i) mod 11) − 1`, token 1 at 5.0; history
//! [0, 1, 1, 2, 0, 1] counts token 0 twice, 1 three times, 2 once):
//!
//! - `greedy`/peaked: p(1) = e⁵ / Σ e^{l_i} = 0.849746, p(3) = p(14) = 0.0256601.
//! - `temp_0_7`/peaked: token 1 at 5/0.7 = 7.14286 with p = 0.969848; flat: 1/0.7 = 1.42857, 1/16.
//! - `top_p_0_9`/peaked: cumulative 0.849746, 0.875406, 0.901066 ≥ 0.9, so 3 survivors, the
//!   1.5-tie (ids 3 and 14) both in; flat: 15 of 16 (15/16 ≥ 0.9 > 14/16).
//! - `top_k_5`/ties: ids 2, 7, 11 (2.0) then 0, 4, the lowest ids of the 1.0 group;
//!   p(2.0) = e² / (3e² + 2e) = 0.267683.
//! - `penalty_full`/peaked: token 1: 5/1.2 − (3·0.5 + 0.25) = 2.41667; token 0:
//!   −1·1.2 − (2·0.5 + 0.25) = −2.45; token 2: −0.25·1.2 − (0.5 + 0.25) = −1.05.
//! - `eta`/peaked: H = 0.786402 nats, η = min(0.02, √0.02·e^−H = 0.0644) = 0.02, so token 6
//!   (p = 0.0199841 < 0.02) is dropped and 3 survive, as with `epsilon(0.02)`.
//! - `xtc_always`/ties: p = 0.1925 for the three 2.0 tokens (≥ 0.1), 0.0708 next: the first two
//!   (ids 2, 7) are removed and 11 is kept; peaked and zipf50k have one top choice: unchanged.
//! - `no_repeat_ngram_2`: the earlier `1`s were followed by 1 and 2, so both are banned on every
//!   fixture; peaked keeps mass 1 − 0.849746 − 0.00445906 = 0.145795.
//! - `mirostat_v2`/zipf50k: μ = 2τ = 6 keeps p ≥ 2⁻⁶ = 0.015625: the 7 tokens down to p =
//!   0.0163059 (the next has 0.0137109). `mirostat`/zipf50k: ŝ ≈ 1.1 gives
//!   k = (0.1·2⁶ / (1 − 50000^−0.1))^(1/1.1) ≈ 7.9, so 7 survivors.
//! - `min_p_then_temp` vs `temp_then_min_p` on zipf50k: the threshold on raw logits is
//!   −0.0255785 + ln 0.1 = −2.32817 (8 survivors); after temp(1.5) it is −0.0170524 + ln 0.1
//!   on scaled logits, i.e. −3.47946 raw (22 survivors): temperature first widens min-p.

use sieve_tests::logits;
use sieve_tests::run::{self, HISTORY};
use sieve_tests::survivors::{render, survivors, Detail};

/// The run seed of every pipeline here.
const SEED: u64 = 42;

/// Checks that the core's `f32` softmax over the final candidates agrees with the `f64` one the
/// snapshot prints, to 1e-5.
fn check_core_softmax(candidates: &sieve_core::Candidates) {
    let mut c = candidates.clone();
    let probs = c.softmax().to_vec();
    let mut by_id = vec![f32::NAN; c.vocab_size()];
    for ((id, _), p) in c.iter().zip(probs) {
        by_id[id as usize] = p;
    }
    for s in survivors(candidates) {
        let p = by_id[s.id as usize];
        assert!(
            (p as f64 - s.p).abs() < 1e-5,
            "token {}: core {p}, f64 {}",
            s.id,
            s.p
        );
    }
}

/// The snapshot text of `source` over every fixture.
fn report(source: &str) -> String {
    let spec = run::compile(source, SEED).spec;
    let mut out = format!("pipeline: {source}\ncanonical: {spec}\nhistory: {HISTORY:?}\n");
    for fixture in logits::all() {
        let mut pipeline = run::compile(source, SEED).pipeline;
        let step = run::step(&mut pipeline, &fixture.logits, &HISTORY);
        check_core_softmax(&step.candidates);
        if let Ok(id) = step.outcome {
            let kept = survivors(&step.candidates);
            assert!(
                kept.iter().any(|s| s.id == id),
                "{}: selected {id} is not a survivor",
                fixture.name
            );
        }
        let detail = if fixture.logits.len() > logits::SMALL {
            Detail::Top(10)
        } else {
            Detail::Full
        };
        out.push_str(&format!(
            "\n== {} ({} tokens)\n",
            fixture.name,
            fixture.logits.len()
        ));
        out.push_str(&render(
            &fixture.logits,
            &step.candidates,
            &step.outcome,
            detail,
        ));
    }
    out
}

macro_rules! chain {
    ($name:ident, $source:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), report($source), $source);
        }
    };
}

// Selectors.
chain!(greedy, "greedy");
chain!(dist, "dist");
chain!(mirostat, "mirostat(tau=3.0)");
chain!(mirostat_v2, "mirostat_v2(tau=3.0)");

// One stage each.
chain!(temp_0_7, "temp(0.7) | greedy");
chain!(temp_0, "temp(0) | greedy");
chain!(temp_dynamic, "temp(1.0, range=0.5) | greedy");
chain!(top_k_5, "top_k(5) | greedy");
chain!(top_p_0_9, "top_p(0.9) | greedy");
chain!(min_p_0_05, "min_p(0.05) | greedy");
chain!(typical_0_5, "typical(0.5) | greedy");
chain!(xtc_always, "xtc(threshold=0.1, probability=1.0) | greedy");
chain!(penalty_1_1, "penalty(1.1) | greedy");
chain!(
    penalty_full,
    "penalty(repeat=1.2, frequency=0.5, presence=0.25) | greedy"
);
chain!(logit_bias, "logit_bias({3: 2.5, 4: -inf, 7: -1}) | greedy");
chain!(no_repeat_ngram_2, "no_repeat_ngram(2) | greedy");
chain!(epsilon, "epsilon(0.02) | greedy");
chain!(eta, "eta(0.02) | greedy");

// The card chain, and orders that matter.
chain!(
    card,
    "penalty(1.1) | temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05) | greedy"
);
chain!(temp_then_top_p, "temp(0.7) | top_p(0.9) | greedy");
chain!(top_p_then_temp, "top_p(0.9) | temp(0.7) | greedy");
chain!(temp_then_min_p, "temp(1.5) | min_p(0.1) | greedy");
chain!(min_p_then_temp, "min_p(0.1) | temp(1.5) | greedy");

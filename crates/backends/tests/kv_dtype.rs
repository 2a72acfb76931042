//! `--kv-cache bf16|f16`: a cache of 16-bit keys and values keeps batch invariance (a
//! sequence's logits are the same bits alone, beside others, or fed in one chunk) and stays
//! within a stated distance of transformers in `f32`; forks and rollbacks keep the element
//! type.

mod common;

use common::{fixture, max_abs_diff, FIXTURES};
use sieve_backends::{BackendKind, KvDtype, LoadedModel, ModelDir};
use sieve_engine::{BatchModel, Feed};

const CPU: [BackendKind; 2] = [BackendKind::Ndarray, BackendKind::Flex];

// Measured (`--nocapture` prints them): the largest absolute logit difference from
// transformers in `f32` over every position of each fixture (logits reach |20|).
//
// | fixture | bf16 cache | f16 cache |
// |---|---|---|
// | llama-gqa-tied | 0.136 | 0.030 |
// | llama-f32-linear | 0.138 | 0.016 |
// | qwen2-bias | 0.066 | 0.008 |
// | mistral-window-sharded | 0.038 | 0.005 |
// | qwen3-headdim | 0.028 | 0.004 |
// | gemma2-softcap | 0.121 | 0.019 |
// | gemma3-window | 0.275 | 0.028 |
//
// For scale: `bf16` weights move the same logits by up to 0.291, and transformers' own `bf16`
// run by up to 0.599 (`tests/dtype.rs`).

/// Largest allowed difference with a `bf16` cache (measured 0.275).
const BF16_VS_TRANSFORMERS_F32: f32 = 0.35;
/// Largest allowed difference with an `f16` cache (measured 0.030; 3 more mantissa bits).
const F16_VS_TRANSFORMERS_F32: f32 = 0.04;

fn load(name: &str, kind: BackendKind, kv: KvDtype) -> LoadedModel {
    let mut model = ModelDir::open(common::fixture_dir(name))
        .unwrap()
        .load(kind)
        .unwrap();
    model.set_kv_dtype(kv).unwrap();
    assert_eq!(model.kv_dtype(), kv);
    model
}

#[test]
fn a_narrow_cache_stays_within_the_stated_distance_of_transformers() {
    for name in FIXTURES {
        let f = fixture(name);
        for (kv, bound) in [
            (KvDtype::Bf16, BF16_VS_TRANSFORMERS_F32),
            (KvDtype::F16, F16_VS_TRANSFORMERS_F32),
        ] {
            let mut model = load(name, BackendKind::Flex, kv);
            let got = model.forward_all(&f.expected.tokens).unwrap();
            let worst = got
                .iter()
                .zip(&f.logits)
                .map(|(a, b)| max_abs_diff(a, b))
                .fold(0.0, f32::max);
            println!("{name} {kv}: {worst}");
            assert!(worst > 0.0, "{name} {kv}: the cache was not narrowed");
            assert!(worst <= bound, "{name} {kv}: {worst} > {bound}");
        }
    }
}

#[test]
fn a_narrow_cache_keeps_every_sequence_s_bits_alone_beside_others_and_in_chunks() {
    for name in FIXTURES {
        let t = fixture(name).expected.tokens;
        for kind in CPU {
            for kv in [KvDtype::Bf16, KvDtype::F16] {
                let mut model = load(name, kind, kv);
                // The logits of one sequence fed `t` one token at a time.
                let alone = model.open();
                let steps: Vec<Vec<f32>> = t
                    .iter()
                    .map(|tok| {
                        let feed = Feed::last(alone, std::slice::from_ref(tok));
                        model.step(&[feed]).unwrap().remove(0)
                    })
                    .collect();
                // The same tokens as one chunk (the blocked path), beside a fork of a
                // prefilled prompt that decodes and another sequence that prefills.
                let chunk = model.open();
                let parent = model.open();
                model.step(&[Feed::last(parent, &t[..5])]).unwrap();
                let fork = model.fork(parent).unwrap();
                let other = model.open();
                let out = model
                    .step(&[
                        Feed::last(fork, &t[5..6]),
                        Feed::all(chunk, &t),
                        Feed::last(other, &t[..3]),
                    ])
                    .unwrap();
                let what = format!("{name} on {kind} with a {kv} cache");
                assert!(out[0] == steps[5], "{what}: the fork's decode step");
                let vocab = model.vocab_size();
                for (i, row) in out[1].chunks_exact(vocab).enumerate() {
                    assert!(row == steps[i].as_slice(), "{what}: chunk row {i}");
                }
                assert!(out[2] == steps[2], "{what}: a prefill beside others");
                // A rollback into the shared prompt, then the same token again.
                model.truncate(fork, 4).unwrap();
                let again = model.step(&[Feed::last(fork, &t[4..5])]).unwrap();
                assert!(again[0] == steps[4], "{what}: after a rollback");
            }
        }
    }
}

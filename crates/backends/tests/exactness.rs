//! The model's logits equal those transformers computed for every committed fixture, at every
//! position, on every CPU backend and both paths ([`common::RUNS`]: the host path every CPU
//! run uses, and the Burn path `--backend cuda` runs); decoding with the KV cache equals
//! recomputing.

mod common;

use common::{fixture, greedy_pipeline, max_abs_diff, FIXTURES, TOLERANCE};
use sieve_backends::{BackendKind, LoadedModel, ModelDir};
use sieve_engine::{generate, GenerateOptions, LanguageModel};

use common::{Run, RUNS};

fn load(name: &str, run: Run) -> LoadedModel {
    run.load(name)
}

#[test]
fn prefill_logits_match_transformers_at_every_position() {
    for name in FIXTURES {
        let f = fixture(name);
        for kind in RUNS {
            let mut model = load(name, kind);
            let got = model.forward_all(&f.expected.tokens).unwrap();
            assert_eq!(got.len(), f.logits.len());
            for (pos, (g, e)) in got.iter().zip(&f.logits).enumerate() {
                let d = max_abs_diff(g, e);
                assert!(
                    d <= TOLERANCE,
                    "{name} on {kind}: position {pos} differs by {d}"
                );
            }
        }
    }
}

#[test]
fn decoding_with_the_cache_matches_transformers_and_a_full_recompute() {
    for name in FIXTURES {
        let f = fixture(name);
        let tokens = &f.expected.tokens;
        for kind in RUNS {
            let mut model = load(name, kind);
            // Prefill a few tokens, then feed one at a time against the cache.
            let split = 5;
            let prefill = model.forward_all(&tokens[..split]).unwrap();
            let mut decoded = prefill;
            for &t in &tokens[split..] {
                decoded.extend(model.forward_all(&[t]).unwrap());
            }
            let mut fresh = load(name, kind);
            let full = fresh.forward_all(tokens).unwrap();
            for pos in 0..tokens.len() {
                let d = max_abs_diff(&decoded[pos], &full[pos]);
                assert!(
                    d <= TOLERANCE,
                    "{name} on {kind}: cached position {pos} vs recompute: {d}"
                );
                let d = max_abs_diff(&decoded[pos], &f.logits[pos]);
                assert!(
                    d <= TOLERANCE,
                    "{name} on {kind}: cached position {pos} vs transformers: {d}"
                );
            }
        }
    }
}

#[test]
fn truncating_the_cache_and_feeding_again_equals_never_having_fed() {
    // The rollback of speculative decoding: feed 30 tokens, keep 12, feed a different
    // continuation; the logits must equal a fresh run of the kept prefix plus it, on every
    // family (sliding windows included) and backend.
    for name in FIXTURES {
        let f = fixture(name);
        let tokens = &f.expected.tokens;
        for kind in RUNS {
            let mut model = load(name, kind);
            model.forward_all(&tokens[..30]).unwrap();
            model.truncate(12);
            assert_eq!(model.position(), 12, "{name} on {kind}");
            let other: Vec<u32> = tokens[20..35].iter().rev().copied().collect();
            let after = model.forward_all(&other).unwrap();
            let mut fresh = load(name, kind);
            let mut sequence = tokens[..12].to_vec();
            sequence.extend(&other);
            let expected = fresh.forward_all(&sequence).unwrap();
            for (k, row) in after.iter().enumerate() {
                let d = max_abs_diff(row, &expected[12 + k]);
                assert!(
                    d <= TOLERANCE,
                    "{name} on {kind}: position {} after truncation differs by {d}",
                    12 + k
                );
            }
            // Truncating past the end changes nothing; to 0 starts over.
            model.truncate(1000);
            assert_eq!(model.position(), 12 + other.len());
            model.truncate(0);
            assert_eq!(model.position(), 0);
        }
    }
}

#[test]
fn last_position_logits_equal_the_last_row_and_reset_starts_over() {
    for name in FIXTURES {
        let f = fixture(name);
        let tokens = &f.expected.tokens;
        let mut model = load(name, RUNS[1]);
        let last = model.forward_last(tokens).unwrap();
        assert!(
            max_abs_diff(&last, f.logits.last().unwrap()) <= TOLERANCE,
            "{name}"
        );
        LanguageModel::reset(&mut model);
        let again = model.forward_last(&tokens[..10]).unwrap();
        assert!(max_abs_diff(&again, &f.logits[9]) <= TOLERANCE, "{name}");
    }
}

#[test]
fn greedy_generation_reproduces_transformers_generate() {
    for name in FIXTURES {
        let f = fixture(name);
        let dir = ModelDir::open(&f.dir).unwrap();
        let tokenizer = dir.tokenizer().unwrap();
        let vocab = dir.vocab(&tokenizer);
        for kind in RUNS {
            let mut model = kind.load_dir(&dir);
            let g = &f.expected.greedy;
            let options = GenerateOptions {
                max_tokens: g.max_new_tokens,
                eos: dir.eos_ids(),
                vocab: Some(&vocab),
                ..GenerateOptions::default()
            };
            let mut pipeline = greedy_pipeline();
            let out = generate(
                &mut model,
                &tokenizer,
                &mut pipeline,
                &f.expected.tokens[..g.prompt_tokens],
                &options,
                &mut |_| {},
            )
            .unwrap();
            assert_eq!(out.tokens, g.tokens, "{name} on {kind}");
        }
    }
}

/// A copy of fixture `name` with its config edited.
fn edited(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> (tempfile::TempDir, ModelDir) {
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(common::fixture_dir(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    let path = tmp.path().join("config.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let dir = ModelDir::open(tmp.path()).unwrap();
    (tmp, dir)
}

/// An edit of a fixture's `config.json`.
type ConfigEdit = fn(&mut serde_json::Value);

/// Each fixture exercises its feature: without it, the logits move far past the tolerance.
#[test]
fn every_fixture_feature_changes_the_logits() {
    let cases: [(&str, &str, ConfigEdit); 10] = [
        ("llama-gqa-tied", "llama3 rope scaling", |v| {
            v["rope_scaling"] = serde_json::Value::Null
        }),
        ("llama-f32-linear", "linear rope scaling", |v| {
            v["rope_scaling"] = serde_json::Value::Null
        }),
        ("mistral-window-sharded", "sliding window", |v| {
            v["sliding_window"] = serde_json::Value::Null
        }),
        ("qwen2-bias", "rope theta", |v| {
            v["rope_theta"] = serde_json::json!(10000.0)
        }),
        ("qwen3-headdim", "sliding window", |v| {
            v["use_sliding_window"] = serde_json::json!(false)
        }),
        ("gemma2-softcap", "attention softcap", |v| {
            v["attn_logit_softcapping"] = serde_json::Value::Null
        }),
        ("gemma2-softcap", "final softcap", |v| {
            v["final_logit_softcapping"] = serde_json::Value::Null
        }),
        ("gemma2-softcap", "query_pre_attn_scalar", |v| {
            v["query_pre_attn_scalar"] = serde_json::json!(16)
        }),
        ("gemma3-window", "sliding window", |v| {
            v["sliding_window"] = serde_json::Value::Null
        }),
        ("gemma3-window", "local rope base", |v| {
            v["rope_parameters"]["sliding_attention"]["rope_theta"] = serde_json::json!(100000.0)
        }),
    ];
    for (name, feature, edit) in cases {
        let f = fixture(name);
        let (_tmp, dir) = edited(name, edit);
        let mut model = dir.load(BackendKind::Flex).unwrap();
        let got = model.forward_all(&f.expected.tokens).unwrap();
        let worst = got
            .iter()
            .zip(&f.logits)
            .map(|(g, e)| max_abs_diff(g, e))
            .fold(0.0, f32::max);
        assert!(
            worst > 100.0 * TOLERANCE,
            "{name}: without {feature} the logits moved only {worst}"
        );
    }
}

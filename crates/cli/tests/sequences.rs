//! `sieve generate` with several sequences: `--num-return K` (parallel samples in one batch),
//! and the `{"sequences": …}` JSON contract.

mod common;

use common::{ok, ok_json, sieve};

fn generate(extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "generate",
        "--prompt",
        "Once upon a time",
        "-n",
        "10",
        "--json",
    ];
    args.extend_from_slice(extra);
    ok_json(&args)
}

#[test]
fn num_return_gives_the_plain_run_of_seed_plus_i() {
    let k = 4;
    let out = generate(&["--seed", "11", "--num-return", "4"]);
    let sequences = out["sequences"].as_array().unwrap();
    assert_eq!(sequences.len(), k);
    assert_eq!(out["seed"], 11);
    let mut generated = 0;
    for (i, s) in sequences.iter().enumerate() {
        let seed = (11 + i).to_string();
        let plain = generate(&["--seed", &seed]);
        assert_eq!(s["tokens"], plain["tokens"], "sequence {i}");
        assert_eq!(s["text"], plain["text"], "sequence {i}");
        assert_eq!(s["finish_reason"], plain["finish_reason"], "sequence {i}");
        assert!(s.get("score").is_none());
        generated += s["tokens"].as_array().unwrap().len();
    }
    assert_eq!(out["stats"]["generated_tokens"], generated);
    // Different seeds drew different continuations.
    assert_ne!(sequences[0]["tokens"], sequences[1]["tokens"]);
}

#[test]
fn one_return_streams_like_a_plain_run_and_many_are_labelled() {
    let args = ["generate", "--prompt", "Once", "-n", "8", "--seed", "3"];
    let with = |k: &'static str| [&args[..], &["--num-return", k]].concat();
    assert_eq!(ok(&args), ok(&with("1")));
    let text = ok(&with("2"));
    assert!(text.starts_with("--- sequence 0 ("), "{text}");
    assert!(text.contains("\n--- sequence 1 ("), "{text}");
}

#[test]
fn a_bad_count_is_a_usage_error() {
    for k in ["0", "257", "x"] {
        let out = sieve(&["generate", "--prompt", "a", "--num-return", k]);
        assert_eq!(out.code, 2, "--num-return {k}");
        assert!(out.stderr.contains("--num-return"), "{}", out.stderr);
    }
}

#[test]
fn bench_model_times_batches() {
    let report = ok_json(&[
        "bench",
        "model",
        "--model",
        "embedded",
        "--prompt-len",
        "8",
        "--gen",
        "3",
        "--batch",
        "1,3",
        "--json",
    ]);
    let batches = report["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0]["batch"], 1);
    assert_eq!(batches[1]["batch"], 3);
    assert_eq!(batches[0]["speedup"], 1.0);
    for b in batches {
        assert!(b["tokens_per_s"].as_f64().unwrap() > 0.0, "{b}");
        assert!(
            b["step_p90_ms"].as_f64() >= b["step_median_ms"].as_f64(),
            "{b}"
        );
    }
    // Without --batch the report has no batches.
    let plain = ok_json(&[
        "bench",
        "model",
        "--model",
        "embedded",
        "--prompt-len",
        "8",
        "--gen",
        "2",
        "--json",
    ]);
    assert!(plain.get("batches").is_none());
    for bad in ["0", "1,,2", "x", "257"] {
        let out = sieve(&["bench", "model", "--model", "embedded", "--batch", bad]);
        assert_eq!(out.code, 2, "--batch {bad}: {}", out.stderr);
        assert!(out.stderr.contains("--batch"), "{}", out.stderr);
    }
}

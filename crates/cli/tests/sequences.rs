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

/// `sieve bench model --model embedded --prompt-len 8 --json` with `args`, as JSON.
fn bench_embedded(args: &[&str]) -> serde_json::Value {
    let common = [
        "bench",
        "model",
        "--model",
        "embedded",
        "--prompt-len",
        "8",
        "--json",
    ];
    ok_json(&[&common[..], args].concat())
}

#[test]
fn bench_model_times_batches() {
    let report = bench_embedded(&["--gen", "3", "--batch", "1,3"]);
    let batches = report["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0]["batch"], 1);
    assert_eq!(batches[1]["batch"], 3);
    assert_eq!(batches[0]["speedup"], 1.0);
    for b in batches {
        assert_eq!(b["prompts"], "forked", "{b}");
        assert!(b["tokens_per_s"].as_f64().unwrap() > 0.0, "{b}");
        assert!(
            b["step_p90_ms"].as_f64() >= b["step_median_ms"].as_f64(),
            "{b}"
        );
    }
    // Each sequence prefilled alone: the same report, marked.
    let separate = bench_embedded(&["--gen", "3", "--batch", "2", "--separate-prompts"]);
    let batches = separate["batches"].as_array().unwrap();
    assert_eq!(
        (batches[0]["batch"].clone(), batches[0]["prompts"].clone()),
        (2.into(), "separate".into())
    );
    let out = sieve(&[
        "bench",
        "model",
        "--model",
        "embedded",
        "--separate-prompts",
    ]);
    assert_eq!(
        out.code, 2,
        "--separate-prompts without --batch: {}",
        out.stderr
    );
    // Without --batch the report has no batches.
    let plain = bench_embedded(&["--gen", "2"]);
    assert!(plain.get("batches").is_none());
    for bad in ["0", "1,,2", "x", "257"] {
        let out = sieve(&["bench", "model", "--model", "embedded", "--batch", bad]);
        assert_eq!(out.code, 2, "--batch {bad}: {}", out.stderr);
        assert!(out.stderr.contains("--batch"), "{}", out.stderr);
    }
}

/// One case of `tests/fixtures/beams/llama-gqa-tied.json` (made with transformers by
/// `tools/make_beam_fixtures.py`) whose EOS ids are the model's own, run through the CLI.
#[test]
fn beams_through_the_cli_equal_transformers() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/beams/llama-gqa-tied.json"
    );
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let model = common::fixture_model("llama-gqa-tied");
    let mut checked = 0;
    for case in fixture["cases"].as_array().unwrap() {
        if case["eos_token_id"] != serde_json::json!([2, 0]) || case["num_return_sequences"] == 1 {
            continue;
        }
        let ids: Vec<String> = case["prompt"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.to_string())
            .collect();
        let mut sampler = Vec::new();
        if let Some(r) = case["repetition_penalty"].as_f64() {
            sampler.push(format!("penalty(repeat={r}, last_n=4096)"));
        }
        if let Some(n) = case["no_repeat_ngram_size"].as_u64() {
            sampler.push(format!("no_repeat_ngram({n})"));
        }
        sampler.push("greedy".to_string());
        let early = match &case["early_stopping"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let (beams, k) = (
            case["num_beams"].to_string(),
            case["num_return_sequences"].to_string(),
        );
        let (n, alpha) = (
            case["max_new_tokens"].to_string(),
            case["length_penalty"].to_string(),
        );
        let sampler = sampler.join(" | ");
        let out = ok_json(&[
            "generate",
            "--model",
            &model,
            "--tokens",
            &ids.join(","),
            "--sampler",
            &sampler,
            "--beams",
            &beams,
            "--num-return",
            &k,
            "--length-penalty",
            &alpha,
            "--early-stopping",
            &early,
            "-n",
            &n,
            "--json",
        ]);
        let sequences = out["sequences"].as_array().unwrap();
        let expected = case["sequences"].as_array().unwrap();
        assert_eq!(sequences.len(), expected.len(), "{case}");
        for (got, (tokens, score)) in sequences
            .iter()
            .zip(expected.iter().zip(case["scores"].as_array().unwrap()))
        {
            assert_eq!(&got["tokens"], tokens, "{case}");
            let d = (got["score"].as_f64().unwrap() - score.as_f64().unwrap()).abs();
            assert!(d <= 1e-4, "score differs by {d}: {case}");
        }
        checked += 1;
    }
    assert!(
        checked >= 4,
        "only {checked} cases used the model's EOS ids"
    );
}

#[test]
fn beam_mistakes_are_usage_errors() {
    for (args, says) in [
        (vec!["--beams", "2", "--num-return", "3"], "--num-return 3"),
        (vec!["--beams", "0"], "--beams 0"),
        (vec!["--beams", "2", "--sampler", "temp(0.7)"], "greedy"),
        (vec!["--beams", "2", "--sampler", "top_k(3) | dist"], "dist"),
        (
            vec!["--beams", "2", "--early-stopping", "sometimes"],
            "sometimes",
        ),
        (vec!["--length-penalty", "1"], "--beams"),
        (vec!["--beams", "2", "--stop", "x"], "--stop"),
    ] {
        let mut all = vec!["generate", "--prompt", "Once", "-n", "4"];
        all.extend(args.iter().copied());
        let out = sieve(&all);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn one_beam_is_greedy_and_scores_rank_the_beams() {
    let greedy = generate(&["--sampler", "greedy"]);
    let one = generate(&["--beams", "1"]);
    assert_eq!(one["sequences"][0]["tokens"], greedy["tokens"]);
    let four = generate(&["--beams", "4", "--num-return", "4"]);
    let scores: Vec<f64> = four["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["score"].as_f64().unwrap())
        .collect();
    assert_eq!(scores.len(), 4);
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
}

#[test]
fn speculative_greedy_prints_the_plain_tokens_and_reports_acceptance() {
    let plain = generate(&["--sampler", "greedy", "--stop", "THE END"]);
    for extra in [
        &["--draft", "embedded-draft", "--draft-tokens", "4"][..],
        &["--draft", "embedded-draft"][..],
        &["--lookup", "6"][..],
    ] {
        let mut args = vec!["--sampler", "greedy", "--stop", "THE END"];
        args.extend_from_slice(extra);
        let out = generate(&args);
        assert_eq!(out["tokens"], plain["tokens"], "{extra:?}");
        assert_eq!(out["text"], plain["text"], "{extra:?}");
        let stats = &out["stats"];
        let (drafted, accepted) = (
            stats["drafted"].as_u64().unwrap(),
            stats["accepted"].as_u64().unwrap(),
        );
        assert!(accepted <= drafted, "{stats}");
        let forwards = stats["target_forwards"].as_u64().unwrap();
        let generated = out["tokens"].as_array().unwrap().len() as u64;
        // Every accepted draft token saves a target pass (the prefill yields the first token).
        assert_eq!(forwards + accepted, generated, "{extra:?}: {stats}");
        let rate = stats["acceptance_rate"].as_f64().unwrap();
        assert!((rate - accepted as f64 / drafted.max(1) as f64).abs() < 1e-12);
    }
    // The draft model agrees with the target on this story often enough to save passes.
    let out = generate(&["--sampler", "greedy", "--draft", "embedded-draft"]);
    assert!(
        out["stats"]["accepted"].as_u64().unwrap() > 0,
        "{}",
        out["stats"]
    );
}

#[test]
fn speculative_mistakes_are_usage_errors() {
    let other_vocab = common::fixture_model("llama-gqa-tied");
    for (args, says) in [
        (vec!["--draft", other_vocab.as_str()], "tokenizer"),
        (
            vec!["--draft", "embedded-draft", "--draft-tokens", "0"],
            "--draft-tokens 0",
        ),
        (vec!["--lookup", "0"], "--lookup 0"),
        (
            vec!["--lookup", "3", "--sampler", "mirostat(5, 0.1)"],
            "mirostat",
        ),
        (vec!["--lookup", "3", "--beams", "2"], "--beams"),
        (
            vec!["--draft", "embedded-draft", "--num-return", "2"],
            "--num-return",
        ),
        (vec!["--draft-tokens", "3"], "--draft"),
    ] {
        let mut all = vec!["generate", "--prompt", "Once", "-n", "4"];
        all.extend(args.iter().copied());
        let out = sieve(&all);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn bench_model_compares_speculative_with_plain_decoding() {
    for extra in [
        &["--draft", "embedded-draft", "--draft-tokens", "3"][..],
        &["--lookup", "4"][..],
    ] {
        let mut args = vec![
            "bench",
            "model",
            "--model",
            "embedded",
            "--prompt",
            "Once upon a time",
            "--gen",
            "8",
            "--prefills",
            "0",
            "--json",
        ];
        args.extend_from_slice(extra);
        let report = ok_json(&args);
        let s = &report["speculative"];
        assert_eq!(
            s["drafter"],
            if extra[0] == "--draft" {
                "draft"
            } else {
                "lookup"
            }
        );
        for key in ["plain_tokens_per_s", "speculative_tokens_per_s", "speedup"] {
            assert!(s[key].as_f64().unwrap() > 0.0, "{key}: {s}");
        }
        let ratio = s["speculative_tokens_per_s"].as_f64().unwrap()
            / s["plain_tokens_per_s"].as_f64().unwrap();
        assert!((ratio - s["speedup"].as_f64().unwrap()).abs() < 1e-9);
        assert!(
            s["target_forwards_per_token"].as_f64().unwrap() <= 1.0,
            "{s}"
        );
    }
}

//! Drives `sieve generate`, `sieve logits` and `sieve bench model` through the real binary, on
//! the embedded model and the fixture models of `tests/fixtures/models`.

use serde_json::Value;

mod common;

use common::{fixture_model as fixture, ok_json, sieve};

#[test]
fn the_embedded_model_generates_reproducibly_with_a_seed() {
    let args = [
        "generate",
        "--prompt",
        "Once upon a time",
        "-n",
        "12",
        "--seed",
        "7",
        "--json",
    ];
    let a = ok_json(&args);
    let b = ok_json(&args);
    assert_eq!(a["tokens"], b["tokens"]);
    assert_eq!(a["text"], b["text"]);
    let tokens = a["tokens"].as_array().unwrap();
    assert!(!tokens.is_empty() && tokens.len() <= 12);
    assert!(
        ["eos", "length"].contains(&a["finish_reason"].as_str().unwrap()),
        "{a}"
    );
    assert_eq!(a["seed"], 7);
    assert!(a["stats"]["prompt_tokens"].as_u64().unwrap() > 1, "{a}");
    assert_eq!(
        a["stats"]["generated_tokens"].as_u64().unwrap() as usize,
        tokens.len()
    );
    // With a flat enough distribution, other seeds draw other tokens.
    let draws: Vec<Value> = ["1", "2", "3"]
        .iter()
        .map(|seed| {
            ok_json(&[
                "generate",
                "--prompt",
                "Once upon a time",
                "-n",
                "12",
                "--sampler",
                "temp(2.0) | dist",
                "--seed",
                seed,
                "--json",
            ])["tokens"]
                .clone()
        })
        .collect();
    assert!(draws.windows(2).any(|w| w[0] != w[1]), "{draws:?}");
}

#[test]
fn greedy_streams_the_same_text_it_reports() {
    let model = fixture("qwen2-bias");
    let args = [
        "generate",
        "--model",
        &model,
        "--prompt",
        "hello",
        "-n",
        "16",
        "--sampler",
        "greedy",
    ];
    let streamed = sieve(&args);
    assert_eq!(streamed.code, 0, "{}", streamed.stderr);
    let report = ok_json(&[&args[..], &["--json"]].concat());
    assert_eq!(
        streamed.stdout.trim_end_matches('\n'),
        report["text"].as_str().unwrap()
    );
    assert_eq!(report["sampler"], "greedy");
}

#[test]
fn a_stop_string_ends_generation_and_is_never_printed() {
    let model = fixture("qwen2-bias");
    let base = [
        "generate",
        "--model",
        &model,
        "--prompt",
        "hello",
        "-n",
        "40",
        "--sampler",
        "greedy",
        "--json",
    ];
    let full = ok_json(&base);
    let text = full["text"].as_str().unwrap().to_string();
    // A stop string from the middle of the greedy text: the text must end just before it.
    let chars: Vec<char> = text.chars().collect();
    assert!(
        chars.len() >= 6,
        "greedy text too short to test stops: {text:?}"
    );
    let stop: String = chars[chars.len() / 2..chars.len() / 2 + 2].iter().collect();
    let stopped = ok_json(&[&base[..], &["--stop", &stop]].concat());
    let cut = stopped["text"].as_str().unwrap();
    assert_eq!(stopped["finish_reason"], "stop", "{stopped}");
    assert!(
        !cut.contains(&stop),
        "{cut:?} contains the stop string {stop:?}"
    );
    assert_eq!(cut, &text[..text.find(&stop).unwrap()]);
    let streamed = sieve(&[&base[..base.len() - 1], &["--stop", &stop]].concat());
    assert_eq!(streamed.stdout.trim_end_matches('\n'), cut);
}

#[test]
fn generation_stops_at_the_context_end() {
    // llama-f32-linear has a 64-token context.
    let model = fixture("llama-f32-linear");
    let report = ok_json(&[
        "generate",
        "--model",
        &model,
        "--prompt",
        "hi",
        "-n",
        "1000",
        "--sampler",
        "logit_bias({2: -inf}) | greedy",
        "--json",
    ]);
    assert_eq!(report["finish_reason"], "length", "{report}");
    let prompt = report["stats"]["prompt_tokens"].as_u64().unwrap();
    let generated = report["tokens"].as_array().unwrap().len() as u64;
    assert_eq!(prompt + generated, 64, "{report}");
}

#[test]
fn bad_input_is_a_usage_error() {
    let long_prompt = "word ".repeat(400);
    let model = fixture("llama-f32-linear");
    let cases: [(&[&str], &str); 6] = [
        (
            &["generate", "--model", &model, "--prompt", &long_prompt],
            "longer than the model's context",
        ),
        (
            &["generate", "--prompt", "x", "--backend", "tpu"],
            "--backend",
        ),
        (
            &["generate", "--model", "/nonexistent/model", "--prompt", "x"],
            "/nonexistent/model",
        ),
        (
            &["generate", "--prompt", "x", "--sampler", "top_q(1)"],
            "unknown stage",
        ),
        (&["generate", "--prompt", "x", "--stop", ""], "--stop"),
        (
            &["logits", "--model", &model, "--tokens", "1,x"],
            "value 2 (`x`)",
        ),
    ];
    for (args, needle) in cases {
        let run = sieve(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn cuda_without_the_feature_or_a_gpu_is_a_clear_error() {
    let run = sieve(&["generate", "--prompt", "x", "--backend", "cuda"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("cuda"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn logits_match_the_transformers_fixture() {
    // expected.json holds the tokens and the logits transformers computed at every position.
    for model in ["llama-gqa-tied", "qwen2-bias"] {
        let dir = fixture(model);
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{dir}/expected.json")).unwrap())
                .unwrap();
        let tokens: Vec<String> = expected["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.to_string())
            .collect();
        for backend in ["ndarray", "flex"] {
            let got = ok_json(&[
                "logits",
                "--model",
                &dir,
                "--tokens",
                &tokens.join(","),
                "--all-positions",
                "--backend",
                backend,
                "--json",
            ]);
            assert_eq!(got["tokens"].as_array().unwrap().len(), tokens.len());
            let rows = got["logits"].as_array().unwrap();
            assert_eq!(rows.len(), tokens.len());
            let want = read_expected_logits(&dir, tokens.len());
            let mut worst = 0.0f64;
            for (row, want_row) in rows.iter().zip(&want) {
                for (g, w) in row.as_array().unwrap().iter().zip(want_row) {
                    worst = worst.max((g.as_f64().unwrap() - *w as f64).abs());
                }
            }
            assert!(
                worst < 1e-4,
                "{model} on {backend}: max abs difference {worst}"
            );
        }
    }
}

/// The expected logits, `logits.f32` (raw little-endian f32, positions × vocabulary).
fn read_expected_logits(dir: &str, positions: usize) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(format!("{dir}/logits.f32")).unwrap();
    let values: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let vocab = values.len() / positions;
    values.chunks(vocab).map(<[f32]>::to_vec).collect()
}

#[test]
fn bench_model_reports_prefill_and_decode() {
    let model = fixture("llama-gqa-tied");
    let report = ok_json(&[
        "bench",
        "model",
        "--model",
        &model,
        "--prompt-len",
        "16",
        "--gen",
        "4",
        "--json",
    ]);
    for key in [
        "time_to_first_token_s",
        "prefill_tokens_per_s",
        "decode_median_ms",
        "decode_p90_ms",
        "decode_tokens_per_s",
        "warm_prefill_tokens_per_s",
        "bandwidth_gb_s",
        "decode_floor_ms",
        "decode_vs_floor",
        "load_s",
    ] {
        assert!(report[key].as_f64().unwrap() > 0.0, "{key}: {report}");
    }
    assert_eq!(
        (report["prompt_len"].as_u64(), report["generated"].as_u64()),
        (Some(16), Some(4))
    );
    // The fixture is bf16 and tied: a step reads every weight of its checkpoint, kept bf16 in
    // memory (the exact count is checked in sieve-backends' tests).
    let file = std::fs::metadata(format!("{model}/model.safetensors"))
        .unwrap()
        .len();
    let read = report["weights_read_bytes"].as_u64().unwrap();
    assert!(read <= file && file - read < 16 << 10, "{read} of {file}");
    assert!(report["threads"].as_u64().unwrap() >= 1);
    if cfg!(target_os = "linux") {
        assert!(report["peak_rss_bytes"].as_u64().unwrap() > read);
    }
    // (The fixture is stored f16.) `--dtype f32` doubles what a step reads.
    assert_eq!(report["dtype"], "f16");
    let wide = ok_json(&[
        "bench",
        "model",
        "--model",
        &model,
        "--prompt-len",
        "4",
        "--gen",
        "2",
        "--dtype",
        "f32",
        "--json",
    ]);
    assert_eq!(wide["dtype"], "f32");
    assert_eq!(wide["weights_read_bytes"].as_u64().unwrap(), 2 * read);
}

#[test]
fn dtype_converts_the_weights_and_bad_values_are_usage_errors() {
    let model = fixture("llama-f32-linear");
    let greedy = |dtype: &str| {
        ok_json(&[
            "generate",
            "--model",
            &model,
            "--tokens",
            "5,6,7",
            "-n",
            "8",
            "--sampler",
            "greedy",
            "--dtype",
            dtype,
            "--json",
        ])["tokens"]
            .clone()
    };
    // The fixture is f32: `auto` and `f32` are the same model; bf16 runs (its tokens may
    // differ: the weights are rounded).
    assert_eq!(greedy("auto"), greedy("f32"));
    assert_eq!(greedy("bf16").as_array().unwrap().len(), 8);
    let run = sieve(&[
        "generate", "--model", &model, "--prompt", "x", "--dtype", "int4",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("int4") && run.stderr.contains("bf16"),
        "{}",
        run.stderr
    );
}

#[test]
fn kv_cache_narrows_the_cache_keeps_batch_invariance_and_refuses_bad_values() {
    let model = fixture("llama-gqa-tied");
    let run = |kv: &str, extra: &[&str]| {
        let mut args = vec![
            "generate",
            "--model",
            &model,
            "--tokens",
            "5,6,7,8",
            "-n",
            "12",
            "--seed",
            "3",
            "--sampler",
            "temp(0.8) | dist",
            "--kv-cache",
            kv,
            "--json",
        ];
        args.extend_from_slice(extra);
        ok_json(&args)
    };
    // Sequence 0 of a batch of three is the plain run, with a bf16 cache as with f32.
    for kv in ["f32", "bf16", "f16"] {
        let plain = run(kv, &[]);
        let batch = run(kv, &["--num-return", "3"]);
        assert_eq!(batch["sequences"][0]["tokens"], plain["tokens"], "{kv}");
        assert_eq!(plain["tokens"].as_array().unwrap().len(), 12, "{kv}");
    }
    let bench = |kv: &[&str]| {
        let mut args = vec![
            "bench",
            "model",
            "--model",
            &model,
            "--prompt-len",
            "4",
            "--gen",
            "2",
            "--json",
        ];
        args.extend_from_slice(kv);
        ok_json(&args)["kv_cache"].clone()
    };
    assert_eq!(bench(&[]), "f32");
    assert_eq!(bench(&["--kv-cache", "bf16"]), "bf16");
    let bad = sieve(&[
        "generate",
        "--model",
        &model,
        "--prompt",
        "x",
        "--kv-cache",
        "q4_0",
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains("--kv-cache: unknown dtype `q4_0`; expected one of: f32, bf16, f16"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_pipeline_mistake_is_reported_before_the_model_is_opened() {
    let missing = "/no/such/model/dir";
    let run_with = |sampler: &str| {
        sieve(&[
            "generate",
            "--model",
            missing,
            "--prompt",
            "Hi",
            "--sampler",
            sampler,
        ])
    };
    let run = run_with("top_q(1)");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown stage `top_q`") && run.stderr.contains("top_p"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(missing), "{}", run.stderr);
    // With a valid pipeline the same command reports the directory.
    let run = run_with("top_p(0.9)");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains(missing), "{}", run.stderr);
}

#[test]
fn tokens_stand_in_for_the_prompt() {
    let text = ok_json(&[
        "generate",
        "--prompt",
        "Once upon a time",
        "-n",
        "6",
        "--sampler",
        "greedy",
        "--json",
    ]);
    let ids = ok_json(&[
        "logits",
        "--model",
        "embedded",
        "--prompt",
        "Once upon a time",
        "--json",
    ])["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let by_ids = ok_json(&[
        "generate",
        "--tokens",
        &ids,
        "-n",
        "6",
        "--sampler",
        "greedy",
        "--json",
    ]);
    assert_eq!(by_ids["tokens"], text["tokens"]);
    assert_eq!(by_ids["text"], text["text"]);
    // Both at once is a usage error.
    let run = sieve(&["generate", "--prompt", "x", "--tokens", "1"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn the_thread_count_changes_no_token() {
    for model in ["embedded".to_string(), fixture("qwen3-headdim")] {
        let run = |threads: &str| {
            ok_json(&[
                "generate",
                "--model",
                &model,
                "--tokens",
                "1,5,9,13,17,21",
                "-n",
                "16",
                "--seed",
                "5",
                "--sampler",
                "temp(1.3) | dist",
                "--threads",
                threads,
                "--json",
            ])["tokens"]
                .clone()
        };
        let one = run("1");
        assert_eq!(one, run("2"), "{model}");
        assert_eq!(one, run("3"), "{model}");
    }
    let out = common::sieve(&["generate", "--prompt", "a", "--threads", "0"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--threads 0"), "{}", out.stderr);
}

#[test]
fn special_tokens_are_left_out_of_the_text_unless_asked_for() {
    // Token 1 is `<s>` (special, not an EOS): forced three times, it writes nothing by
    // default and itself with --special, in every output mode.
    let model = fixture("llama-f32-linear");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "generate",
            "--model",
            &model,
            "--tokens",
            "5,6",
            "-n",
            "3",
            "--sampler",
            "logit_bias({1: 100}) | greedy",
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        ok_json(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let hidden = run(&["--json"]);
    assert_eq!(hidden["tokens"], serde_json::json!([1, 1, 1]));
    assert_eq!(hidden["text"], "");
    assert_eq!(run(&["--json", "--special"])["text"], "<s><s><s>");
    let samples = run(&["--json", "--num-return", "2"]);
    assert_eq!(samples["sequences"][1]["text"], "");
    let shown = run(&["--json", "--num-return", "2", "--special"]);
    assert_eq!(shown["sequences"][1]["text"], "<s><s><s>");
    let beams = run(&["--json", "--beams", "2"]);
    assert_eq!(
        beams["sequences"][0]["tokens"],
        serde_json::json!([1, 1, 1])
    );
    assert_eq!(beams["sequences"][0]["text"], "");
    let beams = run(&["--json", "--beams", "2", "--special"]);
    assert_eq!(beams["sequences"][0]["text"], "<s><s><s>");
    // Streaming writes the same text.
    let a = args(&["--special"]);
    let streamed = sieve(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(streamed.code, 0, "{}", streamed.stderr);
    assert_eq!(streamed.stdout.trim_end(), "<s><s><s>");
}

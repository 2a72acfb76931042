//! Drives the real `sieve` binary: outputs (insta snapshots), exit codes, error messages.

use std::path::Path;

use serde_json::Value;

mod common;

use common::{ok, ok_json as json, sieve};

const LOGITS: &str = "1,2,3,0.5,-1,-inf";

#[test]
fn version_and_help() {
    assert_eq!(
        ok(&["--version"]),
        format!("sieve {}\n", env!("CARGO_PKG_VERSION"))
    );
    let help = ok(&["--help"]);
    assert!(
        help.contains("sieve apply --sampler \"top_k(2)\" --logits 1,2,3"),
        "{help}"
    );
    assert!(help.contains("Exit status: 0 ok; 2 bad usage"), "{help}");
    let apply_help = ok(&["apply", "--help"]);
    assert!(
        apply_help.contains("--history <IDS>") && apply_help.contains("Examples:"),
        "{apply_help}"
    );
}

#[test]
fn help_examples_run() {
    // Every `sieve …` example in the help texts, except those naming files that do not exist.
    let mut texts = vec![
        ok(&["--help"]),
        ok(&["apply", "--help"]),
        ok(&["check", "--help"]),
    ];
    texts.push(ok(&["bench", "sampler", "--help"]));
    let examples: Vec<String> = texts
        .iter()
        .flat_map(|t| t.lines())
        .map(str::trim)
        .filter(|l| l.starts_with("sieve ") && !l.contains(".npy") && !l.contains(".json"))
        .map(str::to_string)
        .collect();
    assert!(examples.len() >= 6, "{examples:?}");
    for line in examples {
        let mut args = split_shell(&line[6..]);
        if args[0] == "bench" {
            // Keep the bench short: a small vocabulary, few samples.
            let vocab = args
                .iter()
                .position(|a| a == "--vocab")
                .expect("bench examples give --vocab");
            args[vocab + 1] = "1000".into();
            match args.iter().position(|a| a == "--iters") {
                Some(i) => args[i + 1] = "3".into(),
                None => args.extend(["--iters".into(), "3".into()]),
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&args);
    }
}

/// Splits a command line with double quotes (enough for the help examples).
fn split_shell(line: &str) -> Vec<String> {
    let mut args = vec![String::new()];
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => args.push(String::new()),
            c => args.last_mut().unwrap().push(c),
        }
    }
    args.retain(|a| !a.is_empty());
    args
}

#[test]
fn check_prints_the_canonical_form() {
    insta::assert_snapshot!(ok(&["check", "top_k(40)|top_p(0.9)"]), @"top_k(k=40) | top_p(p=0.9, min_keep=1) | dist(seed=-1)");
    insta::assert_snapshot!(ok(&["check", "top_k(k=3) | greedy"]), @"top_k(k=3) | greedy");
}

#[test]
fn samplers_listing() {
    insta::assert_snapshot!("samplers_text", ok(&["samplers"]));
}

#[test]
fn samplers_json() {
    let text = ok(&["samplers", "--json"]);
    let stages: Value = serde_json::from_str(&text).unwrap();
    let stages = stages.as_array().unwrap();
    let registry = sieve_samplers::builtin_registry();
    let names: Vec<&str> = stages.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, registry.names().collect::<Vec<_>>());
    for stage in stages {
        // Sorted here: with serde_json's `preserve_order` (which a workspace build can enable
        // through a plugin's dependencies) objects keep document order.
        let mut keys: Vec<&String> = stage.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            ["doc", "name", "origin", "params", "plugin", "selector"],
            "{stage}"
        );
        for p in stage["params"].as_array().unwrap() {
            assert_eq!(p["required"], p["default"].is_null(), "{p}");
            assert!(["float", "int", "bool", "string", "list", "map"]
                .contains(&p["type"].as_str().unwrap()));
        }
    }
    insta::assert_snapshot!("samplers_json", text);
    // JSON has no infinity: unbounded ranges say "inf".
    let temp = stages.iter().find(|s| s["name"] == "temp").unwrap();
    assert_eq!(temp["params"][0]["range"]["max"], "inf");
}

#[test]
fn apply_json() {
    let out = ok(&[
        "apply",
        "--sampler",
        "top_k(3)",
        "--logits",
        LOGITS,
        "--seed",
        "42",
        "--json",
    ]);
    insta::assert_snapshot!("apply_json_top_k", out);
    let v: Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<u64> = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [2, 1, 0]);
    let total: f64 = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["p"].as_f64().unwrap())
        .sum();
    assert!((total - 1.0).abs() < 1e-6);
    assert_eq!(v["seed"], 42);
}

#[test]
fn apply_text() {
    let out = ok(&[
        "apply",
        "--sampler",
        "top_k(3) | greedy",
        "--logits",
        LOGITS,
        "--seed",
        "1",
    ]);
    insta::assert_snapshot!("apply_text_top_k_greedy", out);
}

#[test]
fn apply_trace() {
    let out = ok(&[
        "apply",
        "--sampler",
        "top_k(3)",
        "--logits",
        LOGITS,
        "--seed",
        "42",
        "--trace",
    ]);
    insta::assert_snapshot!("apply_trace_top_k", out);
}

#[test]
fn apply_survivors_exclude_masked_and_keep_pipeline_order() {
    // No truncation: the dense order stays, the -inf token is left out.
    let v = json(&[
        "apply",
        "--sampler",
        "greedy",
        "--logits",
        LOGITS,
        "--json",
        "--seed",
        "0",
    ]);
    let ids: Vec<u64> = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [0, 1, 2, 3, 4]);
    assert_eq!(v["selected"], 2);
}

#[test]
fn probs_are_log_probabilities() {
    let v = json(&[
        "apply",
        "--sampler",
        "greedy",
        "--probs",
        "0.2,0.5,0.3,0",
        "--json",
        "--seed",
        "0",
    ]);
    let c = v["candidates"].as_array().unwrap();
    assert_eq!(c.len(), 3, "p = 0 is masked");
    assert!((c[1]["logit"].as_f64().unwrap() - 0.5f64.ln()).abs() < 1e-6);
    assert!((c[1]["p"].as_f64().unwrap() - 0.5).abs() < 1e-6);
    assert_eq!(v["selected"], 1);
}

#[test]
fn history_reaches_context_and_accept() {
    // repeat=2 halves token 0's logit (3 → 1.5), so greedy picks token 1 (2.9).
    let args = [
        "apply",
        "--sampler",
        "penalty(2.0) | greedy",
        "--logits",
        "3,2.9,1",
        "--json",
        "--seed",
        "0",
    ];
    assert_eq!(json(&args)["selected"], 0);
    let mut with_history = args.to_vec();
    with_history.extend(["--history", "0"]);
    let v = json(&with_history);
    assert_eq!(v["selected"], 1);
    assert_eq!(v["candidates"][0]["logit"], 1.5);
}

#[test]
fn trace_does_not_change_the_selection() {
    for seed in 0..12 {
        let seed = seed.to_string();
        let base = [
            "apply",
            "--sampler",
            "temp(1.5) | top_p(0.95)",
            "--logits",
            "0.3,0.1,0.2,0,0.25,0.05",
            "--seed",
            &seed,
        ];
        let plain = ok(&base);
        let traced = ok(&[&base[..], &["--trace"]].concat());
        assert!(
            traced.ends_with(&plain),
            "seed {seed}:\n{traced}\n---\n{plain}"
        );
        let selected = plain
            .lines()
            .next()
            .unwrap()
            .strip_prefix("selected: ")
            .unwrap();
        let stage_line = traced
            .lines()
            .find(|l| l.starts_with("stage 3: dist:"))
            .unwrap();
        assert!(
            stage_line.ends_with(&format!("selected {selected}")),
            "{stage_line}"
        );
    }
}

#[test]
fn a_failing_pipeline_still_prints_its_trace() {
    // top_k keeps token 2 only, then logit_bias masks it: nothing is left to select.
    let sampler = "top_k(1) | logit_bias({2: -inf})";
    let run = sieve(&[
        "apply", "-s", sampler, "--logits", "1,2,3", "--seed", "0", "--trace",
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: running the pipeline: stage `logit_bias` left no finite candidate\n"
    );
    assert!(
        run.stdout.contains("\ninput: 3 candidates"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("\nstage 1: top_k: 1 candidate (2 removed)"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("stage 2"), "{}", run.stdout);
    assert!(!run.stdout.contains("selected"), "{}", run.stdout);
}

#[test]
fn a_random_seed_is_reported_and_reproduces_the_run() {
    let args = [
        "apply",
        "--sampler",
        "dist",
        "--logits",
        "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0",
        "--json",
    ];
    let first = json(&args);
    let seed = first["seed"].as_u64().expect("a seed is reported");
    let again = json(&[&args[..], &["--seed", &seed.to_string()]].concat());
    assert_eq!(first, again);
}

/// Writes `bytes` to `dir/name` and returns the path as text.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn logits_files_read_like_the_list() {
    let values = [1.0f32, 2.0, 3.0, 0.5, -1.0, f32::NEG_INFINITY];
    let dir = tempfile::tempdir().unwrap();
    let raw: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': (1, {}), }}",
        values.len()
    );
    let header = format!("{header:<117}\n"); // 10 + 118 = 128 bytes before the data
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header.as_bytes());
    npy.extend(&raw);
    let files = [
        write(dir.path(), "l.f32", &raw),
        write(dir.path(), "l.npy", &npy),
        write(dir.path(), "l.json", br#"[1, 2, 3, 0.5, -1, "-inf"]"#),
        write(dir.path(), "l2.json", br#"[[1, 2, 3, 0.5, -1, null]]"#),
    ];
    let want = ok(&[
        "apply", "-s", "top_k(4)", "--logits", LOGITS, "--seed", "5", "--json",
    ]);
    for file in files {
        assert_eq!(
            ok(&["apply", "-s", "top_k(4)", "--logits", &file, "--seed", "5", "--json"]),
            want,
            "{file}"
        );
    }
}

#[test]
fn errors_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let odd = write(dir.path(), "odd.bin", &[0, 0, 128, 63, 0]);
    let ints = write(dir.path(), "ints.npy", &{
        let mut f = b"\x93NUMPY\x01\x00".to_vec();
        let h = format!(
            "{:<117}\n",
            "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }"
        );
        f.extend((h.len() as u16).to_le_bytes());
        f.extend(h.as_bytes());
        f.extend([1, 0, 0, 0]);
        f
    });
    let bad_json = write(dir.path(), "bad.json", b"[1, true]");
    let cases: Vec<Vec<&str>> = vec![
        vec!["check", "temp(0.7) | top_q(0.9)"],
        vec!["check", "top_k(-1)"],
        vec!["apply", "-s", "top_k(2)", "--logits", "1,2,abc"],
        vec!["apply", "-s", "top_k(2)", "--logits", "1,,2"],
        vec!["apply", "-s", "top_k(2)", "--logits", "1,inf"],
        vec!["apply", "-s", "top_k(2)", "--logits", ""],
        vec!["apply", "-s", "top_k(2)", "--logits", "missing.npy"],
        vec!["apply", "-s", "top_k(2)", "--logits", "some/dir/logits"],
        vec!["apply", "-s", "top_k(2)", "--logits", &odd],
        vec!["apply", "-s", "top_k(2)", "--logits", &ints],
        vec!["apply", "-s", "top_k(2)", "--logits", &bad_json],
        vec!["apply", "-s", "top_k(2)", "--probs", "0.5,1.5"],
        vec!["apply", "-s", "top_k(2)", "--probs", "0,0"],
        vec![
            "apply",
            "-s",
            "top_k(2)",
            "--logits",
            "1,2",
            "--history",
            "0,2",
        ],
        vec![
            "apply",
            "-s",
            "top_k(2)",
            "--logits",
            "1,2",
            "--history",
            "x",
        ],
        vec!["apply", "-s", "top_k(2)", "--logits", "1,2", "--seed", "-1"],
        vec![
            "apply", "-s", "top_k(2)", "--logits", "1,2", "--json", "--trace",
        ],
        vec!["apply", "-s", "top_k(2)", "--logits", "1,2", "--probs", "1"],
        vec!["apply", "-s", "top_k(2)"],
        vec!["apply", "-s", "top_k(k=2", "--logits", "1,2"],
        vec!["apply", "-s", "top_k(2)", "--logits", "-inf,nan"],
        vec![
            "apply",
            "-s",
            "logit_bias({0: -inf, 1: -inf})",
            "--logits",
            "1,2",
            "--seed",
            "0",
        ],
        vec!["bench", "sampler", "-s", "greedy"],
        vec!["bench", "sampler", "-s", "greedy", "--vocab", "0"],
        vec![
            "bench", "sampler", "-s", "greedy", "--vocab", "3", "--logits", "1,2",
        ],
        vec!["bench", "sampler", "-s", "nope", "--vocab", "3"],
        vec!["frobnicate"],
    ];
    let mut report = String::new();
    for args in &cases {
        let run = sieve(args);
        let shown: Vec<String> = args
            .iter()
            .map(|a| a.replace(dir.path().to_str().unwrap(), "$DIR"))
            .map(|a| {
                if a.is_empty() || a.contains([' ', '|', '(', '{']) {
                    format!("'{a}'")
                } else {
                    a
                }
            })
            .collect();
        report.push_str(&format!("$ sieve {}\n", shown.join(" ")));
        report.push_str(&run.stderr.replace(dir.path().to_str().unwrap(), "$DIR"));
        report.push_str(&format!("[exit {}]\n\n", run.code));
        assert_ne!(run.code, 0, "{args:?} should fail");
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    }
    insta::assert_snapshot!("errors", report);
}

#[test]
fn bench_sampler_json() {
    let v = json(&[
        "bench",
        "sampler",
        "--sampler",
        "top_k(5)",
        "--vocab",
        "2000",
        "--iters",
        "20",
        "--json",
    ]);
    let mut keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "copying_median_us",
            "copying_p90_us",
            "copying_ratio",
            "floor_median_us",
            "floor_p90_us",
            "iters",
            "median_us",
            "p90_us",
            "ratio",
            "sampler",
            "vocab"
        ]
    );
    assert_eq!(v["sampler"], "top_k(k=5) | dist(seed=-1)");
    assert_eq!(
        (v["vocab"].as_u64(), v["iters"].as_u64()),
        (Some(2000), Some(20))
    );
    let f = |k: &str| v[k].as_f64().unwrap();
    assert!(f("median_us") > 0.0 && f("p90_us") >= f("median_us"));
    assert!(f("floor_median_us") > 0.0 && f("floor_p90_us") >= f("floor_median_us"));
    assert!((f("ratio") - f("median_us") / f("floor_median_us")).abs() < 1e-9 * f("ratio"));
    assert!(f("copying_median_us") > 0.0 && f("copying_p90_us") >= f("copying_median_us"));
    let copying = f("copying_median_us") / f("floor_median_us");
    assert!((f("copying_ratio") - copying).abs() < 1e-9 * copying);
}

#[test]
fn bench_sampler_text_on_a_logits_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "l.json", b"[1, 2, 3, 4]");
    let out = ok(&[
        "bench", "sampler", "-s", "greedy", "--logits", &file, "--iters", "5",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "sampler:  greedy");
    assert_eq!(
        lines[1],
        "vocab:    4 logits (from --logits), 64-token history"
    );
    assert!(lines[2].starts_with("iters:    5 samples each"), "{out}");
    assert!(
        lines[3].starts_with("pipeline: median ")
            && lines[3].ends_with(" µs per token (logits vector handed over, as `generate` does)"),
        "{out}"
    );
    assert!(
        lines[4].starts_with("copying:  median ") && lines[4].ends_with("× the floor"),
        "{out}"
    );
    assert!(lines[5].starts_with("floor:    median "), "{out}");
    assert!(
        lines[6].starts_with("ratio:    ")
            && lines[6].ends_with("× the floor (median / floor median)"),
        "{out}"
    );
}

#[test]
fn an_unknown_tool_call_parser_is_a_usage_error() {
    let run = sieve(&["serve", "--tool-call-parser", "xml", "--port", "0"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--tool-call-parser")
            && run.stderr.contains("auto, hermes, json or none"),
        "{}",
        run.stderr
    );
}

#[test]
fn serve_refuses_limits_that_would_refuse_every_request() {
    for (flag, value) in [
        ("--max-queue", "0"),
        ("--prepare-threads", "0"),
        ("--parallel", "0"),
    ] {
        let run = sieve(&["serve", flag, value, "--port", "0"]);
        assert_eq!(run.code, 2, "{flag}: {}", run.stderr);
        assert!(run.stderr.contains(flag), "{}", run.stderr);
    }
}

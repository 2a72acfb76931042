//! `--quantize TYPE` on a loading command and `sieve quantize IN OUT.gguf --type TYPE`, through
//! the real binary: the file written loads back (with its tokenizer: every key is copied) and
//! gives the logits `--quantize` gives on the same input; bad usage exits 2 naming the cause.

mod common;

use std::path::{Path, PathBuf};

use common::{fixture_model, logits, ok, sieve};

/// llama.cpp's F16 conversion of a tiny random Llama (`tests/fixtures/gguf/llama`), with its
/// tokenizer.
fn llama_f16() -> String {
    let models = PathBuf::from(fixture_model("llama-gqa-tied"));
    let file = models.parent().unwrap().parent().unwrap();
    let file = file.join("gguf").join("llama").join("llama-F16.gguf");
    file.to_str().unwrap().to_string()
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_quantized_file_gives_the_logits_of_quantizing_at_load() {
    let input = llama_f16();
    let tmp = tempfile::tempdir().unwrap();
    let float = logits(&input, &[]);
    for ty in ["q8_0", "q4_k"] {
        let out = tmp.path().join(format!("llama-{ty}.gguf"));
        let printed = ok(&["quantize", &input, path_str(&out), "--type", ty]);
        assert!(printed.contains(ty), "{printed}");
        let at_load = logits(&input, &["--quantize", ty]);
        assert_ne!(at_load, float, "{ty}: nothing was quantized");
        assert_eq!(logits(path_str(&out), &[]), at_load, "{ty}");
        // The tokenizer came along: a prompt encodes and the file generates.
        let run = sieve(&[
            "generate",
            "--model",
            path_str(&out),
            "--prompt",
            "a b",
            "--max-tokens",
            "2",
            "--sampler",
            "greedy",
        ]);
        assert_eq!(run.code, 0, "{ty}: {}", run.stderr);
    }
}

#[test]
fn a_safetensors_directory_quantizes_at_load() {
    let dir = fixture_model("llama-gqa-tied");
    let float = logits(&dir, &[]);
    let q8 = logits(&dir, &["--quantize", "q8_0"]);
    assert_ne!(q8, float);
    let (a, b) = (float.as_array().unwrap(), q8.as_array().unwrap());
    let worst = a
        .iter()
        .flat_map(|r| r.as_array().unwrap())
        .zip(b.iter().flat_map(|r| r.as_array().unwrap()))
        .map(|(x, y)| (x.as_f64().unwrap() - y.as_f64().unwrap()).abs())
        .fold(0.0, f64::max);
    // What the library test measures on this fixture (1.52): the same bits here.
    assert!(worst < 1.8, "{worst}");
    // Same flag on another loading command.
    let run = sieve(&[
        "generate",
        "--model",
        &dir,
        "--prompt",
        "a b",
        "--max-tokens",
        "2",
        "--quantize",
        "q4_0",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn bad_usage_exits_2_naming_the_cause() {
    let dir = fixture_model("llama-gqa-tied");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.gguf");
    let input = llama_f16();
    let mistral = fixture_model("mistral-window-sharded");
    for (args, wanted) in [
        (
            vec![
                "logits",
                "--model",
                &dir,
                "--tokens",
                "1",
                "--quantize",
                "q7",
            ],
            "q4_k",
        ),
        (
            vec![
                "logits",
                "--model",
                &dir,
                "--tokens",
                "1",
                "--quantize",
                "q8_0",
                "--dtype",
                "bf16",
            ],
            "--dtype",
        ),
        (
            vec![
                "logits",
                "--model",
                &dir,
                "--tokens",
                "1",
                "--quantize",
                "q8_0",
                "--backend",
                "cuda",
            ],
            "cuda",
        ),
        (
            vec!["quantize", &mistral, path_str(&out), "--type", "q8_0"],
            "sliding_window",
        ),
        (
            vec!["quantize", &input, path_str(&out), "--type", "f16"],
            "q8_0",
        ),
        (
            vec!["quantize", &input, &input, "--type", "q8_0"],
            "the output is the input",
        ),
    ] {
        let run = sieve(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(wanted), "{args:?}: {}", run.stderr);
    }
    assert!(!out.exists());
}

//! `sieve quantize HF_DIR OUT.gguf --type TYPE` through the real binary: the file written
//! runs alone (tokenizer, chat template and all) and gives the logits `--quantize TYPE` gives
//! on the directory; a directory whose tokenizer GGUF cannot state exits 2 naming what.

mod common;

use std::fs;
use std::path::Path;

use common::{fixture_model, logits, ok, sieve};
use serde_json::Value;

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_hugging_face_directory_quantizes_to_a_file_that_runs_alone() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, ty) in [("llama-gqa-tied", "q8_0"), ("gemma3-window", "q4_0")] {
        let dir = fixture_model(name);
        let out = tmp.path().join(format!("{name}-{ty}.gguf"));
        let printed = ok(&["quantize", &dir, path_str(&out), "--type", ty]);
        assert!(
            printed.contains(ty) && !printed.contains("note:"),
            "{printed}"
        );
        assert_eq!(
            logits(path_str(&out), &[]),
            logits(&dir, &["--quantize", ty]),
            "{name} {ty}"
        );
        // The same greedy text from the file as from the directory quantized at load: the
        // prompt encodes to the same ids and generation stops at the same tokens.
        let generate = |model: &str, extra: &[&str]| {
            let mut args = vec![
                "generate",
                "--model",
                model,
                "--prompt",
                "Hello world, 3 + 33 = 36",
                "--max-tokens",
                "8",
                "--sampler",
                "greedy",
            ];
            args.extend(extra);
            let run = sieve(&args);
            assert_eq!(run.code, 0, "{name}: {}", run.stderr);
            run.stdout
        };
        assert_eq!(
            generate(path_str(&out), &[]),
            generate(&dir, &["--quantize", ty]),
            "{name} {ty}"
        );
    }
}

#[test]
fn a_tokenizer_gguf_cannot_state_exits_2_naming_it() {
    let src = Path::new(&fixture_model("llama-gqa-tied")).to_path_buf();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("model");
    fs::create_dir(&dir).unwrap();
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let tokenizer = dir.join("tokenizer.json");
    let mut json: Value = serde_json::from_str(&fs::read_to_string(&tokenizer).unwrap()).unwrap();
    json["normalizer"] = serde_json::json!({"type": "Lowercase"});
    fs::write(&tokenizer, json.to_string()).unwrap();
    let out = tmp.path().join("out.gguf");
    let run = sieve(&["quantize", path_str(&dir), path_str(&out), "--type", "q8_0"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("normalizer") && run.stderr.contains("GGUF cannot state"),
        "{}",
        run.stderr
    );
    assert!(!out.exists());
    // Writing over the directory's own files is refused.
    let weights = dir.join("model.safetensors");
    let run = sieve(&[
        "quantize",
        path_str(&dir),
        path_str(&weights),
        "--type",
        "q8_0",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("the output is the input"),
        "{}",
        run.stderr
    );
}

//! The `grammar` plugin (`plugins/grammar`): its listing and diagnostics through the real
//! `sieve` binary; its masks through the real C ABI (the library loaded as `sieve` loads it)
//! with a vocabulary, which `sieve apply` does not have; and `sieve generate` with a
//! JSON-schema grammar on a fixture model.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use sieve_core::{BuildContext, Candidates, Context, Vocab};
use sieve_plugin_host::Plugin;

use crate::{ok, sieve};

/// Builds the grammar plugin (once per test run, with the cargo running the tests, in the
/// tests' profile) and returns its library's path.
fn grammar_lib() -> &'static str {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut cmd = Command::new(env!("CARGO"));
        cmd.current_dir(&root).args([
            "build",
            "--message-format=json-render-diagnostics",
            "-p",
            "sieve-plugin-grammar",
        ]);
        if !cfg!(debug_assertions) {
            cmd.arg("--release");
        }
        let out = cmd
            .output()
            .expect("run cargo build for the grammar plugin");
        assert!(
            out.status.success(),
            "building the grammar plugin failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let suffix = std::env::consts::DLL_SUFFIX;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| {
                m["reason"] == "compiler-artifact" && m["target"]["name"] == "sieve_grammar"
            })
            .flat_map(|m| {
                m["filenames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.as_str().map(PathBuf::from))
                    .collect::<Vec<_>>()
            })
            .find(|f| f.to_string_lossy().ends_with(suffix))
            .expect("cargo built the grammar plugin's library")
    })
    .to_str()
    .expect("UTF-8 path")
}

/// `text` with the library's path shown as `$LIB/<file name>`.
fn redact(text: &str) -> String {
    let path = grammar_lib();
    let file = Path::new(path).file_name().unwrap().to_str().unwrap();
    text.replace(path, &format!("$LIB/{file}"))
}

/// Runs `sieve <command> --plugin <grammar> <rest…>`: the exit code and stderr (redacted).
fn run(command: &str, rest: &[&str]) -> (i32, String) {
    let mut args = vec![command, "--plugin", grammar_lib()];
    args.extend_from_slice(rest);
    let r = sieve(&args);
    (r.code, redact(&r.stderr))
}

#[test]
fn listing_and_diagnostics() {
    let listing = redact(&ok(&["samplers", "--plugin", grammar_lib()]));
    let block = listing
        .split("\n\n")
        .find(|b| b.starts_with("grammar "))
        .expect("grammar listed");
    let mut report = format!("$ sieve samplers --plugin …\n{block}\n");
    let dir = tempfile::tempdir().unwrap();
    let txt = dir.path().join("grammar.txt");
    std::fs::write(&txt, "a+").unwrap();
    let txt_arg = format!("grammar(file='{}')", txt.display());
    let cases: Vec<(&str, &str)> = vec![
        ("check", "grammar"),
        ("check", "grammar(regex='a+', lark='start: \"a\"')"),
        ("check", "grammar(json_schema='{\"type\": ')"),
        ("check", "grammar(json_schema='{\"type\": \"frobnicate\"}')"),
        ("check", "grammar(regex='(ab')"),
        (
            "check",
            "temp(0.7) | grammar(lark='start: missing_rule') | dist",
        ),
        ("check", "grammar(regex='[0-9]+') | greedy"),
        ("apply", "grammar(regex='[0-9]+') | greedy"),
        ("check", &txt_arg),
    ];
    for (command, pipeline) in cases {
        let (code, stderr) = match command {
            "check" => run("check", &[pipeline]),
            _ => run("apply", &["-s", pipeline, "--logits", "1,2,3"]),
        };
        let shown = pipeline.replace(&dir.path().display().to_string(), "$TMP");
        report.push_str(&format!("\n$ sieve {command} '{shown}'  (exit {code})\n"));
        report.push_str(&stderr.replace(&dir.path().display().to_string(), "$TMP"));
        assert_eq!(code, 2, "{command} {pipeline}: {stderr}");
    }
    insta::assert_snapshot!("grammar_diagnostics", report);
}

/// A vocabulary: every printable ASCII character, some longer tokens, and an EOS at the end.
fn vocab() -> Vocab {
    let mut tokens: Vec<Vec<u8>> = (0x20u8..0x7f).map(|b| vec![b]).collect();
    for t in [
        "\n", "{\"", "\":", "\",", "\"}", "true", "false", "null", "ab", "ba", "abc", "12", "345",
        "id", "ok", "cat", "dog", "</s>",
    ] {
        tokens.push(t.as_bytes().to_vec());
    }
    let eos = tokens.len() as u32 - 1;
    Vocab::new(tokens, vec![eos])
}

/// Deterministic logits for step `step`: a hash of (token, step), in [-4, 4).
fn logits(n: usize, step: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let h = (i as u64 * 2_654_435_761 + step as u64 * 40_503 + 17) % 8_000;
            h as f32 / 1_000.0 - 4.0
        })
        .collect()
}

/// Runs `pipeline` (the grammar plugin loaded through the ABI) on [`vocab`] after `prompt`,
/// until an EOS or `max` steps: per step the tokens the grammar kept and the chosen one.
fn trace(pipeline: &str, prompt: &[u32], max: usize) -> String {
    let v = vocab();
    // SAFETY: the plugin this workspace builds, following the ABI.
    let plugin = unsafe { Plugin::load(Path::new(grammar_lib())) }.expect("the plugin loads");
    let mut registry = sieve_samplers::builtin_registry();
    plugin.register(&mut registry).unwrap();
    let cx = BuildContext {
        seed: 7,
        vocab: Some(&v),
    };
    let mut p = sieve_dsl::compile(pipeline, &registry, &cx)
        .unwrap_or_else(|d| panic!("{}", d.render(pipeline)))
        .pipeline;
    let text_of = |id: u32| String::from_utf8_lossy(v.token_bytes(id).unwrap()).into_owned();
    for &t in prompt {
        p.accept(t);
    }
    let mut history = prompt.to_vec();
    let mut out = format!("$ {pipeline}   (prompt {:?})\n", prompt_text(&v, prompt));
    let mut text = String::new();
    for step in 0..max {
        let mut c = Candidates::from_logits(&logits(v.len(), step));
        let cx = Context {
            history: &history,
            prompt_len: prompt.len(),
            vocab: Some(&v),
            step,
        };
        let mut kept = Vec::new();
        let token = p
            .sample_observed(&mut c, &cx, |stage, c| {
                if stage == "grammar" {
                    kept = c.iter().map(|(id, _)| id).collect();
                }
            })
            .unwrap_or_else(|e| panic!("{pipeline}, step {step}: {e}"));
        p.accept(token);
        kept.sort_unstable();
        let shown: Vec<String> = kept
            .iter()
            .take(12)
            .map(|&id| format!("{:?}", text_of(id)))
            .collect();
        let more = if kept.len() > 12 { ", …" } else { "" };
        let chosen = if v.eos().contains(&token) {
            "EOS".to_string()
        } else {
            format!("{:?}", text_of(token))
        };
        out.push_str(&format!(
            "  step {step:>2}: {:>3} kept [{}{more}] → {chosen}\n",
            kept.len(),
            shown.join(", ")
        ));
        if v.eos().contains(&token) {
            break;
        }
        text.push_str(&text_of(token));
        history.push(token);
    }
    out.push_str(&format!("  text: {text:?}\n"));
    out
}

fn prompt_text(v: &Vocab, prompt: &[u32]) -> String {
    prompt
        .iter()
        .map(|&t| String::from_utf8_lossy(v.token_bytes(t).unwrap()).into_owned())
        .collect()
}

/// The id of `text` in [`vocab`].
fn id(text: &str) -> u32 {
    vocab().find(text.as_bytes()).expect("a token")
}

#[test]
fn outputs_through_the_abi() {
    let schema = r#"{"type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 999}, "ok": {"type": "boolean"}}, "required": ["id", "ok"], "additionalProperties": false, "x-guidance": {"whitespace_flexible": false}}"#;
    let mut report = String::new();
    // The prompt ("ba" "x") is accepted before the first step, and is not fed to the grammar.
    report.push_str(&trace(
        "grammar(regex='(ab|ba)+c') | greedy",
        &[id("ba"), id("x")],
        20,
    ));
    report.push_str(&trace(
        &format!("grammar(json_schema='{schema}') | dist"),
        &[],
        40,
    ));
    report.push_str(&trace(
        "temp(0.8) | grammar(lark='start: (\"cat\" | \"dog\") (\" \" (\"cat\" | \"dog\")){1,2}') | top_k(3) | dist",
        &[],
        20,
    ));
    insta::assert_snapshot!("grammar_outputs", report);
}

#[test]
fn json_outputs_through_the_abi_parse_and_follow_the_schema() {
    let schema = r#"{"type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 999}, "ok": {"type": "boolean"}}, "required": ["id", "ok"], "additionalProperties": false, "x-guidance": {"whitespace_flexible": false}}"#;
    for seed in 1..=6 {
        let pipeline = format!("temp(1.5) | grammar(json_schema='{schema}') | dist(seed={seed})");
        let report = trace(&pipeline, &[], 60);
        assert!(report.contains("→ EOS"), "seed {seed}: no EOS\n{report}");
        let line = report.lines().last().unwrap();
        let text: String =
            serde_json::from_str(line.trim_start().strip_prefix("text: ").unwrap()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("seed {seed}: {text:?} is not JSON: {e}"));
        let id = value["id"].as_i64().expect("an integer id");
        assert!((0..=999).contains(&id), "{text}");
        assert!(value["ok"].is_boolean(), "{text}");
        assert_eq!(value.as_object().unwrap().len(), 2, "{text}");
    }
}

/// The fixture model directory `name`.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/models")
        .join(name)
}

/// The schema of the `sieve generate` test: short enough for the fixtures' contexts.
const GENERATE_SCHEMA: &str = r#"{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}, "ok": {"type": "boolean"}, "tag": {"enum": ["red", "green"]}}, "required": ["n", "ok", "tag"], "additionalProperties": false, "x-guidance": {"whitespace_flexible": false}}"#;

/// `sieve generate` on the fixture models with a JSON-schema grammar, five seeds each: the
/// text parses as JSON and follows the schema. Each run is
///
/// ```text
/// sieve generate --model tests/fixtures/models/<model> --prompt "JSON:" \
///   --sampler "grammar(json_schema='<GENERATE_SCHEMA>') | dist" \
///   --plugin <libsieve_grammar.so> --seed <N> --max-tokens 50 --json
/// ```
///
/// and reads the generated text from the `text` field of the JSON report. The fixtures'
/// 300-token byte-level vocabularies spell every byte, so JSON is always reachable; the
/// compact schema keeps the output (33 characters at most) well inside the smallest
/// fixture context (64 tokens).
#[test]
fn generate_with_a_json_schema_emits_valid_json() {
    let pipeline = format!("grammar(json_schema='{GENERATE_SCHEMA}') | dist");
    for model in ["llama-f32-linear", "qwen2-bias"] {
        let dir = fixture(model);
        for seed in ["1", "2", "3", "4", "5"] {
            let out = ok(&[
                "generate",
                "--model",
                dir.to_str().unwrap(),
                "--prompt",
                "JSON:",
                "--sampler",
                &pipeline,
                "--plugin",
                grammar_lib(),
                "--seed",
                seed,
                "--max-tokens",
                "50",
                "--json",
            ]);
            let report: serde_json::Value = serde_json::from_str(&out)
                .unwrap_or_else(|e| panic!("{model} seed {seed}: not JSON ({e}): {out}"));
            let text = report["text"].as_str().expect("the generated text");
            let value: serde_json::Value = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("{model} seed {seed}: {text:?} is not JSON: {e}"));
            let obj = value.as_object().expect("an object");
            assert_eq!(obj.len(), 3, "{text}");
            let n = obj["n"].as_i64().expect("an integer n");
            assert!((0..=99).contains(&n), "{text}");
            assert!(obj["ok"].is_boolean(), "{text}");
            assert!(obj["tag"] == "red" || obj["tag"] == "green", "{text}");
        }
    }
}

//! `sieve template` and `sieve generate --chat` on the fixtures that carry a chat template.

mod common;

use common::{fixture_model, ok, ok_json, sieve};

const CHAT_FIXTURES: [&str; 3] = ["qwen3-headdim", "gemma2-softcap", "gemma3-window"];

fn messages_file(json: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), json).unwrap();
    file
}

#[test]
fn template_prints_the_rendered_prompt_exactly_and_its_tokens() {
    let file = messages_file(
        r#"[{"role": "system", "content": " S "}, {"role": "user", "content": "Hi"}]"#,
    );
    let path = file.path().to_str().unwrap();
    let model = fixture_model("gemma3-window");
    let text = ok(&["template", "--model", &model, "--messages", path]);
    assert_eq!(
        text,
        "<s><|endoftext|>system\nS</s>\n<|endoftext|>user\nHi</s>\n<|endoftext|>assistant\n"
    );
    let text = ok(&[
        "template",
        "--model",
        &model,
        "--messages",
        path,
        "--no-generation-prompt",
    ]);
    assert!(text.ends_with("Hi</s>\n"), "{text:?}");
    let v = ok_json(&["template", "--model", &model, "--messages", path, "--json"]);
    let tokens: Vec<u64> = serde_json::from_value(v["tokens"].clone()).unwrap();
    assert_eq!(tokens[0], 1, "one BOS, from the template");
    assert_eq!(tokens.iter().filter(|&&t| t == 1).count(), 1);
    assert_eq!(
        tokens.iter().filter(|&&t| t == 2).count(),
        2,
        "</s> as its id"
    );
}

#[test]
fn template_errors_are_usage_errors() {
    let file = messages_file(r#"[{"role": "robot", "content": "x"}]"#);
    let path = file.path().to_str().unwrap();
    let run = sieve(&[
        "template",
        "--model",
        &fixture_model("qwen3-headdim"),
        "--messages",
        path,
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("unknown role robot"), "{}", run.stderr);
    let run = sieve(&[
        "template",
        "--model",
        &fixture_model("qwen2-bias"),
        "--messages",
        path,
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no chat template"), "{}", run.stderr);
}

#[test]
fn generate_chat_runs_on_every_family_with_a_template() {
    for name in CHAT_FIXTURES {
        let model = fixture_model(name);
        let v = ok_json(&[
            "generate",
            "--model",
            &model,
            "--chat",
            "--system",
            "Be brief.",
            "--prompt",
            "Hello",
            "-n",
            "4",
            "--sampler",
            "greedy",
            "--json",
        ]);
        let rendered = ok(&[
            "template",
            "--model",
            &model,
            "--messages",
            messages_file(
                r#"[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]"#,
            )
            .path()
            .to_str()
            .unwrap(),
            "--json",
        ]);
        let rendered: serde_json::Value = serde_json::from_str(&rendered).unwrap();
        assert_eq!(
            v["stats"]["prompt_tokens"].as_u64().unwrap() as usize,
            rendered["tokens"].as_array().unwrap().len(),
            "{name}: the chat prompt is the rendered template"
        );
        assert!(!v["tokens"].as_array().unwrap().is_empty(), "{name}");
    }
}

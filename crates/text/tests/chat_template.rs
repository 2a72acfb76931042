//! Chat templates render exactly as transformers renders them: our own templates (using the
//! constructs real templates use) against the renderings `tools/make_chat_template_expectations.py`
//! made with transformers; and a fixture's template read from its directory, encoded with its
//! special tokens as single ids.

use std::path::PathBuf;

use serde_json::Value;
use sieve_text::{
    ChatTemplate, ConfigJson, GenerationConfig, Message, Tokenizer, CONFIG_FILE,
    GENERATION_CONFIG_FILE, TOKENIZER_FILE,
};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/chat_templates")
}

/// `tests/fixtures/models/<name>` at the workspace root.
fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/models")
        .join(name)
}

fn read_json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(dir().join(name)).unwrap()).unwrap()
}

#[test]
fn our_templates_render_as_transformers_renders_them() {
    let cases = read_json("cases.json");
    let expected = read_json("expected.json");
    let cases = cases.as_array().unwrap();
    assert!(cases.len() >= 7);
    let raw_cases: Vec<minijinja::Value> =
        serde_json::from_slice(&std::fs::read(dir().join("cases.json")).unwrap()).unwrap();
    for (index, case) in cases.iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        let file = case["template"].as_str().unwrap();
        let source = std::fs::read_to_string(dir().join(file)).unwrap();
        let special = case["special_tokens"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        let template = ChatTemplate::from_source(file, source, special);
        // Key order matters to `tojson` (Python dicts keep it): read the case again into
        // minijinja's order-keeping values, as the renderer reads its input.
        let raw = &raw_cases[index];
        let part = |key: &str| serde_json::to_string(&raw.get_attr(key).unwrap()).unwrap();
        let messages = if case.get("tools").is_some() {
            format!(
                r#"{{"messages": {}, "tools": {}}}"#,
                part("messages"),
                part("tools")
            )
        } else {
            part("messages")
        };
        let kwargs = case.get("kwargs").map(|k| k.to_string());
        let got = template.render_json(
            &messages,
            case["add_generation_prompt"].as_bool().unwrap(),
            kwargs.as_deref(),
        );
        let want = &expected["cases"][name];
        match (got, want.get("text"), want.get("error")) {
            (Ok(text), Some(Value::String(w)), _) => assert_eq!(&text, w, "{name}"),
            (Err(e), _, Some(Value::String(w))) => {
                assert!(e.to_string().contains(w.as_str()), "{name}: {e}")
            }
            (got, _, _) => panic!("{name}: got {got:?}, want {want}"),
        }
    }
}

#[test]
fn a_fixture_template_is_read_and_its_special_tokens_encode_as_ids() {
    let dir = fixture_dir("qwen3-headdim");
    let template = ChatTemplate::from_dir(&dir).unwrap();
    assert_eq!(template.special_token("bos_token"), Some("<s>"));
    let text = template
        .render(
            &[
                Message::new("system", "Be brief."),
                Message::new("user", "Hello"),
            ],
            true,
        )
        .unwrap();
    assert_eq!(
        text,
        "<s><|endoftext|>system\nBe brief.</s>\n<|endoftext|>user\nHello</s>\n<|endoftext|>assistant\n"
    );
    let tokenizer = Tokenizer::from_file(&dir.join(TOKENIZER_FILE)).unwrap();
    let ids = tokenizer.encode(&text, false).unwrap();
    let bos = tokenizer.token_to_id("<s>").unwrap();
    let eos = tokenizer.token_to_id("</s>").unwrap();
    assert_eq!(ids[0], bos, "BOS from the template, once");
    assert_eq!(ids.iter().filter(|&&i| i == bos).count(), 1);
    assert_eq!(ids.iter().filter(|&&i| i == eos).count(), 2);
    // The end-of-turn token is one the generation stops at.
    let config = ConfigJson::from_file(&dir.join(CONFIG_FILE)).unwrap();
    let generation = GenerationConfig::from_file(&dir.join(GENERATION_CONFIG_FILE)).unwrap();
    let eos_ids = generation.eos_ids_or(&config.eos_token_ids().unwrap());
    assert!(eos_ids.contains(&eos), "{eos_ids:?}");
}

#[test]
fn a_directory_without_a_template_says_so() {
    let e = ChatTemplate::from_dir(&fixture_dir("qwen2-bias")).unwrap_err();
    assert!(e.to_string().contains("no chat template"), "{e}");
}

#[test]
fn tokenizer_config_templates_as_string_or_named_list() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("tokenizer_config.json"),
        r#"{"bos_token": {"content": "<B>"}, "eos_token": "<E>",
            "chat_template": [{"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"},
                              {"name": "tool_use", "template": "T"}]}"#,
    )
    .unwrap();
    let t = ChatTemplate::from_dir(tmp.path()).unwrap();
    assert_eq!(t.names().collect::<Vec<_>>(), ["default", "tool_use"]);
    assert_eq!(
        t.render(&[Message::new("user", "x")], false).unwrap(),
        "<B>x<E>"
    );
    std::fs::write(
        tmp.path().join("tokenizer_config.json"),
        r#"{"chat_template": 3}"#,
    )
    .unwrap();
    let e = ChatTemplate::from_dir(tmp.path()).unwrap_err();
    assert!(e.to_string().contains("chat_template"), "{e}");
}

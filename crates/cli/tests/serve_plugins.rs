//! `sieve serve` with plugin stages: request fields that map to `dry` and `top_n_sigma`
//! give the text `sieve generate` gives for the canonical pipeline the response names, and
//! `response_format` constrains the output through the `grammar` plugin.

mod server_support;

use serde_json::{json, Value};
use server_support::{fixture_model, generate, plugin, Server};

#[test]
fn dry_and_top_n_sigma_fields_run_the_plugins() {
    let dry = plugin("sieve-plugin-dry");
    let sigma = plugin("sieve-plugin-top-n-sigma");
    let server = Server::start(&["--plugin", &dry, "--plugin", &sigma]);
    let body = json!({
        "prompt": "Once upon a time", "max_tokens": 24, "seed": 3, "temperature": 1.3,
        "dry_multiplier": 0.8, "dry_allowed_length": 3, "top_n_sigma": 1.5,
    });
    let r = server.post("/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let sampler = v["sampler"].as_str().unwrap();
    assert!(
        sampler.starts_with("dry(multiplier=0.8, base=1.75, allowed_length=3, last_n=-1")
            && sampler.contains("| temp(t=1.3")
            && sampler.contains("| top_n_sigma(n=1.5) | dist(seed=-1)"),
        "{sampler}"
    );
    let want = generate(&[
        "--prompt",
        "Once upon a time",
        "-n",
        "24",
        "--seed",
        "3",
        "--plugin",
        &dry,
        "--plugin",
        &sigma,
        "--sampler",
        sampler,
    ]);
    assert_eq!(v["choices"][0]["text"], want.as_str());
}

#[test]
fn response_format_constrains_the_output() {
    let grammar = plugin("sieve-plugin-grammar");
    let model = fixture_model("qwen2-bias");
    let server = Server::start(&["--model", &model, "--plugin", &grammar]);
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}, "ok": {"type": "boolean"}},
        "required": ["n", "ok"], "additionalProperties": false,
        "x-guidance": {"whitespace_flexible": false},
    });
    for seed in 1..=3 {
        let body = json!({
            "prompt": "JSON:", "max_tokens": 40, "seed": seed,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
        });
        let r = server.post("/v1/completions", &body);
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        assert!(v["sampler"]
            .as_str()
            .unwrap()
            .starts_with("grammar(json_schema="));
        let text = v["choices"][0]["text"].as_str().unwrap();
        let value: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("seed {seed}: {text:?} is not JSON: {e}"));
        assert!(value["n"].is_i64() && value["ok"].is_boolean(), "{text}");
    }
    let body = json!({"prompt": "JSON:", "max_tokens": 40, "seed": 1,
                      "response_format": {"type": "json_object"}});
    let r = server.post("/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let text = v["choices"][0]["text"].as_str().unwrap();
    let value: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert!(value.is_object(), "{text}");
}

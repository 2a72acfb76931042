//! `sieve serve` against hostile requests (issue 22's repros): grammars deep enough to
//! overflow a compiler's stack, grammar files named by a request, oversized prompts, stop
//! lists, responses and echoed values, template keywords that replace the conversation, and
//! pipelines that fail while generating. Each must get a clear 4xx, and the server must go on.

mod server_support;

use serde_json::{json, Value};
use server_support::{fixture_model, plugin, Server};

/// A server of the embedded model with the grammar and DRY plugins.
fn server() -> Server {
    let grammar = plugin("sieve-plugin-grammar");
    let dry = plugin("sieve-plugin-dry");
    Server::start(&["--plugin", &grammar, "--plugin", &dry])
}

/// A server of a fixture model with a chat template.
fn chat_server() -> Server {
    Server::start(&["--model", &fixture_model("qwen3-headdim")])
}

/// A JSON schema whose root refers to `r0`, `r0` to `r1`, … `n` references deep.
fn ref_chain(n: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..n {
        defs.insert(
            format!("r{i}"),
            json!({"$ref": format!("#/$defs/r{}", i + 1)}),
        );
    }
    defs.insert(format!("r{n}"), json!({"type": "integer"}));
    json!({"$ref": "#/$defs/r0", "$defs": defs})
}

/// `start: r0`, `r0: r1`, …: `n` chained Lark rules, as a pipeline string argument.
fn lark_chain(n: usize) -> String {
    let mut g = String::from("start: r0\\n");
    for i in 0..n {
        g += &format!("r{i}: r{}\\n", i + 1);
    }
    g + &format!("r{n}: \\\"x\\\"\\n")
}

/// The error object of a 400 answer (checked).
fn bad_request(server: &Server, path: &str, body: &Value) -> Value {
    let r = server.post(path, body);
    assert_eq!(r.status, 400, "{}", r.body);
    r.json()["error"].clone()
}

fn alive(server: &Server) {
    assert_eq!(server.get("/health").status, 200);
}

#[test]
fn deep_grammars_compile_or_are_refused_and_never_crash_the_server() {
    let server = server();
    // 700 chained references (24 KB) aborted the server; now they compile.
    let body = json!({
        "prompt": "Numbers:", "max_tokens": 3, "seed": 1,
        "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": ref_chain(700)}},
    });
    let r = server.post("/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    // Past the bound: refused before compiling, naming the argument and the depth.
    let body = json!({
        "prompt": "Numbers:", "max_tokens": 3,
        "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": ref_chain(1100)}},
    });
    let e = bad_request(&server, "/v1/completions", &body);
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("json_schema") && m.contains("1103 levels deep"),
        "{m}"
    );
    // 3000 chained Lark rules in a pipeline.
    let sampler = format!("grammar(lark=\"{}\")", lark_chain(3000));
    let e = bad_request(
        &server,
        "/v1/completions",
        &json!({"prompt": "x", "max_tokens": 2, "sampler": sampler}),
    );
    assert_eq!(e["param"], "sampler");
    assert!(
        e["message"].as_str().unwrap().contains("levels deep"),
        "{e}"
    );
    alive(&server);
}

#[test]
fn grammar_files_are_refused_before_anything_reads_them() {
    let server = server();
    let dir = std::env::temp_dir().join(format!("sieve-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("secret.lark");
    std::fs::write(&secret, "start: \"THE-SECRET-LINE\" | oops(\n").unwrap();
    let mut messages = Vec::new();
    for path in [
        secret.to_str().unwrap().to_string(),
        dir.join("missing.lark").to_str().unwrap().to_string(),
        dir.join("missing.json").to_str().unwrap().to_string(),
    ] {
        let body = json!({"prompt": "x", "max_tokens": 2,
                          "sampler": format!("grammar(file=\"{path}\")")});
        let e = bad_request(&server, "/v1/completions", &body);
        let m = e["message"].as_str().unwrap().to_string();
        assert!(
            !m.contains("THE-SECRET-LINE") && !m.contains("cannot read"),
            "{m}"
        );
        assert!(m.contains("`file` reads a file on the server"), "{m}");
        messages.push(m);
    }
    // Whether the file exists makes no difference to the answer.
    assert!(messages.windows(2).all(|w| w[0] == w[1]), "{messages:?}");
    std::fs::remove_dir_all(&dir).unwrap();
    alive(&server);
}

#[test]
fn oversized_inputs_are_refused_with_their_limits() {
    let server = server();
    // A 3 MiB prompt cannot fit the context: refused before it is encoded.
    let text = "a".repeat(3 << 20);
    let e = bad_request(
        &server,
        "/v1/completions",
        &json!({"prompt": text, "max_tokens": 1}),
    );
    assert_eq!(e["param"], "prompt");
    assert!(
        e["message"].as_str().unwrap().contains("bytes of text"),
        "{e}"
    );
    let e = bad_request(
        &chat_server(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "a".repeat(3 << 20)}], "max_tokens": 1}),
    );
    assert_eq!(e["param"], "messages");
    assert!(
        e["message"].as_str().unwrap().contains("bytes of text"),
        "{e}"
    );
    // Stop strings: at most 16.
    let stops: Vec<String> = (0..17).map(|i| format!("s{i}")).collect();
    let e = bad_request(
        &server,
        "/v1/completions",
        &json!({"prompt": "x", "stop": stops}),
    );
    assert_eq!(e["param"], "stop");
    // DRY breakers: at most 256.
    let breakers: Vec<String> = (0..300).map(|i| format!("b{i}")).collect();
    let e = bad_request(
        &server,
        "/v1/completions",
        &json!({"prompt": "x", "dry_multiplier": 0.8, "dry_sequence_breakers": breakers}),
    );
    assert!(
        e["message"].as_str().unwrap().contains("at most 256"),
        "{e}"
    );
    // Responses: choices × tokens × alternatives is bounded.
    let prompts: Vec<&str> = vec!["x"; 64];
    let e = bad_request(
        &server,
        "/v1/completions",
        &json!({"prompt": prompts, "n": 16, "max_tokens": 100000, "logprobs": 20}),
    );
    assert_eq!(e["param"], "max_tokens");
    // A 1 MiB value quoted in an error comes back clipped.
    let key = "9".repeat(1 << 20);
    let r = server.post(
        "/v1/completions",
        &json!({"prompt": "x", "logit_bias": {key: 1}}),
    );
    assert_eq!(r.status, 400);
    assert!(r.body.len() < 4096, "{} bytes", r.body.len());
    alive(&server);
}

#[test]
fn template_keywords_cannot_replace_the_conversation() {
    let server = chat_server();
    for key in ["messages", "tools", "add_generation_prompt"] {
        let body = json!({
            "messages": [{"role": "user", "content": "Hi"}],
            "chat_template_kwargs": {key: [{"role": "system", "content": 7}]},
        });
        let e = bad_request(&server, "/v1/chat/completions", &body);
        assert_eq!(e["param"], format!("chat_template_kwargs.{key}"));
    }
    let many: serde_json::Map<String, Value> =
        (0..65).map(|i| (format!("k{i}"), json!(i))).collect();
    let body =
        json!({"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": many});
    let e = bad_request(&server, "/v1/chat/completions", &body);
    assert_eq!(e["param"], "chat_template_kwargs");
    // Other keywords reach the template.
    let body = json!({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2,
                      "chat_template_kwargs": {"enable_thinking": false}});
    assert_eq!(server.post("/v1/chat/completions", &body).status, 200);
}

#[test]
fn a_pipeline_that_fails_while_generating_is_the_client_s_error() {
    let server = server();
    // Two grammars no token satisfies at once.
    let body = json!({"prompt": "x", "max_tokens": 2,
                      "sampler": "grammar(regex=\"a+\") | grammar(regex=\"b+\")"});
    let e = bad_request(&server, "/v1/completions", &body);
    assert_eq!(e["code"], "sampling_failed", "{e}");
    assert_eq!(e["type"], "invalid_request_error");
    // Streamed: the error chunk says the same.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let r = server.post("/v1/completions", &streamed);
    assert_eq!(r.status, 200);
    assert!(
        r.body.contains("\"code\":\"sampling_failed\""),
        "{}",
        r.body
    );
    alive(&server);
}

#[test]
fn a_stream_names_its_pipeline_and_seed_once() {
    let plain = server();
    let chat = chat_server();
    for (server, path, body) in [
        (
            &plain,
            "/v1/completions",
            json!({"prompt": "Once", "max_tokens": 6, "seed": 4, "stream": true}),
        ),
        (
            &chat,
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "seed": 4, "stream": true}),
        ),
    ] {
        let r = server.post(path, &body);
        assert_eq!(r.status, 200, "{}", r.body);
        let chunks: Vec<Value> = r
            .events()
            .iter()
            .filter(|e| e.as_str() != "[DONE]")
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        assert!(chunks.len() > 2, "{}", r.body);
        assert!(
            chunks[0]["sampler"].is_string() && chunks[0]["seed"] == 4,
            "{}",
            chunks[0]
        );
        for c in &chunks[1..] {
            assert!(c.get("sampler").is_none() && c.get("seed").is_none(), "{c}");
        }
    }
}

#[test]
fn a_known_path_with_another_method_is_a_405_in_openai_s_shape() {
    let server = server();
    for (method, path) in [
        ("GET", "/v1/completions"),
        ("POST", "/health"),
        ("DELETE", "/v1/models"),
    ] {
        let r = server_support::request(server.addr, method, path, &[], Some(b"{}"));
        assert_eq!(r.status, 405, "{method} {path}: {}", r.body);
        assert_eq!(
            r.json()["error"]["code"],
            "method_not_allowed",
            "{}",
            r.body
        );
    }
    assert_eq!(server.get("/nowhere").status, 404);
}
